"""fsadvisor: pick a filesystem configuration for an SSD by operations per joule.

The core (domain, catalog, profile, store, model, recommend, probe, energy, service) imports
neither textual nor typer; the CLI and TUI are thin front ends over ``fsadvisor.service``.
"""

import os as _os

# The model's matrices are a few hundred wide: BLAS worker threads only add start-up and
# contention: on a loaded 2-core machine one inverse of that size took a hundred times
# longer with threads than without. Users can still override these.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    _os.environ.setdefault(_var, "1")

__version__ = "0.1.0"
