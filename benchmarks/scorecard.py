"""The model's held-out accuracy against its recorded scorecard (models/scorecard.json).

    python benchmarks/scorecard.py           # measure, print beside the record
    python benchmarks/scorecard.py --write   # measure and record (after an improvement)

Runs `fsadvisor validate` on the shipped data in a scratch store (never the user's), then
prints each gated figure now and as recorded, with its verdict under the tolerances of
fsadvisor/predict/scorecard.py. tests/unit/test_scorecard.py fails on a "worse"; record a
"better" here so the gate holds the model to it. The figures are deterministic (fixed folds,
no sampling): the machine's load does not move them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "models" / "scorecard.json"


def measure() -> tuple[dict, dict]:
    from fsadvisor.predict.scorecard import figures
    from fsadvisor.service.advice import validate
    with tempfile.TemporaryDirectory(prefix="fsadvisor-scorecard-") as tmp:
        os.environ["FSADVISOR_DB"] = os.path.join(tmp, "store.db")
        os.environ["XDG_CACHE_HOME"] = os.path.join(tmp, "cache")
        result = validate()
    return figures(result), result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="record the figures measured now")
    args = ap.parse_args(argv)
    from fsadvisor.predict import spec
    from fsadvisor.predict.scorecard import compare
    now, result = measure()
    recorded = json.loads(RECORD.read_text())["figures"] if RECORD.exists() else {}
    for name, val, was, verdict in compare(now, recorded):
        print(f"{verdict:8s} {name}: {val:.4f} (recorded {was:.4f})")
    for name in sorted(set(now) - set(recorded)):  # gated once recorded (--write)
        print(f"{'new':8s} {name}: {now[name]:.4f} (not recorded)")
    if args.write:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
        RECORD.write_text(json.dumps({
            "what": "held-out accuracy of the model on the shipped data (fsadvisor validate)",
            "command": "python benchmarks/scorecard.py --write",
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "code": {"commit_before": commit, "feature_fingerprint": spec.fingerprint()},
            "observations": result["observations"], "prior_scale": result["prior_scale"],
            "figures": now}, indent=1, sort_keys=True) + "\n")
        print(f"recorded {len(now)} figures in {RECORD.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
