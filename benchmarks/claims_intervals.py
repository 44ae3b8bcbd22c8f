"""Coverage of the report's intervals (issue 30, items 6-8), before and after, beside the target.

Every figure goes through the real code: the arm interval through metrics.per_task and
metrics.aggregate (and the gate akm.pass_rate.low>=0.95 through gates.evaluate), compare's
interval through compare.compare on two envelopes, the workflow block through workflow.block and
compare_workflow.compare. With ``--before REV`` (default bc40193, the audited commit) the same
draws (same seeds) also go through the package as it was at REV, extracted with git archive
into a temporary directory and run in a subprocess. The arm-interval options the fix was chosen
from are computed here with numpy/scipy on the same draws, and the new arm interval is checked
against scipy's beta quantiles.

1. Arm interval (target: coverage >= 0.95 of the population's mean pass rate). Tasks drawn from
   a population, runs Bernoulli at the task's rate: skewed (90% of tasks at 0.98, 10% at 0.30;
   95% at 0.99, 5% at 0.20), uniform (Uniform(0.05, 0.75)), Beta(0.5, 0.5), bimodal (each task
   always passes with chance 0.9, else never); 17x5, 10x10, 40x5; and 10 tasks x 10 seeds all
   passing (target: low < 0.95, the gate fails).
2. compare's interval (target: coverage >= 0.95 of the true mean per-task change; never
   excludes 0 beside "within noise"). The same tasks twice: no change (uniform, Beta(0.5, 0.5),
   Beta(4, 1), all at 0.9, skewed), +0.2 (uniform, capped at 1), +0.1 (Beta(0.5, 0.5), clipped),
   easy tasks 0.98 -> 0.90 (skewed), every task 1.0 -> 0.98 (most runs still all pass); 17 tasks 5 v 5 seeds, 40 5 v 5, 10 10 v 10, 17 5 v 3.
3. Workflow block: with unequal checks per task (10 tasks, each with 10 checks passing at 0.95
   or 1 check passing at 0.2), how often the printed compliance lies outside its own interval
   (target 0) and the interval's coverage of the mean task compliance, 0.575 (>= 0.95); compare-workflow's size under no change
   (<= 0.05) and interval/verdict contradictions (0), 6 tasks x 4 seeds.

    python benchmarks/claims_intervals.py                    # after and before (bc40193), 1000 draws per row
    python benchmarks/claims_intervals.py --reps 200 --sections 1
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
from types import SimpleNamespace
from typing import Any

import smoke

ROOT = Path(__file__).resolve().parent.parent
POPULATIONS = {  # name: (draw of one task's rate, population mean)
    "skewed 0.98/0.30": (lambda r: 0.30 if r.random() < 0.1 else 0.98, 0.9 * 0.98 + 0.1 * 0.30),
    "skewed 0.99/0.20": (lambda r: 0.20 if r.random() < 0.05 else 0.99, 0.95 * 0.99 + 0.05 * 0.20),
    "uniform": (lambda r: r.uniform(0.05, 0.75), 0.4),
    "Beta(0.5, 0.5)": (lambda r: r.betavariate(0.5, 0.5), 0.5),
    "bimodal 0.9": (lambda r: 1.0 if r.random() < 0.9 else 0.0, 0.9),
}
ARM_DESIGNS = ((17, 5), (10, 10), (40, 5))
CHANGES = {  # name: (base rate draw, head rate from base rate)
    "null uniform": (lambda r: r.uniform(0.05, 0.75), lambda p: p),
    "null Beta(0.5, 0.5)": (lambda r: r.betavariate(0.5, 0.5), lambda p: p),
    "null Beta(4, 1)": (lambda r: r.betavariate(4, 1), lambda p: p),
    "null all 0.9": (lambda r: 0.9, lambda p: p),
    "null skewed": (lambda r: 0.30 if r.random() < 0.1 else 0.98, lambda p: p),
    "+0.2 uniform": (lambda r: r.uniform(0.05, 0.75), lambda p: min(1.0, p + 0.2)),
    "+0.1 Beta(0.5, 0.5)": (lambda r: r.betavariate(0.5, 0.5), lambda p: min(1.0, p + 0.1)),
    "easy 0.98 -> 0.90": (lambda r: 0.30 if r.random() < 0.1 else 0.98, lambda p: p - 0.08 * (p > 0.5)),
    "all 1.0 -> 0.98": (lambda r: 1.0, lambda p: 0.98),
}
CHANGE_DESIGNS = ((17, 5, 5), (40, 5, 5), (10, 10, 10), (17, 5, 3))


def arm_draw(pop: str, m: int, n: int, seed: int) -> list[list[bool]]:
    rng = random.Random(seed)
    draw = POPULATIONS[pop][0]
    return [[rng.random() < p for _ in range(n)] for p in (draw(rng) for _ in range(m))]


def change_draw(name: str, m: int, nh: int, nb: int, seed: int) -> tuple[list[list[bool]], list[list[bool]], float]:
    rng = random.Random(seed)
    base_rate, head_of = CHANGES[name]
    base = [base_rate(rng) for _ in range(m)]
    head = [head_of(p) for p in base]
    runs = [[[rng.random() < p for _ in range(n)] for p in rates] for rates, n in ((head, nh), (base, nb))]
    return runs[0], runs[1], math.fsum(h - b for h, b in zip(head, base)) / m


def workflow_draw(seed: int) -> list[tuple[str, int, bool]]:
    """(task, seed, check passed) of 10 tasks: each has 10 checks passing at 0.95 or (as often)
    1 check passing at 0.2, so the rate pooled over checks weighs the compliant tasks ten times."""
    rng = random.Random(seed)
    out = []
    for t in range(10):
        checks, p = (10, 0.95) if rng.random() < 0.5 else (1, 0.2)
        out += [(f"d/t{t}", s, rng.random() < p) for s in range(1, checks + 1)]
    return out


WORKFLOW_MEAN = (0.95 + 0.2) / 2


def _samples(arm: str, outcomes: list[list[bool]]) -> list[list[dict[str, Any]]]:
    return [
        [
            {"task_id": f"d/t{i:03d}", "arm": arm, "seed": s + 1, "outcome": "pass" if ok else "fail", "tokens": None}
            for s, ok in enumerate(row)
        ]
        for i, row in enumerate(outcomes)
    ]


def _envelope(outcomes: list[list[bool]], seeds: int) -> dict[str, Any]:
    from pytest_akmbench.report import metrics

    rows = [metrics.per_task(r) for r in _samples("akm", outcomes)]
    return {
        "schemaVersion": 1,
        "track": "utility",
        "agent": {"model": "sim/model"},
        "corpus": {"seedsPerArm": seeds, "taskCorpusHash": "h", "fixtureContentHash": "f"},
        "aggregate": {"akm": metrics.aggregate(rows)},
        "tasks": [{"id": f"d/t{i:03d}", "akm": row} for i, row in enumerate(rows)],
    }


def _arm_section(reps: int, workdir: Path) -> dict[str, Any]:
    from pytest_akmbench.report import gates

    out: dict[str, Any] = {}
    for pop, (_, mean) in POPULATIONS.items():
        for m, n in ARM_DESIGNS:
            covered, width = 0, 0.0
            for rep in range(reps):
                ci = _envelope(arm_draw(pop, m, n, rep), n)["aggregate"]["akm"]["pass_rate_ci"]
                covered += ci["low"] <= mean <= ci["high"]
                width += ci["high"] - ci["low"]
            out[f"{pop}|{m}x{n}"] = {"coverage": covered / reps, "width": width / reps}
    env = _envelope([[True] * 10 for _ in range(10)], 10)
    (gate,) = gates.evaluate(env, ["akm.pass_rate.low>=0.95"], workdir)
    out["all pass"] = {"low": env["aggregate"]["akm"]["pass_rate_ci"]["low"], "gate passes": gate["ok"]}
    return out


def _change_section(reps: int) -> dict[str, Any]:
    from pytest_akmbench.report.compare import changes as compare

    out: dict[str, Any] = {}
    for name in CHANGES:
        for m, nh, nb in CHANGE_DESIGNS:
            covered = contradictions = called = 0
            for rep in range(reps):
                head, base, truth = change_draw(name, m, nh, nb, rep)
                c = compare.compare(_envelope(base, nb), _envelope(head, nh))["arms"]["akm"]
                p = c["paired"]
                covered += p["low"] <= truth <= p["high"]
                contradictions += (not c["beyond_noise"]) and not p["low"] <= 0 <= p["high"]
                called += c["beyond_noise"]
            out[f"{name}|{m}x{nh}v{nb}"] = {
                "coverage": covered / reps,
                "contradictions": contradictions / reps,
                "beyond noise": called / reps,
            }
    return out


def _workflow_section(reps: int) -> dict[str, Any]:
    from pytest_akmbench.report import workflow
    from pytest_akmbench.report.compare import workflow as compare_workflow

    spec = SimpleNamespace(id="lookup", path="lookup.yaml", digest="d")
    tasks = [SimpleNamespace(workflows=(spec,))]
    outside = covered = 0
    for rep in range(reps):
        runs = [
            {
                "task_id": t,
                "seed": s,
                "arm": "akm",
                "outcome": "pass",
                "workflow": {
                    "checks": [{"workflow_id": "lookup", "status": "pass" if ok else "fail", "score": float(ok)}]
                },
            }
            for t, s, ok in workflow_draw(rep)
        ]
        block = workflow.block(tasks, runs)  # type: ignore[arg-type]
        assert block is not None
        value, ci = block["overall_compliance"], block["overall_compliance_ci"]
        outside += not ci["low"] <= value <= ci["high"]
        covered += ci["low"] <= WORKFLOW_MEAN <= ci["high"]
    out: dict[str, Any] = {"block": {"estimate outside its interval": outside / reps, "coverage": covered / reps}}
    rng, calls, contradictions, trials = random.Random(7), 0, 0, 2 * reps
    for _ in range(trials):
        probs = [rng.uniform(0.1, 0.9) for _ in range(6)]
        sides = [[sum(rng.random() < q for _ in range(4)) for q in probs] for _ in range(2)]
        blocks = [
            {
                "workflow": {
                    "digests": {"lookup": "d"},
                    "by_workflow": {
                        "lookup": {
                            "pass_rate": sum(side) / 24,
                            "per_task": [
                                {"task_id": f"d/t{i}", "checks": 4, "passes": c, "score": None}
                                for i, c in enumerate(side)
                            ],
                        }
                    },
                }
            }
            for side in sides
        ]
        c = compare_workflow.compare(blocks[0], blocks[1], [])["by_workflow"]["lookup"]
        calls += c["beyond_noise"]
        contradictions += (not c["beyond_noise"]) and not c["paired"]["low"] <= 0 <= c["paired"]["high"]
    out["compare"] = {"size": calls / trials, "contradictions": contradictions / trials, "trials": trials}
    return out


def _worker(sections: list[str], reps: int, workdir: Path) -> dict[str, Any]:
    import pytest_akmbench

    results: dict[str, Any] = {"_package": str(Path(pytest_akmbench.__file__).parent)}
    if "1" in sections:
        results["arm"] = _arm_section(reps, workdir)
    if "2" in sections:
        results["change"] = _change_section(reps)
    if "3" in sections:
        results["workflow"] = _workflow_section(reps)
    return results


def _options(reps: int) -> dict[str, Any]:
    """The arm-interval options compared on the same draws (numpy/scipy), and the largest gap
    between the package's new interval and scipy's Clopper–Pearson bounds over the tasks."""
    import numpy as np
    from scipy import stats as ss

    def t_interval(r: Any) -> tuple[float, float]:
        se = r.std(ddof=1) / math.sqrt(len(r))
        q = ss.t.ppf(0.975, len(r) - 1)
        return r.mean() - q * se, r.mean() + q * se

    def pooled_floor(r: Any, n: int) -> tuple[float, float]:
        low, high = t_interval(r)
        c, total = round(r.sum() * n), len(r) * n
        cp_low = ss.beta.ppf(0.025, c, total - c + 1) if c > 0 else 0.0
        cp_high = ss.beta.ppf(0.975, c + 1, total - c) if c < total else 1.0
        return min(low, cp_low), max(high, cp_high)

    def bootstrap_t(r: Any, rng: Any) -> tuple[float, float]:
        se = r.std(ddof=1) / math.sqrt(len(r))
        if se == 0:
            return r.mean(), r.mean()
        boots = r[rng.integers(0, len(r), (999, len(r)))]
        bse = boots.std(axis=1, ddof=1) / math.sqrt(len(r))
        keep = bse > 0
        t = (boots.mean(axis=1)[keep] - r.mean()) / bse[keep]
        return r.mean() - np.quantile(t, 0.975) * se, r.mean() - np.quantile(t, 0.025) * se

    def wilson_tasks(r: Any) -> tuple[float, float]:
        m, p, z = len(r), r.mean(), ss.t.ppf(0.975, len(r) - 1)
        centre, half = (
            (p + z * z / (2 * m)) / (1 + z * z / m),
            z / (1 + z * z / m) * math.sqrt(p * (1 - p) / m + z * z / (4 * m * m)),
        )
        return centre - half, centre + half

    def clopper_pearson(r: Any) -> tuple[float, float]:
        m, s = len(r), r.sum()
        return (ss.beta.ppf(0.025, s, m - s + 1) if s > 0 else 0.0), (
            ss.beta.ppf(0.975, s + 1, m - s) if s < m else 1.0
        )

    from pytest_akmbench.stats import intervals as stats

    out: dict[str, Any] = {}
    gap = 0.0
    for pop, (_, mean) in POPULATIONS.items():
        for m, n in ARM_DESIGNS:
            rng = np.random.default_rng(0)
            hits = {
                k: 0
                for k in (
                    "t(m-1)",
                    "t + pooled exact floor",
                    "bootstrap-t",
                    "Wilson over tasks",
                    "scipy Clopper-Pearson over tasks",
                )
            }
            for rep in range(reps):
                r = np.array([sum(row) / n for row in arm_draw(pop, m, n, rep)])
                intervals = {
                    "t(m-1)": t_interval(r),
                    "t + pooled exact floor": pooled_floor(r, n),
                    "bootstrap-t": bootstrap_t(r, rng),
                    "Wilson over tasks": wilson_tasks(r),
                    "scipy Clopper-Pearson over tasks": clopper_pearson(r),
                }
                for k, (low, high) in intervals.items():
                    hits[k] += low <= mean <= high
                mine = stats.task_rate_interval([float(x) for x in r])
                assert mine is not None
                gap = max(gap, *(abs(a - b) for a, b in zip(mine, intervals["scipy Clopper-Pearson over tasks"])))
            out[f"{pop}|{m}x{n}"] = {k: v / reps for k, v in hits.items()}
    out["max gap to scipy"] = gap
    return out


def _start(pythonpath: Path, args: argparse.Namespace, workdir: Path) -> subprocess.Popen[str]:
    """A worker whose pytest_akmbench is the one under ``pythonpath`` (before and after run at once)."""
    env = dict(os.environ, PYTHONPATH=str(pythonpath))
    cmd = [sys.executable, __file__, "--worker", "--sections", args.sections, "--reps", str(args.reps)]
    return subprocess.Popen(
        [*cmd, "--workdir", str(workdir)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=workdir,
    )


def _result(worker: subprocess.Popen[str]) -> dict[str, Any]:
    stdout, stderr = worker.communicate()
    if worker.returncode != 0:
        sys.exit(f"claims_intervals: worker failed:\n{stderr[-3000:]}")
    return json.loads(stdout)


def _cell(col: dict[str, Any] | None, key: str) -> str:
    value = None if col is None else col.get(key)
    return "n/a" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def _print_arm(cols: dict[str, dict[str, Any]], options: dict[str, Any] | None) -> None:
    names = list(cols)
    opt_names = [] if options is None else list(next(iter(v for k, v in options.items() if "|" in k)))
    print("\n### 1. Per-arm interval: coverage of the population's mean pass rate (target >= 0.95)\n")
    head = ["population", "tasks x seeds", *(f"{n}" for n in names), *(f"width {n}" for n in names), *opt_names]
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for key in next(iter(cols.values()))["arm"]:
        if "|" not in key:
            continue
        pop, design = key.split("|")
        row = [pop, design.replace("x", " × ")]
        row += [_cell(cols[n]["arm"].get(key), "coverage") for n in names]
        row += [_cell(cols[n]["arm"].get(key), "width") for n in names]
        row += [f"{options[key][o]:.3f}" for o in opt_names] if options else []
        print("| " + " | ".join(row) + " |")
    print("\n10 tasks × 10 seeds, every run passes (target: low < 0.95, the gate fails):")
    for n in names:
        edge = cols[n]["arm"]["all pass"]
        print(f"- {n}: low {edge['low']:.4f}; akm.pass_rate.low>=0.95 {'passes' if edge['gate passes'] else 'fails'}")
    if options:
        print(
            f"\nlargest gap between the new interval and scipy's Clopper–Pearson bounds: {options['max gap to scipy']:.1e}"
        )


def _print_change(cols: dict[str, dict[str, Any]]) -> None:
    names = list(cols)
    print("\n### 2. compare's interval: coverage of the true mean per-task change (target >= 0.95), ")
    print("intervals excluding 0 beside 'within noise' (target 0), how often called beyond noise\n")
    head = ["change", "tasks, seeds current v base"]
    head += (
        [f"coverage {n}" for n in names] + [f"contradictions {n}" for n in names] + [f"beyond noise {n}" for n in names]
    )
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for key in next(iter(cols.values()))["change"]:
        name, design = key.split("|")
        cells = [name, design.replace("x", " tasks, ").replace("v", " v ")]
        for field in ("coverage", "contradictions", "beyond noise"):
            cells += [_cell(cols[n]["change"].get(key), field) for n in names]
        print("| " + " | ".join(cells) + " |")


def _print_workflow(cols: dict[str, dict[str, Any]]) -> None:
    print("\n### 3. Workflow block (10 tasks, 10 or 1 checks) and compare-workflow (6 tasks × 4 seeds, no change)\n")
    names = list(cols)
    print("| figure | " + " | ".join(names) + " | target |\n|---|" + "---|" * len(names) + "---|")
    rows = (
        ("block", "estimate outside its interval", "0"),
        ("block", "coverage", ">= 0.95"),
        ("compare", "size", "<= 0.05"),
        ("compare", "contradictions", "0"),
    )
    for part, field, target in rows:
        print(
            f"| {part}: {field} | "
            + " | ".join(_cell(cols[n]["workflow"][part], field) for n in names)
            + f" | {target} |"
        )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=1000, help="draws per row (Monte Carlo SE ~ 0.007 at 0.95 and 1000)")
    p.add_argument("--sections", default="1,2,3", help="comma-separated: 1 arm, 2 compare, 3 workflow")
    p.add_argument("--before", default="bc40193", help="git revision of the 'before' column ('' for none)")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--workdir", help=argparse.SUPPRESS)
    args = smoke.parse(p, reps=20, before="")
    sections = args.sections.split(",")
    if args.worker:
        print(json.dumps(_worker(sections, args.reps, Path(args.workdir))))
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="claims-intervals-"))
    try:
        workers: dict[str, subprocess.Popen[str]] = {}
        start = time.monotonic()
        if args.before:
            src = tmp / "before"
            src.mkdir()
            archive = subprocess.run(
                ["git", "-C", str(ROOT), "archive", args.before, "pytest_akmbench"], capture_output=True, check=True
            )
            subprocess.run(["tar", "-x", "-C", str(src)], input=archive.stdout, check=True)
            (tmp / "work-before").mkdir()
            workers[f"before ({args.before})"] = _start(src, args, tmp / "work-before")
        (tmp / "work-after").mkdir()
        workers["after"] = _start(ROOT, args, tmp / "work-after")
        options = _options(args.reps) if "1" in sections else None
        cols = {name: _result(w) for name, w in workers.items()}
        print(f"workers: {time.monotonic() - start:.0f} s", file=sys.stderr)
        print(
            f"{args.reps} draws per row; Monte Carlo SE of a coverage near 0.95: {math.sqrt(0.95 * 0.05 / args.reps):.3f}"
        )
        for name, col in cols.items():
            print(f"{name}: package at {col['_package']}")
        if "1" in sections:
            _print_arm(cols, options)
        if "2" in sections:
            _print_change(cols)
        if "3" in sections:
            _print_workflow(cols)
    finally:
        if args.keep:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
