"""The rows of a design matrix kept in factored form, for rankings of thousands of candidates.

A ranking's design of log ops/J is X = 1 k' + C M: the workload's constant terms k, the same
for every candidate, plus each candidate's configuration features (a row of C, ~90 columns)
mapped into the coefficients' columns by M. What a ranking does with X is products with a
vector (each candidate's covariance with #1) and a few rows (the leaders'), so X (N x ~190,
for 2,752 candidates 4 MB, and in a one-shot `recommend` mostly page faults) is never built:
X v = k.v + C (M v), and a row is k + c M.
"""

from __future__ import annotations

import numpy as np


def row_variances(X, cov: np.ndarray) -> np.ndarray:
    """Each row's x cov x' (the model's variance of that row's prediction), for an ndarray
    design or a :class:`DesignRows` (built out for this)."""
    X = np.asarray(X, dtype=float)
    return np.sum((X @ cov) * X, axis=1)


def difference_sd(design: dict, i: int, j: int) -> float:
    """The model's sd of the log ops/J (equally bytes/J) difference between rows ``i`` and
    ``j`` of a design from ``predict_many(..., design_out=design)``: every term the two
    candidates share cancels, so this is the uncertainty of their *order*, much narrower
    than either prediction's own interval. recommend's tie rule, ``compare`` and
    validate's check of the model's uncertainty use it."""
    d = np.asarray(design["X"][i], dtype=float) - np.asarray(design["X"][j], dtype=float)
    return float(np.sqrt(max(float(d @ design["cov"] @ d), 0.0)))


class DesignRows:
    """Rows of X = 1 k' + C M (``rows``: which rows of C, in this order; None: all).
    Supports what ranking needs of a design: ``X @ v``, ``X[i]`` and ``X[idx]`` (as
    ndarrays), ``len``, ``shape``, ``take`` and ``np.asarray(X)`` (the whole matrix)."""

    def __init__(self, k: np.ndarray, C: np.ndarray, M: np.ndarray, rows: np.ndarray | None = None):
        self.k, self.C, self.M, self.rows = k, C, M, rows

    def __len__(self) -> int:
        return len(self.C) if self.rows is None else len(self.rows)

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self), len(self.k))

    def take(self, rows) -> "DesignRows":
        """These rows (positions in this one), in this order: no copy of the design."""
        rows = np.asarray(rows, dtype=np.intp)
        return DesignRows(self.k, self.C, self.M, rows if self.rows is None else self.rows[rows])

    def __matmul__(self, v: np.ndarray) -> np.ndarray:
        out = self.C @ (self.M @ v) + float(self.k @ v)
        return out if self.rows is None else out[self.rows]

    def __getitem__(self, i):
        r = i if self.rows is None else self.rows[i]
        return self.C[r] @ self.M + self.k

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        C = self.C if self.rows is None else self.C[self.rows]
        X = C @ self.M + self.k
        return X if dtype is None else X.astype(dtype, copy=False)
