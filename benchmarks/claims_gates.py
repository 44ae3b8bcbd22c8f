"""Issue 30, items 1, 3, 9 and 10: the gates on unreliable runs, intervals beside Holm-adjusted
tests, negative transfer and few-task verdicts, on simulated benches, before and after.

Every bench is built from seeded random runs and goes through the real code (report.build, the
verdict, gates.evaluate). With ``--before REV`` the same benches (same seeds) also go through the
package as it was at REV (extracted with git archive into a temporary directory), and the two
columns are printed side by side with the target. Task rates are Uniform(0.05, 0.75) unless said.

  1  gates on harness errors: the issue's bench (17 × 5, base akm 4/5, now 1 pass + 4 harness
     errors per task); random benches where akm breaks in 80% of its runs; the cost of the rule
     (both arms at 3% harness errors and no change: how often a gate that always holds is failed,
     and the size of no-regression); no-regression's power when akm breaks 30% of its runs.
  3  three arms (akm, noakm, synthetic), 17 × 5: how often the verdict's interval excludes 0 while
     the verdict is "no significant difference" (or the reverse), how often lift.low>0 and
     lift.significant disagree, at akm +0.12 and under the null; the interval's coverage at +0.12.
  9  negative transfer under the null (17 × 5): tasks listed, how often negative_transfer_count<=0
     fails; its power when 2 tasks fall from 0.9 to 0.1 under akm.
  10 1 task, akm 10/10 vs noakm 0/10: does the verdict say why it cannot be significant; the size
     of lift.significant under a symmetric null and under skewed per-task effects of mean 0
     (80% of tasks +0.1, 20% −0.4), where the sign-flip test's null (symmetry) does not hold.

    python benchmarks/claims_gates.py                     # current code, 400 benches per row
    python benchmarks/claims_gates.py --before bc40193 --reps 2000
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
M, N = 17, 5


def _worker(reps: int, workdir: Path) -> dict[str, Any]:
    """Run in a process whose pytest_akmbench is the version under test."""
    from pytest_akmbench.corpus.tasks import Task
    from pytest_akmbench.report import envelope as report
    from pytest_akmbench.report import gates

    report._git = lambda args, cwd: "bench"  # no git subprocess per simulated report

    def build(outcomes: dict[str, list[list[str]]]) -> dict[str, Any]:
        m = len(next(iter(outcomes.values())))
        seeds = max(len(row) for table in outcomes.values() for row in table)
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
                "outcome": outcome,
                "reason": "broken" if outcome == "harness_error" else None,
                "tokens": None,
                "token_measurement": "missing",
                "wallclock_ms": 1000,
                "verifier": {"kind": "script", "exit_code": 0},
                "model": "m",
            }
            for arm, table in outcomes.items()
            for t, row in zip(tasks, table)
            for s, outcome in enumerate(row)
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

    def gate(env: dict[str, Any], expr: str, base: dict[str, Any] | None = None) -> bool:
        if base is not None:
            (workdir / "base.json").write_text(json.dumps(base))
        return bool(gates.evaluate(env, [expr], workdir)[0]["ok"])

    def draw(rng: random.Random, rates: list[float], n: int = N, broken: float = 0.0) -> list[list[str]]:
        """Runs of each task: a harness error with chance ``broken``, else pass at the task's rate."""
        return [
            [
                "harness_error" if rng.random() < broken else "pass" if rng.random() < min(1.0, p) else "fail"
                for _ in range(n)
            ]
            for p in rates
        ]

    tally: dict[str, list[int]] = {}

    def count(name: str, value: bool) -> None:
        hit, total = tally.setdefault(name, [0, 0])
        tally[name] = [hit + bool(value), total + 1]

    _item1(build, gate, draw, count, reps)
    _item3(build, gate, draw, count, reps)
    _item9(build, gate, draw, count, reps)
    _item10(build, gate, draw, count, reps)
    import pytest_akmbench

    return {"tally": tally, "means": _MEANS, "_package": str(Path(pytest_akmbench.__file__).parent)}


def _item1(build: Any, gate: Any, draw: Any, count: Any, reps: int) -> None:
    noakm = [["pass" if s < 2 else "fail" for s in range(N)] for _ in range(M)]
    base = build({"noakm": noakm, "akm": [["pass" if s < 4 else "fail" for s in range(N)] for _ in range(M)]})
    now = build({"noakm": noakm, "akm": [["pass"] + ["harness_error"] * (N - 1) for _ in range(M)]})
    for expr in ("no-regression:base.json", "no-task-regression:base.json", "akm.pass_rate>=0.7"):
        count(f"1 issue bench: {expr} passes", gate(now, expr, base))
    rng = random.Random(101)
    for _ in range(reps):
        rates = [rng.uniform(0.05, 0.75) for _ in range(M)]
        high = [p + 0.2 for p in rates]
        base = build({"noakm": draw(rng, rates), "akm": draw(rng, high)})
        broken = build({"noakm": draw(rng, rates), "akm": draw(rng, high, broken=0.8)})
        passed = [gate(broken, "no-regression:base.json", base), gate(broken, "akm.pass_rate>=0.5")]
        count("1 akm breaks 80% of runs: no-regression passes", passed[0])
        count("1 akm breaks 80% of runs: akm.pass_rate>=0.5 passes", passed[1])
        # The cost: both arms at 3% harness errors, nothing changed.
        a = build({"noakm": draw(rng, rates, broken=0.03), "akm": draw(rng, rates, broken=0.03)})
        b = build({"noakm": draw(rng, rates, broken=0.03), "akm": draw(rng, rates, broken=0.03)})
        count("1 both arms 3% harness errors, no change: akm.pass_rate>=0 fails", not gate(b, "akm.pass_rate>=0"))
        count(
            "1 both arms 3% harness errors, no change: no-regression fails", not gate(b, "no-regression:base.json", a)
        )
        worse = build({"noakm": draw(rng, rates, broken=0.03), "akm": draw(rng, rates, broken=0.3)})
        count("1 akm breaks 30% of runs: no-regression fails", not gate(worse, "no-regression:base.json", a))


def _item3(build: Any, gate: Any, draw: Any, count: Any, reps: int) -> None:
    rng = random.Random(303)
    for _ in range(reps):
        rates = [rng.uniform(0.05, 0.75) for _ in range(M)]
        for up, label in ((0.12, "+0.12"), (0.0, "null")):
            env = build(
                {
                    "noakm": draw(rng, rates),
                    "synthetic": draw(rng, rates),
                    "akm": draw(rng, [p + up for p in rates]),
                }
            )
            p = env["aggregate"]["delta"]["paired"]
            excluded = not p["low"] <= 0 <= p["high"]
            count(f"3 three arms {label}: interval excludes 0 but not significant", excluded and not p["significant"])
            low, sig = gate(env, "lift.low>0"), gate(env, "lift.significant")
            count(f"3 three arms {label}: lift.low>0 and lift.significant disagree", low != sig)
            count(f"3 three arms {label}: lift.low>0 holds", low)
            if up:
                count("3 three arms +0.12: interval covers +0.12", p["low"] <= up <= p["high"])
                count("3 three arms +0.12: significant (power)", p["significant"] and p["delta"] > 0)


def _item9(build: Any, gate: Any, draw: Any, count: Any, reps: int) -> None:
    rng = random.Random(909)
    listed = 0
    for _ in range(reps):
        rates = [rng.uniform(0.05, 0.75) for _ in range(M)]
        env = build({"noakm": draw(rng, rates), "akm": draw(rng, rates)})
        listed += env["negative_transfer_count"]
        count("9 null: negative_transfer_count<=0 fails", not gate(env, "negative_transfer_count<=0"))
        hurt = build({"noakm": draw(rng, [0.9, 0.9] + rates[2:]), "akm": draw(rng, [0.1, 0.1] + rates[2:])})
        count(
            "9 two tasks 0.9 -> 0.1: negative_transfer_count<=0 fails (power)",
            not gate(hurt, "negative_transfer_count<=0"),
        )
    _MEANS["9 null: tasks listed per bench (mean of 17)"] = listed / reps


_MEANS: dict[str, float] = {}


def _item10(build: Any, gate: Any, draw: Any, count: Any, reps: int) -> None:
    env = build({"noakm": [["fail"] * 10], "akm": [["pass"] * 10]})
    count(
        "10 one task 10/10 vs 0/10: verdict says why it cannot be significant",
        "paired tasks" in env["verdict"] and "at least" in env["verdict"],
    )
    rng = random.Random(1010)
    for _ in range(reps):
        rates = [rng.uniform(0.3, 0.7) for _ in range(M)]
        env = build({"noakm": draw(rng, rates), "akm": draw(rng, rates)})
        count("10 symmetric null: lift.significant holds", gate(env, "lift.significant"))
        shift = [0.1 if rng.random() < 0.8 else -0.4 for _ in range(M)]
        env = build({"noakm": draw(rng, rates), "akm": draw(rng, [max(0.0, p + s) for p, s in zip(rates, shift)])})
        count("10 skewed effects of mean 0: lift.significant holds", gate(env, "lift.significant"))


TARGETS = {
    "1 issue bench: no-regression:base.json passes": "0 (fails)",
    "1 issue bench: no-task-regression:base.json passes": "0 (fails)",
    "1 issue bench: akm.pass_rate>=0.7 passes": "0 (fails)",
    "1 akm breaks 80% of runs: no-regression passes": "0",
    "1 akm breaks 80% of runs: akm.pass_rate>=0.5 passes": "0",
    "1 both arms 3% harness errors, no change: akm.pass_rate>=0 fails": "<= 0.05",
    "1 both arms 3% harness errors, no change: no-regression fails": "<= 0.05",
    "1 akm breaks 30% of runs: no-regression fails": "1",
    "3 three arms +0.12: interval excludes 0 but not significant": "0",
    "3 three arms +0.12: lift.low>0 and lift.significant disagree": "0",
    "3 three arms null: interval excludes 0 but not significant": "0",
    "3 three arms null: lift.low>0 and lift.significant disagree": "0",
    "3 three arms null: lift.low>0 holds": "<= 0.025",
    "3 three arms +0.12: interval covers +0.12": ">= 0.95",
    "9 null: negative_transfer_count<=0 fails": "<= 0.05",
    "9 null: tasks listed per bench (mean of 17)": "beyond noise only",
    "10 one task 10/10 vs 0/10: verdict says why it cannot be significant": "1",
    "10 symmetric null: lift.significant holds": "<= 0.025",
    "10 skewed effects of mean 0: lift.significant holds": "not the test's null: said in the report",
}


def _run(pythonpath: Path, reps: int, workdir: Path) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(pythonpath))
    cmd = [sys.executable, __file__, "--worker", "--reps", str(reps), "--workdir", str(workdir)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=workdir)
    if out.returncode != 0:
        sys.exit(f"claims_gates: worker failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout)


def _print(columns: dict[str, dict[str, Any]]) -> None:
    names = list(columns)
    for name, col in columns.items():
        print(f"{name}: package at {col['_package']}")
    rows = list(dict.fromkeys(k for col in columns.values() for k in (*col["tally"], *col["means"])))
    rows.sort(key=lambda r: int(r.split()[0]))
    print("\n| item | figure | " + " | ".join(names) + " | target |")
    print("|---|---|" + "---|" * len(names) + "---|")
    for row in rows:
        cells = []
        for name in names:
            col = columns[name]
            if row in col["means"]:
                cells.append(f"{col['means'][row]:.2f}")
                continue
            hit, total = col["tally"].get(row, (0, 0))
            if not total:
                cells.append("n/a")
                continue
            rate = hit / total
            se = math.sqrt(max(rate * (1 - rate), 1e-9) / total)
            cells.append(f"{rate:.3f}" if total == 1 else f"{rate:.4f} ± {se:.4f}")
        item, _, figure = row.partition(" ")
        print(f"| {item} | {figure} | " + " | ".join(cells) + f" | {TARGETS.get(row, '')} |")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=400, help="benches per row (Monte Carlo error ~ sqrt(p(1-p)/reps))")
    p.add_argument("--before", metavar="REV", help="also run the package as it was at this git revision")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--workdir", help=argparse.SUPPRESS)
    args = smoke.parse(p, reps=10)
    if args.worker:
        print(json.dumps(_worker(args.reps, Path(args.workdir))))
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="claims-gates-"))
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
            columns[f"before ({args.before})"] = _run(src, args.reps, tmp / "work-before")
            print(f"before: {time.monotonic() - start:.0f} s", file=sys.stderr)
        (tmp / "work-after").mkdir()
        start = time.monotonic()
        columns["after"] = _run(ROOT, args.reps, tmp / "work-after")
        print(f"after: {time.monotonic() - start:.0f} s", file=sys.stderr)
        print(f"{args.reps} benches per row; rates are hits / trials ± one Monte Carlo standard error")
        _print(columns)
    finally:
        if args.keep:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
