"""The adaptive test's boundary: the e-value a run's horizon needs, and the chance it is still reached.

The signs of the discordant pairs are fair coins under the null, whatever the design chose to
run (docs/adaptive.md). So the chance that the mixture e-value of the sign stream ever reaches a
level c within K discordant pairs is that of a fair random walk, computed exactly here by
dynamic programming. :func:`log_threshold` is the smallest level whose chance is at most alpha
for the run's horizon (no run has more than K = tasks x max seeds pairs): a run stopping at any
time, for any reason, keeps its error rate at most alpha. Ville's inequality gives 1/alpha for an
unbounded horizon; a bounded one needs less, and the difference is power.

:func:`chance` is the futility rule's conditional power: the chance, were the discordant pairs
to go on favouring the leading arm at the rate they have so far (raised by half its standard
error), that the stream reaches the level within the pairs the run may still take.
"""

from __future__ import annotations

import functools
import math

ALPHA = 0.05
# The mixture's prior on theta (the chance a discordant pair favours akm): Beta(PRIOR, PRIOR).
# Beta(2, 2) puts its mass on the moderate effects a bench looks for; Beta(1/2, 1/2) (Jeffreys)
# spends it near theta = 0 or 1 and needs about a quarter more pairs for a +0.1 lift
# (docs/adaptive.md, benchmarks/adaptive_bench.py).
PRIOR = 2.0
# Above this many pairs the exact computation would take seconds: Ville's 1/alpha (valid for any
# horizon, a little less powerful) is used instead.
EXACT_HORIZON = 1000
_BISECTIONS = 18


def log_e_value(plus: int, minus: int) -> float:
    """log of the mixture e-value after ``plus`` pairs akm won and ``minus`` it lost.

    The bet on a discordant pair with fraction lambda = 2*theta - 1 multiplies the wealth by
    2*theta on a win and 2*(1 - theta) on a loss; theta ~ Beta(a, a) (a = PRIOR) gives
    2^n * B(plus + a, minus + a) / B(a, a) in closed form. Ties multiply it by 1.
    """
    n = plus + minus
    return n * math.log(2) + _log_beta(plus + PRIOR, minus + PRIOR) - _log_beta(PRIOR, PRIOR)


def _log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


@functools.lru_cache(maxsize=256)
def _boundary(horizon: int, level: float) -> tuple[int, ...]:
    """For each number n of discordant pairs, the fewest the leading arm must have won for the
    e-value to reach ``level`` (n + 1: out of reach). The symmetric mixture grows with the lead,
    so a binary search finds it."""
    bound = []
    for n in range(horizon + 1):
        lo, hi = (n + 1) // 2, n + 1
        while lo < hi:
            mid = (lo + hi) // 2
            if log_e_value(mid, n - mid) >= level:
                hi = mid
            else:
                lo = mid + 1
        bound.append(lo)
    return tuple(bound)


def crossing(bound: tuple[int, ...], theta: float, lead: int, trail: int, steps: int, enough: float = 2.0) -> float:
    """The chance that a walk at ``lead`` wins of the leading side and ``trail`` of the other,
    winning each step with ``theta``, meets the boundary on either side within ``steps`` more
    discordant pairs (stops counting past ``enough``)."""
    start = lead + trail
    steps = min(steps, len(bound) - 1 - start)
    low, probs = lead, [1.0]  # not yet crossed: probs[i] is the chance the leading side has low + i wins
    total, lose = 0.0, 1 - theta
    for n in range(start + 1, start + steps + 1):
        grown = [w * lose for w in probs] + [0.0]
        for i, w in enumerate(probs):
            grown[i + 1] += w * theta
        top = bound[n]  # crossed: the leading side at top or more, or the other side at top or more
        first, last = max(low, n - top + 1), min(low + len(grown) - 1, top - 1)
        kept = grown[first - low : last - low + 1] if first <= last else []
        total += sum(grown) - sum(kept)
        low, probs = first, kept
        if total >= enough or not probs:
            break
    return total


@functools.lru_cache(maxsize=64)
def log_threshold(horizon: int, alpha: float = ALPHA) -> float:
    """The smallest log e-value level a fair-coin stream of at most ``horizon`` discordant pairs
    reaches with a chance of at most ``alpha`` (bisection, keeping the valid side)."""
    lo, hi = 0.0, math.log(1 / alpha)
    if horizon > EXACT_HORIZON:
        return hi
    for _ in range(_BISECTIONS):
        mid = (lo + hi) / 2
        if crossing(_boundary(horizon, mid), 0.5, 0, 0, horizon) <= alpha:
            hi = mid
        else:
            lo = mid
    # The same test, stated as the smallest e-value that crosses (decisive at it, not above it);
    # a horizon too short for any stream to be decisive keeps Ville's level.
    bound = _boundary(horizon, hi)
    return min((log_e_value(b, n - b) for n, b in enumerate(bound) if b <= n), default=math.log(1 / alpha))


@functools.lru_cache(maxsize=4096)
def chance(plus: int, minus: int, more: int, horizon: int, alpha: float, enough: float, optimism: float = 0.0) -> float:
    """The futility rule's conditional power: the chance of becoming decisive within ``more``
    further discordant pairs if each favours the leading arm at its rate so far, raised by
    ``optimism`` standard errors of that rate."""
    lead, trail = max(plus, minus), min(plus, minus)
    n = lead + trail
    theta = lead / n if n else 0.5
    if n:
        theta = min(1.0, theta + optimism * math.sqrt(theta * (1 - theta) / n))
    level = log_threshold(horizon, alpha)
    return min(1.0, crossing(_boundary(horizon, level), theta, lead, trail, more, enough))
