"""The statistics compare applies to a change in pass rate over the tasks two reports share
(docs/report.md, "compare"): the mean per-task change, its interval, the stratified permutation
test, and Holm's adjustment over a family. The arms' pass rates and the workflows' strict pass
rates use the same ones. Pure: no pytest."""

from __future__ import annotations

import math
from typing import Any

from . import significance, stats

Strata = list[tuple[int, int, int, int]]  # per task: (passes, runs) of current, then of base


def change_interval(strata: Strata, delta: float) -> tuple[float, float]:
    """95% normal interval of the mean per-task change, with Agresti–Caffo variances per side
    (passes + 1 over runs + 2), so tasks at 0/n or n/n still carry their run noise."""
    var = math.fsum(
        ((c + 1) / (n + 2)) * (1 - (c + 1) / (n + 2)) / (n + 2)
        for ch, nh, cb, nb in strata
        for c, n in ((ch, nh), (cb, nb))
    )
    half = stats.Z_95 * math.sqrt(var) / len(strata)
    return max(-1.0, delta - half), min(1.0, delta + half)


def paired_change(strata: Strata) -> dict[str, Any]:
    """The change over the tasks in both reports: mean per-task delta, its interval and the
    stratified permutation test (Holm's adjustment is set later, over the family)."""
    test = significance.stratified_permutation_test(strata)
    delta = math.fsum(h / nh - b / nb for h, nh, b, nb in strata) / len(strata) if strata else None
    low, high = change_interval(strata, delta) if delta is not None else (None, None)
    return {
        "tasks": len(strata),
        "delta": delta,
        "low": low,
        "high": high,
        "wins": sum(h * nb > b * nh for h, nh, b, nb in strata),
        "losses": sum(h * nb < b * nh for h, nh, b, nb in strata),
        "ties": sum(h * nb == b * nh for h, nh, b, nb in strata),
        "p_value": test["p_value"],
        "p_value_holm": test["p_value"],
        "holm_family": 1,
        "significant": False,
        "method": "stratified_permutation",
        "exact": test["exact"],
        "iterations": test["resamples"],
        "seed": significance.SEED,
        "unequal_runs": any(nh != nb for _, nh, _, nb in strata),
    }


def holm_flag(items: list[dict[str, Any]], flag: str) -> None:
    """Holm over the items that were tested; ``flag`` becomes adjusted p < alpha (and, for an
    aggregate, its interval excluding 0, so a verdict never contradicts the interval shown)."""
    tested = [i for i in items if i["p_value"] is not None]
    for item, p in zip(tested, significance.holm([i["p_value"] for i in tested])):
        item["p_value_holm"] = p
        item[flag] = p < significance.ALPHA and not (item.get("low", 1.0) <= 0.0 <= item.get("high", 1.0))
