"""Per-task and corpus metrics over samples, with the reference's names and corrected meaning.

Corrections to the reference (docs/report.md, "Corrected meanings of reference keys"): ``harness_error`` runs are out of every figure (pass
rates, tokens, time, trajectory, search bridge, assets, overhead) and counted on their own; an
arm with no runs is ``None``, never 0; token figures use only runs whose tokens were measured,
and are ``None`` when none were. Added: Wilson intervals per task, a cluster-aware interval per
arm, pass@k / pass^k, flakiness (see docs/report.md). The paired arm comparisons are in
:mod:`lift`.

The akm-specific sections (trajectory, failure modes, search bridge, per-asset, negative
transfer, domains, corpus coverage, akm overhead) read the per-sample ``trajectory`` dict made
by :mod:`trajectory`; samples without one are left out of those figures, never guessed.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from functools import lru_cache
from statistics import fmean
from typing import Any

from ..corpus.tasks import MEMORY_ABILITIES, Task
from . import stats

Sample = dict[str, Any]
ARM_ORDER = ("noakm", "synthetic", "akm")
DEFAULT_FLOOR = 3


def sample_tokens(sample: Sample) -> int | None:
    """Total tokens of a run, or None when they were not measured."""
    tokens = sample.get("tokens")
    if sample.get("token_measurement") != "measured" or not isinstance(tokens, dict):
        return None
    return int(tokens.get("total", 0))


def _mean(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return fmean(kept) if kept else None


def _ci(pair: tuple[float, float] | None) -> dict[str, float] | None:
    return None if pair is None else {"low": pair[0], "high": pair[1]}


@lru_cache(maxsize=65536)
def _pass_k(n: int, c: int, k: int) -> tuple[float | None, float | None]:
    return stats.pass_at_k(n, c, k), stats.pass_hat_k(n, c, k)


def valid_outcomes(runs: Sequence[Sample]) -> list[bool]:
    """Pass indicators of the runs that count (harness errors excluded), in seed order."""
    return [r["outcome"] == "pass" for r in runs if r["outcome"] != "harness_error"]


def floor_status(valid: int, floor: int) -> str:
    """``covered`` (≥ floor valid samples), ``partial`` (some) or ``missing`` (none)."""
    return "covered" if valid >= floor else "partial" if valid else "missing"


def per_task(runs: Sequence[Sample], *, seeds: int | None = None, floor: int = DEFAULT_FLOOR) -> dict[str, Any] | None:
    """Metrics of one task under one arm; None when the arm has no run of the task."""
    if not runs:
        return None
    valid = [r for r in runs if r["outcome"] != "harness_error"]
    passes = [r for r in valid if r["outcome"] == "pass"]
    n, c = len(valid), len(passes)
    first = min(valid, key=lambda r: r["seed"]) if valid else None
    measured = [r for r in valid if sample_tokens(r) is not None]
    kmax = max(seeds or 0, n, 1)
    at_k: dict[str, float | None] = {}
    hat_k: dict[str, float | None] = {}
    for k in range(1, kmax + 1):
        at_k[str(k)], hat_k[str(k)] = _pass_k(n, c, k) if n else (None, None)
    sd = stats.stdev([1.0 if r["outcome"] == "pass" else 0.0 for r in valid])
    return {
        "pass_rate": c / n if n else None,
        "pass_at_1": (1 if first["outcome"] == "pass" else 0) if first else None,
        "tokens_per_pass": _mean(sample_tokens(r) for r in passes),
        "tokens_per_run": _mean(sample_tokens(r) for r in measured),
        "wallclock_ms": _mean(r.get("wallclock_ms") for r in valid),
        "pass_rate_stdev": sd,
        "budget_exceeded_count": sum(r["outcome"] == "budget_exceeded" for r in runs),
        "harness_error_count": len(runs) - n,
        "count": len(runs),
        "valid_count": n,
        "runs_with_measured_tokens": len(measured),
        "passes": c,
        "pass_rate_ci": _ci(stats.wilson_interval(c, n)) if n else None,
        "pass_at_k": at_k,
        "pass_hat_k": hat_k,
        # stats.is_flaky's rule, reusing the stdev computed above
        "flaky": 0 < c < n and sd > stats.FLAKY_STDEV,
        "floor_status": floor_status(n, floor),
    }


def aggregate(per_task_rows: Sequence[dict[str, Any] | None]) -> dict[str, Any] | None:
    """Macro average over the tasks the arm ran; None when it ran none.

    ``pass_rate_ci`` treats tasks as clusters (:func:`stats.cluster_rate_interval`).
    ``pass_at_k``/``pass_hat_k`` run over one task set for every k (the tasks with valid runs)
    and stop at the fewest valid runs any of them has, so the curves are monotone in k.
    """
    rows = [r for r in per_task_rows if r is not None]
    if not rows:
        return None
    rated = [r for r in rows if r["pass_rate"] is not None]
    passes, valid = sum(r["passes"] for r in rows), sum(r["valid_count"] for r in rows)
    interval = stats.cluster_rate_interval([r["pass_rate"] for r in rated], valid)
    ci = None if interval is None else {"low": interval[0], "high": interval[1], "method": "wilson_design_effect_tasks"}
    kmax = min((r["valid_count"] for r in rated), default=0)
    keys = [str(k) for k in range(1, kmax + 1)]
    return {
        "pass_rate": _mean(r["pass_rate"] for r in rows),
        "pass_at_1": _mean(r["pass_at_1"] for r in rows),
        "tokens_per_pass": _mean(r["tokens_per_pass"] for r in rows),
        "tokens_per_run": _mean(r["tokens_per_run"] for r in rows),
        "wallclock_ms": _mean(r["wallclock_ms"] for r in rows),
        "tasks": len(rows),
        "runs": sum(r["count"] for r in rows),
        "harness_error_count": sum(r["harness_error_count"] for r in rows),
        "budget_exceeded_count": sum(r["budget_exceeded_count"] for r in rows),
        "tasks_with_valid_runs": len(rated),
        "valid_runs": valid,
        "passes": passes,
        "pass_rate_ci": ci,
        "pass_at_k": {k: _mean(r["pass_at_k"][k] for r in rated) for k in keys},
        "pass_hat_k": {k: _mean(r["pass_hat_k"][k] for r in rated) for k in keys},
        "pass_k_tasks": len(rated),
        "flaky_tasks": sum(r["flaky"] for r in rows),
    }


def delta(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any] | None:
    """a − b per metric (pass rate up is better, tokens and time down are better)."""
    if a is None or b is None:
        return None

    def diff(key: str) -> float | None:
        x, y = a.get(key), b.get(key)
        return None if x is None or y is None else x - y

    return {k: diff(k) for k in ("pass_rate", "tokens_per_pass", "tokens_per_run", "wallclock_ms")}


def token_measurement(runs: Sequence[Sample]) -> dict[str, Any]:
    """How many runs had their tokens measured; ``coverage`` is None when there were no runs."""
    total = len(runs)
    measured = sum(r.get("token_measurement") == "measured" for r in runs)
    unsupported = sum(r.get("token_measurement") == "unsupported" for r in runs)
    missing = total - measured - unsupported
    return {
        "total_runs": total,
        "runs_with_measured_tokens": measured,
        "runs_missing_measurement": missing,
        "runs_unsupported_measurement": unsupported,
        "coverage": measured / total if total else None,
        "reliable": total > 0 and measured == total,
    }


# ---------------------------------------------------------------- akm trajectory sections


def observed(sample: Sample) -> dict[str, Any] | None:
    """The sample's trajectory when one was actually observed, else None."""
    traj = sample.get("trajectory")
    return traj if isinstance(traj, dict) and traj.get("source") is not None else None


def counted(sample: Sample) -> dict[str, Any] | None:
    """The trajectory of a run that counts in akm figures: observed, and not a harness error."""
    return None if sample["outcome"] == "harness_error" else observed(sample)


def trajectory_aggregate(akm_runs: Sequence[Sample]) -> dict[str, Any]:
    """``trajectory.akm``: rates over the akm-arm runs whose trajectory was observed
    (harness errors excluded)."""
    trajs = [t for t in map(counted, akm_runs) if t is not None]
    judged = [t["correct_asset_loaded"] for t in trajs if t["correct_asset_loaded"] is not None]
    ordered = [t["searched_before_acting"] for t in trajs if t["searched_before_acting"] is not None]
    irrelevant = [len(t["irrelevant_assets_loaded"]) for t in trajs if t["irrelevant_assets_loaded"] is not None]
    fb = [t for t in trajs if t["feedback_recorded"]]
    n = len(trajs)
    return {
        "correct_asset_loaded": sum(judged) / len(judged) if judged else None,
        "feedback_recorded": len(fb) / n if n else None,
        "searched_before_acting": sum(ordered) / len(ordered) if ordered else None,
        "irrelevant_assets_loaded": fmean(irrelevant) if irrelevant else None,
        "counts": {
            "runs": len(akm_runs),
            "harness_error_runs": sum(s["outcome"] == "harness_error" for s in akm_runs),
            "runs_with_trajectory": n,
            "gold_ref_runs": len(judged),
            "correct_asset_loaded": sum(judged),
            "feedback_recorded": len(fb),
            "feedback_positive": sum(t["feedback_polarity"] in ("positive", "mixed") for t in fb),
            "feedback_negative": sum(t["feedback_polarity"] in ("negative", "mixed") for t in fb),
            "searched_before_acting_judged": len(ordered),
            "searched_before_acting": sum(ordered),
            "irrelevant_assets_loaded": sum(irrelevant),
        },
    }


def failure_modes(labelled: Sequence[tuple[str, str | None]]) -> dict[str, Any]:
    """``{by_label, by_task}`` from (task id, label) in run order; None labels skipped."""
    by_label: dict[str, int] = {}
    by_task: dict[str, dict[str, int]] = {}
    for task_id, label in labelled:
        if label is None:
            continue
        by_label[label] = by_label.get(label, 0) + 1
        row = by_task.setdefault(task_id, {})
        row[label] = row.get(label, 0) + 1
    return {"by_label": by_label, "by_task": by_task}


_RANK_KEYS = tuple(str(i) for i in range(1, 11)) + ("missing",)


def search_bridge(akm_runs: Sequence[Sample], gold_of: dict[str, str | None]) -> dict[str, Any]:
    """``searchBridge`` (docs/report.md) from the searches the agent ran (known results only;
    harness errors excluded). Shares are None when no search was observed."""
    hist = dict.fromkeys(_RANK_KEYS, 0)
    ranks: list[float] = []
    runs_observed = 0
    buckets: dict[str, list[int]] = {}
    for s in akm_runs:
        traj = counted(s)
        if traj is None or not gold_of.get(s["task_id"]):
            continue
        runs_observed += 1
        run_ranks = traj.get("gold_ranks") or []
        for r in run_ranks:
            hist[str(r) if r is not None and r <= 10 else "missing"] += 1
            ranks.append(math.inf if r is None else r)
        if run_ranks:
            last = run_ranks[-1]
            key = str(last) if last is not None and last <= 10 else "missing"
            buckets.setdefault(key, []).append(s["outcome"] == "pass")
    n = len(ranks)
    ranks.sort()

    def pct(p: int) -> int | str | None:
        if not n:
            return None
        v = ranks[min(n - 1, max(0, math.ceil(p / 100 * n) - 1))]
        return "missing" if v == math.inf else int(v)

    return {
        "runs_observed": runs_observed,
        "searches_observed": n,
        "gold_rank_distribution": hist,
        "gold_rank_p50": pct(50),
        "gold_rank_p90": pct(90),
        "gold_at_rank_1": hist["1"] / n if n else None,
        "gold_missing": hist["missing"] / n if n else None,
        "pass_rate_by_rank": [
            {"rank": k, "pass_rate": sum(buckets[k]) / len(buckets[k]), "run_count": len(buckets[k])}
            for k in _RANK_KEYS
            if k in buckets
        ],
    }


def per_asset(akm_runs: Sequence[Sample]) -> dict[str, Any]:
    """``perAsset`` (docs/report.md) over akm-arm runs with a trajectory; harness errors excluded."""
    counts: dict[str, list[int]] = {}
    for s in akm_runs:
        traj = counted(s)
        if traj is None:
            continue
        passed = s["outcome"] == "pass"
        for ref in traj["assets_loaded"]:
            row = counts.setdefault(ref, [0, 0])
            row[0 if passed else 1] += 1
    rows = [
        {
            "asset_ref": ref,
            "load_count": p + f,
            "load_count_passing": p,
            "load_count_failing": f,
            "load_pass_rate": p / (p + f) if p + f else None,
        }
        for ref, (p, f) in counts.items()
    ]
    rows.sort(
        key=lambda r: (
            -r["load_count"],
            -(r["load_pass_rate"] if r["load_pass_rate"] is not None else -1),
            r["asset_ref"],
        )
    )
    return {"total_akm_runs": len(akm_runs), "rows": rows}


def negative_transfer(tasks_out: Sequence[dict[str, Any]], domain_of: dict[str, str]) -> list[dict[str, Any]]:
    """Tasks where akm's pass rate is strictly below noakm's (both arms measured)."""
    regressed = []
    for t in tasks_out:
        a, b = (t.get("akm") or {}).get("pass_rate"), (t.get("noakm") or {}).get("pass_rate")
        if a is not None and b is not None and a < b:
            regressed.append(
                {
                    "task_id": t["id"],
                    "domain": domain_of[t["id"]],
                    "noakm_pass_rate": b,
                    "akm_pass_rate": a,
                    "delta": a - b,
                    "severity": b - a,
                }
            )
    regressed.sort(key=lambda r: (-r["severity"], r["task_id"]))
    return regressed


def _arm_mean(rows: Sequence[dict[str, Any]], arm: str, key: str = "pass_rate") -> float | None:
    return _mean((t.get(arm) or {}).get(key) for t in rows)


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def domain_level_deltas(
    tasks_out: Sequence[dict[str, Any]], domain_of: dict[str, str], regressed: set[str]
) -> list[dict[str, Any]]:
    """One row per domain (docs/report.md); an arm not run gives None, not 0."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for t in tasks_out:
        groups[domain_of[t["id"]]].append(t)
    out = []
    for domain in sorted(groups):
        rows = groups[domain]
        noakm, akm = _arm_mean(rows, "noakm"), _arm_mean(rows, "akm")
        out.append(
            {
                "domain": domain,
                "task_count": len(rows),
                "regression_count": sum(t["id"] in regressed for t in rows),
                "pass_rate_noakm": noakm,
                "pass_rate_akm": akm,
                "pass_rate_delta": _diff(akm, noakm),
                "tokens_per_pass_delta": _diff(
                    _arm_mean(rows, "akm", "tokens_per_pass"), _arm_mean(rows, "noakm", "tokens_per_pass")
                ),
                "wallclock_ms_delta": _diff(
                    _arm_mean(rows, "akm", "wallclock_ms"), _arm_mean(rows, "noakm", "wallclock_ms")
                ),
            }
        )
    return out


def asset_regression_candidates(akm_runs: Sequence[Sample], regressed: set[str]) -> list[dict[str, Any]]:
    """Assets loaded by akm-arm runs of regressed tasks (docs/report.md; harness errors excluded)."""
    tasks: dict[str, set[str]] = defaultdict(set)
    loads: dict[str, int] = defaultdict(int)
    for s in akm_runs:
        traj = counted(s)
        if traj is None or s["task_id"] not in regressed:
            continue
        for ref in traj["assets_loaded"]:
            tasks[ref].add(s["task_id"])
            loads[ref] += 1
    rows = [
        {
            "asset_ref": ref,
            "regressed_task_count": len(ids),
            "regressed_task_ids": sorted(ids),
            "total_load_count": loads[ref],
        }
        for ref, ids in tasks.items()
    ]
    rows.sort(key=lambda r: (-r["regressed_task_count"], -r["total_load_count"], r["asset_ref"]))
    return rows


def corpus_coverage(tasks: Sequence[Task], tasks_out: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``corpus_coverage`` (docs/report.md); the inner ``coverage`` keys stay camelCase."""
    abilities = dict.fromkeys(("untagged", *MEMORY_ABILITIES), 0)
    families: dict[str, int] = {}
    untagged_family = 0
    for t in tasks:
        abilities[t.memory_ability or "untagged"] = abilities.get(t.memory_ability or "untagged", 0) + 1
        if t.task_family:
            families[t.task_family] = families.get(t.task_family, 0) + 1
        else:
            untagged_family += 1
    if untagged_family:
        families["untagged"] = untagged_family
    by_id = {t["id"]: t for t in tasks_out}

    def rows(attr: str) -> list[dict[str, Any]]:
        groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for t in tasks:
            value = getattr(t, attr)
            if value:
                groups[value].append(by_id[t.id])
        out = []
        for category in sorted(groups):
            g = groups[category]
            noakm, akm = _arm_mean(g, "noakm"), _arm_mean(g, "akm")
            out.append(
                {
                    "category": category,
                    "task_count": len(g),
                    "pass_rate_noakm": noakm,
                    "pass_rate_akm": akm,
                    "pass_rate_delta": _diff(akm, noakm),
                    "negative_transfer_count": sum(
                        1
                        for t in g
                        if (t.get("akm") or {}).get("pass_rate") is not None
                        and (t.get("noakm") or {}).get("pass_rate") is not None
                        and t["akm"]["pass_rate"] < t["noakm"]["pass_rate"]
                    ),
                    "workflow_compliance": None,  # workflow specs are not implemented (docs/report.md)
                }
            )
        return out

    return {
        "coverage": {"totalTasks": len(tasks), "memoryAbilityCounts": abilities, "taskFamilyCounts": families},
        "by_memory_ability": rows("memory_ability"),
        "by_task_family": rows("task_family"),
    }


_OVERHEAD_COUNTS = (
    "search_count",
    "show_count",
    "feedback_count",
    "positive_feedback_count",
    "negative_feedback_count",
)


def akm_overhead(akm_runs: Sequence[Sample]) -> dict[str, Any]:
    """``akm_overhead`` (docs/report.md) with polarity from the parsed commands and events,
    timings anchored at the agent's start (or first step), and bytes actually measured.
    ``per_run`` lists every akm run; a harness-error run has null figures and stays out of
    the aggregate."""
    per_run = []
    for s in akm_runs:
        traj = counted(s)
        row: dict[str, Any] = {"task_id": s["task_id"], "arm": s["arm"], "seed": s["seed"], "outcome": s["outcome"]}
        if traj is None:
            row.update(
                dict.fromkeys(
                    (
                        *_OVERHEAD_COUNTS,
                        "total_tool_calls",
                        "assets_loaded_count",
                        "irrelevant_assets_loaded_count",
                        "time_to_first_search_ms",
                        "time_to_first_correct_asset_ms",
                        "context_bytes_loaded",
                        "asset_bytes_loaded",
                    )
                )
            )
        else:
            row.update({k: traj[k] for k in _OVERHEAD_COUNTS})
            irrelevant = traj["irrelevant_assets_loaded"]
            row.update(
                {
                    "total_tool_calls": traj["search_count"] + traj["show_count"] + traj["feedback_count"],
                    "assets_loaded_count": len(traj["assets_loaded"]),
                    "irrelevant_assets_loaded_count": None if irrelevant is None else len(irrelevant),
                    "time_to_first_search_ms": traj["time_to_first_search_ms"],
                    "time_to_first_correct_asset_ms": traj["time_to_first_correct_asset_ms"],
                    "context_bytes_loaded": traj["context_bytes_loaded"],
                    "asset_bytes_loaded": traj["asset_bytes_loaded"],
                }
            )
        per_run.append(row)
    rows = [r for r in per_run if r["search_count"] is not None]
    n = len(rows)
    passing = [r for r in rows if r["outcome"] == "pass"]

    def mean_of(key: str) -> float | None:
        return _mean(r[key] for r in rows)

    def total(key: str) -> int:
        return sum(r[key] for r in rows)

    passing_samples = [s for s in akm_runs if s["outcome"] == "pass" and counted(s) is not None]
    passing_tokens = [sample_tokens(s) for s in passing_samples]
    tool_calls = total("total_tool_calls")
    searches = total("search_count")
    aggregate = {
        "total_runs": len(akm_runs),
        "harness_error_runs": sum(s["outcome"] == "harness_error" for s in akm_runs),
        "runs_with_trajectory": n,
        "passing_runs": len(passing),
        "mean_search_count": mean_of("search_count"),
        "mean_show_count": mean_of("show_count"),
        "mean_feedback_count": mean_of("feedback_count"),
        "mean_tool_calls": mean_of("total_tool_calls"),
        "mean_assets_loaded": mean_of("assets_loaded_count"),
        "mean_irrelevant_assets_loaded": mean_of("irrelevant_assets_loaded_count"),
        "mean_time_to_first_search_ms": mean_of("time_to_first_search_ms"),
        "mean_time_to_first_correct_asset_ms": mean_of("time_to_first_correct_asset_ms"),
        "mean_context_bytes_loaded": mean_of("context_bytes_loaded"),
        "mean_asset_bytes_loaded": mean_of("asset_bytes_loaded"),
        "total_tool_calls": tool_calls,
        "tool_calls_per_success": tool_calls / len(passing) if passing else None,
        "cost_per_success": (
            fmean(t for t in passing_tokens if t is not None)
            if passing_tokens and all(t is not None for t in passing_tokens)
            else None
        ),
        "search_engagement_rate": sum(r["search_count"] > 0 for r in rows) / n if n else None,
        "show_engagement_rate": sum(r["show_count"] > 0 for r in rows) / n if n else None,
        "feedback_engagement_rate": sum(r["feedback_count"] > 0 for r in rows) / n if n else None,
        "search_to_show_ratio": total("show_count") / searches if searches else None,
        "mean_positive_feedback_count": mean_of("positive_feedback_count"),
        "mean_negative_feedback_count": mean_of("negative_feedback_count"),
    }
    return {"per_run": per_run, "aggregate": aggregate}
