"""The evolve track's two claims under the nulls they face (docs/tracks.md, "evolve"): IMPROVED
is claimed on post − control, so drift shared by post and the control is not learning; the
learning trend is tested across episodes, so a shock shared by an episode's tasks is not a
trend. Small seeded reproductions of benchmarks/claims_tracks.py, and the trend's figures
against statsmodels."""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any

import pytest

from pytest_akmbench.report import lift
from pytest_akmbench.stats import significance
from pytest_akmbench.tracks.evolve import learning as evolve_learning
from pytest_akmbench.tracks.evolve import report as evolve_report
from tests.core.test_evolve import build, sample

TASKS = [f"d/t{i:02d}" for i in range(12)]


def outcome(passed: bool) -> str:
    return "pass" if passed else "fail"


class TestImprovementAgainstTheControl:
    def test_drift_that_moved_the_control_too_is_not_an_improvement(self) -> None:
        samples = [sample(t, "pre", s, "fail") for t in TASKS[:8] for s in (1, 2)]
        samples += [sample(t, c, s, "pass") for t in TASKS[:8] for c in ("post", "control") for s in (1, 2)]
        env = build(samples, {}, TASKS[:8])
        imp = env["improvement"]
        assert imp["post_minus_pre"]["significant"] and imp["post_minus_pre"]["delta"] == 1.0
        assert imp["claimed"] is False  # the untouched stash gained as much: drift
        assert env["verdict"].startswith(
            "evolve: no improvement claimed (interval includes 0): post - control +0.00 ["
        ), env["verdict"]
        assert "; post - pre +1.00 [" in env["verdict"] and "; control - pre +1.00" in env["verdict"]

    def test_without_the_control_nothing_is_claimed_and_it_says_why(self) -> None:
        samples = [sample(t, "pre", s, "fail") for t in TASKS[:8] for s in (1, 2)]
        samples += [sample(t, "post", s, "pass") for t in TASKS[:8] for s in (1, 2)]
        env = build(samples, {}, TASKS[:8])
        assert env["improvement"]["claimed"] is False
        assert env["verdict"].startswith(
            "evolve: no improvement claimed (no control: post - pre alone cannot tell learning from drift): "
            "post - pre +1.00 ["
        )

    def test_seeded_drift_null_rarely_claims_where_post_minus_pre_did_mostly(self) -> None:
        """No evolution effect, +0.3 drift on post and control: bc40193's post − pre claim in
        most runs, the control's claim within its size (benchmarks/claims_tracks.py)."""
        rng = random.Random(30)
        before = after = 0
        reps = 40
        for _ in range(reps):
            cond: dict[str, dict[str, list[dict[str, Any]]]] = {}
            for t in TASKS:
                p = rng.uniform(0.2, 0.5)
                for c, q in (("pre", p), ("control", p + 0.3), ("post", p + 0.3)):
                    cond.setdefault(c, {})[t] = [sample(t, c, s, outcome(rng.random() < q)) for s in range(1, 6)]
            imp = evolve_report.improvement(cond, TASKS)
            before += imp["post_minus_pre"]["significant"] and imp["post_minus_pre"]["delta"] > 0
            after += imp["claimed"]
        assert before / reps >= 0.8
        assert after / reps <= 0.05


def old_trend(curve: list[dict[str, list[bool]]]) -> bool:
    """bc40193's trend: the sign-flip test over each task's least-squares slope."""
    n = len(curve)
    mean_x = Fraction(n + 1, 2)
    sxx = sum((x - mean_x) ** 2 for x in range(1, n + 1))
    slopes = [sum((x - mean_x) * Fraction(sum(e[t]), len(e[t])) for x, e in enumerate(curve, 1)) / sxx for t in TASKS]
    test = significance.sign_flip_test(slopes)
    return bool(test["p_value"] < lift.ALPHA and not test["low"] <= 0 <= test["high"])


class TestTrendAcrossEpisodes:
    def test_seeded_episode_shocks_without_a_trend_are_rarely_a_trend(self) -> None:
        """Each episode's stash moves all its tasks by a shock of sd 0.15, no trend: the test over
        tasks called a trend in a third of the runs (32 of 100); across episodes 2 of 100."""
        rng = random.Random(5)
        before = after = 0
        reps = 100
        for _ in range(reps):
            probs = [rng.uniform(0.2, 0.8) for _ in TASKS]
            curve = []
            for _episode in range(5):
                shock = rng.gauss(0, 0.15)
                curve.append({t: [rng.random() < p + shock for _ in range(3)] for t, p in zip(TASKS, probs)})
            before += old_trend(curve)
            after += evolve_learning.curve({}, curve, TASKS)["trend"] != "plateau"
        assert before / reps >= 0.25
        assert after / reps <= 0.05

    def test_slope_interval_and_p_are_ols_on_the_episode_means(self) -> None:
        sm = pytest.importorskip("statsmodels.api")
        rng = random.Random(11)
        curve = [{t: [rng.random() < 0.3 + 0.08 * e for _ in range(3)] for t in TASKS} for e in range(6)]
        curve[2]["d/t03"] = []  # a task without valid runs in one episode is left out of every mean
        fit = evolve_learning.slope(curve, TASKS)
        kept = [t for t in TASKS if t != "d/t03"]
        means = [sum(sum(e[t]) / 3 for t in kept) / len(kept) for e in curve]
        ols = sm.OLS(means, sm.add_constant(list(range(1, 7)))).fit()
        assert fit is not None and fit["tasks"] == 11 and fit["episodes"] == 6
        assert fit["slope"] == pytest.approx(ols.params[1], abs=1e-12)
        assert fit["p_value"] == pytest.approx(ols.pvalues[1], rel=1e-6)
        assert (fit["low"], fit["high"]) == pytest.approx(tuple(ols.conf_int(0.05)[1]), rel=1e-6)
        assert fit["significant"] == (ols.pvalues[1] < 0.05)

    def test_two_episodes_give_a_slope_and_no_test(self) -> None:
        curve = [{t: [False, True] for t in TASKS}, {t: [True, True] for t in TASKS}]
        learning = evolve_learning.curve({}, curve, TASKS)
        fit = learning["slope"]
        assert fit["slope"] == pytest.approx(0.5) and fit["p_value"] is None and fit["low"] is None
        assert learning["trend"] == "plateau"  # every task gained, yet one stash could be a lucky one
        assert "(no test: a trend across episodes needs 3 or more)" in evolve_learning.verdict_part(learning)
