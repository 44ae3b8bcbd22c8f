"""The adaptive design's statistics (report/sequential.py) against independent computations, and its
size under the null by a seeded simulation of whole adaptive runs."""

from __future__ import annotations

import math
import random

import pytest
from scipy import integrate, special, stats

from pytest_akmbench.report import sequential
from pytest_akmbench.report.sequential import log_e_value, plan


class TestEValue:
    @pytest.mark.parametrize(("plus", "minus"), [(0, 0), (1, 0), (0, 3), (7, 2), (20, 20), (60, 5)])
    def test_is_the_mixture_of_bets(self, plus: int, minus: int) -> None:
        """The closed form equals the Beta(2, 2) average of the wealth of every fixed bet,
        integrated numerically: (2 theta)^plus (2 (1 - theta))^minus."""
        wealth, _ = integrate.quad(
            lambda th: (2 * th) ** plus * (2 * (1 - th)) ** minus * stats.beta.pdf(th, 2, 2), 0, 1, limit=200
        )
        assert log_e_value(plus, minus) == pytest.approx(math.log(wealth), rel=1e-6, abs=1e-6)

    def test_is_a_fair_coin_martingale(self) -> None:
        """Under the null the next discordant pair is a fair coin: the expected next e-value is
        the current one (so no betting order or stopping rule can make it grow on average)."""
        for plus in range(12):
            for minus in range(12):
                now = math.exp(log_e_value(plus, minus))
                after = (math.exp(log_e_value(plus + 1, minus)) + math.exp(log_e_value(plus, minus + 1))) / 2
                assert after == pytest.approx(now, rel=1e-12)

    def test_agrees_with_scipy_beta_function(self) -> None:
        for plus, minus in [(3, 9), (40, 31), (0, 17)]:
            n = plus + minus
            expected = n * math.log(2) + special.betaln(plus + 2, minus + 2) - special.betaln(2, 2)
            assert log_e_value(plus, minus) == pytest.approx(expected, rel=1e-12)


def outcomes_of(table: dict[tuple[str, str], list[bool]]) -> dict[tuple[str, str, int], bool]:
    return {(t, arm, s + 1): ok for (t, arm), row in table.items() for s, ok in enumerate(row)}


ARMS = ("noakm", "akm")


class TestPlan:
    def test_decisive_stops_at_the_look_that_crosses(self) -> None:
        """Three tasks, akm always ahead: 6 pairs after two rounds (e = 64 * 6 / 72 = 5.33 < 20),
        9 after the third (e = 512 * 6 / 132 = 23.3): the plan stops there, needing no seed beyond 3."""
        table = {(t, "akm"): [True] * 6 for t in "abc"} | {(t, "noakm"): [False] * 6 for t in "abc"}
        p = plan(list("abc"), ARMS, outcomes_of(table), floor=2, max_seeds=6)
        assert (p.stop, p.direction, len(p.looks)) == ("decisive", "akm", 3)
        assert p.seeds == {"a": 3, "b": 3, "c": 3}
        assert [look.e_value for look in p.looks] == pytest.approx([8 * 6 / 30, 64 * 6 / 72, 512 * 6 / 132])
        assert p.needs("a", 3) is True and p.needs("a", 4) is False

    def test_max_seeds_reached(self) -> None:
        row = [s % 2 == 0 for s in range(1, 5)]
        table = {(t, arm): row for t in "ab" for arm in ARMS}
        p = plan(list("ab"), ARMS, outcomes_of(table), floor=2, max_seeds=4)
        assert (p.stop, len(p.looks), p.seeds) == ("max_seeds", 4, {"a": 4, "b": 4})

    def test_settled_tasks_are_not_deepened(self) -> None:
        """a passes everywhere (settled after the floor); b varies: only b gets seeds 3 and 4."""
        table = {("a", arm): [True] * 4 for arm in ARMS} | {("b", arm): [True, False, True, True] for arm in ARMS}
        p = plan(["a", "b"], ARMS, outcomes_of(table), floor=2, max_seeds=4)
        assert p.seeds == {"a": 2, "b": 4} and p.stop == "max_seeds"
        assert [look.tasks for look in p.looks] == [2, 2, 1, 1]

    def test_waits_for_a_round_still_running(self) -> None:
        table = {(t, arm): [True, False] for t in "ab" for arm in ARMS}
        outcomes = outcomes_of(table)
        del outcomes[("b", "akm", 2)]
        p = plan(["a", "b"], ARMS, outcomes, floor=2, max_seeds=5)
        assert p.waiting == 2 and p.stop is None and len(p.looks) == 1
        assert p.needs("b", 2) is True and p.needs("a", 3) is None

    def test_a_harness_error_of_this_run_leaves_its_pair_out(self) -> None:
        table = {(t, "akm"): [True] * 3 for t in "ab"} | {(t, "noakm"): [False] * 3 for t in "ab"}
        outcomes = outcomes_of(table)
        del outcomes[("b", "akm", 1)]
        p = plan(["a", "b"], ARMS, outcomes, {("b", "akm", 1)}, floor=1, max_seeds=3)
        assert p.looks[0].pairs == 1 and p.looks[-1].pairs == 5

    def test_block_counts_cells(self) -> None:
        table = {(t, arm): [True] * 3 for t in "ab" for arm in ARMS}
        p = plan(["a", "b"], ARMS, outcomes_of(table), floor=2, max_seeds=3)
        block = sequential.block(p, arms=ARMS, floor=2, max_seeds=3)
        assert (block["cells_used"], block["cells_max"], block["stopping_reason"]) == (8, 12, "settled")


def simulate(rng: random.Random, m: int, lift: float, floor: int = 2, most: int = 10) -> tuple[bool, int, str | None]:
    """One adaptive run of m tasks (pass rates Beta(1/2, 1/2), akm at +lift): every outcome drawn
    up front, the plan reads only those it needs. Returns (decisive, cells used, direction)."""
    tasks = [f"t{i}" for i in range(m)]
    outcomes = {}
    for t in tasks:
        p = rng.betavariate(0.5, 0.5)
        for s in range(1, most + 1):
            outcomes[(t, "noakm", s)] = rng.random() < p
            outcomes[(t, "akm", s)] = rng.random() < min(1.0, p + lift)
    p = plan(tasks, ARMS, outcomes, floor=floor, max_seeds=most)
    # The decision recomputed without the module's statistic: the pairs the plan chose, in
    # (round, task) order, and the running Beta-binomial likelihood ratio from scipy.
    plus = minus = 0
    crossed = False
    for r in range(1, max(p.seeds.values()) + 1):
        for t in tasks:
            if p.seeds[t] >= r:
                a, b = outcomes[(t, "akm", r)], outcomes[(t, "noakm", r)]
                plus, minus = plus + (a and not b), minus + (b and not a)
                ratio = (plus + minus) * math.log(2) + special.betaln(plus + 2, minus + 2) - special.betaln(2, 2)
                crossed = crossed or ratio >= math.log(20)
    assert crossed == (p.stop == "decisive")
    return crossed, len(p.cells(ARMS)), p.direction


class TestSimulation:
    def test_size_under_the_null_is_at_most_alpha(self) -> None:
        """2000 seeded adaptive runs of 17 tasks with no lift: the share that stops decisive is at
        most 5% within Monte Carlo error (2.58 standard errors)."""
        rng = random.Random(16)
        reps = 2000
        rejections = sum(simulate(rng, 17, 0.0)[0] for _ in range(reps))
        assert rejections / reps <= 0.05 + 2.58 * math.sqrt(0.05 * 0.95 / reps)

    def test_a_real_lift_is_found_in_the_right_direction(self) -> None:
        rng = random.Random(17)
        runs = [simulate(rng, 40, 0.3) for _ in range(200)]
        found = [r for r in runs if r[0]]
        assert len(found) >= 0.9 * len(runs)
        assert all(direction == "akm" for _, _, direction in found)
        assert sum(cells for _, cells, _ in runs) / len(runs) < 40 * 2 * 5  # fewer than 5 fixed seeds
