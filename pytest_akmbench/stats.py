"""Small, dependency-free statistics for benchmark reports.

Everything here is pure and deterministic (the bootstrap takes an explicit
seed), so reports are reproducible byte for byte across runs and workers.
"""

from __future__ import annotations

import math
import random
import statistics
from fractions import Fraction
from typing import Any

__all__ = [
    "wilson_interval",
    "pass_at_k",
    "pass_hat_k",
    "stdev",
    "is_flaky",
    "paired_bootstrap_delta",
    "sign_test",
    "significant",
]

# Two-sided 95% normal quantile, Φ⁻¹(0.975).
Z_95 = 1.959963984540054

# Threshold on the stdev of 0/1 outcomes above which a task counts as flaky.
FLAKY_STDEV = 0.2


def _check_counts(n: int, c: int, k: int) -> None:
    if n < 0 or not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")


def wilson_interval(passes: int, n: int, z: float = Z_95) -> tuple[float, float] | None:
    """Wilson score interval for passes/n; None when n == 0.

    Preferred over the normal (Wald) interval because it stays inside [0, 1]
    and is not degenerate at 0/n or n/n, which are common with few seeds.
    """
    if n < 0 or not 0 <= passes <= n:
        raise ValueError(f"need 0 <= passes <= n, got passes={passes}, n={n}")
    if n == 0:
        return None
    p = passes / n
    z2 = z * z
    denom = 1.0 + z2 / n
    center = (p + z2 / (2 * n)) / denom
    half = (z / denom) * math.sqrt(p * (1.0 - p) / n + z2 / (4 * n * n))
    # The exact bounds at 0/n and n/n are 0 and 1; rounding would otherwise
    # leave them a hair off (e.g. 0.9999999999999999), so pin them.
    low = 0.0 if passes == 0 else max(0.0, center - half)
    high = 1.0 if passes == n else min(1.0, center + half)
    return low, high


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """Unbiased pass@k (Chen et al. 2021): 1 - C(n-c, k) / C(n, k).

    None when n == 0 or k > n. Computed with exact integers and a single
    final rounding, so it neither overflows nor loses precision for large n.
    """
    _check_counts(n, c, k)
    if n == 0 or k > n:
        return None
    # math.comb returns 0 when n - c < k, giving pass@k == 1 as it should.
    return float(1 - Fraction(math.comb(n - c, k), math.comb(n, k)))


def pass_hat_k(n: int, c: int, k: int) -> float | None:
    """pass^k (tau-bench): C(c, k) / C(n, k), the chance k draws without
    replacement all pass; None when n == 0 or k > n."""
    _check_counts(n, c, k)
    if n == 0 or k > n:
        return None
    return float(Fraction(math.comb(c, k), math.comb(n, k)))


def stdev(values: list[float]) -> float:
    """Sample standard deviation (n - 1 denominator); 0.0 when len <= 1."""
    if len(values) <= 1:
        return 0.0
    # statistics.stdev sums exactly, so [x, x, x] gives exactly 0.0.
    return statistics.stdev(float(v) for v in values)


def is_flaky(outcomes: list[bool]) -> bool:
    """True when a task both passes and fails and its 0/1 stdev exceeds 0.2.

    For mixed outcomes the stdev is at least 1/sqrt(n), so with 25+ seeds a
    single odd outcome no longer counts as flaky: rare blips are tolerated.
    """
    if not outcomes:
        return False
    passes = sum(1 for o in outcomes if o)
    if passes in (0, len(outcomes)):
        return False
    return stdev([1.0 if o else 0.0 for o in outcomes]) > FLAKY_STDEV


def _percentile(sorted_values: list[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default, Hyndman-Fan type 7)."""
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    frac = pos - lo
    a, b = sorted_values[lo], sorted_values[hi]
    # Written so that a == b returns a exactly (degenerate intervals stay [d, d]).
    return a if a == b else a + (b - a) * frac


def paired_bootstrap_delta(
    pairs: list[tuple[list[bool], list[bool]]],
    *,
    iterations: int = 2000,
    seed: int = 20261129,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """Cluster bootstrap over tasks of the macro pass-rate difference A - B.

    Each pair is one task's (A outcomes, B outcomes) over seeds; tasks with an
    empty side are dropped. Tasks, not seeds, are resampled because seeds of
    one task are correlated. The interval is the percentile interval with
    linear interpolation between order statistics.
    """
    if iterations < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    diffs = [
        sum(map(bool, a)) / len(a) - sum(map(bool, b)) / len(b)
        for a, b in pairs
        if len(a) and len(b)
    ]
    m = len(diffs)
    result: dict[str, Any] = {
        "delta": None,
        "low": None,
        "high": None,
        "tasks": m,
        "iterations": iterations,
        "seed": seed,
    }
    if m == 0:
        return result
    rng = random.Random(seed)
    choices = rng.choices
    # Per-task differences are precomputed, so each replicate is one sampled
    # mean; this keeps 2000 x 2000 well under a second. fsum makes sums
    # order-independent, so reported values carry no float noise and equal
    # differences give exactly [d, d].
    stats = sorted(math.fsum(choices(diffs, k=m)) / m for _ in range(iterations))
    alpha = 1.0 - confidence
    result["delta"] = math.fsum(diffs) / m
    result["low"] = _percentile(stats, alpha / 2)
    result["high"] = _percentile(stats, 1.0 - alpha / 2)
    return result


def sign_test(pairs: list[tuple[float, float]]) -> dict[str, Any]:
    """Exact two-sided sign test on per-task pass rates (a, b).

    Tasks with a > b are wins, a < b losses, ties are dropped; under H0 wins
    ~ Binomial(wins + losses, 1/2). p = min(1, 2 * P(X <= min(wins, losses))),
    computed exactly; 1.0 when every task is tied.
    """
    wins = sum(1 for a, b in pairs if a > b)
    losses = sum(1 for a, b in pairs if a < b)
    ties = len(pairs) - wins - losses
    n = wins + losses
    if n == 0:
        p = 1.0
    else:
        tail = sum(math.comb(n, i) for i in range(min(wins, losses) + 1))
        p = float(min(Fraction(1), Fraction(2 * tail, 2**n)))
    return {"wins": wins, "losses": losses, "ties": ties, "p_value": p}


def significant(
    interval_low: float | None,
    interval_high: float | None,
    p_value: float | None,
    alpha: float = 0.05,
) -> bool:
    """True when the interval excludes 0 or p_value < alpha.

    The interval excludes 0 when both bounds are non-zero and share a sign.
    Missing values (None) simply don't vote. Note that accepting either
    criterion is slightly more liberal than alpha for a single test.
    """
    if interval_low is not None and interval_high is not None:
        if (interval_low > 0 and interval_high > 0) or (interval_low < 0 and interval_high < 0):
            return True
    return p_value is not None and p_value < alpha
