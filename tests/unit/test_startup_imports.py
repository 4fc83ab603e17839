"""`recommend` starts fast: with the fit cache warm it neither imports sqlite-utils (the
store's writer) nor textual. Measured with a fresh interpreter, as a user runs it."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import sys
sys.argv = ["fsadvisor", "recommend", "--profile", "oltp"]
from fsadvisor.cli import main
try:
    main()
except SystemExit as e:
    assert not e.code, e.code
print("LOADED", sorted({m.split(".")[0] for m in sys.modules} & {"sqlite_utils", "textual"}))
"""


def test_warm_recommend_imports_neither_sqlite_utils_nor_textual(tmp_path, monkeypatch):
    monkeypatch.setenv("FSADVISOR_DB", str(tmp_path / "fsadvisor.db"))
    first = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True)
    assert first.returncode == 0, first.stderr  # seeds the store and fills the fit cache
    warm = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True)
    assert warm.returncode == 0, warm.stderr
    assert warm.stdout.splitlines()[-1] == "LOADED []"
