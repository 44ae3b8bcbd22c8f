"""Every number a report, compare or gate states, checked against an independent computation
(scipy / statsmodels / numpy, or brute-force enumeration), on seeded random inputs."""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from scipy import special
from scipy import stats as ss
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from pytest_akmbench.report import envelope as report
from pytest_akmbench.report import metrics
from pytest_akmbench.report.compare import changes as compare
from pytest_akmbench.stats import intervals as stats
from pytest_akmbench.stats import significance
from tests.core.test_metrics import make_task, sample
from tests.core.test_report import TS, inp

Z = ss.norm.ppf(0.975)


def sm_wilson(count: float, nobs: float, z: float = Z) -> tuple[float, float]:
    """statsmodels' Wilson interval at an arbitrary quantile z."""
    lo, hi = proportion_confint(count, nobs, alpha=2 * ss.norm.sf(z), method="wilson")
    return float(lo), float(hi)


def cluster_interval(rates: list[float], runs: int) -> tuple[float, float]:
    """The design-effect Wilson interval, from numpy, scipy's t and statsmodels' Wilson."""
    r = np.asarray(rates, dtype=float)
    p = r.mean()
    if len(r) == 1:
        return sm_wilson(p * runs, runs)
    v = r.var(ddof=1) / len(r)
    n_eff = runs if v == 0 else min(runs, p * (1 - p) / v)
    return sm_wilson(p * n_eff, n_eff, ss.t.ppf(0.975, len(r) - 1))


def task_interval(rates: list[float]) -> tuple[float, float]:
    """The arm interval: scipy's Clopper–Pearson bounds of len(rates) trials at the count sum(rates)."""
    m, count = len(rates), float(np.sum(rates))
    low = 0.0 if count <= 0 else float(ss.beta.ppf(0.025, count, m - count + 1))
    high = 1.0 if count >= m else float(ss.beta.ppf(0.975, count + 1, m - count))
    return low, high


def sign_flip_p(d: list[float], theta: float = 0.0) -> float:
    """scipy's exact paired permutation test of mean(d − θ) = 0."""
    x = np.asarray(d, dtype=float) - theta
    res = ss.permutation_test((x,), np.mean, permutation_type="samples", n_resamples=np.inf, alternative="two-sided")
    return float(res.pvalue)


def chen_pass_at_k(n: int, c: int, k: int) -> float:
    """Chen et al.'s numerically stable form, as published with HumanEval."""
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def random_strata(rng: random.Random) -> list[tuple[int, int, int, int]]:
    """One to four tasks of (passes_a, runs_a, passes_b, runs_b), runs 1 to 5 a side."""
    strata = []
    for _ in range(rng.randint(1, 4)):
        na, nb = rng.randint(1, 5), rng.randint(1, 5)
        strata.append((rng.randint(0, na), na, rng.randint(0, nb), nb))
    return strata


def enumerated_stratified_p(strata: list[tuple[int, int, int, int]]) -> float:
    """P(|S| >= |S_obs|) over every split of each task's passes, from scipy's hypergeometric pmf."""
    observed = sum(Fraction(a, na) - Fraction(b, nb) for a, na, b, nb in strata)
    splits = []
    for a, na, b, nb in strata:
        t = a + b
        xs = range(max(0, t - nb), min(t, na) + 1)
        splits.append([(Fraction(x, na) - Fraction(t - x, nb), ss.hypergeom.pmf(x, na + nb, t, na)) for x in xs])
    return float(
        sum(
            math.prod(q for _, q in combo)
            for combo in itertools.product(*splits)
            if abs(sum(v for v, _ in combo)) >= abs(observed)
        )
    )


class TestPrimitives:
    def test_wilson_matches_statsmodels(self) -> None:
        """Per-task intervals: every passes/n up to 30."""
        for n in range(1, 31):
            for c in range(n + 1):
                assert stats.wilson_interval(c, n) == pytest.approx(sm_wilson(c, n), abs=1e-12)

    def test_student_t_cdf_matches_scipy(self) -> None:
        """The cdf itself (the quantile is cached, so a warm cache from another test would hide it)."""
        for df in (1, 2, 3, 7.5, 30, 1000):
            for t in (-40.0, -3.0, -0.5, 0.0, 0.25, 1.0, 2.5, 12.0):
                assert stats.student_t_cdf(t, df) == pytest.approx(ss.t.cdf(t, df), rel=1e-10, abs=1e-15)

    def test_student_t_cdf_at_the_infinities(self) -> None:
        assert (stats.student_t_cdf(math.inf, 3), stats.student_t_cdf(-math.inf, 3)) == (1.0, 0.0)

    def test_student_t_matches_scipy(self) -> None:
        stats.student_t_quantile.cache_clear()
        for df in (1, 2, 3, 4, 7, 16, 39, 120, 5000):
            for q in (0.6, 0.9, 0.975, 0.995):
                assert stats.student_t_quantile(q, df) == pytest.approx(ss.t.ppf(q, df), rel=1e-10)

    def test_cluster_interval_matches_independent_formula(self) -> None:
        rng = random.Random(11)
        for _ in range(200):
            m, n = rng.randint(1, 25), rng.randint(1, 8)
            rates = [rng.randint(0, n) / n for _ in range(m)]
            assert stats.cluster_rate_interval(rates, m * n) == pytest.approx(cluster_interval(rates, m * n), abs=1e-9)

    @pytest.mark.parametrize("m", [999, 1001, 1500, 4000])
    def test_arm_interval_of_many_tasks_matches_independent_formula(self, m: int) -> None:
        """The arm's pass-rate interval of a big corpus (hundreds to thousands of tasks, 3 runs
        each) is scipy's Clopper–Pearson interval over the tasks."""
        rng = random.Random(m)
        rows = []
        for i in range(m):
            c = rng.choice((0, 1, 1, 2, 3, 3))
            rows.append(
                metrics.per_task([sample(f"d/t{i}", "akm", s, "pass" if s <= c else "fail") for s in (1, 2, 3)])
            )
        ci = metrics.aggregate(rows)["pass_rate_ci"]
        expected = task_interval([r["pass_rate"] for r in rows])
        assert (ci["low"], ci["high"]) == pytest.approx(expected, abs=1e-9)

    def test_student_t_matches_scipy_at_many_degrees_of_freedom(self) -> None:
        stats.student_t_quantile.cache_clear()
        for df in (1, 2, 29, 30, 120, 999, 1000, 1001, 5000, 100_000):
            for q in (0.9, 0.975, 0.995):
                assert stats.student_t_quantile(q, df) == pytest.approx(ss.t.ppf(q, df), rel=1e-9)

    def test_percentile_is_numpys_linear_interpolation(self) -> None:
        """The bootstrap interval's percentile interpolates between order statistics as numpy does."""
        rng = random.Random(3)
        for _ in range(200):
            values = sorted(rng.uniform(-1, 1) for _ in range(rng.randint(1, 40)))
            q = rng.random()
            assert stats._percentile(values, q) == pytest.approx(float(np.percentile(values, 100 * q)), abs=1e-12)

    @pytest.mark.parametrize(("confidence", "tail"), [(None, 0.025), (0.9, 0.05), (0.99, 0.005)])
    def test_bootstrap_interval_has_the_stated_level(self, confidence: float | None, tail: float) -> None:
        """400 tasks, half with delta 1 and half 0: a resampled mean is Binomial(400, 1/2) / 400,
        so the 95% percentile interval (the default) must sit at its exact 2.5% and 97.5%
        quantiles; a 90% interval would be 3 tasks (0.0075) narrower on each side."""
        pairs = [([True], [False])] * 200 + [([True], [True])] * 200
        kw = {} if confidence is None else {"confidence": confidence}
        res = stats.paired_bootstrap_delta(pairs, iterations=10_000, **kw)
        assert res["delta"] == 0.5
        assert res["low"] == pytest.approx(ss.binom.ppf(tail, 400, 0.5) / 400, abs=0.003)
        assert res["high"] == pytest.approx(ss.binom.ppf(1 - tail, 400, 0.5) / 400, abs=0.003)

    def test_pass_k_match_published_estimators(self) -> None:
        for n in range(1, 16):
            for c in range(n + 1):
                for k in range(1, n + 1):
                    assert stats.pass_at_k(n, c, k) == pytest.approx(chen_pass_at_k(n, c, k), abs=1e-12)
                    assert stats.pass_hat_k(n, c, k) == pytest.approx(
                        special.comb(c, k) / special.comb(n, k), abs=1e-12
                    )

    def test_sign_test_matches_binomtest(self) -> None:
        rng = random.Random(5)
        for _ in range(100):
            pairs = [(rng.randint(0, 3) / 3, rng.randint(0, 3) / 3) for _ in range(rng.randint(1, 30))]
            res = stats.sign_test(pairs)
            n = res["wins"] + res["losses"]
            expected = 1.0 if n == 0 else ss.binomtest(res["wins"], n, 0.5).pvalue
            assert res["p_value"] == pytest.approx(expected, abs=1e-12)

    def test_holm_matches_statsmodels(self) -> None:
        rng = random.Random(3)
        for _ in range(40):
            p = [rng.random() ** 3 for _ in range(rng.randint(1, 12))]
            assert significance.holm(p) == pytest.approx(list(multipletests(p, method="holm")[1]), abs=1e-12)

    def test_fisher_matches_scipy(self) -> None:
        for na, nb in itertools.product(range(1, 11), range(1, 11)):
            for ca, cb in itertools.product(range(na + 1), range(nb + 1)):
                expected = ss.fisher_exact([[ca, na - ca], [cb, nb - cb]]).pvalue
                assert significance.fisher_exact(ca, na, cb, nb) == pytest.approx(expected, rel=1e-9, abs=1e-15)

    def test_fisher_refuses_impossible_counts(self) -> None:
        """More passes than runs on either side (or no runs at all) is a caller's bug, refused by name."""
        for counts in ((3, 2, 0, 1), (0, 1, 3, 2), (-1, 2, 0, 2), (0, 0, 0, 0)):
            with pytest.raises(ValueError, match="need 0 <= passes <= runs"):
                significance.fisher_exact(*counts)

    def test_sign_flip_exact_matches_scipy_and_inverts(self) -> None:
        """p equals scipy's exact permutation p; just inside the interval the test accepts, just
        outside it rejects (the interval is exactly the test's acceptance set)."""
        rng = random.Random(7)
        significant = inner = 0
        for _ in range(40):
            # two observations at least (scipy); dyadic rates, so scipy's float sums are exact too
            m, n = rng.randint(2, 12), rng.choice([1, 2, 4, 8])
            d = [Fraction(rng.randint(0, n) - rng.randint(0, n), n) for _ in range(m)]
            res = significance.sign_flip_test(d)
            assert res["exact"] and res["p_value"] == pytest.approx(sign_flip_p([float(x) for x in d]), abs=1e-12)
            # the report's promise: the interval leaves out 0 exactly when the delta is significant
            assert (res["low"] > 0 or res["high"] < 0) == (res["p_value"] <= 0.05)
            significant += res["p_value"] <= 0.05
            inner += sum(abs(b) < 1 for b in (res["low"], res["high"]))
            for bound, inward in ((res["low"], 1), (res["high"], -1)):
                if abs(bound) < 1:  # a clipped bound is not a boundary of the test
                    assert sign_flip_p([float(x) for x in d], bound + inward * 1e-7) > 0.05
                    assert sign_flip_p([float(x) for x in d], bound - inward * 1e-7) <= 0.05
        # both outcomes met, and most bounds are the test's own (not clipped) so the loop above checked them
        assert significant >= 1 and inner >= 40

    def test_sign_flip_monte_carlo_near_exact(self) -> None:
        """Above 14 tasks the p-value is Monte Carlo: within 4 standard errors of scipy's exact p,
        and the same deltas give the same p and interval (a report is reproducible)."""
        rng = random.Random(9)
        for _ in range(3):
            d = [Fraction(rng.randint(0, 4) - rng.randint(0, 3), 4) for _ in range(15)]
            res = significance.sign_flip_test(d)
            exact = sign_flip_p([float(x) for x in d])
            assert not res["exact"]
            assert abs(res["p_value"] - exact) <= 4 * math.sqrt(exact * (1 - exact) / res["resamples"]) + 1e-4
            assert significance.sign_flip_test(d) == res

    def test_sign_flip_monte_carlo_interval_inverts_the_same_draws(self) -> None:
        """Above 14 tasks the interval is the set of shifts θ the Monte Carlo test does not reject:
        redrawing the same seeded sign vectors (bit j of a draw is task j's sign) and counting
        the observed vector once, p(θ) is above 0.05 just inside each bound and at most 0.05 just
        outside it."""
        rng = random.Random(21)
        for _ in range(2):
            # uneven deltas, so the bounds of different draws rarely tie
            d = [Fraction(rng.randint(-30, 60), 97 + j) for j in range(15)]
            res = significance.sign_flip_test(d, resamples=2000)
            draws = random.Random(significance.SEED)
            signs = [[1 if v >> j & 1 else -1 for j in range(15)] for v in (draws.getrandbits(15) for _ in range(2000))]

            def p_at(theta: float, signs: list[list[int]] = signs, d: list[Fraction] = d) -> float:
                x = [float(v) - theta for v in d]
                bound = abs(sum(x))
                hits = sum(abs(sum(e * v for e, v in zip(eps, x, strict=True))) >= bound for eps in signs)
                return (1 + hits) / 2001

            assert p_at(0.0) == res["p_value"]
            for bound, inward in ((res["low"], 1), (res["high"], -1)):
                assert abs(bound) < 1
                assert p_at(bound + inward * 1e-9) > 0.05 >= p_at(bound - inward * 1e-9)

    def test_sign_flip_monte_carlo_of_twenty_tasks(self) -> None:
        """20 tasks (the sign vectors are drawn in three blocks of 8 bits): 18 small deltas of
        ±1/4 that cancel and two of +1. The exact p counts the ways by hand: S = (2k − 18)/4 + B,
        k ~ Binomial(18, 1/2) the small deltas keeping their sign, B = ±1 ± 1; p = P(|S| >= 2)."""
        d = [Fraction(1, 4)] * 9 + [Fraction(-1, 4)] * 9 + [Fraction(1)] * 2
        big = {-2: Fraction(1, 4), 0: Fraction(1, 2), 2: Fraction(1, 4)}
        exact = float(
            sum(
                Fraction(math.comb(18, k), 2**18) * q
                for k in range(19)
                for b, q in big.items()
                if abs(Fraction(2 * k - 18, 4) + b) >= 2
            )
        )
        res = significance.sign_flip_test(d)
        assert not res["exact"] and abs(exact - 0.3445) < 1e-4
        assert abs(res["p_value"] - exact) <= 4 * math.sqrt(exact * (1 - exact) / res["resamples"])

    def test_stratified_permutation_matches_enumeration(self) -> None:
        """Exact p against the product of scipy's hypergeometric pmfs over every split."""
        rng = random.Random(13)
        for _ in range(40):
            strata = random_strata(rng)
            res = significance.stratified_permutation_test(strata)
            assert res["exact"] is True and res["resamples"] == 0
            assert res["p_value"] == pytest.approx(enumerated_stratified_p(strata), abs=1e-12)

    def test_stratified_permutation_monte_carlo_near_exact(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A compare too large to convolve exactly samples the null instead: its p is within 4
        standard errors of the enumerated one (the strata tie often, so counting |S| = |S_obs| as
        extreme matters), and the same inputs give the same p (a report is reproducible)."""
        monkeypatch.setattr(significance, "_DP_BUDGET", 0)
        rng = random.Random(17)
        for _ in range(6):
            strata = random_strata(rng)
            strata.append((1, 2, 1, 3))  # one task whose passes can split more than one way
            res = significance.stratified_permutation_test(strata)
            exact = min(1.0, enumerated_stratified_p(strata))
            assert (res["exact"], res["resamples"]) == (False, significance.RESAMPLES)
            assert abs(res["p_value"] - exact) <= 4 * math.sqrt(exact * (1 - exact) / res["resamples"]) + 2e-4
            assert significance.stratified_permutation_test(strata) == res

    def test_an_exact_p_is_never_above_one(self) -> None:
        """Two tasks mirrored (0/1 vs 1/1 and back, 3/7 vs 1/4 and back): S_obs = 0, so every split
        is as extreme and p is 1. The null distribution's probabilities, each a rounded product,
        add up to 1 + 2^-52 here; a report must still print 1, not a p above 1."""
        strata = [(0, 1, 1, 1), (3, 7, 1, 4), (1, 1, 0, 1), (1, 4, 3, 7)]
        res = significance.stratified_permutation_test(strata)
        assert (res["p_value"], res["exact"]) == (1.0, True)

    def test_run_counts_whose_common_multiple_passes_two_to_the_53_stay_exact(self) -> None:
        """Tasks with every run count from 1 to 47 (an adaptive bench deepens tasks unevenly, and
        harness errors take runs away) put the least common multiple of the run counts near 5e19,
        past the integers a float holds exactly. Three tasks and their mirror images give S_obs = 0,
        so p is 1: the rate differences must stay integers, or rounding breaks the ties (p 0.977)
        and moves small p's."""
        always = [(n, n, n, n) for n in range(1, 48)]
        mixed = [(2, 20, 7, 9), (5, 42, 22, 32), (1, 6, 0, 28)]
        mirrored = [(c_b, n_b, c_a, n_a) for c_a, n_a, c_b, n_b in mixed]
        res = significance.stratified_permutation_test(always + mixed + mirrored)
        assert res["exact"] is True and res["p_value"] == pytest.approx(1.0, abs=1e-12)
        # Beside the same tasks, small p's are those of the enumeration (0.0006 here, not 0).
        for mixed in ([(14, 38, 9, 9)], [(1, 5, 2, 34), (6, 7, 2, 29), (17, 17, 6, 7)]):
            res = significance.stratified_permutation_test(always + mixed)
            assert res["p_value"] == pytest.approx(enumerated_stratified_p(mixed), rel=1e-9)

    def test_the_convolution_is_exact_up_to_its_budget(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The report says a p is exact when the null distribution took at most ``_DP_BUDGET`` steps
        to convolve: one step per (partial sum so far, split of the next task), counted here from
        the distinct sums of the rate differences, over the tasks whose passes can split more than
        one way. At that budget the p is exact; one step less and it is sampled."""
        strata = [(1, 3, 2, 3), (3, 3, 4, 4), (0, 4, 3, 5), (2, 2, 5, 5), (2, 5, 1, 2)]
        sums, steps = {Fraction(0)}, 0
        for a, na, b, nb in strata:
            t = a + b
            diffs = [Fraction(x, na) - Fraction(t - x, nb) for x in range(max(0, t - nb), min(t, na) + 1)]
            if len(diffs) > 1:
                steps += len(sums) * len(diffs)
                sums = {s + d for s in sums for d in diffs}
        assert steps == 4 * 1 + 4 * 4 + 3 * 16  # three tasks split 4, 4 and 3 ways; 16 sums after two
        monkeypatch.setattr(significance, "_DP_BUDGET", steps)
        exact = significance.stratified_permutation_test(strata)
        assert exact["exact"] is True and exact["p_value"] == pytest.approx(enumerated_stratified_p(strata), abs=1e-12)
        monkeypatch.setattr(significance, "_DP_BUDGET", steps - 1)
        assert significance.stratified_permutation_test(strata)["exact"] is False

    def test_tasks_passing_everywhere_leave_the_compare_exact(self) -> None:
        """Easy tasks pass every run on both sides: they cannot differ, so a compare with many of
        them (runs differing between tasks) is exactly the test of the others, not an estimate."""
        always = [(n, n, m, m) for n, m in [(3, 4), (5, 7), (8, 6), (4, 9), (7, 5), (6, 8)] * 6]
        mixed = [(1, 3, 2, 3), (0, 4, 3, 5)]
        res = significance.stratified_permutation_test(always + mixed)
        assert (res["exact"], res["resamples"]) == (True, 0)
        assert res["p_value"] == pytest.approx(enumerated_stratified_p(mixed), abs=1e-12)

    def test_monte_carlo_p_counts_the_observed_data(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A Monte Carlo p is (1 + hits) / (resamples + 1), never 0: with data more extreme than
        any of 200 random draws (all tasks +1; a draw ties it with probability 2/2^20) it is 1/201."""
        res = significance.sign_flip_test([Fraction(1)] * 20, resamples=200)
        assert (res["p_value"], res["exact"], res["resamples"]) == (1 / 201, False, 200)
        monkeypatch.setattr(significance, "_DP_BUDGET", 0)
        # ten tasks 5/5 against 0/5: one draw reaching |S| = 10 has probability 2 / 252^10
        res = significance.stratified_permutation_test([(5, 5, 0, 5)] * 10, resamples=200)
        assert (res["p_value"], res["exact"], res["resamples"]) == (1 / 201, False, 200)

    def test_few_tasks_give_the_whole_range_and_no_tasks_give_no_test(self) -> None:
        """Too few tasks to reject anything: the interval is all of [-1, 1], clipped to the range a
        difference of rates can take; no task (or no run on a side) gives no p-value at all."""
        for d in ([Fraction(1), Fraction(-1)], [Fraction(-1)] * 3, [Fraction(1)] * 3):
            res = significance.sign_flip_test(d)
            assert (res["low"], res["high"]) == (-1.0, 1.0)
            assert res["p_value"] == pytest.approx(sign_flip_p([float(x) for x in d]), abs=1e-12)
        empty = {"p_value": None, "low": None, "high": None, "exact": None, "resamples": 0}
        assert significance.sign_flip_test([]) == empty
        assert significance.stratified_permutation_test([(0, 0, 1, 1), (2, 3, 0, 0)]) == {
            "p_value": None,
            "exact": None,
            "resamples": 0,
        }
        # every pass on both sides: nothing can split another way, so nothing is beyond noise
        assert significance.stratified_permutation_test([(1, 1, 1, 1)]) == {
            "p_value": 1.0,
            "exact": True,
            "resamples": 0,
        }

    def test_sign_flip_is_exact_up_to_fourteen_tasks(self) -> None:
        """Up to 14 tasks every sign vector is enumerated: p is scipy's exact p, not an estimate."""
        d = [Fraction(k % 3, 2) for k in range(14)]
        res = significance.sign_flip_test(d)
        assert res["exact"] is True and res["resamples"] == 2**14
        assert res["p_value"] == pytest.approx(sign_flip_p([float(x) for x in d]), abs=1e-12)


def random_report(seed: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """12 tasks × 4 seeds, three arms, a few harness errors (some with large token counts)."""
    rng = random.Random(seed)
    tasks = [make_task(f"d{i % 3}/t{i:02d}") for i in range(12)]
    samples = []
    for t in tasks:
        p = rng.random()
        for arm, shift in (("noakm", 0.0), ("synthetic", 0.1), ("akm", 0.25)):
            for s in range(1, 5):
                outcome = "harness_error" if rng.random() < 0.05 else "pass" if rng.random() < p + shift else "fail"
                tokens = 30_000 if outcome == "harness_error" else rng.randint(500, 3000)
                samples.append(sample(t.id, arm, s, outcome, tokens=tokens))
    env = report.build(inp(tasks, samples, arms=("noakm", "akm", "synthetic"), seeds=4), timestamp=TS)
    return env, samples


def by_cell(samples: list[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    cells: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for s in samples:
        cells.setdefault((s["task_id"], s["arm"]), []).append(s)
    return cells


@pytest.mark.parametrize("seed", [1, 2, 3])
class TestEnvelope:
    def test_per_task_and_arm_figures(self, seed: int) -> None:
        env, samples = random_report(seed)
        cells = by_cell(samples)
        for arm in ("noakm", "akm", "synthetic"):
            rates, kmin = [], 99
            for t in env["tasks"]:
                runs = cells[(t["id"], arm)]
                valid = [r for r in runs if r["outcome"] != "harness_error"]
                row = t[arm]
                if not valid:
                    assert row["pass_rate"] is None
                    continue
                c = sum(r["outcome"] == "pass" for r in valid)
                assert row["pass_rate"] == pytest.approx(c / len(valid))
                assert (row["pass_rate_ci"]["low"], row["pass_rate_ci"]["high"]) == pytest.approx(
                    sm_wilson(c, len(valid))
                )
                assert row["tokens_per_run"] == pytest.approx(np.mean([r["tokens"]["total"] for r in valid]))
                rates.append(c / len(valid))
                kmin = min(kmin, len(valid))
            agg = env["aggregate"][arm]
            assert agg["pass_rate"] == pytest.approx(np.mean(rates))
            assert (agg["pass_rate_ci"]["low"], agg["pass_rate_ci"]["high"]) == pytest.approx(task_interval(rates))
            assert list(agg["pass_at_k"]) == [str(k) for k in range(1, kmin + 1)]
            for k in range(1, kmin + 1):
                per_task = [
                    (t[arm]["valid_count"], t[arm]["passes"]) for t in env["tasks"] if t[arm]["pass_rate"] is not None
                ]
                assert agg["pass_at_k"][str(k)] == pytest.approx(
                    np.mean([chen_pass_at_k(n, c, k) for n, c in per_task])
                )
                assert agg["pass_hat_k"][str(k)] == pytest.approx(
                    np.mean([special.comb(c, k) / special.comb(n, k) for n, c in per_task])
                )

    def test_paired_comparisons(self, seed: int) -> None:
        env, _ = random_report(seed)
        agg = env["aggregate"]
        blocks = {"noakm": agg["delta"]["paired"], "synthetic": agg["akm_over_synthetic_paired"]}
        raw = []
        for b, block in blocks.items():
            pairs = [
                (t["akm"], t[b])
                for t in env["tasks"]
                if t["akm"]["pass_rate"] is not None and t[b]["pass_rate"] is not None
            ]
            d = [a["pass_rate"] - o["pass_rate"] for a, o in pairs]
            assert block["tasks"] == len(pairs) and block["delta"] == pytest.approx(np.mean(d))
            assert block["p_value"] == pytest.approx(sign_flip_p(d), abs=1e-12)
            raw.append(block["p_value"])
        # Holm's level for each comparison: ALPHA / (k - rank) up to the first rank Holm cannot
        # reject, that rank's level from there on (the interval inverts the adjusted test).
        order = sorted(range(2), key=lambda i: raw[i])
        first_kept = next(
            (r for r, i in enumerate(order) if min(1.0, max((2 - q) * raw[order[q]] for q in range(r + 1))) >= 0.05), 2
        )
        levels = {b: 0.05 / (2 - min(order.index(i), first_kept)) for i, b in enumerate(blocks)}
        for b, block in blocks.items():
            pairs = [
                (t["akm"], t[b])
                for t in env["tasks"]
                if t["akm"]["pass_rate"] is not None and t[b]["pass_rate"] is not None
            ]
            d = [a["pass_rate"] - o["pass_rate"] for a, o in pairs]
            assert block["confidence"] == pytest.approx(1 - levels[b])
            # the interval: the test's acceptance set at that level, widened to the Agresti–Caffo run noise
            var = sum(
                ((c + 1) / (n + 2)) * (1 - (c + 1) / (n + 2)) / (n + 2)
                for a, o in pairs
                for c, n in ((a["passes"], a["valid_count"]), (o["passes"], o["valid_count"]))
            )
            half = ss.norm.ppf(1 - levels[b] / 2) * math.sqrt(var) / len(pairs)
            diag = block["diagnostics"]
            assert block["low"] == pytest.approx(max(-1.0, min(diag["permutation_low"], np.mean(d) - half)))
            assert block["high"] == pytest.approx(min(1.0, max(diag["permutation_high"], np.mean(d) + half)))
            wins, losses = sum(x > 0 for x in d), sum(x < 0 for x in d)
            assert diag["sign_test_p"] == pytest.approx(
                ss.binomtest(wins, wins + losses).pvalue if wins + losses else 1.0
            )
        holm = multipletests(raw, method="holm")[1]
        for block, p in zip(blocks.values(), holm):
            assert block["p_value_holm"] == pytest.approx(p) and block["holm_family"] == 2
            assert block["significant"] == (p < 0.05 and not block["low"] <= 0 <= block["high"])
        assert agg["delta"]["pass_rate"] == pytest.approx(blocks["noakm"]["delta"])
        assert agg["akm_over_synthetic_lift"] == pytest.approx(blocks["synthetic"]["delta"])


def change_interval(strata: list[Any], observed: Fraction, splits: list[Any], level: float) -> tuple[float, float]:
    """compare's interval at 1 − ``level`` (docs/report.md, "compare"), from the enumerated null law:
    the end towards 0 is the delta minus the largest |S| the test does not reject, the other the
    wider of that and scipy's t(m − 1) interval of the per-task run variances (unbiased, or
    Agresti–Caffo's where larger)."""
    law: dict[Fraction, float] = {}
    for combo in itertools.product(*splits):
        v = abs(sum(x for x, _ in combo))
        law[v] = law.get(v, 0.0) + math.prod(q for _, q in combo)
    critical = max(v for v in law if sum(q for w, q in law.items() if w >= v) >= level - 1e-12)
    m = len(strata)
    d, h = float(observed) / m, float(critical) / m
    sides = [(x, n) for a, na, b, nb in strata for x, n in ((a, na), (b, nb))]
    var = sum(
        max(x / n * (1 - x / n) / (n - 1), (x + 1) / (n + 2) * (1 - (x + 1) / (n + 2)) / (n + 2)) for x, n in sides
    )
    far = max(h, ss.t.ppf(1 - level / 2, m - 1) * math.sqrt(var) / m)
    if abs(observed) <= critical:
        low, high = d - far, d + far
    else:
        low, high = (d - h, d + far) if d > 0 else (d - far, d + h)
    return max(-1.0, low), min(1.0, high)


@pytest.mark.parametrize("seed", [4, 5])
def test_compare_numbers(seed: int) -> None:
    """Per-task Fisher p, Holm over tasks and arms, the stratified p and the interval built on it,
    on a 3-seed base against a 5-seed current report."""
    rng = random.Random(seed)
    tasks = [make_task(f"d/t{i}") for i in range(4)]
    envs = []
    for seeds in (3, 5):
        samples = [
            sample(t.id, arm, s, "pass" if rng.random() < 0.5 else "fail")
            for t in tasks
            for arm in ("noakm", "akm")
            for s in range(1, seeds + 1)
        ]
        envs.append(report.build(inp(tasks, samples, seeds=seeds), timestamp=TS))
    result = compare.compare(*envs)
    assert any("differ in runs per task" in w for w in result["warnings"])
    task_p, arm_p, laws = [], [], []
    for arm, c in result["arms"].items():
        strata = []
        for t in c["perTask"]:
            base = next(x[arm] for x in envs[0]["tasks"] if x["id"] == t["id"])
            head = next(x[arm] for x in envs[1]["tasks"] if x["id"] == t["id"])
            h, b = (head["passes"], head["valid_count"]), (base["passes"], base["valid_count"])
            expected = ss.fisher_exact([[h[0], h[1] - h[0]], [b[0], b[1] - b[0]]]).pvalue
            assert t["p_value"] == pytest.approx(expected, rel=1e-9)
            task_p.append(t["p_value_holm"])
            strata.append((*h, *b))
        observed = sum(Fraction(a, na) - Fraction(b, nb) for a, na, b, nb in strata)
        splits = [
            [
                (Fraction(x, na) - Fraction(a + b - x, nb), ss.hypergeom.pmf(x, na + nb, a + b, na))
                for x in range(max(0, a + b - nb), min(a + b, na) + 1)
            ]
            for a, na, b, nb in strata
        ]
        expected = sum(
            math.prod(q for _, q in combo)
            for combo in itertools.product(*splits)
            if abs(sum(v for v, _ in combo)) >= abs(observed)
        )
        assert c["paired"]["p_value"] == pytest.approx(expected, abs=1e-12)
        arm_p.append(c["paired"]["p_value"])
        laws.append((strata, observed, splits))
    # Holm's step levels (statsmodels' Holm decides; a rejected arm's level is its step's, the
    # others' the level of the first step that did not reject), then each arm's interval there
    reject = multipletests(arm_p, alpha=0.05, method="holm")[0]
    order = sorted(range(len(arm_p)), key=lambda i: arm_p[i])
    stop = next((0.05 / (len(arm_p) - r) for r, i in enumerate(order) if not reject[i]), None)
    for i, c in enumerate(result["arms"].values()):
        level = 0.05 / (len(arm_p) - order.index(i)) if reject[i] else stop
        assert c["paired"]["significant"] == bool(reject[i]) and c["paired"]["confidence"] == pytest.approx(1 - level)
        assert (c["paired"]["low"], c["paired"]["high"]) == pytest.approx(change_interval(*laws[i], level))
    raw_task = [t["p_value"] for c in result["arms"].values() for t in c["perTask"]]
    assert task_p == pytest.approx(list(multipletests(raw_task, method="holm")[1]))
    assert [c["paired"]["p_value_holm"] for c in result["arms"].values()] == pytest.approx(
        list(multipletests(arm_p, method="holm")[1])
    )
