"""Per-task and corpus metrics over samples, with the reference's names and corrected meaning.

Corrections to the reference (its §14): ``harness_error`` runs are out of every pass-rate
denominator and counted on their own; an arm with no runs is ``None``, never 0; token
figures use only runs whose tokens were measured, and are ``None`` when none were.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from statistics import fmean
from typing import Any

Sample = dict[str, Any]
ARM_ORDER = ("noakm", "synthetic", "akm")


def sample_tokens(sample: Sample) -> int | None:
    """Total tokens of a run, or None when they were not measured."""
    tokens = sample.get("tokens")
    if sample.get("token_measurement") != "measured" or not isinstance(tokens, dict):
        return None
    return int(tokens.get("total", 0))


def _mean(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return fmean(kept) if kept else None


def per_task(runs: Sequence[Sample]) -> dict[str, Any] | None:
    """Metrics of one task under one arm; None when the arm has no run of the task."""
    if not runs:
        return None
    valid = [r for r in runs if r["outcome"] != "harness_error"]
    passes = [r for r in valid if r["outcome"] == "pass"]
    indicators = [1.0 if r["outcome"] == "pass" else 0.0 for r in valid]
    first = min(valid, key=lambda r: r["seed"]) if valid else None
    measured = [r for r in runs if sample_tokens(r) is not None]
    return {
        "pass_rate": len(passes) / len(valid) if valid else None,
        "pass_at_1": (1 if first["outcome"] == "pass" else 0) if first else None,
        "tokens_per_pass": _mean(sample_tokens(r) for r in passes),
        "tokens_per_run": _mean(sample_tokens(r) for r in measured),
        "wallclock_ms": _mean(r["wallclock_ms"] for r in valid),
        "pass_rate_stdev": _stdev(indicators),
        "budget_exceeded_count": sum(r["outcome"] == "budget_exceeded" for r in runs),
        "harness_error_count": len(runs) - len(valid),
        "count": len(runs),
        "valid_count": len(valid),
        "runs_with_measured_tokens": len(measured),
    }


def _stdev(values: list[float]) -> float:
    if len(values) <= 1:
        return 0.0
    mean = fmean(values)
    return (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5


def aggregate(per_task_rows: Sequence[dict[str, Any] | None]) -> dict[str, Any] | None:
    """Macro average over the tasks the arm ran; None when it ran none."""
    rows = [r for r in per_task_rows if r is not None]
    if not rows:
        return None
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
