"""Every benchmark's smoke mode, and the runner that CI uses (`.ci/run`).

A script's ``--smoke`` runs its own code path at tiny sizes in a few seconds. It prints its
figures as usual; at that size they mean nothing and a missed target is no failure. It exits
non-zero only when the script breaks, so a benchmark broken by a refactor fails CI instead of
waiting for the next measurement.

    python benchmarks/smoke.py            # every benchmarks/*.py with --smoke; stops at the first failure
    python benchmarks/smoke.py cells_bench.py store_bench.py   # some of them

A script gets its smoke mode from ``parse`` below: its argparse parser and the tiny values of its
options.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
HELP = "tiny sizes, a few seconds: checks that the script still runs (its figures mean nothing)"
TIMEOUT_S = 300  # a hung script fails the run rather than CI's own timeout


def parse(parser: argparse.ArgumentParser, argv: list[str] | None = None, **tiny: Any) -> argparse.Namespace:
    """Adds ``--smoke`` to parser and parses; under ``--smoke`` each option named in tiny takes its
    tiny value (an option given on the command line too is overridden: smoke is one fixed size)."""
    parser.add_argument("--smoke", action="store_true", help=HELP)
    args = parser.parse_args(argv)
    if args.smoke:
        for name, value in tiny.items():
            if not hasattr(args, name):
                raise SystemExit(f"smoke: {parser.prog} has no option {name!r} to shrink")
            setattr(args, name, value)
    return args


def skipped(reason: str) -> int:
    """A prerequisite is missing: says so in one line; the exit status is 1 where every
    prerequisite must be there (AKMBENCH_FAIL_ON_SKIP=1, as .ci/run sets it), else 0."""
    print(f"SKIPPED: {reason}")
    return 1 if os.environ.get("AKMBENCH_FAIL_ON_SKIP") == "1" else 0


def scripts(directory: Path = HERE) -> list[Path]:
    """Every benchmark script: each *.py in the directory but this one."""
    return sorted(p for p in directory.glob("*.py") if p.name != Path(__file__).name)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="scripts to run (default: every benchmarks/*.py)")
    ap.add_argument("--dir", type=Path, default=HERE, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    chosen = [args.dir / n for n in args.names] if args.names else scripts(args.dir)
    print(f"smoke: {len(chosen)} benchmarks; load average {_loadavg()}", flush=True)
    walls: list[tuple[str, float]] = []
    started = time.perf_counter()
    for path in chosen:
        print(f"\n==== smoke: {path.name}", flush=True)
        t0 = time.perf_counter()
        problem = run_one(path)
        walls.append((path.name, time.perf_counter() - t0))
        if problem:
            print(f"\nsmoke: FAILED: {path.name} {problem} (python {path} --smoke reproduces it)")
            return 1
    print(f"\nsmoke: every benchmark ran; load average {_loadavg()}")
    for name, wall in walls:
        print(f"  {name:30s} {wall:6.1f} s")
    print(f"  {'total':30s} {time.perf_counter() - started:6.1f} s")
    return 0


def run_one(path: Path) -> str | None:
    """Runs one script's smoke mode, its output passed through; what went wrong, or None. Beside
    its exit status, a script that printed no figures or a traceback it then swallowed is broken."""
    proc = subprocess.Popen(
        [sys.executable, str(path), "--smoke"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    timer = threading.Timer(TIMEOUT_S, proc.kill)
    timer.start()
    lines = 0
    traceback = False
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            print(line, end="", flush=True)
            lines += bool(line.strip())
            traceback = traceback or line.startswith("Traceback (most recent call last)")
        rc = proc.wait()
    finally:
        timer.cancel()
    if rc != 0:
        return f"exited {rc}" + (f" (killed after {TIMEOUT_S} s)" if rc == -9 else "")
    if traceback:
        return "printed a traceback"
    return None if lines else "printed nothing"


def _loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


if __name__ == "__main__":
    raise SystemExit(main())
