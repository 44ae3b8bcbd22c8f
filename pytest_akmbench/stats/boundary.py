"""The adaptive test's boundaries: a group-sequential sign test on the discordant pairs.

Every round runs one more seed of every task, so which cells run never depends on an outcome
(docs/adaptive.md). Under the sharp null (akm changes no task's pass rate) the signs of the
discordant pairs are then fair coins given which pairs were discordant, and the lead
|akm only - noakm only| at the looks is a fair random walk read at the looks' numbers of
discordant pairs. :func:`bounds` gives, look by look, the smallest lead that rejects while the
chance that the walk has crossed at some look so far stays at most the alpha spent by then
(Lan-DeMets error spending, O'Brien-Fleming-like), computed exactly by dynamic programming over
the walk. :func:`conditional_power` is the futility rule's figure: the chance of crossing at a
later look were the discordant pairs to go on favouring the leading arm at the rate they did.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from statistics import NormalDist

ALPHA = 0.05
# Above this many discordant pairs the exact walk would take seconds per look: each look is
# then tested alone at the alpha it adds (a union bound over the looks: valid, a little less
# powerful).
EXACT_PAIRS = 1500
_NORMAL = NormalDist()


def spent(t: float, alpha: float = ALPHA) -> float:
    """The alpha spent by the share ``t`` of the rounds: 2 - 2 Phi(z_{alpha/2} / sqrt(t)), which
    spends little at the early looks and keeps the last look's bar near a fixed test's."""
    if t >= 1:
        return alpha
    if t <= 0:
        return 0.0
    return 2 - 2 * _NORMAL.cdf(_NORMAL.inv_cdf(1 - alpha / 2) / math.sqrt(t))


def _half_steps(probs: list[float], steps: int) -> list[float]:
    """The distribution of wins after ``steps`` more fair coins."""
    for _ in range(steps):
        probs = [(a + b) / 2 for a, b in zip([*probs, 0.0], [0.0, *probs], strict=True)]
    return probs


@functools.lru_cache(maxsize=512)
def bounds(sizes: tuple[int, ...], targets: tuple[float, ...]) -> tuple[tuple[int, ...], float]:
    """For looks at ``sizes`` discordant pairs (non-decreasing) with cumulative alpha ``targets``:
    the smallest lead that rejects at each look (n + 1: none can), and the alpha spent in all."""
    if sizes and sizes[-1] > EXACT_PAIRS:
        return _union_bounds(sizes, targets)
    alive, n, rejected, out = [1.0], 0, 0.0, []
    for size, target in zip(sizes, targets, strict=True):
        alive, n = _half_steps(alive, size - n), size
        by_lead = [0.0] * (n + 2)
        for wins, p in enumerate(alive):
            by_lead[abs(2 * wins - n)] += p
        tail = 0.0
        lead = n + 1
        for c in range(n, 0, -1):  # the smallest lead whose tail keeps the spending
            if rejected + tail + by_lead[c] > target + 1e-12:
                break
            tail += by_lead[c]
            lead = c
        if lead <= n:
            rejected += tail
            alive = [0.0 if abs(2 * w - n) >= lead else p for w, p in enumerate(alive)]
        out.append(lead)
    return tuple(out), rejected


def _union_bounds(sizes: tuple[int, ...], targets: tuple[float, ...]) -> tuple[tuple[int, ...], float]:
    out, before, used = [], 0.0, 0.0
    for n, target in zip(sizes, targets, strict=True):
        share = target - before
        before = target
        log_half = n * math.log(0.5)
        logs = [math.lgamma(n + 1) - math.lgamma(w + 1) - math.lgamma(n - w + 1) + log_half for w in range(n + 1)]
        lead, tail = n + 1, 0.0
        for w in range(n, (n - 1) // 2, -1):  # both tails at once: leads 2w - n from the top
            c = 2 * w - n
            if c <= 0:
                break
            mass = math.exp(logs[w]) * (2 if c > 0 else 1)
            if tail + mass > share + 1e-12:
                break
            tail, lead = tail + mass, c
        used += tail
        out.append(lead)
    return tuple(out), used


def conditional_power(plus: int, minus: int, future: Sequence[tuple[int, int]], theta: float) -> float:
    """The chance that a walk at ``plus`` wins and ``minus`` losses of the discordant pairs, each
    further pair a win with ``theta``, reaches the lead ``c`` at some later look ``(n, c)``."""
    n0 = plus + minus
    probs, low, n, total = [1.0], plus, n0, 0.0  # probs[i]: the chance of low + i wins, not yet crossed
    for size, lead in future:
        for _ in range(size - n):
            probs = [a * (1 - theta) + b * theta for a, b in zip([*probs, 0.0], [0.0, *probs], strict=True)]
        n = max(n, size)
        kept = []
        for i, p in enumerate(probs):
            if abs(2 * (low + i) - n) >= lead:
                total += p
                p = 0.0
            kept.append(p)
        probs = kept
    return min(1.0, total)
