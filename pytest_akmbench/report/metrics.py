"""Per-task and per-arm metrics over samples: pass rates, tokens and time, with the reference's
names and corrected meaning.

Corrections to the reference (docs/report.md, "Corrected meanings of reference keys"): ``harness_error`` runs are out of every figure (pass
rates, tokens, time, trajectory, search bridge, assets, overhead) and counted on their own; an
arm with no runs is ``None``, never 0; token figures use only runs whose tokens were measured,
and are ``None`` when none were. Added: Wilson intervals per task, an interval per arm over
tasks, pass@k / pass^k, flakiness (see docs/report.md). The paired arm comparisons are in
:mod:`lift`; what the agent did with akm is in :mod:`akm_usage`; where akm helped or hurt, by
task, domain and category, is in :mod:`transfer`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from statistics import fmean
from typing import Any

from ..records import Sample
from ..stats import intervals
from .envelope_rows import TaskArmRow
from .envelope_types import TokenMeasurement

ARM_ORDER = ("noakm", "synthetic", "akm")
DEFAULT_FLOOR = 3


def sample_tokens(sample: Mapping[str, Any]) -> int | None:
    """Total tokens of a run, or None when they were not measured."""
    tokens = sample.get("tokens")
    if sample.get("token_measurement") != "measured" or not isinstance(tokens, dict):
        return None
    return int(tokens.get("total", 0))


def known_mean(values: Iterable[float | None]) -> float | None:
    """Mean of the values that are known (not None); None when none is."""
    kept = [v for v in values if v is not None]
    return fmean(kept) if kept else None


def _ci(pair: tuple[float, float] | None) -> dict[str, float] | None:
    return None if pair is None else {"low": pair[0], "high": pair[1]}


@lru_cache(maxsize=65536)
def _pass_k(n: int, c: int, k: int) -> tuple[float | None, float | None]:
    return intervals.pass_at_k(n, c, k), intervals.pass_hat_k(n, c, k)


def valid_outcomes(runs: Sequence[Sample]) -> list[bool]:
    """Pass indicators of the runs that count (harness errors excluded), in seed order."""
    return [r["outcome"] == "pass" for r in runs if r["outcome"] != "harness_error"]


def floor_status(valid: int, floor: int) -> str:
    """``covered`` (≥ floor valid samples), ``partial`` (some) or ``missing`` (none)."""
    return "covered" if valid >= floor else "partial" if valid else "missing"


def per_task(runs: Sequence[Sample], *, seeds: int | None = None, floor: int = DEFAULT_FLOOR) -> TaskArmRow | None:
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
    sd = intervals.stdev([1.0 if r["outcome"] == "pass" else 0.0 for r in valid])
    return {
        "pass_rate": c / n if n else None,
        "pass_at_1": (1 if first["outcome"] == "pass" else 0) if first else None,
        "tokens_per_pass": known_mean(sample_tokens(r) for r in passes),
        "tokens_per_run": known_mean(sample_tokens(r) for r in measured),
        "wallclock_ms": known_mean(r.get("wallclock_ms") for r in valid),
        "pass_rate_stdev": sd,
        "budget_exceeded_count": sum(r["outcome"] == "budget_exceeded" for r in runs),
        "harness_error_count": len(runs) - n,
        "count": len(runs),
        "valid_count": n,
        "runs_with_measured_tokens": len(measured),
        "passes": c,
        "pass_rate_ci": _ci(intervals.wilson_interval(c, n)) if n else None,
        "pass_at_k": at_k,
        "pass_hat_k": hat_k,
        "flaky": intervals.is_flaky([r["outcome"] == "pass" for r in valid]),
        "floor_status": floor_status(n, floor),
    }


def aggregate(per_task_rows: Sequence[TaskArmRow | None]) -> dict[str, Any] | None:
    """Macro average over the tasks the arm ran; None when it ran none.

    ``pass_rate_ci`` is the interval of the mean over a population of tasks like these
    (:func:`intervals.task_rate_interval`): it assumes nothing about how task difficulty is spread.
    ``pass_at_k``/``pass_hat_k`` run over one task set for every k (the tasks with valid runs)
    and stop at the fewest valid runs any of them has, so the curves are monotone in k.
    """
    rows = [r for r in per_task_rows if r is not None]
    if not rows:
        return None
    rated = [r for r in rows if r["pass_rate"] is not None]
    passes, valid = sum(r["passes"] for r in rows), sum(r["valid_count"] for r in rows)
    interval = intervals.task_rate_interval([rate for r in rated if (rate := r["pass_rate"]) is not None])
    ci = None if interval is None else {"low": interval[0], "high": interval[1], "method": "clopper_pearson_tasks"}
    kmax = min((r["valid_count"] for r in rated), default=0)
    keys = [str(k) for k in range(1, kmax + 1)]
    return {
        "pass_rate": known_mean(r["pass_rate"] for r in rows),
        "pass_at_1": known_mean(r["pass_at_1"] for r in rows),
        "tokens_per_pass": known_mean(r["tokens_per_pass"] for r in rows),
        "tokens_per_run": known_mean(r["tokens_per_run"] for r in rows),
        "wallclock_ms": known_mean(r["wallclock_ms"] for r in rows),
        "tasks": len(rows),
        "runs": sum(r["count"] for r in rows),
        "harness_error_count": sum(r["harness_error_count"] for r in rows),
        "budget_exceeded_count": sum(r["budget_exceeded_count"] for r in rows),
        "tasks_with_valid_runs": len(rated),
        "valid_runs": valid,
        "passes": passes,
        "pass_rate_ci": ci,
        "pass_at_k": {k: known_mean(r["pass_at_k"][k] for r in rated) for k in keys},
        "pass_hat_k": {k: known_mean(r["pass_hat_k"][k] for r in rated) for k in keys},
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


def token_measurement(runs: Sequence[Sample]) -> TokenMeasurement:
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
