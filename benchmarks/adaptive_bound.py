"""How much power can any design have with half the fixed design's cells? Ceilings.

Seeded, on the benches of ``adaptive_bench.py`` (its draw(): the same seeds give the same
benches and outcomes, so the fixed column is its figure). Power is the share of benches claiming
akm ahead, cells are a share of the fixed design's (5 seeds per task and arm).

  oracle      knows every task's true rates (noakm p, akm q = min(1, p + lift)). It spends half
              the fixed design's cells (2.5 pairs per task on average, at most 10 seeds per task)
              on the tasks whose pairs carry the most information (the Kullback-Leibler
              divergence of a pair from the nearest null, both arms at (p + q) / 2), or evenly (3
              seeds on half the tasks, 2 on the others), or all of the fixed cells, and tests with
              the most powerful similar test for those rates: the Neyman-Pearson statistic
              sum_i log(odds ratio_i) x akm passes_i, conditional on each task's total passes
              (hypergeometric, by Monte Carlo), one-sided at 5%, randomised at the critical value.
  any test    the benchmark's power is an average over benches drawn from a spread of rates. A
              test valid for every common rate has size at most alpha under any mixture of null
              rates, so its average power on given cells is at most that of the Neyman-Pearson
              test of the benchmark's mixture against a null mixture (both arms at p, or at the
              mean of p and q; the least of the two is shown). On an even half allocation, on the
              cells a sign-blind adaptive design chooses (DESIGN, run to its budget: the
              likelihood ratio of what it saw is the product of each task's; its choices cancel),
              and on the fixed design's cells.
  any design  every design, adaptive and sequential, with any valid test: what it saw must
              carry Kullback-Leibler information kl(power, alpha) about the two mixtures (data
              processing), and one task gives at most min over lam of (I(lam) + lam x its mean
              runs), I(lam) the best E[log likelihood ratio] - lam E[runs] over every way of
              running it (which arm next, when to stop, at most 10 runs of each arm), found by
              backward induction. True for every design, and loose.

    python benchmarks/adaptive_bound.py                      # 17 and 40 tasks, lifts 0.1 and 0.2, 400 benches
    python benchmarks/adaptive_bound.py --reps 1000 --tasks 40 --lifts 0.1
    python benchmarks/adaptive_bound.py --check          # every ceiling is alpha when there is no lift
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from pathlib import Path

import numpy as np
from scipy import special

sys.path.insert(0, str(Path(__file__).resolve().parent))

import smoke
from adaptive_bench import FIXED_SEEDS, MOST, draw, fixed
from group_sequential_bench import Design, run

ALPHA = 0.05
NULL_DRAWS = 4000
EPS = 1e-9


class Recording(random.Random):
    """draw()'s generator, recording each task's noakm pass rate as it is drawn."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.rates: list[float] = []

    def betavariate(self, alpha: float, beta: float) -> float:
        self.rates.append(super().betavariate(alpha, beta))
        return self.rates[-1]

    def uniform(self, a: float, b: float) -> float:
        self.rates.append(super().uniform(a, b))
        return self.rates[-1]


def kl(a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
    """KL(Bernoulli(a) || Bernoulli(b)), elementwise."""
    a, b = np.clip(a, EPS, 1 - EPS), np.clip(b, EPS, 1 - EPS)
    return np.asarray(a * np.log(a / b) + (1 - a) * np.log((1 - a) / (1 - b)))


def pair_info(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Per pair: the KL divergence from the nearest null (both arms at the mean rate)."""
    m = (p + q) / 2
    return kl(q, m) + kl(p, m)


def allocate(p: np.ndarray, q: np.ndarray, pairs: int) -> np.ndarray:
    """Pairs per task: the most informative tasks first, MOST seeds each."""
    n = np.zeros(len(p), dtype=int)
    for i in np.argsort(-pair_info(p, q), kind="stable"):
        n[i] = min(MOST, pairs - n.sum())
    return n


def np_power(
    p: np.ndarray, q: np.ndarray, n: np.ndarray, x: np.ndarray, y: np.ndarray, rng: np.random.Generator
) -> float:
    """The chance the randomised conditional Neyman-Pearson test rejects, given akm passes x and
    noakm passes y of n pairs per task (tasks without pairs or without a difference drop out)."""
    use = (n > 0) & (q > p)
    if not use.any():
        return 0.0
    pc, qc = np.clip(p[use], EPS, 1 - EPS), np.clip(q[use], EPS, 1 - EPS)
    weight = np.log(qc * (1 - pc) / (pc * (1 - qc)))
    n, x, t = n[use], x[use], x[use] + y[use]
    observed = float(weight @ x)
    null = rng.hypergeometric(np.broadcast_to(t, (NULL_DRAWS, len(t))), 2 * n - t, n) @ weight
    above, tied = np.mean(null > observed + 1e-9), np.mean(np.abs(null - observed) <= 1e-9)
    if above >= ALPHA:
        return 0.0
    if above + tied <= ALPHA:
        return 1.0
    return (ALPHA - above) / tied  # randomised at the critical value: exactly alpha under the null


class Bench:
    """The benchmark's prior as a quadrature: noakm's rate p (Beta(1/2, 1/2) through
    p = sin^2(pi u / 2) at equally spaced u, or Uniform(0.05, 0.75)), akm's q = min(1, p + lift),
    and two null mixtures a valid test must hold its size under: both arms at p, or both at the
    mean of p and q. Likelihoods are of one task's outcome sequence with ``A`` akm runs (``a``
    passed) and ``B`` noakm runs (``b``)."""

    def __init__(self, spread: str, lift: float, null: str, points: int = 2000) -> None:
        u = (np.arange(points) + 0.5) / points
        self.p = np.sin(np.pi * u / 2) ** 2 if spread == "beta" else 0.05 + 0.7 * u
        self.q = np.minimum(1.0, self.p + lift)
        self.r = self.p if null == "prior" else (self.p + self.q) / 2
        size = MOST + 1
        self.log_alt = np.full((size,) * 4, -np.inf)
        self.log_null = np.full((size,) * 4, -np.inf)
        for big_a in range(size):
            for a in range(big_a + 1):
                akm = self.q**a * (1 - self.q) ** (big_a - a)
                for big_b in range(size):
                    for b in range(big_b + 1):
                        alt = akm * self.p**b * (1 - self.p) ** (big_b - b)
                        null = self.r ** (a + b) * (1 - self.r) ** (big_a + big_b - a - b)
                        self.log_alt[big_a, a, big_b, b] = math.log(max(float(np.mean(alt)), 1e-300))
                        self.log_null[big_a, a, big_b, b] = math.log(max(float(np.mean(null)), 1e-300))

    def llr(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One task of n pairs: the log likelihood ratio of each (a, b) and its chance under the
        alternative's and the null's mixture."""
        a, b = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
        ways = special.comb(n, a) * special.comb(n, b)
        alt, null = self.log_alt[n, a, n, b], self.log_null[n, a, n, b]
        return (alt - null).ravel(), (ways * np.exp(alt)).ravel(), (ways * np.exp(null)).ravel()

    def best_test_power(self, pairs: list[int], rng: np.random.Generator, draws: int = 200_000) -> float:
        """The power of the most powerful test of the two mixtures on a fixed allocation (pairs
        per task), by Monte Carlo: no test valid for every common rate has more on average over
        the benches, on those cells (randomised at the critical value)."""
        totals = {"alt": np.zeros(draws), "null": np.zeros(draws)}
        for n in pairs:
            values, alt, null = self.llr(n)
            for name, probs in (("alt", alt), ("null", null)):
                totals[name] += values[rng.choice(len(values), size=draws, p=probs / probs.sum())]
        null_sums, alt_sums = np.round(totals["null"], 9), np.round(totals["alt"], 9)
        crit = np.quantile(null_sums, 1 - ALPHA, method="higher")
        above, tied = np.mean(null_sums > crit), np.mean(null_sums == crit)
        gamma = (ALPHA - above) / tied if tied else 0.0
        return float(np.mean(alt_sums > crit) + gamma * np.mean(alt_sums == crit))

    def design_power(self, m: int, rule: str, rng: random.Random, reps: int) -> tuple[float, float]:
        """(the most power any test can have on the cells a sign-blind design chooses, its
        cells as a share of the fixed design's): the design (group_sequential_bench's, run to
        its budget) on benches from the alternative's and the null's mixtures; the likelihood
        ratio of what it saw is the product of each task's (the design's choices cancel)."""
        tasks = [f"t{i:02d}" for i in range(m)]
        design = Design.parse(rule)
        sums: dict[str, list[float]] = {"alt": [], "null": []}
        pairs = []
        for name, rates in (("alt", (self.p, self.q)), ("null", (self.r, self.r))):
            for _ in range(reps):
                pick = [rng.randrange(len(self.p)) for _ in tasks]
                outcomes = {
                    (t, arm, s): rng.random() < float(rates[k][j])
                    for t, j in zip(tasks, pick)
                    for k, arm in ((1, "akm"), (0, "noakm"))
                    for s in range(1, MOST + 1)
                }
                seeds: dict[str, int] = {}
                run(outcomes, tasks, design, seeds)
                total = 0.0
                for t in tasks:
                    n = seeds[t]
                    a = sum(outcomes[(t, "akm", s)] for s in range(1, n + 1))
                    b = sum(outcomes[(t, "noakm", s)] for s in range(1, n + 1))
                    total += self.log_alt[n, a, n, b] - self.log_null[n, a, n, b]
                sums[name].append(total)
                pairs.append(sum(seeds.values()))
        null, alt = np.round(sums["null"], 9), np.round(sums["alt"], 9)
        crit = np.quantile(null, 1 - ALPHA, method="higher")
        above, tied = np.mean(null > crit), np.mean(null == crit)
        gamma = (ALPHA - above) / tied if tied else 0.0
        power = float(np.mean(alt > crit) + gamma * np.mean(alt == crit))
        return power, float(np.mean(pairs)) / (m * FIXED_SEEDS)

    def information(self, lam: float) -> float:
        """max over every way of running one task (which arm next, when to stop, at most MOST
        runs of each arm, any dependence on everything seen) of E[log likelihood ratio] - lam *
        E[runs], under the alternative's mixture, by backward induction over (A, a, B, b)."""
        with np.errstate(invalid="ignore"):  # (a > A) states are never read
            value = self.log_alt - self.log_null  # stopping
        for total in range(2 * MOST, -1, -1):
            for big_a in range(max(0, total - MOST), min(MOST, total) + 1):
                big_b = total - big_a
                for a in range(big_a + 1):
                    for b in range(big_b + 1):
                        here = self.log_alt[big_a, a, big_b, b]
                        best = value[big_a, a, big_b, b]
                        if big_a < MOST:
                            win = math.exp(self.log_alt[big_a + 1, a + 1, big_b, b] - here)
                            best = max(
                                best,
                                -lam
                                + win * value[big_a + 1, a + 1, big_b, b]
                                + (1 - win) * value[big_a + 1, a, big_b, b],
                            )
                        if big_b < MOST:
                            win = math.exp(self.log_alt[big_a, a, big_b + 1, b + 1] - here)
                            best = max(
                                best,
                                -lam
                                + win * value[big_a, a, big_b + 1, b + 1]
                                + (1 - win) * value[big_a, a, big_b + 1, b],
                            )
                        value[big_a, a, big_b, b] = best
        return float(value[0, 0, 0, 0])

    def most_power(self, m: int, cells_per_task: float) -> float:
        """The most power any design (adaptive, sequential, any test valid for every common
        rate) can have on average over the benches with ``cells_per_task`` cells per task on
        average: its information about the mixtures, at most m * min over lam of
        (information(lam) + lam * cells), must reach kl(power, alpha)."""
        bound = min(m * (self.information(lam) + lam * cells_per_task) for lam in LAMBDAS)
        lo, hi = ALPHA, 1.0
        for _ in range(50):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if float(kl(mid, ALPHA)) <= bound else (lo, mid)
        return lo


NULLS = ("prior", "mid")
# The sign-blind design whose cells the "any test" column bounds: floor 1, half the fixed
# design's cells, 3 looks, tasks where some run failed (group_sequential_bench.py), run to its budget.
DESIGN = "f1-b50-l3-open-none"
DESIGN_REPS = 1500
LAMBDAS = tuple(float(x) for x in np.geomspace(1e-7, 0.5, 60))


def scenario(m: int, lift: float, reps: int, spread: str, seed: int) -> dict[str, float]:
    rng = Recording(seed)
    mc = np.random.default_rng(seed)
    tasks = [f"t{i:02d}" for i in range(m)]
    totals = dict.fromkeys(("fixed", "oracle", "even", "full"), 0.0)
    half = math.floor(m * FIXED_SEEDS / 2)
    even = [3 if i < (m + 1) // 2 else 2 for i in range(m)]
    for _ in range(reps):
        rng.rates = []
        outcomes = draw(rng, m, lift, spread)
        p = np.array(rng.rates)
        q = np.minimum(1.0, p + lift)
        totals["fixed"] += fixed(outcomes, tasks)[1]
        for name, n in (("oracle", allocate(p, q, half)), ("even", np.array(even)), ("full", np.full(m, FIXED_SEEDS))):
            x = np.array([sum(outcomes[(t, "akm", s)] for s in range(1, k + 1)) for t, k in zip(tasks, n)])
            y = np.array([sum(outcomes[(t, "noakm", s)] for s in range(1, k + 1)) for t, k in zip(tasks, n)])
            totals[name] += np_power(p, q, n, x, y, mc)
    row = {name: value / reps for name, value in totals.items()}
    # A bound is the least over the null mixtures tried: each alone is one.
    benches = [Bench(spread, lift, null) for null in NULLS]
    row["bayes_even"] = min(b.best_test_power(even, mc) for b in benches)
    row["bayes_full"] = min(b.best_test_power([FIXED_SEEDS] * m, mc) for b in benches)
    row["design"], row["design_share"] = min(
        b.design_power(m, DESIGN, random.Random(seed), DESIGN_REPS) for b in benches
    )
    row["any_half"] = min(b.most_power(m, FIXED_SEEDS) for b in benches)
    row["any_full"] = min(b.most_power(m, 2 * FIXED_SEEDS) for b in benches)
    return row


def check(spread: str) -> None:
    """With no lift the alternative's mixture is the null's (both arms at p): every ceiling
    must be alpha, the information 0."""
    bench = Bench(spread, 0.0, "prior", points=500)
    rng = np.random.default_rng(3)
    print(f"no lift, 17 tasks: any test on an even half {bench.best_test_power([3] * 9 + [2] * 8, rng):.3f}; ", end="")
    print(f"on the design's cells {bench.design_power(17, DESIGN, random.Random(1), 500)[0]:.3f}; ", end="")
    print(
        f"a task's information {bench.information(LAMBDAS[0]):.3g}; any design {bench.most_power(17, FIXED_SEEDS):.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--tasks", type=int, nargs="*", default=[17, 40])
    parser.add_argument("--lifts", type=float, nargs="*", default=[0.1, 0.2])
    parser.add_argument("--spread", choices=("beta", "u"), default="beta")
    parser.add_argument("--check", action="store_true", help="only check the ceilings where there is nothing to find")
    args = smoke.parse(parser, reps=10, tasks=[17], lifts=[0.1])
    if args.smoke:  # the null's draws and the design's runs per bench, which --reps does not set
        global NULL_DRAWS, DESIGN_REPS
        NULL_DRAWS, DESIGN_REPS = 200, 20
    if args.check:
        check(args.spread)
        return
    started = time.monotonic()
    print(
        f"{args.reps} benches per row (the oracle's and the fixed design's), pass rates {args.spread}; power (akm ahead)"
    )
    print(
        "| tasks | lift | fixed 5 seeds | oracle: half, best tasks | oracle: half, even | oracle: full "
        "| any test: half, even | any test: half, the design's cells | any test: full | any design: half | any design: full |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for m in args.tasks:
        for lift in args.lifts:
            k = round(lift * 10)  # adaptive_bench's seed for this lift among its default lifts 0, 0.1, 0.2
            r = scenario(m, lift, args.reps, args.spread, 1000 * m + k)
            cols = ("fixed", "oracle", "even", "full", "bayes_even", "design", "bayes_full", "any_half", "any_full")
            print(f"| {m} | {lift:+.1f} | " + " | ".join(f"{r[c]:.3f}" for c in cols) + " |", flush=True)
    print(f"{time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
