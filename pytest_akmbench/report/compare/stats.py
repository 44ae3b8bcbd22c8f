"""The statistics compare applies to a change in pass rate over the tasks two reports share
(docs/report.md, "compare"): the mean per-task change, the stratified permutation test, Holm's
adjustment over a family, and an interval built from that same test, so that the interval
excludes 0 exactly when the change is called beyond noise. The arms' pass rates and the
workflows' strict pass rates use the same ones. Pure: no pytest."""

from __future__ import annotations

import math
from typing import Any

from ...stats import intervals, significance

Strata = list[tuple[int, int, int, int]]  # per task: (passes, runs) of current, then of base


def _run_variance(c: int, n: int) -> float:
    """A side's run variance of its task's rate: the unbiased p(1 − p)/(n − 1), or where that is
    smaller the Agresti–Caffo p̃(1 − p̃)/(n + 2), p̃ = (c + 1)/(n + 2): a task at 0/n or n/n shows
    no variance, yet a rate just below 1 (or above 0) gives such runs most of the time."""
    tilde = (c + 1) / (n + 2)
    floor = tilde * (1 - tilde) / (n + 2)
    return floor if n < 2 else max(c / n * (1 - c / n) / (n - 1), floor)


def _run_noise(strata: Strata, level: float) -> float:
    """Half-width of the t(m − 1) interval of the mean per-task change from the run variances."""
    m = len(strata)
    if m < 2:
        return 0.0
    var = math.fsum(_run_variance(c, n) for ch, nh, cb, nb in strata for c, n in ((ch, nh), (cb, nb)))
    return intervals.student_t_quantile(1 - level / 2, m - 1) * math.sqrt(var) / m


def change_interval(strata: Strata, null: significance.StratifiedNull, level: float) -> tuple[float, float]:
    """The 1 − ``level`` interval of the mean per-task change, built on the test at ``level``.

    The end towards 0 is the delta minus the largest change the permutation test does not call
    (its critical value), so 0 is outside exactly when the test rejects; the other end is the
    wider of that and the t(m − 1) interval of the per-task run variances, which keeps the
    coverage where the test's null law (the sides pooled, nothing where every run agrees) is
    narrower than the change's.
    """
    m = len(strata)
    delta = null.observed / (null.scale * m)
    critical = null.critical(level)
    test_half = critical / (null.scale * m)
    far = max(test_half, _run_noise(strata, level))
    if abs(null.observed) <= critical:  # not rejected: 0 stays inside
        low, high = delta - far, delta + far
    elif delta > 0:
        low, high = delta - test_half, delta + far
    else:
        low, high = delta - far, delta + test_half
    return max(-1.0, low), min(1.0, high)


def _holm_levels(p_values: list[float]) -> tuple[list[bool], list[float]]:
    """Holm's step-down at ALPHA: which hypotheses it rejects, and the level of each one's
    interval (the step's level where rejected, else the level of the step where it stopped), so
    each interval excludes 0 exactly when its hypothesis is rejected and covers at >= 95%."""
    k = len(p_values)
    order = sorted(range(k), key=lambda i: p_values[i])
    rejected, levels = [False] * k, [significance.ALPHA] * k
    stopped: float | None = None
    for rank, i in enumerate(order):
        level = significance.ALPHA / (k - rank)
        if stopped is None and p_values[i] < level:
            rejected[i], levels[i] = True, level
        else:
            stopped = level if stopped is None else stopped
            levels[i] = stopped
    return rejected, levels


def paired_changes(family: list[Strata]) -> list[dict[str, Any]]:
    """The change over the tasks in both reports for each member of a Holm family (the arms,
    or the workflows): mean per-task delta, stratified permutation test, Holm over the members
    tested, and each interval at the level of its Holm step."""
    nulls = [significance.stratified_null(s) for s in family]
    raw = [None if n is None else n.tail(abs(n.observed)) for n in nulls]
    tested = [i for i, p in enumerate(raw) if p is not None]
    p_tested = [raw[i] for i in tested]
    holm = significance.holm(p_tested)  # type: ignore[arg-type]
    rejected, levels = _holm_levels(p_tested)  # type: ignore[arg-type]
    out = []
    for i, strata in enumerate(family):
        change = _change(strata, nulls[i])
        if i in tested:
            j = tested.index(i)
            low, high = change_interval(strata, nulls[i], levels[j])  # type: ignore[arg-type]
            change.update(
                low=low,
                high=high,
                confidence=1 - levels[j],
                p_value_holm=holm[j],
                significant=rejected[j],
            )
        change["holm_family"] = len(tested)
        out.append(change)
    return out


def _change(strata: Strata, null: significance.StratifiedNull | None) -> dict[str, Any]:
    delta = math.fsum(h / nh - b / nb for h, nh, b, nb in strata) / len(strata) if strata else None
    return {
        "tasks": len(strata),
        "delta": delta,
        "low": None,
        "high": None,
        "confidence": None,
        "wins": sum(h * nb > b * nh for h, nh, b, nb in strata),
        "losses": sum(h * nb < b * nh for h, nh, b, nb in strata),
        "ties": sum(h * nb == b * nh for h, nh, b, nb in strata),
        "p_value": None if null is None else null.tail(abs(null.observed)),
        "p_value_holm": None,
        "holm_family": 0,
        "significant": False,
        "method": "stratified_permutation",
        "exact": None if null is None else null.exact,
        "iterations": 0 if null is None else null.resamples,
        "seed": significance.SEED,
        "unequal_runs": any(nh != nb for _, nh, _, nb in strata),
    }


def holm_flag(items: list[dict[str, Any]], flag: str) -> None:
    """Holm over the per-task rows that were tested (Fisher's p): ``flag`` becomes adjusted
    p < alpha."""
    tested = [i for i in items if i["p_value"] is not None]
    for item, p in zip(tested, significance.holm([i["p_value"] for i in tested])):
        item["p_value_holm"] = p
        item[flag] = p < significance.ALPHA
