"""False claims and power of the attribute and evolve tracks on simulated runs (issue 30, items 4
and 5), before and after the fixes, beside their targets.

Every figure goes through the package's own code (tracks/attribute/core.py's plan and build,
tracks/evolve/report.py's improvement, tracks/evolve/learning.py's slope). The "before" column
applies commit bc40193's rule to the same simulated runs: for attribute, its contribution took
the base report's own runs as the unmasked side (base_runs_by_task below is its helper, and
the rest of tracks/attribute/core.py's estimator is unchanged since); for evolve, its claim was
post − pre significant by the paired test, and its trend the sign-flip test over per-task
least-squares slopes (both rebuilt here from report/lift.py and stats/significance.py, which
it called).

attribute: T tasks × S seeds, each task's pass probability from Uniform(0.1, 0.9); 8 assets,
each a search hit on every task, loaded by a base run with probability 0.2 when the run passed
and 0.05 when it failed (a diligent run reads more). The plan masks the top 5.
  null     no asset does anything: a masked run passes with the task's probability;
  power    asset 0 is loaded more (0.6 / 0.3, so it is always masked) and masking it multiplies
           the task's probability by 1 − E (E = 0.3 at 60 × 5, 0.5 at 17 × 5); the others do nothing.
evolve improvement: m eval tasks × S seeds, each task's probability from Uniform(0.2, 0.6);
  drift    no evolution effect, post and control both at probability + 0.2 (drift since pre);
  null     no drift and no effect;
  power    post at probability + 0.2, control and pre at the probability.
evolve trend: m eval tasks × S seeds, E episodes; episode k's post cells run at the task's
  probability (Uniform(0.2, 0.8)) + shock_k, shock_k ~ N(0, 0.05) shared by the episode's tasks;
  null     no trend;
  power    + 0.05 per episode as well on 5 episodes, + 0.02 on 10.
The paired bootstrap, a diagnostic no claim uses, runs 20 resamples here (lift.BOOTSTRAP_ITERATIONS).

    python benchmarks/claims_tracks.py      # 500 runs per evolve row, 400 per attribute row (20-27 min a section, loaded)
    python benchmarks/claims_tracks.py --only attribute --attribute-reps 100   # one section (improvement, trend)
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from fractions import Fraction
from pathlib import Path
from statistics import fmean
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import smoke  # noqa: E402

from pytest_akmbench.report import lift  # noqa: E402
from pytest_akmbench.stats import significance  # noqa: E402
from pytest_akmbench.tracks.attribute import core as attribute  # noqa: E402
from pytest_akmbench.tracks.evolve import learning as evolve_learning  # noqa: E402
from pytest_akmbench.tracks.evolve import report as evolve_report  # noqa: E402

TARGET_SIZE = 0.05
Row = dict[str, Any]
# The paired bootstrap is a diagnostic no claim uses, and half of a simulated report's time.
lift.BOOTSTRAP_ITERATIONS = 20


def run(task: str, seed: int, passed: bool, loaded: list[str] | None = None) -> Row:
    return {
        "task_id": task,
        "arm": "akm",
        "seed": seed,
        "outcome": "pass" if passed else "fail",
        "assets_loaded": loaded,
    }


# --- attribute -------------------------------------------------------------------------------


def base_runs_by_task(base: attribute.Base) -> dict[str, list[Row]]:
    """bc40193's unmasked side: the base report's own akm runs, by task."""
    by_task: dict[str, list[Row]] = {}
    for row in sorted(base.akm_runs, key=lambda r: r["seed"]):
        by_task.setdefault(row["task_id"], []).append(row)
    return by_task


def attribute_bench(rng: random.Random, tasks: int, seeds: int, effect: float) -> dict[str, Any]:
    """One simulated attribute run: the base, the plan, fresh masked and reference runs; the
    envelope of bc40193's rule (base runs as the unmasked side) and of the fresh reference."""
    assets = [f"skill:a{i}" for i in range(8)]
    load = {a: (0.6, 0.3) if effect and a == assets[0] else (0.2, 0.05) for a in assets}
    probs = {f"d/t{i:02d}": rng.uniform(0.1, 0.9) for i in range(tasks)}
    rows = []
    for task, p in probs.items():
        for seed in range(1, seeds + 1):
            passed = rng.random() < p
            loaded = [a for a in assets if rng.random() < load[a][0 if passed else 1]]
            rows.append(run(task, seed, passed, loaded))
    base = attribute.Base(
        path=Path("base.json"), model="m", akm_version=None, seeds=seeds, task_ids=tuple(probs),
        akm_runs=tuple(rows), fingerprints=frozenset(), complete=True,
    )  # fmt: skip
    targets, loaded_count = attribute.plan(base, set(probs), attribute.DEFAULT_TOP)
    masked: dict[str, dict[str, list[Row]]] = {}
    for t in targets:
        shrink = 1 - effect if effect and t.ref == assets[0] else 1.0
        masked[t.ref] = {
            task: [run(task, s, rng.random() < probs[task] * shrink) for s in range(1, seeds + 1)] for task in t.tasks
        }
    again = attribute.reference_seeds(base, seeds)
    reference = {task: [run(task, s, rng.random() < probs[task]) for s in again] for task in probs}
    common = {"base": base, "targets": targets, "assets_loaded": loaded_count, "top": attribute.DEFAULT_TOP}
    common |= {"masked": masked, "agent": {}, "complete": True, "warnings": [], "timestamp": "t"}
    return {
        "before": attribute.build(**common, reference=base_runs_by_task(base), seeds=()),
        "after": attribute.build(**common, reference=reference, seeds=again),
        "real": assets[0] if effect else None,
    }


def attribute_rows(reps: int, tasks: int, seeds: int, effect: float, seed: int) -> dict[str, dict[str, float]]:
    rng = random.Random(seed)
    out: dict[str, dict[str, list[float]]] = {k: {"lifts": [], "delta": [], "power": []} for k in ("before", "after")}
    for _ in range(reps):
        bench = attribute_bench(rng, tasks, seeds, effect)
        for key in ("before", "after"):
            rows = [r for r in bench[key]["attributions"] if r["comparison"] is not None]
            idle = [r for r in rows if r["asset_ref"] != bench["real"]]
            out[key]["lifts"].append(any(r["significant"] and r["comparison"]["delta"] > 0 for r in idle))
            out[key]["delta"] += [r["comparison"]["delta"] for r in idle]
            real = [r for r in rows if r["asset_ref"] == bench["real"]]
            out[key]["power"].append(bool(real and real[0]["significant"] and real[0]["comparison"]["delta"] > 0))
    return {k: {name: fmean(v) if v else float("nan") for name, v in figures.items()} for k, figures in out.items()}


def attribute_section(reps: int) -> None:
    print("## attribute: an asset that does nothing called a lift (target <= 5% of reports)\n")
    print("| design | masked effect | figure | before (bc40193) | after | target |")
    print("|---|---|---|---|---|---|")
    for tasks, seeds, effect in ((60, 5, 0.3), (17, 5, 0.5)):
        null = attribute_rows(reps, tasks, seeds, 0.0, seed=tasks * 100 + seeds)
        b, a = null["before"], null["after"]
        design = f"{tasks}×{seeds}"
        print(f"| {design} | none | reports with a 'lifts' | {b['lifts']:.3f} | {a['lifts']:.3f} | <= {TARGET_SIZE} |")
        print(f"| {design} | none | mean delta of an idle asset | {b['delta']:+.4f} | {a['delta']:+.4f} | 0 |")
        real = attribute_rows(reps, tasks, seeds, effect, seed=tasks * 100 + seeds + int(effect * 10))
        b, a = real["before"], real["after"]
        print(
            f"| {design} | asset 0: ×{1 - effect:.1f} | power: asset 0 lifts | {b['power']:.3f} | "
            f"{a['power']:.3f} | reported |"
        )
        print(
            f"| {design} | asset 0: ×{1 - effect:.1f} | an idle asset lifts | {b['lifts']:.3f} | "
            f"{a['lifts']:.3f} | <= {TARGET_SIZE} |"
        )
    print()


# --- evolve: the improvement claim ------------------------------------------------------------


def evolve_sample(task: str, cond: str, seed: int, passed: bool) -> Row:
    return {"task_id": task, "arm": f"evolve-{cond}", "seed": seed, "outcome": "pass" if passed else "fail"}


def improvement_rows(reps: int, tasks: int, seeds: int, drift: float, effect: float, seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    before = after = 0
    names = [f"d/t{i:02d}" for i in range(tasks)]
    for _ in range(reps):
        cond: dict[str, dict[str, list[Row]]] = {}
        for task in names:
            p = rng.uniform(0.2, 0.6)
            for c, q in (("pre", p), ("control", p + drift), ("post", p + drift + effect)):
                cond.setdefault(c, {})[task] = [
                    evolve_sample(task, c, s, rng.random() < q) for s in range(1, seeds + 1)
                ]
        imp = evolve_report.improvement(cond, names)
        main = imp["post_minus_pre"]
        before += bool(main and main["significant"] and main["delta"] > 0)  # bc40193's claim
        after += imp["claimed"]
    return {"before": before / reps, "after": after / reps}


def improvement_section(reps: int) -> None:
    print("## evolve: IMPROVED claimed (target <= 5% with no evolution effect; power reported)\n")
    print("| design | drift (post and control) | evolution effect | before (bc40193) | after | target |")
    print("|---|---|---|---|---|---|")
    designs = [(17, 5, d, e) for d, e in ((0.2, 0.0), (0.0, 0.0), (0.0, 0.2), (0.2, 0.2), (-0.2, 0.2))]
    for tasks, seeds, drift, effect in [*designs, (40, 3, 0.2, 0.0), (40, 3, 0.2, 0.2)]:
        fig = improvement_rows(reps, tasks, seeds, drift, effect, seed=tasks + int(10 * drift) * 7 + int(10 * effect))
        target = f"<= {TARGET_SIZE}" if effect == 0 else "power"
        print(
            f"| {tasks}×{seeds} | {drift:+.1f} | {effect:+.1f} | {fig['before']:.3f} | {fig['after']:.3f} | {target} |"
        )
    print()


# --- evolve: the learning trend ---------------------------------------------------------------


def old_trend(episodes: list[dict[str, list[bool]]], tasks: list[str]) -> bool:
    """bc40193's trend: the sign-flip test over the per-task least-squares slopes."""
    n = len(episodes)
    mean_x = Fraction(n + 1, 2)
    sxx = sum((Fraction(x) - mean_x) ** 2 for x in range(1, n + 1))
    slopes = [
        sum((Fraction(x) - mean_x) * Fraction(sum(e[t]), len(e[t])) for x, e in zip(range(1, n + 1), episodes)) / sxx
        for t in tasks
    ]
    test = significance.sign_flip_test(slopes)
    return test["p_value"] < lift.ALPHA and not test["low"] <= 0.0 <= test["high"]


def trend_rows(
    reps: int, tasks: int, seeds: int, episodes: int, slope: float, shock: float, seed: int
) -> dict[str, float]:
    rng = random.Random(seed)
    names = [f"d/t{i:02d}" for i in range(tasks)]
    before = after = 0
    for _ in range(reps):
        probs = [rng.uniform(0.2, 0.8) for _ in names]
        curve = []
        for k in range(1, episodes + 1):
            move = slope * (k - 1) + rng.gauss(0.0, shock)
            curve.append({t: [rng.random() < p + move for _ in range(seeds)] for t, p in zip(names, probs)})
        before += old_trend(curve, names)
        fit = evolve_learning.slope(curve, names)
        after += bool(fit and fit["significant"])
    return {"before": before / reps, "after": after / reps}


def trend_section(reps: int) -> None:
    print("## evolve: a learning trend called (target <= 5% with no trend; power reported)\n")
    print("| design | episodes | episode shock sd | trend per episode | before (bc40193) | after | target |")
    print("|---|---|---|---|---|---|---|")
    designs = [(17, 3, e, b) for e, b in ((3, 0.0), (5, 0.0), (5, 0.05), (10, 0.0), (10, 0.02))]
    for tasks, seeds, episodes, slope in [*designs, (40, 3, 5, 0.0), (40, 3, 10, 0.0)]:
        fig = trend_rows(reps, tasks, seeds, episodes, slope, 0.05, seed=tasks * 31 + episodes + int(100 * slope))
        target = f"<= {TARGET_SIZE}" if slope == 0 else "power"
        print(
            f"| {tasks}×{seeds} | {episodes} | 0.05 | {slope:+.2f} | {fig['before']:.3f} | {fig['after']:.3f} | "
            f"{target} |"
        )
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=500, help="simulated runs per evolve row (default 500)")
    parser.add_argument("--attribute-reps", type=int, default=400, help="per attribute row (default 400)")
    parser.add_argument("--only", choices=("attribute", "improvement", "trend"), help="one section only")
    args = smoke.parse(parser, reps=10, attribute_reps=5)
    started = time.monotonic()
    print(f"# Claims of the attribute and evolve tracks ({args.attribute_reps} and {args.reps} runs per row)\n")
    if args.only in (None, "attribute"):
        attribute_section(args.attribute_reps)
    if args.only in (None, "improvement"):
        improvement_section(args.reps)
    if args.only in (None, "trend"):
        trend_section(args.reps)
    print(f"({time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
