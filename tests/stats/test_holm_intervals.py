"""The interval beside a Holm-adjusted p inverts the adjusted test (issue 30, item 3): with three
arms an interval excludes 0 exactly when the comparison is significant, and the gates on
``lift.low`` and ``lift.significant`` agree."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from pytest_akmbench.report import envelope as report
from pytest_akmbench.report import gates, lift
from tests.core.test_metrics import make_task, sample
from tests.core.test_report import TS, inp
from tests.stats.benches import rows, runs


def three_arm_bench(seed: int, m: int = 17, n: int = 5, up: float = 0.12) -> dict:
    """akm at each task's rate + ``up``, noakm and synthetic at the rate (Uniform(0.05, 0.75))."""
    rng = random.Random(seed)
    rates = [rng.uniform(0.05, 0.75) for _ in range(m)]
    tasks = [make_task(f"d/t{i:02d}") for i in range(m)]
    samples = [
        sample(t.id, arm, s, "pass" if rng.random() < rates[i] + (up if arm == "akm" else 0) else "fail")
        for i, t in enumerate(tasks)
        for arm in ("noakm", "synthetic", "akm")
        for s in range(1, n + 1)
    ]
    return report.build(
        inp(tasks, samples, arms=("noakm", "synthetic", "akm"), seeds=n, gates=("lift.low>0", "lift.significant")),
        timestamp=TS,
    )


def test_the_issues_bench_no_longer_contradicts_itself() -> None:
    """17 × 5, akm +0.12, three arms, seed 6: before, `no significant difference (+0.15 [+0.03,
    +0.28], paired permutation p=0.061, Holm-adjusted over 2 comparisons)` and lift.low>0 held
    while lift.significant failed. Now the interval is the 97.5% one of the adjusted test."""
    env = three_arm_bench(6)
    paired = env["aggregate"]["delta"]["paired"]
    assert env["verdict"].startswith("no significant difference between akm and noakm (+0.15 [0.00, +0.30]")
    assert "p=0.061, 97.5% interval, Holm-adjusted over 2 comparisons" in env["verdict"]
    assert paired["confidence"] == 0.975 and paired["low"] <= 0 <= paired["high"]
    assert [g["ok"] for g in env["gates"]] == [False, False]


@pytest.mark.parametrize("m", [6, 7, 9, 17, 20])
def test_interval_excludes_zero_exactly_when_significant(m: int) -> None:
    """Seeded benches with two comparisons (akm − noakm, akm − synthetic) at several lifts: the
    printed interval excludes 0 iff ``significant``, and the test's own inversion (before the
    widening to run noise) excludes 0 iff the Holm-adjusted p < 0.05. 20 tasks use Monte Carlo."""
    rng = random.Random(3000 + m)
    checked = significant = 0
    for _ in range(60):
        rates = [rng.uniform(0.05, 0.75) for _ in range(m)]
        up = rng.choice([0.0, 0.12, 0.25, 0.4])
        akm, noakm, synth = runs(rng, [p + up for p in rates], 5), runs(rng, rates, 5), runs(rng, rates, 5)
        blocks = [
            lift.compare_arms(("akm", b), rows("akm", akm), rows(b, o), akm, o, resamples=500)
            for b, o in (("noakm", noakm), ("synthetic", synth))
        ]
        lift.adjust(blocks)
        for c in blocks:
            excluded = not c["low"] <= 0 <= c["high"]
            test_excluded = not c["diagnostics"]["permutation_low"] <= 0 <= c["diagnostics"]["permutation_high"]
            assert excluded == c["significant"]
            assert test_excluded == (c["p_value_holm"] < 0.05)
            assert c["confidence"] in (0.975, 0.95)
            checked, significant = checked + 1, significant + c["significant"]
    assert checked == 120
    # Both outcomes were exercised; with 6 tasks and Holm over two no comparison can be
    # significant (the smallest p is 2/2^6, adjusted 0.0625).
    assert 10 < significant < 110 if m > 6 else significant == 0


def test_gates_on_low_and_significant_agree() -> None:
    """On 25 seeded three-arm benches lift.low>0 holds exactly when lift.significant does."""
    for seed in range(25):
        env = three_arm_bench(seed)
        low, sig = (g["ok"] for g in gates.evaluate(env, ["lift.low>0", "lift.significant"], Path(".")))
        assert low == sig, seed
