"""Fuzz every parser of outside input, every numeric option of every command (parsed as the
command line parses it: Click's conversion, then the option's range check) and the numeric
options given as text (sizes, durations, watts), N inputs each (10,000 by default): each
input either parses or fails with the parser's own error in one line; any other exception
is a traceback a user would see, and is printed with the input that caused it.

    python benchmarks/fuzz_parsers.py [--examples N] [--only NAME]

The gated suite runs the same properties with a few hundred examples per test
(tests/unit/test_fio.py, test_device.py, test_profile.py, ...); this is the long run.
Prints one line per target: inputs tried, parsed, refused in one line, tracebacks, seconds.
Exit status 1 when any target produced a traceback or a multi-line error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from fsadvisor.errors import FsAdvisorError  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "fio"


def _mutations(seed_texts: list[str]) -> st.SearchStrategy[str]:
    """Arbitrary text, and real documents with a slice replaced by arbitrary text (most
    random text fails at the first byte; a damaged real document reaches the deep paths)."""
    def damage(t: str, i: int, j: int, ins: str) -> str:
        i, j = sorted((i % (len(t) + 1), j % (len(t) + 1)))
        return t[:i] + ins + t[j:]
    real = st.builds(damage, st.sampled_from(seed_texts), st.integers(0, 1 << 20),
                     st.integers(0, 1 << 20), st.text(max_size=40))
    return st.one_of(st.text(max_size=400), real) if seed_texts else st.text(max_size=400)


def _json_values() -> st.SearchStrategy[Any]:
    scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True),
                        st.text(max_size=20))
    return st.recursive(scalars, lambda c: st.one_of(st.lists(c, max_size=5),
                                                     st.dictionaries(st.text(max_size=12), c,
                                                                     max_size=6)),
                        max_leaves=30)


def targets() -> dict[str, tuple[st.SearchStrategy, Callable[[Any], Any], tuple]]:
    """name -> (inputs, the call, the errors that are the parser's own refusals)."""
    from fsadvisor import limits
    from fsadvisor.energy import meterlog
    from fsadvisor.host import device as dev
    from fsadvisor.probe.state import ProbeState
    from fsadvisor.profiles import capture
    from fsadvisor.profiles.parse import profiles_from_toml
    from fsadvisor.tools import fio

    fio_docs = [p.read_text() for p in sorted(FIXTURES.glob("*.json"))]
    profile_docs = [p.read_text() for p in sorted(
        (Path(__file__).resolve().parents[1] / "fsadvisor" / "profiles" / "presets").glob("*.toml"))
        ][:8]
    numeric = st.one_of(st.integers(), st.floats(allow_nan=True, allow_infinity=True),
                        st.text(max_size=12), st.none(), st.booleans())

    def check_all(v: Any) -> None:
        for name in limits.LIMITS:
            try:
                limits.check(name, v)
            except FsAdvisorError as e:
                _one_line(e)

    def state(d: Any) -> Any:
        return ProbeState.from_dict(d) if isinstance(d, dict) else ProbeState.from_dict({"x": d})

    return {
        "fio JSON": (_mutations(fio_docs), lambda t: fio.parse(t).metrics(), (fio.FioParseError,)),
        "meter log CSV": (_mutations(["timestamp,watts\n1790000000,50\n1790000001,51.5\n",
                                      "Date Time, GMT-05:00,Watts\n11/24/26 10:00:00 AM,55\n"]),
                          meterlog.parse_log, ()),
        "profile TOML": (_mutations(profile_docs), lambda t: profiles_from_toml(t, "x"), ()),
        "blkid export": (_mutations(["DEVNAME=/dev/loop0\nTYPE=xfs\nUUID=ab-cd\n"]),
                         dev.parse_blkid_export, ()),
        "wipefs JSON": (_mutations(['{"signatures": [{"device": "loop0", "offset": "0x0", '
                                    '"type": "xfs", "uuid": null, "label": null}]}']),
                        dev.parse_wipefs, ()),
        "lsblk JSON": (_mutations(['{"blockdevices": [{"name": "loop0", "type": "loop", '
                                   '"children": []}]}']), dev.parse_lsblk, ()),
        "findmnt JSON": (_mutations(['{"filesystems": [{"source": "/dev/vda1", '
                                     '"target": "/"}]}']), dev.parse_findmnt, ()),
        "/proc/mounts": (_mutations(["/dev/vda1 / ext4 rw 0 0\n"]), dev.parse_mounts, ()),
        "/proc/swaps": (_mutations(["Filename Type Size Used Priority\n/dev/vdb partition 1 0 -2\n"]),
                        dev.parse_swaps, ()),
        "scheduler": (_mutations(["[none] mq-deadline kyber bfq\n"]), dev.parse_scheduler, ()),
        "stat": (_mutations(["100 0 800 10 5 0 40 2 0 20 12 0 0 0 0 0 0\n"]), dev.parse_stat, ()),
        "nvme id-ctrl": (_mutations(['{"vid": 5197, "mn": "Samsung SSD 990 PRO 2TB  ", '
                                     '"sn": "S6Z2NJ0W  ", "fr": "4B2QJXD7"}']),
                         dev.parse_nvme_id_ctrl, ()),
        "mountinfo": (_mutations(["36 35 259:1 / / rw - ext4 /dev/vda1 rw\n"]),
                      lambda t: dev.parse_mountinfo_fs(t, 259, 1), ()),
        "diskstats": (_mutations(["259 0 nvme0n1 100 0 800 10 5 0 40 2 0 20 12 0 0 0 0 0 0\n"]),
                      capture.parse_diskstats, ()),
        "state JSON": (st.one_of(_json_values(), st.builds(
            lambda extra: {**extra, "version": 1},
            st.dictionaries(st.sampled_from(["owner", "matrix_id", "device", "mounts",
                                             "original_scheduler", "scratch", "child",
                                             "current_cell", "matrices"]),
                            _json_values(), max_size=9))), state, ()),
        "numeric options": (numeric, check_all, ()),
        **string_number_targets(),
        **cli_option_targets(),
    }


def _option_texts() -> st.SearchStrategy[str]:
    """What a person (or a script with a bad variable) types as a number: any text, numbers
    in every notation Python and Click accept, and the edge spellings."""
    edges = st.sampled_from(["inf", "-inf", "nan", "1e309", "-0", "0x10", "1_000", "\u0664",
                             " 5 ", "5\n", "1e-400", "9" * 40, "", "--", "-1"])
    return st.one_of(st.text(max_size=24), edges, st.integers().map(str),
                     st.floats(0, 1).map(repr),
                     st.floats(allow_nan=True, allow_infinity=True).map(repr),
                     st.integers(-10, 10**7).map(str))


def string_number_targets() -> dict[str, tuple]:
    """The numeric options that arrive as text (sizes, durations, watts, lists of counts):
    each through the function the probe request uses, as the CLI and the TUI call it."""
    from fsadvisor import limits
    from fsadvisor.energy.idle import parse_idle_watts
    from fsadvisor.service.adaptive import parse_budget
    from fsadvisor.service.request import ProbeRequest

    def request(field: str) -> Callable[[str], Any]:
        base = {"scratch": "1G"} if field != "scratch" else {}
        extra = {"filesystems": "xfs"} if field == "agcounts" else {}
        return lambda t: ProbeRequest.make(None, dry_run=True, **base, **extra,
                                           **{field: t}).validate()

    def idle_watts(t: str) -> Any:
        # as the probe reads it (service.probing): watts text, then the option's range
        return limits.check("idle-watts", parse_idle_watts(t))

    return {f"--{name} text": (_option_texts(), request(name), ())
            for name in ("scratch", "size", "agcounts")} | {
        "--idle-watts text": (_option_texts(), idle_watts, ()),
        "--budget text": (_option_texts(), parse_budget, ())}


def cli_option_targets() -> dict[str, tuple]:
    """Every integer and float option of every command, parsed as the command line parses it
    (Click's conversion, then the option's range check): a refusal is one line, exit 2. Each
    target first checks that an in-range value parses, so its refusals are the option's own
    and not a missing required option's."""
    import contextlib
    import io

    import typer

    import fsadvisor.cli.app as cli
    from fsadvisor import limits

    click_error = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")

    class Refused(FsAdvisorError):
        pass

    def required(cmd: Any) -> list[str]:
        # Parsing only (make_context invokes nothing): any text satisfies a required option.
        args: list[str] = []
        for p in cmd.params:
            if p.required:
                args += ["x"] if p.param_type_name == "argument" else [max(p.opts, key=len), "x"]
        return args

    def walk(c: Any, path: tuple[str, ...]) -> Any:
        for name, sub in getattr(c, "commands", {}).items():
            yield from walk(sub, (*path, name))
        for p in getattr(c, "params", ()):
            if p.param_type_name == "option" and p.type.name in ("int", "integer", "float"):
                yield path, c, max(p.opts, key=len)

    def parse(path: tuple[str, ...], cmd: Any, opt: str) -> Callable[[str], Any]:
        def call(text: str) -> Any:
            out = io.StringIO()
            try:
                with contextlib.redirect_stderr(out), contextlib.redirect_stdout(out):
                    return cmd.make_context(" ".join(path), [*required(cmd), f"{opt}={text}"])
            except typer.Exit as e:
                said = out.getvalue()
                if e.exit_code != 2 or said.count("\n") != 1 or not said.startswith("fsadvisor: "):
                    raise AssertionError(f"exit {e.exit_code} with {said[:300]!r}") from None
                raise Refused(said.strip()) from None
            except click_error as e:
                raise Refused(e.format_message()) from None
        return call

    cli.register_all()
    found = {f"{' '.join(path)} {opt}": parse(path, cmd, opt)
             for path, cmd, opt in walk(cli.command_tree(), ())}
    for name, call in found.items():
        option = name.split("--")[-1]
        limit = limits.LIMITS.get(option)
        call(str(limits.CHOICES[option][0][0]) if limit is None
             else str(int(limit.lo) if limit.whole else limit.lo))
    return {name: (_option_texts(), call, ()) for name, call in found.items()}


def _one_line(e: BaseException) -> None:
    if "\n" in str(e).strip():
        raise AssertionError(f"a {type(e).__name__} of more than one line: {str(e)[:300]!r}")


def fuzz(name: str, inputs: st.SearchStrategy, call: Callable, own: tuple, n: int) -> dict:
    tally = {"tried": 0, "parsed": 0, "refused": 0}

    @settings(max_examples=n, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(inputs)
    def prop(x: Any) -> None:
        tally["tried"] += 1
        try:
            call(x)
        except (FsAdvisorError, *own) as e:
            tally["refused"] += 1
            _one_line(e)
            return
        tally["parsed"] += 1

    t0 = time.monotonic()
    failure = None
    try:
        prop()
    except Exception as e:  # noqa: BLE001 - the finding itself: report it, then go on
        failure = f"{type(e).__name__}: {' '.join(str(e).split())[:400]}"
    return {**tally, "seconds": time.monotonic() - t0, "failure": failure}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=10_000)
    ap.add_argument("--only", default=None, help="one target's name")
    args = ap.parse_args()
    print(f"fuzz: {args.examples} inputs per target; load {os.getloadavg()[0]:.2f}")
    bad = 0
    for name, (inputs, call, own) in targets().items():
        if args.only and args.only != name:
            continue
        r = fuzz(name, inputs, call, own, args.examples)
        status = "ok" if r["failure"] is None else f"FAILED: {r['failure']}"
        bad += r["failure"] is not None
        print(f"{name:32} {r['tried']:>6} tried {r['parsed']:>6} parsed {r['refused']:>6} "
              f"refused (one line)  {r['seconds']:6.1f} s  {status}")
    print(json.dumps({"targets_failed": bad}))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
