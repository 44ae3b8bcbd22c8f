"""Tests for pytest_akmbench.metrics: golden numbers worked out by hand in each test."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from pytest_akmbench import metrics
from pytest_akmbench.corpus import Task

Z = 1.959963984540054


def wilson(c: int, n: int) -> tuple[float, float]:
    """The Wilson score interval, written out from the textbook formula."""
    p = c / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z / (1 + Z * Z / n) * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def make_task(task_id: str, **kw: Any) -> Task:
    """A Task that needs nothing on disk."""
    return Task(id=task_id, title=task_id, domain=task_id.split("/")[0], difficulty="easy", stash="st",
                verifier="script", task_dir=Path("/nonexistent") / task_id, yaml_text=f"id: {task_id}\n", **kw)


def sample(task_id: str, arm: str, seed: int, outcome: str, *, tokens: int | None = None,
           wallclock_ms: int = 1000, trajectory: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """A sample with the keys runner.run_cell produces (the ones reports read)."""
    s: dict[str, Any] = {
        "task_id": task_id, "arm": arm, "seed": seed, "domain": task_id.split("/")[0], "outcome": outcome,
        "reason": "boom" if outcome == "harness_error" else None, "budget": None, "budget_tag": None,
        "tokens": None if tokens is None else {"input": tokens - 10, "output": 10, "reasoning": 0, "cache_read": 0,
                                               "cache_write": 0, "total": tokens},
        "token_measurement": "missing" if tokens is None else "measured", "cost_usd": None, "turns": None,
        "tool_calls": None, "wallclock_ms": wallclock_ms, "verifier": {"kind": "script", "exit_code": 0},
        "model": "m", "prompt_version": "akm-v1", "fingerprint_hash": f"fp-{arm}",
    }
    if trajectory is not None:
        s["trajectory"] = trajectory
    s.update(extra)
    return s


def traj(*, searches: list[int | None] = (), shown: list[str] = (), feedback: str | None = None,
         gold: str | None = "skill:gold", before: bool | None = True, irrelevant: list[str] | None = None,
         t_search: int | None = None) -> dict[str, Any]:
    """A trajectory dict shaped like trajectory.analyse_cell's output."""
    actions: list[dict[str, Any]] = [{"kind": "search", "query": "q", "results": [], "gold_rank": r} for r in searches]
    actions += [{"kind": "show", "ref": r, "ok": True} for r in shown]
    if feedback:
        actions.append({"kind": "feedback", "ref": "skill:gold", "polarity": feedback, "ok": True})
    return {
        "source": "transcript", "akm_events": False, "actions": actions, "actions_truncated": False,
        "search_count": len(searches), "show_count": len(shown), "feedback_count": int(bool(feedback)),
        "positive_feedback_count": int(feedback == "positive"), "negative_feedback_count": int(feedback == "negative"),
        "gold_ranks": list(searches), "assets_loaded": list(shown),
        "correct_asset_loaded": None if gold is None else gold in shown,
        "feedback_recorded": bool(feedback), "feedback_polarity": feedback, "searched_before_acting": before,
        "workspace_writes": 1, "irrelevant_assets_loaded": irrelevant if irrelevant is not None else [r for r in shown if r != gold],
        "time_to_first_search_ms": t_search, "time_to_first_correct_asset_ms": None,
        "asset_bytes_loaded": 10 * len(shown), "context_bytes_loaded": 20 * len(shown), "warnings": [],
    }


class TestPerTask:
    """One task under one arm."""

    RUNS = [
        sample("a/t", "akm", 1, "pass", tokens=100),
        sample("a/t", "akm", 2, "fail", tokens=50),
        sample("a/t", "akm", 3, "pass", tokens=300),
        sample("a/t", "akm", 4, "harness_error"),
        sample("a/t", "akm", 5, "budget_exceeded"),
    ]

    def test_denominators(self) -> None:
        """harness_error is out of the denominator and counted; budget_exceeded is a non-pass."""
        row = metrics.per_task(self.RUNS, seeds=5)
        assert row is not None
        assert row["pass_rate"] == 2 / 4
        assert (row["count"], row["valid_count"], row["passes"]) == (5, 4, 2)
        assert (row["harness_error_count"], row["budget_exceeded_count"]) == (1, 1)
        assert row["pass_at_1"] == 1

    def test_tokens_only_from_measured_runs(self) -> None:
        """Tokens per pass/run average the measured runs only."""
        row = metrics.per_task(self.RUNS)
        assert row is not None
        assert row["tokens_per_pass"] == (100 + 300) / 2
        assert row["tokens_per_run"] == (100 + 50 + 300) / 3
        assert row["runs_with_measured_tokens"] == 3

    def test_wilson_interval(self) -> None:
        """The interval is Wilson's on 2 passes of 4 valid runs."""
        row = metrics.per_task(self.RUNS)
        assert row is not None
        low, high = wilson(2, 4)
        assert row["pass_rate_ci"]["low"] == pytest.approx(low, abs=1e-12)
        assert row["pass_rate_ci"]["high"] == pytest.approx(high, abs=1e-12)

    def test_pass_at_k_and_pass_hat_k(self) -> None:
        """n=4, c=2: pass@k = 1 − C(2,k)/C(4,k); pass^k = C(2,k)/C(4,k); k > n is None."""
        row = metrics.per_task(self.RUNS, seeds=5)
        assert row is not None
        assert row["pass_at_k"] == {"1": 0.5, "2": pytest.approx(1 - 1 / 6), "3": 1.0, "4": 1.0, "5": None}
        assert row["pass_hat_k"] == {"1": 0.5, "2": pytest.approx(1 / 6), "3": 0.0, "4": 0.0, "5": None}

    def test_flaky_and_stdev(self) -> None:
        """Outcomes T F T F: stdev sqrt(1/3) > 0.2, so flaky."""
        row = metrics.per_task(self.RUNS)
        assert row is not None
        assert row["pass_rate_stdev"] == pytest.approx(math.sqrt(1 / 3))
        assert row["flaky"] is True

    def test_steady_task_is_not_flaky(self) -> None:
        """All passes: stdev 0, not flaky, Wilson upper bound exactly 1."""
        row = metrics.per_task([sample("a/t", "akm", s, "pass") for s in (1, 2, 3)])
        assert row is not None
        assert row["flaky"] is False and row["pass_rate_ci"]["high"] == 1.0
        assert row["pass_rate_ci"]["low"] == pytest.approx(wilson(3, 3)[0])

    def test_floor_status(self) -> None:
        """≥ floor valid is covered, fewer is partial, none is missing."""
        assert metrics.per_task(self.RUNS, floor=3)["floor_status"] == "covered"  # type: ignore[index]
        assert metrics.per_task(self.RUNS, floor=5)["floor_status"] == "partial"  # type: ignore[index]
        only_errors = metrics.per_task([sample("a/t", "akm", 1, "harness_error")])
        assert only_errors is not None and only_errors["floor_status"] == "missing"
        assert only_errors["pass_rate"] is None and only_errors["pass_rate_ci"] is None

    def test_no_runs_is_none(self) -> None:
        """An arm with no run of the task is None, not zeros."""
        assert metrics.per_task([]) is None


class TestAggregate:
    """Corpus aggregate and the paired delta."""

    def test_macro_rate_and_hull_interval(self) -> None:
        """Macro mean over tasks; the interval covers both the task bootstrap and pooled Wilson."""
        a = [sample("a/x", "akm", s, o) for s, o in ((1, "pass"), (2, "pass"), (3, "fail"))]
        b = [sample("a/y", "akm", s, o) for s, o in ((1, "pass"), (2, "fail"), (3, "fail"), (4, "harness_error"))]
        rows = [metrics.per_task(a), metrics.per_task(b), None]
        agg = metrics.aggregate(rows, [metrics.valid_outcomes(a), metrics.valid_outcomes(b), []])
        assert agg is not None
        assert agg["pass_rate"] == pytest.approx((2 / 3 + 1 / 3) / 2)
        assert (agg["tasks"], agg["runs"], agg["valid_runs"], agg["passes"], agg["harness_error_count"]) == (2, 7, 6, 3, 1)
        pooled = wilson(3, 6)
        # Bootstrap over two tasks {2/3, 1/3}: resampled means 1/3, 1/2, 2/3 -> percentile interval [1/3, 2/3],
        # inside the pooled Wilson interval, so the hull is the Wilson interval.
        assert agg["pass_rate_ci"]["low"] == pytest.approx(pooled[0])
        assert agg["pass_rate_ci"]["high"] == pytest.approx(pooled[1])
        assert agg["pass_rate_ci"]["method"].startswith("hull")

    def test_all_pass_tasks_keep_a_finite_interval(self) -> None:
        """Every task at 1.0: the task bootstrap alone would be [1, 1]; pooled Wilson keeps it honest."""
        runs = [[sample(f"a/{t}", "akm", s, "pass") for s in (1, 2)] for t in "xyz"]
        agg = metrics.aggregate([metrics.per_task(r) for r in runs], [metrics.valid_outcomes(r) for r in runs])
        assert agg is not None
        assert agg["pass_rate_ci"]["low"] == pytest.approx(wilson(6, 6)[0]) and agg["pass_rate_ci"]["high"] == 1.0

    def test_arm_not_run(self) -> None:
        """No task rows: None."""
        assert metrics.aggregate([None, None]) is None
        assert metrics.delta(None, {"pass_rate": 1}) is None

    def test_paired_bootstrap_and_sign_test(self) -> None:
        """10 tasks, diffs eight 1s and two 0s: delta 0.8, p = 2/2^8, interval ≈ Binomial(10, .8)/10 quantiles."""
        pairs = [([True, True], [False, False])] * 8 + [([True], [True])] * 2
        p = metrics.paired(pairs)
        assert p["tasks"] == 10 and p["delta"] == pytest.approx(0.8)
        assert (p["wins"], p["losses"], p["ties"]) == (8, 0, 2)
        assert p["p_value"] == 2 / 2**8
        # Resampled mean = Binomial(10, 0.8)/10; P(X<=5)=0.033 > 0.025 > P(X<=4)=0.006, so the 2.5% point is ~0.5.
        assert 0.4 <= p["low"] <= 0.6 and p["high"] == 1.0
        assert p["significant"] is True

    def test_paired_needs_both_rules(self) -> None:
        """Five wins out of five: the interval excludes 0 but p = 1/16 > 0.05, so not significant."""
        p = metrics.paired([([True], [False])] * 5)
        assert p["low"] == 1.0 and p["p_value"] == 2 / 2**5
        assert p["significant"] is False

    def test_paired_without_common_tasks(self) -> None:
        """No task on both sides: nothing estimated."""
        p = metrics.paired([([True], [])])
        assert p["tasks"] == 0 and p["delta"] is None and p["p_value"] is None and p["significant"] is False


class TestAkmSections:
    """Trajectory aggregate, bridge, per-asset, overhead."""

    def runs(self) -> list[dict[str, Any]]:
        return [
            sample("a/t", "akm", 1, "pass", tokens=100, trajectory=traj(searches=[2], shown=["skill:gold"], feedback="positive", t_search=400)),
            sample("a/t", "akm", 2, "fail", trajectory=traj(searches=[None, 7], shown=["skill:other"], before=False)),
            sample("a/t", "akm", 3, "fail", trajectory=traj()),
            sample("a/t", "akm", 4, "pass"),  # e.g. the oracle agent: no trajectory
        ]

    def test_trajectory_aggregate(self) -> None:
        """Rates over observed runs only; the run without a trajectory is not counted as false."""
        t = metrics.trajectory_aggregate(self.runs())
        assert t["correct_asset_loaded"] == pytest.approx(1 / 3)
        assert t["feedback_recorded"] == pytest.approx(1 / 3)
        assert t["searched_before_acting"] == pytest.approx(2 / 3)
        assert t["irrelevant_assets_loaded"] == pytest.approx(1 / 3)
        assert t["counts"]["runs"] == 4 and t["counts"]["runs_with_trajectory"] == 3
        assert t["counts"]["feedback_positive"] == 1 and t["counts"]["feedback_negative"] == 0

    def test_trajectory_aggregate_without_any_trajectory(self) -> None:
        """Nothing observed: every rate is None, never 0."""
        t = metrics.trajectory_aggregate([sample("a/t", "akm", 1, "pass")])
        assert t["correct_asset_loaded"] is None and t["feedback_recorded"] is None
        assert t["searched_before_acting"] is None

    def test_search_bridge(self) -> None:
        """Three searches: ranks 2, missing, 7; last-search buckets 2 (pass) and 7 (fail)."""
        sb = metrics.search_bridge(self.runs(), {"a/t": "skill:gold"})
        assert sb["runs_observed"] == 3 and sb["searches_observed"] == 3
        assert sb["gold_rank_distribution"]["2"] == 1 and sb["gold_rank_distribution"]["7"] == 1
        assert sb["gold_rank_distribution"]["missing"] == 1
        # sorted [2, 7, inf]: p50 index ceil(1.5)-1 = 1 -> 7; p90 index ceil(2.7)-1 = 2 -> missing
        assert sb["gold_rank_p50"] == 7 and sb["gold_rank_p90"] == "missing"
        assert sb["gold_at_rank_1"] == 0 and sb["gold_missing"] == pytest.approx(1 / 3)
        assert sb["pass_rate_by_rank"] == [{"rank": "2", "pass_rate": 1.0, "run_count": 1},
                                           {"rank": "7", "pass_rate": 0.0, "run_count": 1}]

    def test_per_asset(self) -> None:
        """Loads split by outcome; sorted by load count then pass rate."""
        pa = metrics.per_asset(self.runs())
        assert pa["total_akm_runs"] == 4
        assert pa["rows"] == [
            {"asset_ref": "skill:gold", "load_count": 1, "load_count_passing": 1, "load_count_failing": 0, "load_pass_rate": 1.0},
            {"asset_ref": "skill:other", "load_count": 1, "load_count_passing": 0, "load_count_failing": 1, "load_pass_rate": 0.0},
        ]

    def test_overhead(self) -> None:
        """Means over observed runs; polarity counted; cost per success needs every pass measured."""
        ov = metrics.akm_overhead(self.runs())
        a = ov["aggregate"]
        assert (a["total_runs"], a["runs_with_trajectory"], a["passing_runs"]) == (4, 3, 1)
        assert a["mean_search_count"] == pytest.approx(1.0)
        assert a["mean_positive_feedback_count"] == pytest.approx(1 / 3)
        assert a["mean_time_to_first_search_ms"] == 400
        assert a["total_tool_calls"] == 1 + 1 + 1 + 2 + 1
        assert a["tool_calls_per_success"] == 6 / 1
        assert a["cost_per_success"] == 100
        assert a["search_to_show_ratio"] == pytest.approx(2 / 3)
        assert ov["per_run"][3]["search_count"] is None
