"""Tests for pytest_akmbench.stats.intervals with golden values worked out by hand."""

from __future__ import annotations

import math

import pytest

from pytest_akmbench.stats.intervals import (
    cluster_rate_interval,
    is_flaky,
    paired_bootstrap_delta,
    pass_at_k,
    pass_hat_k,
    sign_test,
    stdev,
    student_t_quantile,
    wilson_interval,
)

Z = 1.959963984540054
T, F = True, False


class TestWilsonInterval:
    def test_eight_of_ten_matches_hand_formula(self) -> None:
        """8/10 equals the Wilson centre ± half-width computed directly."""
        n, p, z2 = 10, 0.8, Z * Z
        center = (p + z2 / 20) / (1 + z2 / 10)
        half = Z / (1 + z2 / 10) * math.sqrt(p * 0.2 / 10 + z2 / 400)
        low, high = wilson_interval(8, n)
        assert low == pytest.approx(center - half, abs=1e-12)
        assert high == pytest.approx(center + half, abs=1e-12)
        # Published value for 8/10: [0.4902, 0.9433].
        assert (round(low, 4), round(high, 4)) == (0.4902, 0.9433)

    def test_zero_of_ten_published_value(self) -> None:
        """0/10 gives the published Wilson interval [0, 0.2775]."""
        low, high = wilson_interval(0, 10)
        assert low == 0.0
        assert round(high, 4) == 0.2775

    def test_all_pass_is_symmetric_and_clamped(self) -> None:
        """10/10 mirrors 0/10 and its upper bound is exactly 1."""
        low, high = wilson_interval(10, 10)
        assert high == 1.0
        assert low == pytest.approx(1 - 0.27753, abs=1e-5)

    def test_n_zero_is_none(self) -> None:
        """No trials yields None rather than a meaningless interval."""
        assert wilson_interval(0, 0) is None

    def test_invalid_counts_raise(self) -> None:
        """More passes than trials is rejected, naming both numbers."""
        with pytest.raises(ValueError, match=r"^need 0 <= passes <= n, got passes=3, n=2$"):
            wilson_interval(3, 2)

    def test_no_pass_and_every_pass_are_exact_bounds(self) -> None:
        """A rate of 0 reports a lower bound of exactly 0 and a rate of 1 an upper bound of exactly
        1 for every run count: the formula alone leaves 1.4e-17 at 0 of 7 runs, which the report's
        JSON would print."""
        for n in range(1, 61):
            assert wilson_interval(0, n)[0] == 0.0, n
            assert wilson_interval(n, n)[1] == 1.0, n


class TestPassAtK:
    def test_hand_value(self) -> None:
        """n=5, c=2, k=2 is 1 - C(3,2)/C(5,2) = 1 - 3/10 = 0.7."""
        assert pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)

    def test_k1_is_pass_rate(self) -> None:
        """pass@1 is c/n."""
        assert pass_at_k(10, 3, 1) == pytest.approx(0.3)

    def test_saturates_when_failures_fewer_than_k(self) -> None:
        """With n - c < k every draw of k contains a pass, so pass@k is 1."""
        assert pass_at_k(5, 4, 2) == 1.0

    def test_zero_correct(self) -> None:
        """No passes means pass@k is 0."""
        assert pass_at_k(5, 0, 3) == 0.0

    def test_large_n_matches_product_form(self) -> None:
        """n=1000 agrees with Chen et al.'s stable product 1 - prod(1 - k/i)."""
        n, c, k = 1000, 37, 100
        prod = math.prod(1 - k / i for i in range(n - c + 1, n + 1))
        assert pass_at_k(n, c, k) == pytest.approx(1 - prod, rel=1e-12)

    def test_none_cases(self) -> None:
        """k > n and n == 0 return None."""
        assert pass_at_k(3, 1, 4) is None
        assert pass_at_k(0, 0, 1) is None


class TestPassHatK:
    def test_hand_value(self) -> None:
        """n=5, c=3, k=2 is C(3,2)/C(5,2) = 3/10."""
        assert pass_hat_k(5, 3, 2) == pytest.approx(3 / 10)

    def test_k_greater_than_c_is_zero(self) -> None:
        """Fewer passes than k makes an all-pass draw impossible."""
        assert pass_hat_k(5, 1, 2) == 0.0

    def test_all_pass(self) -> None:
        """c == n gives 1 for any k <= n."""
        assert pass_hat_k(4, 4, 4) == 1.0

    def test_none_cases(self) -> None:
        """k > n and n == 0 return None."""
        assert pass_hat_k(2, 2, 3) is None
        assert pass_hat_k(0, 0, 1) is None


class TestStdev:
    def test_hand_value(self) -> None:
        """[1,0,1,0,1] has mean 0.6 and variance (3*0.16 + 2*0.36)/4 = 0.3."""
        assert stdev([1, 0, 1, 0, 1]) == pytest.approx(math.sqrt(0.3))

    def test_short_inputs_are_zero(self) -> None:
        """Empty and single-element inputs have stdev 0.0."""
        assert stdev([]) == 0.0
        assert stdev([0.7]) == 0.0

    def test_constant_is_exactly_zero(self) -> None:
        """Identical values give exactly 0.0."""
        assert stdev([0.1, 0.1, 0.1]) == 0.0


class TestIsFlaky:
    def test_all_pass_not_flaky(self) -> None:
        """[T, T, T] is stable."""
        assert not is_flaky([T, T, T])

    def test_alternating_is_flaky(self) -> None:
        """[T, F, T, F, T] has stdev sqrt(0.3) ~ 0.548 > 0.2."""
        assert is_flaky([T, F, T, F, T])

    def test_single_and_empty_not_flaky(self) -> None:
        """One outcome or none cannot be flaky."""
        assert not is_flaky([T])
        assert not is_flaky([F])
        assert not is_flaky([])

    def test_one_odd_outcome_among_few_is_flaky(self) -> None:
        """A single pass (or fail) among four runs: stdev 0.5, flaky either way round."""
        assert is_flaky([T, F, F, F]) and is_flaky([F, T, T, T])

    def test_exactly_at_the_threshold_is_not_flaky(self) -> None:
        """1 odd outcome in 25 has stdev exactly sqrt(24/600) = 0.2: not above the threshold."""
        assert stdev([1.0] * 24 + [0.0]) == 0.2
        assert not is_flaky([T] * 24 + [F]) and is_flaky([T] * 23 + [F])

    def test_rare_blip_with_many_seeds_not_flaky(self) -> None:
        """1 failure in 30 has stdev sqrt(1/30) ~ 0.183 <= 0.2."""
        assert not is_flaky([T] * 29 + [F])
        # 1 in 20 has stdev sqrt(1/20) ~ 0.224 > 0.2.
        assert is_flaky([T] * 19 + [F])


class TestPairedBootstrapDelta:
    @staticmethod
    def _mixed_pairs() -> list[tuple[list[bool], list[bool]]]:
        pairs = []
        for i in range(30):
            a = [(i + s) % 3 != 0 for s in range(4)]
            b = [(i * 7 + s) % 2 == 0 for s in range(4)]
            pairs.append((a, b))
        return pairs

    def test_deterministic_with_seed(self) -> None:
        """Same seed gives identical results (a report is reproducible); another seed draws other
        resamples. Tasks with 1 to 7 seeds make the resampled means fine-grained, so an unseeded
        draw would not land on the same bounds by chance."""
        pairs = self._mixed_pairs()
        assert paired_bootstrap_delta(pairs, seed=7) == paired_bootstrap_delta(pairs, seed=7)
        assert paired_bootstrap_delta(pairs)["seed"] == 20261129
        fine = [
            ([(i * s) % 3 != 0 for s in range(i % 7 + 1)], [(i + s) % 4 == 0 for s in range(i % 5 + 1)])
            for i in range(40)
        ]
        first = paired_bootstrap_delta(fine, seed=7)
        assert paired_bootstrap_delta(fine, seed=7) == first
        other = paired_bootstrap_delta(fine, seed=8)
        assert (other["low"], other["high"]) != (first["low"], first["high"])

    def test_point_estimate_and_containment(self) -> None:
        """Delta is the mean of per-task differences and lies in the interval."""
        pairs = [([T, T], [F, T]), ([T, F], [T, T]), ([T, T, T, T], [F, F, F, T])]
        # Per-task: 1 - 0.5 = 0.5, 0.5 - 1 = -0.5, 1 - 0.25 = 0.75.
        res = paired_bootstrap_delta(pairs)
        assert res["delta"] == pytest.approx((0.5 - 0.5 + 0.75) / 3)
        assert res["tasks"] == 3 and res["iterations"] == 2000
        assert res["low"] <= res["delta"] <= res["high"]
        mixed = paired_bootstrap_delta(self._mixed_pairs())
        assert mixed["low"] <= mixed["delta"] <= mixed["high"]

    def test_all_equal_differences_degenerate(self) -> None:
        """When every task has the same difference d the interval is [d, d]."""
        pairs = [([T, T, F], [T, F, F])] * 15
        res = paired_bootstrap_delta(pairs)
        d = 2 / 3 - 1 / 3
        assert res["delta"] == pytest.approx(d)
        assert res["low"] == res["delta"] == res["high"]

    def test_large_effect(self) -> None:
        """A always passing and B always failing on 20 tasks gives delta 1, low > 0."""
        pairs = [([T] * 3, [F] * 3)] * 20
        res = paired_bootstrap_delta(pairs)
        assert res["delta"] == 1.0
        assert res["low"] > 0

    def test_null_effect_contains_zero(self) -> None:
        """Symmetric wins and losses give delta 0 and an interval around 0."""
        pairs = [([T], [F]), ([F], [T])] * 10 + [([T, F], [F, T])] * 5
        res = paired_bootstrap_delta(pairs)
        assert res["delta"] == 0.0
        assert res["low"] < 0 < res["high"]

    def test_bad_arguments_are_refused_by_name(self) -> None:
        """One resample is enough for an interval (both bounds that resample's delta); none, or a
        level outside (0, 1), is refused naming the value."""
        one = paired_bootstrap_delta([([T], [F]), ([F], [F])], iterations=1, seed=3)
        assert one["iterations"] == 1 and one["low"] == one["high"] and one["low"] in (0.0, 0.5, 1.0)
        with pytest.raises(ValueError, match=r"^iterations must be >= 1, got 0$"):
            paired_bootstrap_delta([([T], [F])], iterations=0)
        with pytest.raises(ValueError, match=r"^confidence must be in \(0, 1\), got 1.0$"):
            paired_bootstrap_delta([([T], [F])], confidence=1.0)
        with pytest.raises(ValueError, match=r"^confidence must be in \(0, 1\), got 0.0$"):
            paired_bootstrap_delta([([T], [F])], confidence=0.0)

    def test_empty_sides_dropped_and_no_tasks(self) -> None:
        """Tasks with an empty side are dropped; no tasks gives all None."""
        res = paired_bootstrap_delta([([], [T]), ([T], [])], iterations=10, seed=1)
        assert res == {
            "delta": None,
            "low": None,
            "high": None,
            "tasks": 0,
            "iterations": 10,
            "seed": 1,
        }
        res = paired_bootstrap_delta([([], [T]), ([T], [F])])
        assert res["tasks"] == 1 and res["delta"] == 1.0

    def test_invalid_arguments(self) -> None:
        """Non-positive iterations and confidence outside (0, 1) are rejected."""
        with pytest.raises(ValueError):
            paired_bootstrap_delta([([T], [F])], iterations=0)
        with pytest.raises(ValueError):
            paired_bootstrap_delta([([T], [F])], confidence=1.0)

    def test_two_thousand_tasks(self) -> None:
        """A large bench gives the plain mean of its per-task differences as delta, every task
        counted; its speed is measured by benchmarks/report_bench.py, not here (a timed test fails
        on a loaded machine)."""
        pairs = [([(i + s) % 3 == 0 for s in range(5)], [(i + s) % 2 == 0 for s in range(5)]) for i in range(2000)]
        res = paired_bootstrap_delta(pairs)
        want = sum(sum(a) / 5 - sum(b) / 5 for a, b in pairs) / 2000
        assert res["tasks"] == 2000
        assert res["delta"] == pytest.approx(want)
        assert res["low"] < want < res["high"]


class TestSignTest:
    def test_eight_wins_zero_losses(self) -> None:
        """8-0 gives p = 2 * (1/2)^8 = 2/256 = 0.0078125."""
        res = sign_test([(1.0, 0.0)] * 8)
        assert res == {"wins": 8, "losses": 0, "ties": 0, "p_value": 2 / 256}

    def test_balanced_is_one(self) -> None:
        """5-5 doubles a tail above 1/2, so p is clamped to 1.0."""
        res = sign_test([(1.0, 0.0)] * 5 + [(0.0, 1.0)] * 5)
        assert res["p_value"] == 1.0

    def test_ties_dropped(self) -> None:
        """9-1 with ties gives p = 2 * (C(10,0) + C(10,1)) / 2^10 = 2 * 11/1024 = 22/1024."""
        pairs = [(0.75, 0.5)] * 9 + [(0.0, 0.25)] + [(0.5, 0.5)] * 4
        res = sign_test(pairs)
        assert (res["wins"], res["losses"], res["ties"]) == (9, 1, 4)
        assert res["p_value"] == 22 / 1024

    def test_no_untied_tasks(self) -> None:
        """All ties or no tasks give p = 1.0."""
        assert sign_test([(0.5, 0.5)])["p_value"] == 1.0
        assert sign_test([]) == {"wins": 0, "losses": 0, "ties": 0, "p_value": 1.0}


class TestStudentT:
    def test_published_quantiles(self) -> None:
        """t(0.975) from the printed tables: 12.706 (1 df), 4.303 (2), 2.228 (10), 2.086 (20)."""
        for df, value in ((1, 12.706), (2, 4.303), (10, 2.228), (20, 2.086)):
            assert round(student_t_quantile(0.975, df), 3) == value

    def test_symmetric_and_tends_to_normal(self) -> None:
        """t(q) = −t(1 − q); with many df the quantile approaches the normal 1.95996."""
        assert student_t_quantile(0.025, 7) == -student_t_quantile(0.975, 7)
        assert abs(student_t_quantile(0.975, 100_000) - Z) < 1e-4


class TestClusterRateInterval:
    def test_hand_value(self) -> None:
        """Rates 0, 0.5, 1 over 6 runs: p = 0.5, s² = 0.25, v = 0.25/3, n_eff = 0.25/v = 3,
        so the Wilson interval of 0.5 at n = 3 with t(0.975, 2) = 4.303 in place of z."""
        t = student_t_quantile(0.975, 2)
        n, p = 3.0, 0.5
        centre = (p + t * t / (2 * n)) / (1 + t * t / n)
        half = t / (1 + t * t / n) * math.sqrt(p * (1 - p) / n + t * t / (4 * n * n))
        low, high = cluster_rate_interval([0.0, 0.5, 1.0], 6)
        assert low == pytest.approx(max(0.0, centre - half)) and high == pytest.approx(min(1.0, centre + half))

    def test_equal_rates_fall_back_to_the_runs(self) -> None:
        """Every task at the same rate: no spread, so n_eff is the number of runs."""
        t = student_t_quantile(0.975, 3)
        low, high = cluster_rate_interval([1.0] * 4, 12)
        assert high == 1.0 and low == pytest.approx(wilson_interval(12, 12, z=t)[0])

    def test_one_task_is_its_wilson_interval(self) -> None:
        """A single task: Wilson of its own runs; nothing ran: None."""
        assert cluster_rate_interval([0.6], 5) == pytest.approx(wilson_interval(3, 5))
        assert cluster_rate_interval([], 0) is None
        # rates without a valid run behind them (a caller's slip) give no interval, not a crash
        assert cluster_rate_interval([0.5], 0) is None and cluster_rate_interval([0.5, 1.0], 0) is None

    def test_wider_than_pooled_wilson_when_tasks_differ(self) -> None:
        """Tasks at 0 and 1 (10 runs each): the runs are clustered, the interval is far wider."""
        low, high = cluster_rate_interval([0.0, 1.0] * 5, 100)
        pooled = wilson_interval(50, 100)
        assert low < pooled[0] and high > pooled[1]


def test_impossible_counts_are_refused_with_the_numbers() -> None:
    """More passes than runs, or k below 1, is a bug upstream: refused, naming the numbers."""
    with pytest.raises(ValueError, match=r"^need 0 <= c <= n, got n=2, c=3$"):
        pass_at_k(2, 3, 1)
    with pytest.raises(ValueError, match=r"^k must be >= 1, got 0$"):
        pass_hat_k(3, 1, 0)
