"""Hypothesis tests behind every "beyond noise" claim of a report, compare or gate.

Pure Python, no dependencies, deterministic: Monte Carlo steps take an explicit seed, so a
report is reproducible byte for byte. Why these tests (and not others) is in docs/report.md,
"How the numbers are tested".

* :func:`sign_flip_test`: paired permutation test on task-level deltas (the verdict's test),
  with the confidence interval obtained by inverting the same test, so interval and p-value
  never disagree.
* :func:`stratified_permutation_test`: runs of each task permuted between two sides (compare):
  valid when the two sides have different numbers of runs per task. :func:`stratified_null`
  is its null law, from which compare also takes the change its interval must exceed.
* :func:`fisher_exact`: one task, two sides (per-task regressions); :func:`fisher_lower` its
  one-sided form (negative transfer), and :func:`split_odds` the null distribution it sums.
* :func:`smallest_p`, :func:`min_paired_tasks`: the smallest p the sign-flip test can give over n
  paired tasks, and the fewest paired tasks with which it can reject.
* :func:`holm`: Holm's step-down adjustment over a family of p-values.
"""

from __future__ import annotations

import bisect
import functools
import math
import random
from collections import defaultdict
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

__all__ = [
    "ALPHA",
    "StratifiedNull",
    "fisher_exact",
    "fisher_lower",
    "holm",
    "min_paired_tasks",
    "sign_flip_test",
    "smallest_p",
    "stratified_null",
    "stratified_permutation_test",
]

ALPHA = 0.05
SEED = 20261129
RESAMPLES = 10_000
EXACT_MAX_TASKS = 14  # up to 2^14 sign vectors are enumerated; above, RESAMPLES random ones
_DP_BUDGET = 2_000_000  # exact convolution steps before the stratified test switches to Monte Carlo


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values (step-down, monotone, capped at 1), in the input order."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [1.0] * len(p_values)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def _chunk_tables(weights: list[int], base: int) -> list[list[int]]:
    """Per 8 tasks, the 256 sign patterns packed as (sum of ±w) * base + (sum of ±1)."""
    tables = []
    for start in range(0, len(weights), 8):
        chunk = weights[start : start + 8]
        table = []
        for bits in range(1 << len(chunk)):
            sw = sb = 0
            for j, w in enumerate(chunk):
                if bits >> j & 1:
                    sw, sb = sw + w, sb + 1
                else:
                    sw, sb = sw - w, sb - 1
            table.append(sw * base + sb)
        tables.append(table)
    return tables


def sign_flip_test(
    deltas: Sequence[Fraction | int],
    *,
    alpha: float = ALPHA,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> dict[str, Any]:
    """Two-sided paired permutation (sign-flip) test of mean(deltas) = 0, and its inversion.

    Under the null each task's delta is as likely to have either sign (the two arms are
    exchangeable within a task), so the statistic sum(d) is compared with sum(±d) over all
    2^m sign vectors when m <= EXACT_MAX_TASKS, else over ``resamples`` random ones plus the
    observed one (p = (1 + hits) / (resamples + 1), valid at any number of resamples).

    ``low``/``high`` is the set of shifts θ the same test does not reject for d − θ, which
    has a closed form: for a sign vector with Σεd = A and Σε = B, |A − θB| >= |D − mθ| holds
    exactly between (A − D)/(B − m) and (A + D)/(B + m). So 0 lies outside [low, high]
    exactly when p <= alpha. Bounds are clipped to [-1, 1] (deltas of rates).
    """
    m = len(deltas)
    if m == 0:
        return {"p_value": None, "low": None, "high": None, "exact": None, "resamples": 0}
    fractions = [Fraction(d) for d in deltas]
    scale = math.lcm(*(f.denominator for f in fractions))
    weights = [int(f * scale) for f in fractions]  # exact integers: ties compare exactly
    exact = m <= EXACT_MAX_TASKS
    packed = _signed_sums(weights, exact, resamples, seed)
    hits, lows, highs = _count_and_invert(packed, weights, scale, exact)
    n = len(lows)
    need = math.floor(alpha * n) + 1  # p(θ) = count(θ) / n > alpha  <=>  count(θ) >= need
    lows.sort()
    highs.sort(reverse=True)
    return {
        "p_value": hits / n,
        "low": max(-1.0, lows[need - 1]),
        "high": min(1.0, highs[need - 1]),
        "exact": exact,
        "resamples": n if exact else resamples,
    }


def _signed_sums(weights: list[int], exact: bool, resamples: int, seed: int) -> list[int]:
    """(Σεw, Σε) of each sign vector ε, packed as Σεw * (2m + 1) + Σε: all 2^m vectors when
    ``exact``, else ``resamples`` seeded random ones."""
    m = len(weights)
    tables = _chunk_tables(weights, 2 * m + 1)
    if exact:
        vectors: Sequence[int] = range(1 << m)
    else:
        rng = random.Random(seed)
        vectors = [rng.getrandbits(m) for _ in range(resamples)]
    packed = [tables[0][v & 255] for v in vectors]
    for c in range(1, len(tables)):
        table, shift = tables[c], 8 * c
        packed = [x + table[(v >> shift) & 255] for x, v in zip(packed, vectors)]
    return packed


def _count_and_invert(
    packed: list[int], weights: list[int], scale: int, exact: bool
) -> tuple[int, list[float], list[float]]:
    """The sign vectors at least as extreme as the observed sum (Monte Carlo counts the observed
    vector once more), and for each vector the bounds of the shifts θ it does not reject."""
    m = len(weights)
    base = 2 * m + 1
    total = sum(weights)
    bound = abs(total)
    hits = 0 if exact else 1  # Monte Carlo counts the observed sign vector once
    lows: list[float] = [] if exact else [-math.inf]
    highs: list[float] = [] if exact else [math.inf]
    for x in packed:
        sb = (x + m) % base - m
        sw = (x - sb) // base
        if sw >= bound or -sw >= bound:
            hits += 1
        if sb == m or sb == -m:  # all signs equal: the inequality holds for every θ
            lows.append(-math.inf)
            highs.append(math.inf)
            continue
        r1 = (sw - total) / (scale * (sb - m))
        r2 = (sw + total) / (scale * (sb + m))
        if r1 < r2:
            lows.append(r1)
            highs.append(r2)
        else:
            lows.append(r2)
            highs.append(r1)
    return hits, lows, highs


def _hypergeom(c_a: int, n_a: int, c_b: int, n_b: int, scale: int) -> list[tuple[int, float]]:
    """(scaled rate difference, probability) over the ways the task's passes can split."""
    t, n = c_a + c_b, n_a + n_b
    total = math.comb(n, n_a)
    out = []
    for x in range(max(0, t - n_b), min(t, n_a) + 1):
        value = x * (scale // n_a) - (t - x) * (scale // n_b)
        out.append((value, math.comb(t, x) * math.comb(n - t, n_a - x) / total))
    return out


def stratified_permutation_test(
    strata: Sequence[tuple[int, int, int, int]],
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> dict[str, Any]:
    """Two-sided test that every task has the same pass probability on both sides.

    ``strata`` holds one (passes_a, runs_a, passes_b, runs_b) per task. Under the null the
    runs of a task are exchangeable between the sides, so with the task's passes fixed, the
    passes on side a are hypergeometric whatever runs_a and runs_b are; the statistic
    S = Σ (passes_a/runs_a − passes_b/runs_b) has E[S] = 0 and p = P(|S| >= |S_obs|). The
    null distribution is :func:`stratified_null`'s.
    """
    null = stratified_null(strata, resamples=resamples, seed=seed)
    if null is None:
        return {"p_value": None, "exact": None, "resamples": 0}
    return {"p_value": null.tail(abs(null.observed)), "exact": null.exact, "resamples": null.resamples}


class StratifiedNull:
    """The null distribution of |S| (scaled to integers by ``scale``) of
    :func:`stratified_permutation_test`, and the observed S. ``tail(v)`` is P(|S| >= v): summed
    exactly over the convolved law, or (1 + draws >= v) / (resamples + 1) over seeded draws."""

    def __init__(self, observed: int, scale: int, law: dict[int, float] | list[int], exact: bool, resamples: int):
        self.observed, self.scale, self.exact, self.resamples = observed, scale, exact, resamples
        self.values = sorted({abs(v) for v in law} if isinstance(law, dict) else law)
        self._law = law if isinstance(law, dict) else {}

    def tail(self, v: int) -> float:
        if self.exact:
            return min(1.0, math.fsum(q for s, q in self._law.items() if abs(s) >= v))
        return (1 + len(self.values) - bisect.bisect_left(self.values, v)) / (self.resamples + 1)

    def critical(self, alpha: float) -> int:
        """The largest |S| the test at ``alpha`` does not reject (tail >= alpha): it rejects the
        observed S exactly when |S_obs| exceeds this."""
        lo, hi = 0, len(self.values) - 1  # tail(values[0]) is 1 (exact) or 1 (the draws' least)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.tail(self.values[mid]) >= alpha:
                lo = mid
            else:
                hi = mid - 1
        return self.values[lo]


def stratified_null(
    strata: Sequence[tuple[int, int, int, int]], *, resamples: int = RESAMPLES, seed: int = SEED
) -> StratifiedNull | None:
    """The law of S under the null of :func:`stratified_permutation_test` (None without a task
    run on both sides): convolved exactly, or, when that would take more than a fixed budget,
    sampled (``resamples`` draws, seeded)."""
    kept = [s for s in strata if s[1] > 0 and s[3] > 0]
    if not kept:
        return None
    scale = math.lcm(*(n for s in kept for n in (s[1], s[3])))
    observed = sum(c_a * (scale // n_a) - c_b * (scale // n_b) for c_a, n_a, c_b, n_b in kept)
    supports = [sup for sup in (_hypergeom(*s, scale) for s in kept) if len(sup) > 1]
    dist: dict[int, float] = {0: 1.0}
    steps = 0
    for sup in supports:
        steps += len(dist) * len(sup)
        if steps > _DP_BUDGET:
            break
        nxt: dict[int, float] = defaultdict(float)
        for s, p in dist.items():
            for v, q in sup:
                nxt[s + v] += p * q
        dist = nxt
    else:
        return StratifiedNull(observed, scale, dist, True, 0)
    return StratifiedNull(observed, scale, _draws(supports, resamples, seed), False, resamples)


def _draws(supports: list[list[tuple[int, float]]], resamples: int, seed: int) -> list[int]:
    """|S| of ``resamples`` seeded draws from the tasks' hypergeometric laws."""
    rng = random.Random(seed)
    tables = []
    for sup in supports:
        cum, acc = [], 0.0
        for _, q in sup:
            acc += q
            cum.append(acc)
        cum[-1] = 1.0
        tables.append(([v for v, _ in sup], cum))
    last = [len(values) - 1 for values, _ in tables]
    out = []
    for _ in range(resamples):
        s = 0
        for (values, cum), top in zip(tables, last):
            s += values[min(top, bisect.bisect_right(cum, rng.random()))]
        out.append(abs(s))
    return out


def fisher_exact(c_a: int, n_a: int, c_b: int, n_b: int) -> float:
    """Two-sided Fisher exact test of passes c_a/n_a vs c_b/n_b: the probability, given the
    total passes, of every split at most as likely as the observed one (exact integers)."""
    if not (0 <= c_a <= n_a and 0 <= c_b <= n_b) or n_a + n_b == 0:
        raise ValueError(f"need 0 <= passes <= runs, got {c_a}/{n_a} and {c_b}/{n_b}")
    t, n = c_a + c_b, n_a + n_b
    weights = [math.comb(t, x) * math.comb(n - t, n_a - x) for x in range(max(0, t - n_b), min(t, n_a) + 1)]
    observed = math.comb(t, c_a) * math.comb(n - t, n_a - c_a)
    return float(min(Fraction(1), Fraction(sum(w for w in weights if w <= observed), math.comb(n, n_a))))


def split_odds(c_a: int, n_a: int, c_b: int, n_b: int) -> list[tuple[int, Fraction]]:
    """(passes on side a, probability) over the ways a task's c_a + c_b passes can split between
    n_a and n_b runs when the runs are exchangeable between the sides (hypergeometric, exact)."""
    t, n = c_a + c_b, n_a + n_b
    total = math.comb(n, n_a)
    return [
        (x, Fraction(math.comb(t, x) * math.comb(n - t, n_a - x), total))
        for x in range(max(0, t - n_b), min(t, n_a) + 1)
    ]


def fisher_lower(c_a: int, n_a: int, c_b: int, n_b: int) -> float:
    """One-sided Fisher exact test that side a passes less often than side b: the probability,
    given the task's total passes, of side a having c_a passes or fewer."""
    if not (0 <= c_a <= n_a and 0 <= c_b <= n_b) or n_a == 0 or n_b == 0:
        raise ValueError(f"need 0 <= passes <= runs and runs on both sides, got {c_a}/{n_a} and {c_b}/{n_b}")
    return float(sum(q for x, q in split_odds(c_a, n_a, c_b, n_b) if x <= c_a))


@functools.lru_cache(maxsize=64)
def smallest_p(tasks: int, family: int = 1) -> float:
    """The smallest p the exact sign-flip test can give over ``tasks`` paired tasks (every delta
    of one sign: 2^(1-n)), Holm-adjusted over ``family`` tests (times the family, for the first).
    Read off the test itself, not a formula, so it follows the test if the test changes."""
    return min(1.0, family * (sign_flip_test([1] * tasks)["p_value"] or 1.0))


@functools.lru_cache(maxsize=64)
def min_paired_tasks(family: int = 1, alpha: float = ALPHA) -> int:
    """The fewest paired tasks with which the two-sided sign-flip test, Holm-adjusted over
    ``family`` comparisons, can reject at all (:func:`smallest_p` below ``alpha``)."""
    m = 1
    while smallest_p(m, family) >= alpha:
        m += 1
    return m
