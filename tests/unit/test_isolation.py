"""No test touches the user's files: the store, the fit cache and the calibration all live
in the session's tmp dir (tests/conftest.py keep_user_files_out)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from fsadvisor.infra import xdg
from fsadvisor.predict.settings import calibration_path


def test_store_cache_and_calibration_are_in_tmp():
    tmp = Path(tempfile.gettempdir()).resolve()
    for p in (
        xdg.default_store_path(),
        xdg.cache_dir(),
        calibration_path(),
        Path(os.environ["FSADVISOR_DB"]),
    ):
        p = Path(p).resolve()
        assert tmp in p.parents, p
