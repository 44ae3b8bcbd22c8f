"""Seeded simulations of the lift per agent (report/lift_agents.py): the size of the test of
"the lifts differ between agents" under several nulls, its power on a real difference, the
coverage of its interval and of each agent's lift interval; and its numbers against scipy and
statsmodels. Bounds are the nominal level plus 3 Monte Carlo standard errors (tests/stats/
test_simulations.py); the figures at more draws are in docs/report.md, "Lift per agent"."""

from __future__ import annotations

import math
import random
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from scipy import stats as ss
from statsmodels.stats.multitest import multipletests

from pytest_akmbench.report import lift, lift_agents
from tests.stats.benches import envelope
from tests.stats.test_simulations import ceiling

Pairs = list[tuple[list[bool], list[bool]]]
M, RESAMPLES = 20, 1000


def agent(rng: random.Random, base: list[float], lifts: list[float], seeds: int) -> Pairs:
    """Per task, (akm, noakm) outcomes over ``seeds`` runs: noakm at the base rate, akm at base + lift."""
    return [
        ([rng.random() < min(1.0, b + d) for _ in range(seeds)], [rng.random() < b for _ in range(seeds)])
        for b, d in zip(base, lifts)
    ]


def uniform(rng: random.Random, low: float, high: float, m: int = M) -> list[float]:
    return [rng.uniform(low, high) for _ in range(m)]


def null_bench(rng: random.Random, kind: str) -> tuple[Pairs, Pairs]:
    """Two agents whose lifts are equal (task by task, or in the mean over a population of tasks)."""
    if kind == "base_rates":  # the same +0.2 on every task, from different base rates
        return agent(rng, uniform(rng, 0.05, 0.45), [0.2] * M, 5), agent(rng, uniform(rng, 0.35, 0.75), [0.2] * M, 5)
    if kind == "heterogeneity":  # per-task lifts from -0.3 to +0.5, each task's the same for both
        lifts = uniform(rng, -0.3, 0.5)
        a, b = ([rng.uniform(max(0, -d), min(1, 1 - d)) for d in lifts] for _ in range(2))
        return agent(rng, a, lifts, 5), agent(rng, b, lifts, 5)
    if kind == "seeds":  # 2 seeds against 8
        return agent(rng, uniform(rng, 0.1, 0.8), [0.1] * M, 2), agent(rng, uniform(rng, 0.1, 0.8), [0.1] * M, 8)
    if kind == "zero":  # no lift, tasks mostly at 0 or 1 (Beta(0.5, 0.5))
        a, b = ([rng.betavariate(0.5, 0.5) for _ in range(M)] for _ in range(2))
        return agent(rng, a, [0.0] * M, 5), agent(rng, b, [0.0] * M, 3)
    if kind == "ceiling":  # +0.05 up to a rate of 1
        return agent(rng, uniform(rng, 0.85, 0.95), [0.05] * M, 5), agent(rng, uniform(rng, 0.9, 0.95), [0.05] * M, 3)
    if kind == "agent_task_noise":  # each agent its own per-task lifts, from the same population
        return (
            agent(rng, uniform(rng, 0.2, 0.6), uniform(rng, -0.2, 0.4), 5),
            agent(rng, uniform(rng, 0.2, 0.6), uniform(rng, -0.2, 0.4), 5),
        )
    raise ValueError(kind)


@pytest.mark.parametrize(
    ("kind", "seed"),
    [("base_rates", 1), ("heterogeneity", 2), ("seeds", 3), ("zero", 4), ("ceiling", 5), ("agent_task_noise", 6)],
)
def test_size_under_the_nulls(kind: str, seed: int) -> None:
    """Equal lifts, 20 tasks: "the lifts differ" is claimed no more often than 5% allows, and the
    interval of the difference covers 0 at least 95% of the time."""
    rng, reps, claimed, covered = random.Random(seed), 300, 0, 0
    for _ in range(reps):
        result = lift_agents.interaction(*null_bench(rng, kind), resamples=RESAMPLES)
        claimed += result["significant"]
        covered += result["low"] <= 0.0 <= result["high"]
    assert claimed / reps <= ceiling(0.05, reps), kind
    assert covered / reps >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / reps), kind


def test_power_and_coverage_on_a_real_difference() -> None:
    """akm lifts one agent by +0.25 on every task and the other not at all (20 tasks × 5 seeds):
    the difference is found about 68% of the time (docs/report.md), and its interval covers +0.25."""
    rng, reps, found, covered = random.Random(7), 300, 0, 0
    for _ in range(reps):
        a = agent(rng, uniform(rng, 0.1, 0.6), [0.25] * M, 5)
        b = agent(rng, uniform(rng, 0.1, 0.6), [0.0] * M, 5)
        result = lift_agents.interaction(a, b, resamples=RESAMPLES)
        found += result["significant"] and result["delta"] > 0
        covered += result["low"] <= 0.25 <= result["high"]
    assert found / reps >= 0.58
    assert covered / reps >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / reps)


def report_of(name: str, pairs: Pairs, seeds: int) -> dict[str, Any]:
    env = envelope({"akm": [a for a, _ in pairs], "noakm": [b for _, b in pairs]}, seeds)
    env["agent"]["harness"] = name
    return env


@pytest.mark.parametrize(("kind", "seed"), [("base_rates", 8), ("heterogeneity", 9)])
def test_each_agents_lift_interval_covers_its_lift(kind: str, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole document (side_by_side): each agent's lift interval, Holm over the two agents,
    covers that agent's true mean lift over the tasks at least 95% of the time."""
    monkeypatch.setattr(lift, "BOOTSTRAP_ITERATIONS", 1)  # a diagnostic the document leaves out; the slow part
    rng, reps, covered = random.Random(seed), 100, [0, 0]
    for _ in range(reps):
        state = rng.getstate()
        a, b = null_bench(rng, kind)
        rng2 = random.Random()
        rng2.setstate(state)  # the same draws again, to read the true lifts back
        truth = _true_lifts(rng2, kind)
        doc = lift_agents.side_by_side([("a", report_of("a", a, 5)), ("b", report_of("b", b, 5))], resamples=RESAMPLES)
        for i, block in enumerate(doc["agents"]):
            covered[i] += block["lift"]["low"] <= truth <= block["lift"]["high"]
    for c in covered:
        assert c / reps >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / reps), (kind, covered)


def _true_lifts(rng: random.Random, kind: str) -> float:
    """The mean true lift of the tasks :func:`null_bench` draws next from ``rng`` (the same for both agents)."""
    return 0.2 if kind == "base_rates" else math.fsum(uniform(rng, -0.3, 0.5)) / M


def test_the_test_and_holm_against_scipy_and_statsmodels(monkeypatch: pytest.MonkeyPatch) -> None:
    """The p of each pair is scipy's exact paired permutation test on the per-task differences of
    lifts; the Holm-adjusted p's over three agents' pairs are statsmodels'; the delta is numpy's."""
    monkeypatch.setattr(lift, "BOOTSTRAP_ITERATIONS", 1)
    rng = random.Random(10)
    for _ in range(12):
        m = rng.randint(4, 10)
        base = uniform(rng, 0.1, 0.7, m)
        agents = [agent(rng, base, uniform(rng, -0.2, 0.3, m), rng.choice([2, 3, 5])) for _ in range(3)]
        e = [
            float(
                (Fraction(sum(xa), len(xa)) - Fraction(sum(xn), len(xn)))
                - (Fraction(sum(ya), len(ya)) - Fraction(sum(yn), len(yn)))
            )
            for (xa, xn), (ya, yn) in zip(agents[0], agents[1])
        ]
        result = lift_agents.interaction(agents[0], agents[1])
        exact = ss.permutation_test(
            (np.asarray(e),), np.mean, permutation_type="samples", n_resamples=np.inf, alternative="two-sided"
        )
        assert result["exact"] and result["p_value"] == pytest.approx(min(1.0, float(exact.pvalue)), abs=1e-12)
        assert result["delta"] == pytest.approx(float(np.mean(e)))
        envs = [report_of(name, pairs, 5) for name, pairs in zip("abc", agents)]
        doc = lift_agents.side_by_side([(name, env) for name, env in zip("abc", envs)])
        pairs = doc["interaction"]["pairs"]
        raw = [p["p_value"] for p in pairs]
        assert [p["p_value_holm"] for p in pairs] == pytest.approx(list(multipletests(raw, method="holm")[1]))
