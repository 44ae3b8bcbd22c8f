"""The adaptive design's statistics (report/sequential.py) against independent computations, and its
size under the null by a seeded simulation of whole adaptive runs."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
from scipy import integrate, special, stats

from pytest_akmbench.report import boundary, sequential
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


def log_e_table(horizon: int) -> np.ndarray:
    """scipy's log e-value for every (akm wins, n) with n <= horizon (-inf where impossible)."""
    table = np.full((horizon + 1, horizon + 1), -np.inf)
    for n in range(horizon + 1):
        p = np.arange(n + 1)
        table[n, : n + 1] = n * math.log(2) + special.betaln(p + 2, n - p + 2) - special.betaln(2, 2)
    return table


def crossing_share(signs: np.ndarray, level: float) -> float:
    """The share of sign streams (rows of +1/-1) whose e-value ever reaches ``level``."""
    table = log_e_table(signs.shape[1])
    wins = np.cumsum(signs > 0, axis=1)
    n = np.arange(1, signs.shape[1] + 1)
    return float(np.mean((table[n, wins] >= level).any(axis=1)))


class TestLevel:
    @pytest.mark.parametrize("horizon", [6, 9, 12, 16])
    def test_is_the_smallest_valid_level_by_enumeration(self, horizon: int) -> None:
        """Every one of the 2^K fair-coin streams enumerated: the level is reached by at most
        alpha of them, and the next e-value below it would be reached by more."""
        signs = np.array(list(itertools.product((1, -1), repeat=horizon)))
        level = boundary.log_threshold(horizon)
        assert crossing_share(signs, level) <= sequential.ALPHA
        table = log_e_table(horizon)
        below = table[np.isfinite(table) & (table < level - 1e-12)].max()
        assert crossing_share(signs, below) > sequential.ALPHA

    def test_a_long_horizon_by_simulation(self) -> None:
        """170 pairs (17 tasks x 10 seeds): 20,000 simulated fair-coin streams reach the level
        at most alpha of the time (3 standard errors), and more than Ville's 1/alpha does."""
        signs = np.where(np.random.default_rng(170).random((20_000, 170)) < 0.5, 1, -1)
        level = boundary.log_threshold(170)
        share = crossing_share(signs, level)
        assert share <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 20_000)
        assert share > crossing_share(signs, math.log(20)) + 0.01

    def test_grows_with_the_horizon_up_to_ville(self) -> None:
        levels = [boundary.log_threshold(k) for k in (6, 30, 170, 400)]
        assert levels == sorted(levels) and levels[-1] < math.log(20)
        assert boundary.log_threshold(boundary.EXACT_HORIZON + 1) == math.log(20)
        assert boundary.log_threshold(5) == math.log(20)  # no stream of 5 pairs can be decisive


class TestChance:
    @pytest.mark.parametrize(
        ("plus", "minus", "more", "optimism"), [(12, 6, 40, 0.0), (5, 9, 80, 0.0), (20, 20, 60, 0.0), (20, 20, 60, 0.5)]
    )
    def test_agrees_with_a_simulated_walk(self, plus: int, minus: int, more: int, optimism: float) -> None:
        """The chance of becoming decisive in ``more`` pairs that favour the leading arm at its
        rate so far (plus ``optimism`` standard errors), against 20,000 simulated continuations
        (3 standard errors)."""
        horizon = 170
        lead, trail = max(plus, minus), min(plus, minus)
        rate = lead / (lead + trail)
        rate += optimism * math.sqrt(rate * (1 - rate) / (lead + trail))
        rng = np.random.default_rng(plus * 100 + minus)
        steps = rng.random((20_000, more)) < rate
        wins = lead + np.cumsum(steps, axis=1)
        n = lead + trail + np.arange(1, more + 1)
        table = log_e_table(horizon)
        level = boundary.log_threshold(horizon)
        hit = (table[n, wins] >= level) | (table[n, n - wins] >= level)
        expected = float(np.mean(hit.any(axis=1)))
        got = boundary.chance(plus, minus, more, horizon, sequential.ALPHA, 2.0, optimism)
        assert got == pytest.approx(expected, abs=3 * math.sqrt(max(expected * (1 - expected), 1e-4) / 20_000))


def outcomes_of(table: dict[tuple[str, str], list[bool]]) -> dict[tuple[str, str, int], bool]:
    return {(t, arm, s + 1): ok for (t, arm), row in table.items() for s, ok in enumerate(row)}


ARMS = ("noakm", "akm")


class TestPlan:
    def test_decisive_stops_at_the_look_that_crosses(self) -> None:
        """Three tasks, akm always ahead, at most 6 seeds (18 pairs: decisive at the e-value of 11
        pairs won to 2, 6.75): 6 pairs after two rounds (e = 64 * 6 / 72 = 5.33), 9 after the
        third (e = 512 * 6 / 132 = 23.3): the plan stops there, needing no seed beyond 3."""
        table = {(t, "akm"): [True] * 6 for t in "abc"} | {(t, "noakm"): [False] * 6 for t in "abc"}
        p = plan(list("abc"), ARMS, outcomes_of(table), floor=2, max_seeds=6)
        assert (p.stop, p.direction, len(p.looks)) == ("decisive", "akm", 3)
        assert p.seeds == {"a": 3, "b": 3, "c": 3}
        assert [look.e_value for look in p.looks] == pytest.approx([8 * 6 / 30, 64 * 6 / 72, 512 * 6 / 132])
        assert p.level == pytest.approx(2**13 * math.exp(special.betaln(13, 4) - special.betaln(2, 2)))
        assert p.needs("a", 3) is True and p.needs("a", 4) is False

    def test_max_seeds_reached(self) -> None:
        row = [s % 2 == 0 for s in range(1, 5)]
        table = {(t, arm): row for t in "ab" for arm in ARMS}
        p = plan(list("ab"), ARMS, outcomes_of(table), floor=2, max_seeds=4, futility=0)
        assert (p.stop, len(p.looks), p.seeds) == ("max_seeds", 4, {"a": 4, "b": 4})

    def test_futile_when_no_pair_is_discordant(self) -> None:
        """Both arms fail and pass together: no discordant pair, so no later one either at
        this rate: the chance of becoming decisive is 0, the run stops after the floor."""
        row = [s % 2 == 0 for s in range(1, 11)]
        table = {(t, arm): row for t in "abcd" for arm in ARMS}
        p = plan(list("abcd"), ARMS, outcomes_of(table), floor=2, max_seeds=10)
        assert (p.stop, len(p.looks), p.chance, p.direction) == ("futile", 2, 0.0, None)
        assert p.needs("a", 2) is True and p.needs("a", 3) is False
        block = sequential.block(p, arms=ARMS, floor=2, max_seeds=10)
        assert (block["stopping_reason"], block["chance"], block["futility"]) == ("futile", 0.0, 0.05)
        assert "stopped: futile, unlikely to become decisive within the most seeds (chance 0.0%)" in (
            sequential.headline(block)
        )

    def test_futile_when_the_pairs_split_evenly(self) -> None:
        """Ten tasks, each with one discordant pair either way in the first two seeds and ties
        after: the trend is even, and even 8 more seeds of every task at that rate would reach
        the level only rarely (the chance is the fair walk's, checked against a simulation)."""
        table = {}
        for i, t in enumerate("abcdefghij"):
            akm_first = i % 2 == 0
            table[(t, "akm")] = [akm_first, not akm_first] + [False] * 8
            table[(t, "noakm")] = [not akm_first, akm_first] + [False] * 8
        p = plan(list("abcdefghij"), ARMS, outcomes_of(table), floor=2, max_seeds=10)
        assert p.stop == "futile" and p.chance is not None and p.chance < 0.05
        assert p.chance == boundary.chance(10, 10, 80, 100, 0.05, 2.0, sequential.OPTIMISM)

    def test_a_lead_keeps_the_run_going(self) -> None:
        """akm alone passed 3 of 20 pairs so far: not decisive yet, far from futile."""
        table = {(t, arm): [False] * 10 for t in "abcdefghij" for arm in ARMS}
        for t in "abc":
            table[(t, "akm")] = [True] + [False] * 9
        p = plan(list("abcdefghij"), ARMS, outcomes_of(table), floor=2, max_seeds=10)
        assert len(p.looks) > 2 and p.stop != "decisive"

    def test_settled_tasks_are_not_deepened(self) -> None:
        """a passes everywhere (settled after the floor); b varies and c always fails (akm could
        still solve it): only b and c get seeds 3 and 4."""
        table = {("a", arm): [True] * 4 for arm in ARMS} | {("b", arm): [True, False, True, True] for arm in ARMS}
        table |= {("c", arm): [False] * 4 for arm in ARMS}
        p = plan(["a", "b", "c"], ARMS, outcomes_of(table), floor=2, max_seeds=4, futility=0)
        assert p.seeds == {"a": 2, "b": 4, "c": 4} and p.stop == "max_seeds"
        assert [look.tasks for look in p.looks] == [3, 3, 2, 2]

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
        p = plan(["a", "b"], ARMS, outcomes, {("b", "akm", 1)}, floor=1, max_seeds=3, futility=0)
        assert p.looks[0].pairs == 1 and p.looks[-1].pairs == 5

    def test_block_counts_cells(self) -> None:
        table = {(t, arm): [True] * 3 for t in "ab" for arm in ARMS}
        p = plan(["a", "b"], ARMS, outcomes_of(table), floor=2, max_seeds=3)
        block = sequential.block(p, arms=ARMS, floor=2, max_seeds=3)
        assert (block["cells_used"], block["cells_max"], block["stopping_reason"]) == (8, 12, "settled")
        assert (block["horizon_pairs"], block["threshold"], block["chance"]) == (6, pytest.approx(16 / 3), None)


def draw(rng: random.Random, tasks: list[str], lift: float, most: int = 10) -> dict[tuple[str, str, int], bool]:
    """Every outcome a run of the tasks could need: pass rates Beta(1/2, 1/2), akm at +lift."""
    outcomes = {}
    for t in tasks:
        p = rng.betavariate(0.5, 0.5)
        for s in range(1, most + 1):
            outcomes[(t, "noakm", s)] = rng.random() < p
            outcomes[(t, "akm", s)] = rng.random() < min(1.0, p + lift)
    return outcomes


def simulate(rng: random.Random, m: int, lift: float, floor: int = 2, most: int = 10) -> tuple[bool, int, str | None]:
    """One adaptive run of m tasks: every outcome drawn up front, the plan reads only those it
    needs. Returns (decisive, cells used, direction)."""
    tasks = [f"t{i}" for i in range(m)]
    outcomes = draw(rng, tasks, lift, most)
    p = plan(tasks, ARMS, outcomes, floor=floor, max_seeds=most)
    # The decision recomputed without the module's statistic: the pairs the plan chose, in
    # (round, task) order, and the running Beta-binomial likelihood ratio from scipy, against the
    # level for the horizon (checked by enumeration and simulation above).
    level = boundary.log_threshold(m * most)
    plus = minus = 0
    crossed = False
    for r in range(1, max(p.seeds.values()) + 1):
        for t in tasks:
            if p.seeds[t] >= r:
                a, b = outcomes[(t, "akm", r)], outcomes[(t, "noakm", r)]
                plus, minus = plus + (a and not b), minus + (b and not a)
                ratio = (plus + minus) * math.log(2) + special.betaln(plus + 2, minus + 2) - special.betaln(2, 2)
                crossed = crossed or ratio >= level
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

    def test_the_futility_stop_only_removes_rejections(self) -> None:
        """The same 300 benches with and without the futility stop: every run decisive with it
        is decisive without it, at the same look, and it never uses more cells."""
        rng = random.Random(18)
        tasks = [f"t{i}" for i in range(17)]
        futile = 0
        for k in range(300):
            outcomes = draw(rng, tasks, (0.0, 0.1, 0.2)[k % 3])
            with_stop = plan(tasks, ARMS, outcomes, floor=2, max_seeds=10)
            without = plan(tasks, ARMS, outcomes, floor=2, max_seeds=10, futility=0)
            futile += with_stop.stop == "futile"
            assert len(with_stop.cells(ARMS)) <= len(without.cells(ARMS))
            if with_stop.stop == "decisive":
                assert (without.stop, len(without.looks)) == ("decisive", len(with_stop.looks))
        assert futile > 100


class TestResume:
    def test_every_prefix_of_the_run_continues_to_the_same_stop(self) -> None:
        """The plan is a pure function of the store: read after any number of the run's cells
        (in the order they are collected), it waits for the round under way with the looks so
        far, and with the cells it needs alone it is the whole run's plan."""
        rng = random.Random(19)
        tasks = [f"t{i}" for i in range(8)]
        for lift in (0.0, 0.2, 0.4):
            outcomes = draw(rng, tasks, lift)
            whole = plan(tasks, ARMS, outcomes, floor=2, max_seeds=10)
            order = sorted(whole.cells(ARMS), key=lambda c: (c[2], tasks.index(c[0]), ARMS.index(c[1])))
            for k in range(len(order)):
                now = plan(tasks, ARMS, {c: outcomes[c] for c in order[:k]}, floor=2, max_seeds=10)
                assert now.stop is None and now.waiting == order[k][2]
                assert now.looks == whole.looks[: len(now.looks)]
            needed = plan(tasks, ARMS, {c: outcomes[c] for c in order}, floor=2, max_seeds=10)
            assert (needed.stop, needed.looks, needed.seeds) == (whole.stop, whole.looks, whole.seeds)
