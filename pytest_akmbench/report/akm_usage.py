"""What the agent did with akm, over the akm arm's runs: trajectory rates, failure modes, the
search → outcome bridge, per-asset loads and the akm overhead (docs/report.md).

These figures read the per-sample ``trajectory`` dict made by :mod:`cell.trajectory`; samples
without one are left out of them, never guessed, and harness errors never count.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import fmean
from typing import Any

from ..records import Sample
from .envelope_types import FailureModes
from .metrics import known_mean, sample_tokens


def observed(sample: Sample) -> dict[str, Any] | None:
    """The sample's trajectory when one was actually observed, else None."""
    traj = sample.get("trajectory")
    return traj if isinstance(traj, dict) and traj.get("source") is not None else None


def counted(sample: Sample) -> dict[str, Any] | None:
    """The trajectory of a run that counts in akm figures: observed, and not a harness error."""
    return None if sample["outcome"] == "harness_error" else observed(sample)


def unconfirmed_cells(akm_runs: Sequence[Sample]) -> list[dict[str, Any]]:
    """The akm-arm runs whose akm log held events no akm call of the agent accounts for (akm log
    tampered or unconfirmed, docs/akm.md), in run order, harness errors included: such a log is
    worth a look whatever the outcome."""
    out = []
    for s in akm_runs:
        traj = s.get("trajectory")
        n = traj.get("unconfirmed_events") if isinstance(traj, dict) else None
        if isinstance(n, int) and n > 0:
            out.append({"task_id": s["task_id"], "seed": s["seed"], "outcome": s["outcome"], "unconfirmed_events": n})
    return out


def trajectory_aggregate(akm_runs: Sequence[Sample]) -> dict[str, Any]:
    """``trajectory.akm``: rates over the akm-arm runs whose trajectory was observed
    (harness errors excluded), and the runs whose akm log was not confirmed by their calls."""
    trajs = [t for t in map(counted, akm_runs) if t is not None]
    flagged = unconfirmed_cells(akm_runs)
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
            "unconfirmed_runs": len(flagged),
            "unconfirmed_events": sum(c["unconfirmed_events"] for c in flagged),
        },
        "unconfirmed_cells": flagged,
    }


def failure_modes(labelled: Sequence[tuple[str, str | None]]) -> FailureModes:
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
    rows: list[dict[str, Any]] = [
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


_OVERHEAD_COUNTS = (
    "search_count",
    "show_count",
    "feedback_count",
    "positive_feedback_count",
    "negative_feedback_count",
)
_OVERHEAD_FIGURES = (
    *_OVERHEAD_COUNTS,
    "total_tool_calls",
    "assets_loaded_count",
    "irrelevant_assets_loaded_count",
    "time_to_first_search_ms",
    "time_to_first_correct_asset_ms",
    "context_bytes_loaded",
    "asset_bytes_loaded",
)


def akm_overhead(akm_runs: Sequence[Sample]) -> dict[str, Any]:
    """``akm_overhead`` (docs/report.md) with polarity from the parsed commands and events,
    timings anchored at the agent's start (or first step), and bytes actually measured.
    ``per_run`` lists every akm run; a harness-error run has null figures and stays out of
    the aggregate."""
    per_run = [_overhead_row(s) for s in akm_runs]
    return {"per_run": per_run, "aggregate": _overhead_aggregate(akm_runs, per_run)}


def _overhead_row(sample: Sample) -> dict[str, Any]:
    """One run's overhead figures; all None when the run does not count (no trajectory)."""
    row: dict[str, Any] = {k: sample[k] for k in ("task_id", "arm", "seed", "outcome")}
    traj = counted(sample)
    if traj is None:
        row.update(dict.fromkeys(_OVERHEAD_FIGURES))
        return row
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
    return row


def _overhead_aggregate(akm_runs: Sequence[Sample], per_run: list[dict[str, Any]]) -> dict[str, Any]:
    """Means, totals and engagement rates over the runs that count."""
    rows = [r for r in per_run if r["search_count"] is not None]
    n = len(rows)
    passing = [r for r in rows if r["outcome"] == "pass"]

    def mean_of(key: str) -> float | None:
        return known_mean(r[key] for r in rows)

    def total(key: str) -> int:
        return sum(r[key] for r in rows)

    def engaged(key: str) -> float | None:
        return sum(r[key] > 0 for r in rows) / n if n else None

    tool_calls, searches = total("total_tool_calls"), total("search_count")
    return {
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
        "cost_per_success": _cost_per_success(akm_runs),
        "search_engagement_rate": engaged("search_count"),
        "show_engagement_rate": engaged("show_count"),
        "feedback_engagement_rate": engaged("feedback_count"),
        "search_to_show_ratio": total("show_count") / searches if searches else None,
        "mean_positive_feedback_count": mean_of("positive_feedback_count"),
        "mean_negative_feedback_count": mean_of("negative_feedback_count"),
    }


def _cost_per_success(akm_runs: Sequence[Sample]) -> float | None:
    """Mean tokens of the passing runs that count; None unless every one was measured."""
    tokens = [sample_tokens(s) for s in akm_runs if s["outcome"] == "pass" and counted(s) is not None]
    known = [t for t in tokens if t is not None]
    return fmean(known) if tokens and len(known) == len(tokens) else None
