"""The paired arm comparisons a report makes: akm − noakm (the verdict) and akm − synthetic.

Every figure of a comparison (delta, interval, test) is computed on the same paired task set:
the tasks where both arms have valid runs. The primary test is the paired sign-flip
permutation test on task-level deltas (:func:`significance.sign_flip_test`); its inversion
gives the interval, widened where needed to the run noise inside the tasks (:func:`_run_noise`).
A comparison is significant when its Holm-adjusted p is below 0.05 and its interval excludes
0, so the verdict never contradicts the interval it prints. The exact sign test and the
cluster bootstrap of earlier versions are kept as diagnostics. Holm's adjustment runs over
every comparison of the report (:func:`adjust`), and the interval goes with it (the test's
inversion at Holm's level for that comparison), so with three arms too an interval excludes 0
exactly when the adjusted p is below 0.05. Rules and reasons: docs/report.md, "Deltas" and
"How the numbers are tested".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from statistics import NormalDist, fmean
from typing import Any, Literal

from ..stats import intervals, significance
from .envelope_rows import TaskArmRow

ALPHA = significance.ALPHA
BOOTSTRAP_ITERATIONS = 2000
BOOTSTRAP_SEED = 20261129
# With m paired tasks the smallest two-sided p of the sign-flip test is 2 / 2^m, which is
# above 0.05 for m <= 5 (m <= 6 Holm-adjusted over two comparisons): no interval can exclude 0,
# so interval gates refuse fewer tasks. Read off the test (significance.min_paired_tasks).
MIN_PAIRED_TASKS = significance.min_paired_tasks(1)
# Above this share of harness errors in an arm, a verdict on that arm is refused ("unreliable").
MAX_HARNESS_ERROR_SHARE = 0.10
_FIGURES: tuple[Literal["pass_rate", "tokens_per_pass", "tokens_per_run", "wallclock_ms"], ...] = (
    "pass_rate",
    "tokens_per_pass",
    "tokens_per_run",
    "wallclock_ms",
)

Row = TaskArmRow | None


def _valid(row: Row) -> bool:
    return row is not None and row["pass_rate"] is not None


def delta(rows_a: Sequence[Row], rows_b: Sequence[Row]) -> dict[str, float | None]:
    """a − b per figure, averaged over the tasks both arms have valid runs for (a figure
    missing on either side of a task leaves that task out of that figure only)."""
    both = [(a, b) for a, b in zip(rows_a, rows_b) if _valid(a) and _valid(b)]
    out: dict[str, float | None] = {}
    for key in _FIGURES:
        diffs = [x - y for a, b in both if (x := a[key]) is not None and (y := b[key]) is not None]  # type: ignore[index]
        out[key] = fmean(diffs) if diffs else None
    return out


def _run_noise(kept: Sequence[tuple[list[bool], list[bool]]], alpha: float = ALPHA) -> float:
    """Half-width of a (1 − alpha) normal interval of the mean delta from the run noise inside
    the tasks alone (Agresti–Caffo: passes + 1 over runs + 2 per side). The variance of a mean of
    task deltas is never below it, while the spread of a few deltas can be (all equal: zero)."""
    var = math.fsum(
        (c + 1) / (n + 2) * (1 - (c + 1) / (n + 2)) / (n + 2)
        for a, b in kept
        for c, n in ((sum(a), len(a)), (sum(b), len(b)))
    )
    z = intervals.Z_95 if alpha == ALPHA else NormalDist().inv_cdf(1 - alpha / 2)
    return z * math.sqrt(var) / len(kept)


class Comparison(dict[str, Any]):
    """A comparison block (a plain dict to every reader and to JSON) that keeps the task deltas
    it was computed from, so that :func:`adjust` can recompute its interval at Holm's level."""

    deltas: list[Fraction]
    kept: list[tuple[list[bool], list[bool]]]
    resamples: int


def _set_interval(block: Comparison, test: dict[str, Any], alpha: float) -> None:
    """The interval of ``test`` (the sign-flip test at level ``alpha``): its own inversion,
    widened to the run noise at the same level, clipped to [-1, 1]."""
    low, high, mean = test["low"], test["high"], block["delta"]
    if mean is not None:
        half = _run_noise(block.kept, alpha)
        low, high = max(-1.0, min(low, mean - half)), min(1.0, max(high, mean + half))
    block.update(low=low, high=high, confidence=1 - alpha)
    block["diagnostics"].update(permutation_low=test["low"], permutation_high=test["high"])


def _errors(rows: Sequence[Row]) -> dict[str, Any]:
    runs = sum(r["count"] for r in rows if r is not None)
    errors = sum(r["harness_error_count"] for r in rows if r is not None)
    return {"runs": runs, "harness_errors": errors, "share": errors / runs if runs else None}


def _artefact_bounds(rows_a: Sequence[Row], rows_b: Sequence[Row]) -> dict[str, float] | None:
    """The delta if every harness-error run had failed on one side and passed on the other:
    the range an artefact of unequal harness errors can reach (tasks both arms ran)."""
    both = [(a, b) for a, b in zip(rows_a, rows_b) if a is not None and b is not None and a["count"] and b["count"]]
    if not both:
        return None

    def rate(row: TaskArmRow, errors_pass: bool) -> float:
        value: float = (row["passes"] + (row["harness_error_count"] if errors_pass else 0)) / row["count"]
        return value

    low = fmean(rate(a, False) - rate(b, True) for a, b in both)
    high = fmean(rate(a, True) - rate(b, False) for a, b in both)
    return {"low": low, "high": high}


def compare_arms(
    arms: tuple[str, str],
    rows_a: Sequence[Row],
    rows_b: Sequence[Row],
    outcomes_a: Sequence[list[bool]],
    outcomes_b: Sequence[list[bool]],
    *,
    resamples: int = significance.RESAMPLES,
) -> Comparison:
    """The paired comparison arms[0] − arms[1] over tasks (rows and outcomes in task order).
    ``resamples`` only matters above EXACT_MAX_TASKS paired tasks (the p-value is valid for any)."""
    kept = [(a, b) for a, b in zip(outcomes_a, outcomes_b) if a and b]
    deltas = [Fraction(sum(a), len(a)) - Fraction(sum(b), len(b)) for a, b in kept]
    test = significance.sign_flip_test(deltas, resamples=resamples)
    boot = intervals.paired_bootstrap_delta(kept, iterations=BOOTSTRAP_ITERATIONS, seed=BOOTSTRAP_SEED)
    sign = intervals.sign_test([(sum(a) / len(a), sum(b) / len(b)) for a, b in kept])
    errors = {arms[0]: _errors(rows_a), arms[1]: _errors(rows_b)}
    shares = [Fraction(e["harness_errors"], e["runs"]) if e["runs"] else Fraction(0) for e in errors.values()]
    reason = unreliable(errors)
    block = Comparison(
        tasks=len(kept),
        tasks_unpaired=sum(bool(a) != bool(b) for a, b in zip(outcomes_a, outcomes_b)),
        delta=float(sum(deltas) / len(deltas)) if deltas else None,
        low=None,
        high=None,
        confidence=None,
        wins=sign["wins"],
        losses=sign["losses"],
        ties=sign["ties"],
        p_value=test["p_value"],
        p_value_holm=test["p_value"],
        holm_family=1,
        significant=False,
        method="sign_flip_permutation",
        exact=test["exact"],
        iterations=test["resamples"],
        seed=significance.SEED,
        diagnostics={
            "sign_test_p": sign["p_value"] if kept else None,
            "bootstrap_low": boot["low"],
            "bootstrap_high": boot["high"],
            "bootstrap_iterations": boot["iterations"],
            "bootstrap_seed": boot["seed"],
        },
        harness_errors=errors,
        reliable=reason is None,
        unreliable_arms=_blamed(errors) if reason else [],
        unreliable_reason=reason,
        artefact_bounds=_artefact_bounds(rows_a, rows_b) if shares[0] != shares[1] else None,
    )
    block.deltas, block.kept, block.resamples = deltas, kept, resamples
    _set_interval(block, test, ALPHA)
    block["significant"] = _significant(test["p_value"], block["low"], block["high"])
    return block


def unreliable(errors: dict[str, dict[str, Any]]) -> str | None:
    """Why no claim on these arms' runs can be trusted, or None: the one rule of the verdict and
    of every gate (docs/report.md, "Gates"). ``errors`` is ``{arm: {runs, harness_errors}}``.

    An arm over MAX_HARNESS_ERROR_SHARE measured too little of what it ran; two arms whose
    harness-error counts differ beyond noise (Fisher exact, p < ALPHA) failed where the harness
    failed, and a harness error is not a verdict on the agent, so the comparison may measure
    the harness (e.g. an akm release that breaks akm turns akm's failures into harness errors)."""
    for arm, e in errors.items():
        if e["runs"] and e["harness_errors"] / e["runs"] > MAX_HARNESS_ERROR_SHARE:
            return (
                f"{e['harness_errors']} of {e['runs']} {arm} runs are harness errors "
                f"(over the {MAX_HARNESS_ERROR_SHARE:.0%} limit)"
            )
    counted = [(arm, e) for arm, e in errors.items() if e["runs"]]
    if len(counted) == 2:
        (a, ea), (b, eb) = counted
        p = significance.fisher_exact(ea["harness_errors"], ea["runs"], eb["harness_errors"], eb["runs"])
        if p < ALPHA:
            return (
                f"harness errors differ between arms beyond noise ({a} {ea['harness_errors']}/{ea['runs']}, "
                f"{b} {eb['harness_errors']}/{eb['runs']}, Fisher exact p={p:.2g})"
            )
    return None


def _blamed(errors: dict[str, dict[str, Any]]) -> list[str]:
    """The arms over the limit, else the arm with the larger harness-error share."""
    over = [a for a, e in errors.items() if e["runs"] and e["harness_errors"] / e["runs"] > MAX_HARNESS_ERROR_SHARE]
    return over or [max(errors, key=lambda a: errors[a]["harness_errors"] / max(1, errors[a]["runs"]))]


def _significant(p: float | None, low: float | None, high: float | None) -> bool:
    return p is not None and p < ALPHA and low is not None and high is not None and not low <= 0.0 <= high


def adjust(comparisons: Sequence[dict[str, Any]]) -> None:
    """Holm's adjustment over every comparison that has a p-value; sets ``p_value_holm``,
    ``holm_family``, the interval and ``significant`` (adjusted p < ALPHA, interval excluding 0)
    in place.

    The interval must invert the adjusted test, or a verdict would read "no significant
    difference" beside an interval that excludes 0. Holm tests the comparison of rank r (by p)
    at ALPHA / (k − r) and stops at the first rank s it cannot reject; so each comparison gets
    the sign-flip interval at ALPHA / (k − min(r, s)): below s its p is under that level (0
    excluded), from s on its p is at or above it (0 inside). Each is at least as wide as the
    unadjusted 95% interval, so it covers at least as often (docs/report.md, "Deltas")."""
    tested = [c for c in comparisons if c.get("p_value") is not None]
    k = len(tested)
    adjusted = significance.holm([c["p_value"] for c in tested])
    order = sorted(range(k), key=lambda i: tested[i]["p_value"])  # Holm's own order
    stop = next((rank for rank, i in enumerate(order) if adjusted[i] >= ALPHA), k)
    for rank, i in enumerate(order):
        c, level = tested[i], ALPHA / (k - min(rank, stop))
        c["p_value_holm"], c["holm_family"] = adjusted[i], k
        if level != ALPHA and isinstance(c, Comparison):  # a block read back from JSON keeps its own
            _set_interval(c, significance.sign_flip_test(c.deltas, alpha=level, resamples=c.resamples), level)
        c["significant"] = _significant(adjusted[i], c["low"], c["high"])


def gate_refusal(block: dict[str, Any] | None, name: str) -> str | None:
    """Why a gate on this comparison's interval or test cannot be trusted, or None."""
    if not isinstance(block, dict):
        return None
    tasks, family = block.get("tasks"), block.get("holm_family") or 1
    need = significance.min_paired_tasks(family)
    if isinstance(tasks, int) and tasks < need:
        holm = f", Holm-adjusted over {family} comparisons" if family > 1 else ""
        return (
            f"{name} needs at least {need} paired tasks{holm} (has {tasks}): "
            "with fewer, the paired test can never reject"
        )
    if block.get("reliable") is False:
        return f"{name} refused: {block.get('unreliable_reason') or unreliable(block['harness_errors'])}"
    return None
