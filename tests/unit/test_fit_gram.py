"""The fit's normal equations summed over each row's non-zero pairs are the dense product's:
the same posterior, to rounding, for any sparse design and any row weights."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fsadvisor.predict.fit import _Gram


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(0, 40),
    p=st.integers(1, 30),
    density=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_pairwise_sum_is_the_dense_product(n, p, density, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * (rng.random((n, p)) < density)
    w = rng.random(n) * 10
    gram = _Gram(X)
    dense = (X.T * w) @ X
    np.testing.assert_allclose(
        gram(w), dense, rtol=1e-12, atol=1e-12 * (1 + np.abs(dense).max(initial=0))
    )
    # a second pass with other weights reuses the pairs
    np.testing.assert_allclose(gram(w[::-1].copy()), (X.T * w[::-1]) @ X, rtol=1e-12, atol=1e-9)


def test_a_row_of_zeros_adds_nothing_and_a_full_row_adds_its_outer_product():
    X = np.array([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]])
    assert np.array_equal(_Gram(X)(np.array([5.0, 2.0])), 2.0 * np.outer(X[1], X[1]))
