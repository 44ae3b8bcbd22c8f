"""Size and power of the report's claims on simulated benches, before and after a change.

Every bench is built from seeded random runs and goes through the real code: report.build
(the verdict, the arm intervals), gates.evaluate (lift.low>0, lift.significant, no-regression,
no-task-regression) and compare.compare (unequal seed counts). With ``--before REV`` the same
benches (same seeds) also go through the package as it was at REV, extracted with git archive
into a temporary directory, and the two columns are printed side by side.

Benches: m tasks × n seeds, arms noakm and akm; each task's true pass probability is drawn
from Uniform(0.05, 0.75), runs are independent Bernoulli draws.
  null       both arms at the task's probability (size: how often a claim is made anyway);
  +0.2       akm at probability + 0.2 (power);
  drop       a second report in which 5 tasks at 0.8 fall to 0.0 (regression power);
  reseeded   the same tasks run again with n + 2 seeds (compare with unequal seed counts), also
             with every task at 0.9 (where more seeds miss a perfect score more often).

    python benchmarks/stats_power.py                         # current code, 400 benches per design
    python benchmarks/stats_power.py --before c1befc9        # and the code before the rework
    python benchmarks/stats_power.py --designs 17x5 --reps 1000
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import smoke

ROOT = Path(__file__).resolve().parent.parent
LIFT = 0.2
NULL_MEAN = 0.4  # mean of Uniform(0.05, 0.75)


def _worker(designs: list[tuple[int, int]], reps: int, workdir: Path) -> dict[str, Any]:
    """Run in a process whose pytest_akmbench is the version under test."""
    from pytest_akmbench.corpus.tasks import Task
    from pytest_akmbench.report import envelope as report
    from pytest_akmbench.report import gates
    from pytest_akmbench.report.compare import changes as compare

    report._git = lambda args, cwd: "bench"  # no git subprocess per simulated report

    def build(outcomes: dict[str, list[list[bool]]], seeds: int) -> dict[str, Any]:
        m = len(next(iter(outcomes.values())))
        tasks = [
            Task(
                id=f"d/t{i:03d}",
                title="t",
                domain="d",
                difficulty="easy",
                stash="st",
                verifier="script",
                task_dir=workdir / "none",
                yaml_text=f"id: d/t{i:03d}\n",
            )
            for i in range(m)
        ]
        samples = [
            {
                "task_id": t.id,
                "arm": arm,
                "seed": s + 1,
                "domain": "d",
                "outcome": "pass" if ok else "fail",
                "reason": None,
                "tokens": None,
                "token_measurement": "missing",
                "wallclock_ms": 1000,
                "verifier": {"kind": "script", "exit_code": 0},
                "model": "m",
            }
            for arm, table in outcomes.items()
            for t, row in zip(tasks, table)
            for s, ok in enumerate(row)
        ]
        inp = report.ReportInput(
            tasks=tasks,
            arms=tuple(outcomes),
            seeds=seeds,
            slice="all",
            stashes_root=workdir / "none",
            samples=samples,
            model="sim/m",
            agent="sim",
            agent_version="1",
        )
        return report.build(inp, timestamp="2026-01-01T00:00:00.000Z")

    def gate(env: dict[str, Any], expr: str, base: dict[str, Any] | None = None) -> bool | None:
        if base is not None:
            (workdir / "base.json").write_text(json.dumps(base))
        try:
            return bool(gates.evaluate(env, [expr], workdir)[0]["ok"])
        except ValueError:  # a gate this version does not have
            return None

    def draw(rng: random.Random, rates: list[float], n: int) -> list[list[bool]]:
        return [[rng.random() < min(1.0, p) for _ in range(n)] for p in rates]

    results: dict[str, Any] = {}
    tally: dict[str, list[int]] = {}

    def count(name: str, value: bool | None) -> None:
        if value is not None:
            hit, total = tally.setdefault(name, [0, 0])
            tally[name] = [hit + bool(value), total + 1]

    for m, n in designs:
        rng = random.Random(m * 1000 + n)
        tally = {}

        for rep in range(reps):
            rates = [rng.uniform(0.05, 0.75) for _ in range(m)]
            a = build({"noakm": draw(rng, rates, n), "akm": draw(rng, rates, n)}, n)
            b = build({"noakm": draw(rng, rates, n), "akm": draw(rng, rates, n)}, n)
            c = build({"noakm": draw(rng, rates, n + 2), "akm": draw(rng, rates, n + 2)}, n + 2)
            d = build({"noakm": draw(rng, rates, n), "akm": draw(rng, [p + LIFT for p in rates], n)}, n)
            for env in (a, b):
                p = env["aggregate"]["delta"]["paired"]
                count("verdict size", p["significant"])
                count("lift.low>0 size", gate(env, "lift.low>0"))
                count("lift.significant size", gate(env, "lift.significant"))
                count("delta interval covers 0", p["low"] <= 0 <= p["high"])
                for arm in ("noakm", "akm"):
                    ci = env["aggregate"][arm]["pass_rate_ci"]
                    count("arm interval coverage", ci["low"] <= NULL_MEAN <= ci["high"])
            p = d["aggregate"]["delta"]["paired"]
            count("verdict power +0.2", p["significant"] and p["delta"] > 0)
            count("lift.low>0 power +0.2", gate(d, "lift.low>0"))
            count("lift.significant power +0.2", gate(d, "lift.significant"))
            count("delta interval covers +0.2", p["low"] <= LIFT <= p["high"])
            count("no-regression size", not gate(b, "no-regression:base.json", a))
            held = gate(b, "no-task-regression:base.json", a)
            count("no-task-regression size", None if held is None else not held)
            count("no-regression power -0.2", not gate(a, "no-regression:base.json", d))
            result = compare.compare(a, c)
            for arm in ("noakm", "akm"):
                arm_result = result["arms"][arm]
                delta = arm_result["paired"]["delta"]
                count("compare n vs n+2: regressed", arm_result["beyond_noise"] and delta < 0)
                count("compare n vs n+2: improved", arm_result["beyond_noise"] and delta > 0)
            if rep % 2 == 0:  # easy tasks: with more seeds a task at 0.9 misses a perfect score more often
                easy = [0.9] * m
                result = compare.compare(
                    build({"akm": draw(rng, easy, n)}, n), build({"akm": draw(rng, easy, n + 2)}, n + 2)
                )
                arm_result = result["arms"]["akm"]
                delta = arm_result["paired"]["delta"]
                count("compare n vs n+2, tasks at 0.9: regressed", arm_result["beyond_noise"] and delta < 0)
                count("compare n vs n+2, tasks at 0.9: improved", arm_result["beyond_noise"] and delta > 0)
            if rep % 4 == 0 and m >= 5:
                base = build({"noakm": draw(rng, [0.8] * m, n), "akm": draw(rng, [0.8] * m, n)}, n)
                head = build({"noakm": draw(rng, [0.8] * m, n), "akm": draw(rng, [0.0] * 5 + [0.8] * (m - 5), n)}, n)
                count("no-regression power, 5 tasks 0.8→0", not gate(head, "no-regression:base.json", base))
        results[f"{m}x{n}"] = tally
    rng = random.Random(1)
    tally = {}
    for _ in range(reps):
        env = build({"noakm": [[rng.random() < 0.5]], "akm": [[rng.random() < 0.5]]}, 1)
        count("lift.low>0 size", gate(env, "lift.low>0"))
    results["1x1"] = tally
    import pytest_akmbench

    results["_package"] = str(Path(pytest_akmbench.__file__).parent)
    return results


def _run(pythonpath: Path, args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(pythonpath))
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        "--designs",
        args.designs,
        "--reps",
        str(args.reps),
        "--workdir",
        str(workdir),
    ]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=workdir)
    if out.returncode != 0:
        sys.exit(f"stats_power: worker failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout)


TARGETS = {
    "verdict size": "<= 0.05",
    "lift.low>0 size": "<= 0.025",
    "lift.significant size": "<= 0.025",
    "no-regression size": "<= 0.05",
    "no-task-regression size": "<= 0.05",
    "compare n vs n+2: regressed": "<= 0.025",
    "compare n vs n+2: improved": "<= 0.025",
    "compare n vs n+2, tasks at 0.9: regressed": "<= 0.025",
    "compare n vs n+2, tasks at 0.9: improved": "<= 0.025",
    "arm interval coverage": ">= 0.95",
    "delta interval covers 0": ">= 0.95",
    "delta interval covers +0.2": ">= 0.95",
}


def _print(columns: dict[str, dict[str, Any]]) -> None:
    names = list(columns)
    for name, col in columns.items():
        print(f"{name}: package at {col.pop('_package')}")
    designs = list(next(iter(columns.values())))
    for design in designs:
        rows = list(dict.fromkeys(k for col in columns.values() for k in col.get(design, {})))
        print(f"\n### {design.replace('x', ' tasks × ')} seeds" if design != "1x1" else "\n### 1 task × 1 seed")
        print("| figure | " + " | ".join(names) + " | target |")
        print("|---|" + "---|" * len(names) + "---|")
        for row in rows:
            cells = []
            for name in names:
                hit_total = columns[name].get(design, {}).get(row)
                if hit_total is None:
                    cells.append("n/a")
                    continue
                hit, total = hit_total
                rate = hit / total
                cells.append(f"{rate:.3f} ± {math.sqrt(max(rate * (1 - rate), 1e-9) / total):.3f}")
            print(f"| {row} | " + " | ".join(cells) + f" | {TARGETS.get(row, '')} |")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--designs", default="17x3,17x5,40x5", help="comma-separated TASKSxSEEDS")
    p.add_argument("--reps", type=int, default=400, help="benches per design (Monte Carlo error ~ sqrt(p(1-p)/reps))")
    p.add_argument("--before", metavar="REV", help="also run the package as it was at this git revision")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--workdir", help=argparse.SUPPRESS)
    args = smoke.parse(p, designs="17x3", reps=10)
    designs = [tuple(int(x) for x in d.split("x")) for d in args.designs.split(",")]
    if args.worker:
        print(json.dumps(_worker(designs, args.reps, Path(args.workdir))))  # type: ignore[arg-type]
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="stats-power-"))
    try:
        columns: dict[str, dict[str, Any]] = {}
        if args.before:
            src = tmp / "before"
            src.mkdir()
            archive = subprocess.run(
                ["git", "-C", str(ROOT), "archive", args.before, "pytest_akmbench"], capture_output=True, check=True
            )
            subprocess.run(["tar", "-x", "-C", str(src)], input=archive.stdout, check=True)
            (tmp / "work-before").mkdir()
            start = time.monotonic()
            columns[f"before ({args.before})"] = _run(src, args, tmp / "work-before")
            print(f"before: {time.monotonic() - start:.0f} s", file=sys.stderr)
        (tmp / "work-after").mkdir()
        start = time.monotonic()
        columns["after"] = _run(ROOT, args, tmp / "work-after")
        print(f"after: {time.monotonic() - start:.0f} s", file=sys.stderr)
        print(f"{args.reps} benches per design; rates are hits / trials ± one Monte Carlo standard error")
        _print(columns)
    finally:
        if args.keep:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
