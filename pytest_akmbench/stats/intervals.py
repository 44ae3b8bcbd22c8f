"""Small, dependency-free statistics for benchmark reports.

Everything here is pure and deterministic (the bootstrap takes an explicit
seed), so reports are reproducible byte for byte across runs and workers.
"""

from __future__ import annotations

import math
import random
import statistics
from fractions import Fraction
from functools import lru_cache
from typing import Any

__all__ = [
    "beta_quantile",
    "cluster_rate_interval",
    "is_flaky",
    "paired_bootstrap_delta",
    "pass_at_k",
    "pass_hat_k",
    "sign_test",
    "stdev",
    "student_t_quantile",
    "task_rate_interval",
    "wilson_interval",
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


def _wilson(p: float, n: float, z: float) -> tuple[float, float]:
    z2 = z * z
    denom = 1.0 + z2 / n
    center = (p + z2 / (2 * n)) / denom
    half = (z / denom) * math.sqrt(max(0.0, p * (1.0 - p)) / n + z2 / (4 * n * n))
    # The exact bounds at p = 0 and p = 1 are 0 and 1; rounding would otherwise
    # leave them a hair off (e.g. 0.9999999999999999), so pin them.
    low = 0.0 if p <= 0.0 else max(0.0, center - half)
    high = 1.0 if p >= 1.0 else min(1.0, center + half)
    return low, high


def wilson_interval(passes: int, n: int, z: float = Z_95) -> tuple[float, float] | None:
    """Wilson score interval for passes/n; None when n == 0.

    Preferred over the normal (Wald) interval because it stays inside [0, 1]
    and is not degenerate at 0/n or n/n, which are common with few seeds.
    """
    if n < 0 or not 0 <= passes <= n:
        raise ValueError(f"need 0 <= passes <= n, got passes={passes}, n={n}")
    if n == 0:
        return None
    return _wilson(passes / n, n, z)


def cluster_rate_interval(rates: list[float], runs: int) -> tuple[float, float] | None:
    """95% interval of a macro pass rate (mean of per-task rates) with tasks as clusters.

    The runs of one task are correlated, so the pooled Wilson interval (``runs`` independent
    trials) is too narrow. This is the Wilson interval at the effective sample size
    n_eff = p(1 − p) / v, where v = s²/m is the variance of the mean estimated from the
    spread of the m task rates (it holds both task-to-task and seed noise), with Student's
    t(m − 1) quantile in place of z for the few-task case. n_eff is capped at ``runs``: the
    clustered variance is never below the binomial one, and the cap keeps an interval when
    every task scores the same. One task: the plain Wilson interval of its runs.
    """
    m = len(rates)
    if m == 0 or runs <= 0:
        return None
    p = math.fsum(rates) / m
    if m == 1:
        return _wilson(p, runs, Z_95)
    variance = math.fsum((r - p) ** 2 for r in rates) / (m - 1) / m
    n_eff = float(runs) if variance <= 0.0 else min(float(runs), p * (1.0 - p) / variance)
    return _wilson(p, max(n_eff, 1e-12), student_t_quantile(0.975, m - 1))


def task_rate_interval(rates: list[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """Interval of the mean pass rate of the task population the m tasks were drawn from.

    Each task's observed rate is a value in [0, 1] whose expectation is the population mean
    whatever the spread of task difficulties, and among all such values the 0/1 ones vary the
    most (docs/report.md, "pass_rate_ci"). So the interval is the exact binomial
    (Clopper–Pearson) one of m trials with the sum of the task rates as the count: it holds for
    the skewed populations agent benches have (most tasks easy, a few hard that a small sample
    may miss), where a variance estimated from the observed task rates cannot see the hard
    tasks it did not draw. Seeds sharpen each task's rate, never the count of tasks: 10 tasks
    all passing every seed give a lower bound of 0.025^(1/10) = 0.69. None without a task.
    """
    m = len(rates)
    if m == 0:
        return None
    tail = (1.0 - confidence) / 2.0
    s = math.fsum(rates)
    low = 0.0 if s <= 0.0 else beta_quantile(tail, s, m - s + 1.0)
    high = 1.0 if s >= m else beta_quantile(1.0 - tail, s + 1.0, m - s)
    return low, high


def beta_quantile(q: float, a: float, b: float) -> float:
    """The q quantile of the Beta(a, b) law (bisection on the regularized incomplete beta)."""
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if _betainc(a, b, mid) < q:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15:
            break
    return (lo + hi) / 2.0


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for k in range(1, 500):
        for num in (
            k * (b - k) * x / ((a + 2 * k - 1) * (a + 2 * k)),
            -(a + k) * (a + b + k) * x / ((a + 2 * k) * (a + 2 * k + 1)),
        ):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-16:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def student_t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


@lru_cache(maxsize=256)
def student_t_quantile(q: float, df: float) -> float:
    """The q quantile of Student's t (bisection on the cdf, to ~1e-12)."""
    if not 0.0 < q < 1.0 or df <= 0:
        raise ValueError(f"need 0 < q < 1 and df > 0, got q={q}, df={df}")
    if q < 0.5:
        return -student_t_quantile(1.0 - q, df)
    lo, hi = 0.0, 1.0
    while student_t_cdf(hi, df) < q:
        lo, hi = hi, hi * 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if student_t_cdf(mid, df) < q:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-13 * hi:
            break
    return (lo + hi) / 2.0


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
    diffs = [sum(map(bool, a)) / len(a) - sum(map(bool, b)) / len(b) for a, b in pairs if len(a) and len(b)]
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
