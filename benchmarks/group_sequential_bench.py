"""A sign-blind adaptive design with an exact group-sequential sign test, against fixed seeds.

Seeded simulations on the benches of ``adaptive_bench.py`` (its draw(): the same seeds give the
same benches, so its fixed and adaptive columns are comparable row by row). The "current"
column is the product's plan at its defaults (since issue 30: every task every round, at most
5 seeds); the table in docs/adaptive.md was measured with bc40193's design in that column.

The design (docs/adaptive.md, "A sign-blind group-sequential design"): every choice of which
cells run and of which look is the last depends only on the concordance of the pairs seen
(which pairs were discordant, which all-pass or all-fail), never on which arm a discordant pair
favoured. Under the null the discordant pairs' signs are then fair coins given the whole
concordance record, so the look sizes n_1 < n_2 < ... (discordant pairs so far) are fixed given
it, and a group-sequential sign test whose boundaries are computed exactly on the fair walk at
those n_k, spending alpha as a function of the cells used, keeps its error rate at most alpha.

  floor     every task runs seeds 1..floor; the first look.
  budget    the most cells, as a share of the fixed design's (5 seeds); the design stops there.
  looks     the planned looks: after the floor, rounds of one more seed on up to
            ceil((budget - floor cells) / (looks - 1)) tasks, chosen by the rule.
  rule      open: tasks where some run failed, fewest seeds first (bc40193's adaptive design's);
            disc: tasks with a discordant pair first, then the other open ones;
            info: the expected information per pair of the sign test for a nominal +0.1 lift
                  under the task's pass-rate posterior (Beta(1/2, 1/2) prior, both arms' runs).
  weighted  a trailing -w: each discordant pair weighted by its task's concordance (the log odds
            that it favours akm under a nominal +0.1 lift, given the task's pass count over both
            arms); each look's exact null distribution alone, alpha split by a union bound.
  spend     obf: Lan-DeMets O'Brien-Fleming-like 2 - 2 Phi(z_{alpha/2} / sqrt(t)); pocock:
            alpha ln(1 + (e - 1) t); final: everything at the last look; t = cells / budget,
            and the last look (no round left to run, a sign-blind fact) spends what is left;
            none: never rejects (the design's cells alone, for adaptive_bound.py).

    python benchmarks/group_sequential_bench.py --reps 1000           # the table in docs/adaptive.md
    python benchmarks/group_sequential_bench.py --tasks 40 --designs f1-b50-l3-info-obf f1-b50-l4-disc-pocock
    python benchmarks/group_sequential_bench.py --spread u --lifts 0 --reps 2000
    python benchmarks/group_sequential_bench.py --check                # the boundaries against simulated walks
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))

import smoke
from adaptive_bench import ARMS, FIXED_SEEDS, MOST, draw, fixed

from pytest_akmbench.run import sequential

ALPHA = 0.05
NOMINAL_LIFT = 0.1
_GRID = np.linspace(0.0005, 0.9995, 400)  # pass rates for the info rule's posterior mean


@dataclass(frozen=True)
class Design:
    floor: int
    budget: float  # share of the fixed design's cells
    looks: int
    rule: str
    spend: str
    weighted: bool = False

    @classmethod
    def parse(cls, text: str) -> Design:
        """``f1-b50-l3-info-obf``: floor 1, budget 50%, 3 looks, rule info, spending obf;
        a trailing ``-w``: the weighted sign test."""
        f, b, looks, rule, spend, *w = text.split("-")
        return cls(int(f[1:]), int(b[1:]) / 100, int(looks[1:]), rule, spend, w == ["w"])

    def __str__(self) -> str:
        text = f"f{self.floor}-b{round(self.budget * 100)}-l{self.looks}-{self.rule}-{self.spend}"
        return text + ("-w" if self.weighted else "")


def spent(spend: str, t: float, alpha: float = ALPHA) -> float:
    """The alpha a spending function has used by cell share ``t`` of the budget."""
    t = min(1.0, t)
    if spend == "obf":
        return float(2 - 2 * stats.norm.cdf(stats.norm.ppf(1 - alpha / 2) / math.sqrt(t))) if t > 0 else 0.0
    if spend == "pocock":
        return alpha * math.log(1 + (math.e - 1) * t)
    return alpha if t >= 1 else 0.0


class Boundary:
    """The exact two-sided group-sequential sign test on a fair walk, look by look: the chance
    of each number of wins among the discordant pairs so far on paths not yet rejected."""

    def __init__(self) -> None:
        self.n = 0
        self.alive = np.ones(1)
        self.rejected = 0.0  # the chance a fair walk was rejected at an earlier look

    def look(self, n: int, target: float) -> int:
        """Move to ``n`` discordant pairs and return the smallest lead |wins - losses| rejected
        here keeping the cumulative chance at most ``target`` (n + 1: none is)."""
        step = n - self.n
        if step:
            self.alive = np.convolve(self.alive, stats.binom.pmf(np.arange(step + 1), step, 0.5))
            self.n = n
        lead = np.abs(2 * np.arange(n + 1) - n)
        by_lead = np.bincount(lead, weights=self.alive, minlength=n + 1)
        tail = np.cumsum(by_lead[::-1])[::-1]  # tail[c]: chance the lead is c or more
        ok = np.nonzero(self.rejected + tail <= target + 1e-12)[0]
        c = int(ok[0]) if len(ok) else n + 1
        c = max(c, 1)
        if c <= n:
            self.rejected += float(tail[c])
            self.alive = np.where(lead >= c, 0.0, self.alive)
        return c


def weight(passes: int, runs: int, lift: float = NOMINAL_LIFT) -> int:
    """A task's weight in the weighted sign test: the log odds that a discordant pair favours
    akm under a nominal lift, averaged over the pass rate's posterior (both arms' runs, a
    Beta(1/2, 1/2) prior), in integer steps of 1/3 (at least 1, at most 12)."""
    p = _GRID
    q = np.minimum(1.0, p + lift)
    theta = q * (1 - p) / (q * (1 - p) + p * (1 - q))
    post = np.exp((passes - 0.5) * np.log(p) + (runs - passes - 0.5) * np.log(1 - p))
    mean = float(np.sum(theta * post) / np.sum(post))
    return int(min(12, max(1, round(3 * math.log(mean / (1 - mean))))))


class Weighted:
    """The weighted sign test, each look alone: sum_i w_i (wins_i - losses_i) with the weights
    of the concordance so far, its exact null distribution given the discordant pairs (fair
    signs), the look's share of alpha spent by itself (a union bound over the looks)."""

    def __init__(self) -> None:
        self.spent = 0.0

    def look(self, tasks: list[tuple[int, int, int]], target: float) -> int:
        """``tasks``: (weight, discordant pairs, wins - losses); returns the statistic's
        distance from 0 that rejects, or one past the largest possible (none does)."""
        dist = np.ones(1)
        for w, nd, _ in tasks:
            if nd:
                step = np.zeros(2 * w * nd + 1)
                step[:: 2 * w] = stats.binom.pmf(np.arange(nd + 1), nd, 0.5)
                dist = np.convolve(dist, step)
        top = (len(dist) - 1) // 2
        mass = np.bincount(np.abs(np.arange(len(dist)) - top), weights=dist)
        tail = np.cumsum(mass[::-1])[::-1]
        ok = np.nonzero(tail <= target - self.spent + 1e-12)[0]
        c = max(1, int(ok[0])) if len(ok) else top + 1
        if c <= top:
            self.spent += float(tail[c])
        return c


def info(passes: int, runs: int, lift: float = NOMINAL_LIFT) -> float:
    """The sign test's expected information per pair (lift^2 / discordance) under the pass
    rate's posterior from ``passes`` of ``runs`` (both arms), a Beta(1/2, 1/2) prior."""
    p = _GRID
    q = np.minimum(1.0, p + lift)
    disc = q * (1 - p) + p * (1 - q)
    value = (q - p) ** 2 / disc
    weight = np.exp((passes - 0.5) * np.log(p) + (runs - passes - 0.5) * np.log(1 - p))
    return float(np.sum(value * weight) / np.sum(weight))


def run(
    outcomes: dict[tuple[str, str, int], bool], tasks: list[str], d: Design, seeds: dict[str, int] | None = None
) -> tuple[str | None, int, int]:
    """(the arm a decisive run favours or None, pairs run, looks taken) of one bench; ``seeds``
    (filled in) ends with the seeds each task ran. The spending ``none`` never rejects."""
    seeds = dict.fromkeys(tasks, 0) if seeds is None else seeds
    seeds |= dict.fromkeys(tasks, 0)
    tally = {t: [0, 0, 0] for t in tasks}  # passes (both arms), discordant, runs failed
    plus = minus = 0
    budget = math.floor(d.budget * len(tasks) * FIXED_SEEDS)  # pairs
    chunk = math.ceil((budget - d.floor * len(tasks)) / max(1, d.looks - 1))
    test = Boundary()
    wtest = Weighted()
    lead = {t: 0 for t in tasks}
    chosen = [t for t in tasks for _ in range(d.floor)]
    for k in range(1, 100):
        for t in chosen:
            seeds[t] += 1
            a, b = outcomes[(t, "akm", seeds[t])], outcomes[(t, "noakm", seeds[t])]
            tally[t][0] += a + b
            tally[t][1] += a != b
            tally[t][2] += not (a and b)
            plus += a and not b
            minus += b and not a
            lead[t] += (a and not b) - (b and not a)
        used = sum(seeds.values())
        chosen = _next_round(tasks, seeds, tally, d, min(chunk, budget - used))  # sign-blind
        target = 0.0 if d.spend == "none" else ALPHA if not chosen else spent(d.spend, used / budget)
        if d.weighted:
            rows = [(weight(tally[t][0], 2 * seeds[t]), tally[t][1], lead[t]) for t in tasks if seeds[t]]
            c, stat = wtest.look(rows, target), sum(w * diff for w, _, diff in rows)
        else:
            c, stat = test.look(plus + minus, target), plus - minus
        if abs(stat) >= c:
            return ("akm" if stat > 0 else "noakm"), used, k
        if not chosen:
            return None, used, k
    raise AssertionError("unreachable")


def _next_round(
    tasks: list[str], seeds: dict[str, int], tally: dict[str, list[int]], d: Design, room: int
) -> list[str]:
    if room <= 0:
        return []
    order = {t: i for i, t in enumerate(tasks)}
    if d.rule == "info":
        ranked = [t for t in tasks if seeds[t] < MOST]
        score = {t: info(tally[t][0], 2 * seeds[t]) for t in ranked}
        ranked.sort(key=lambda t: (-score[t], seeds[t], order[t]))
    else:
        ranked = [t for t in tasks if seeds[t] < MOST and tally[t][2] > 0]
        if d.rule == "disc":
            ranked.sort(key=lambda t: (tally[t][1] == 0, seeds[t], order[t]))
        else:
            ranked.sort(key=lambda t: (seeds[t], order[t]))
    return ranked[:room]


def scenario(
    m: int, lift: float, reps: int, spread: str, seed: int, designs: list[Design], compare: bool
) -> dict[str, float]:
    rng = random.Random(seed)
    tasks = [f"t{i:02d}" for i in range(m)]
    row: dict[str, float] = {}
    tallies: dict[str, list[float]] = {}
    for _ in range(reps):
        outcomes = draw(rng, m, lift, spread)
        if compare:
            claim, right = fixed(outcomes, tasks)
            _add(tallies, "fixed", claim, right, m * FIXED_SEEDS)
            p = sequential.plan(tasks, ARMS, outcomes, floor=2, max_seeds=sequential.DEFAULT_MAX_SEEDS)
            _add(tallies, "current", p.stop == "decisive", p.direction == "akm", len(p.cells(("akm",))))
        for d in designs:
            direction, pairs, _ = run(outcomes, tasks, d)
            _add(tallies, str(d), direction is not None, direction == "akm", pairs)
    for name, (claims, right, pairs) in tallies.items():
        row |= {f"{name}:claims": claims / reps, f"{name}:power": right / reps}
        row[f"{name}:share"] = pairs / reps / (m * FIXED_SEEDS)
    return row


def _add(tallies: dict[str, list[float]], name: str, claim: bool, right: bool, pairs: int) -> None:
    entry = tallies.setdefault(name, [0, 0, 0])
    entry[0] += claim
    entry[1] += right
    entry[2] += pairs


def check(draws: int = 200_000) -> None:
    """The boundaries' exactness: the chance a fair walk crosses, computed by the dynamic
    programme, against simulated walks (and the weighted test's against simulated signs)."""
    rng = np.random.default_rng(7)
    print("| looks (discordant pairs) | spending | exact chance | simulated |")
    print("|---|---|---:|---:|")
    for sizes, spend in (([20, 45, 80], "obf"), ([5, 6, 6, 30], "pocock"), ([50], "final"), ([10, 40, 41, 100], "obf")):
        test = Boundary()
        bars = [
            test.look(n, ALPHA if k == len(sizes) - 1 else spent(spend, (k + 1) / len(sizes)))
            for k, n in enumerate(sizes)
        ]
        walks = np.cumsum(rng.integers(0, 2, size=(draws, sizes[-1])) * 2 - 1, axis=1)
        crossed = np.zeros(draws, dtype=bool)
        for n, c in zip(sizes, bars):
            crossed |= np.abs(walks[:, n - 1]) >= c
        print(f"| {sizes} | {spend} | {test.rejected:.4f} | {crossed.mean():.4f} |")
    rows = [(1, 5, 0), (3, 2, 0), (7, 3, 0), (2, 8, 0)]
    weighted = Weighted()
    c = weighted.look(rows, ALPHA)
    stat = sum(w * (2 * rng.binomial(nd, 0.5, size=draws) - nd) for w, nd, _ in rows)
    print(f"| weighted {rows} | one look | {weighted.spent:.4f} | {np.mean(np.abs(stat) >= c):.4f} |")


DEFAULT = ["f2-b50-l2-open-obf", "f1-b50-l3-open-final-w", "f2-b75-l3-open-obf", "f2-b100-l4-open-obf"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--tasks", type=int, nargs="*", default=[17, 40])
    parser.add_argument("--lifts", type=float, nargs="*", default=[0.0, 0.1, 0.2])
    parser.add_argument("--spread", choices=("beta", "u"), default="beta")
    parser.add_argument("--designs", nargs="*", default=DEFAULT)
    parser.add_argument("--no-compare", action="store_true", help="skip the fixed and current designs")
    parser.add_argument("--check", action="store_true", help="only check the boundaries against simulated walks")
    args = smoke.parse(parser, reps=10, tasks=[17], lifts=[0.0, 0.1], designs=DEFAULT[:2])
    if args.check:
        check()
        return
    designs = [Design.parse(text) for text in args.designs]
    started = time.monotonic()
    names = ([] if args.no_compare else ["fixed", "current"]) + [str(d) for d in designs]
    print(
        f"{args.reps} benches per row, pass rates {args.spread}; claims (size at lift 0, else power) / cells share of fixed"
    )
    print("| tasks | lift | " + " | ".join(names) + " |")
    print("|---:|---:|" + "---:|" * len(names))
    for m in args.tasks:
        for k, lift in enumerate(args.lifts):
            r = scenario(m, lift, args.reps, args.spread, 1000 * m + k, designs, not args.no_compare)
            kind = "claims" if lift == 0 else "power"
            cells = [f"{r[f'{n}:{kind}']:.3f} / {r[f'{n}:share']:.0%}" for n in names]
            print(f"| {m} | {lift:+.1f} | " + " | ".join(cells) + " |", flush=True)
    print(f"{time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
