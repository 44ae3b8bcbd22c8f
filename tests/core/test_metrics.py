"""Tests for pytest_akmbench.report.metrics: golden numbers worked out by hand in each test."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, ClassVar

import pytest
from scipy.stats import beta

from pytest_akmbench.corpus.tasks import Task
from pytest_akmbench.report import akm_usage, metrics, transfer

Z = 1.959963984540054


def wilson(c: int, n: int) -> tuple[float, float]:
    """The Wilson score interval, written out from the textbook formula."""
    p = c / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z / (1 + Z * Z / n) * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def make_task(task_id: str, **kw: Any) -> Task:
    """A Task that needs nothing on disk."""
    return Task(
        id=task_id,
        title=task_id,
        domain=task_id.split("/")[0],
        difficulty="easy",
        stash="st",
        verifier="script",
        task_dir=Path("/nonexistent") / task_id,
        yaml_text=f"id: {task_id}\n",
        **kw,
    )


def sample(
    task_id: str,
    arm: str,
    seed: int,
    outcome: str,
    *,
    tokens: int | None = None,
    wallclock_ms: int = 1000,
    trajectory: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A sample with the keys runner.run_cell produces (the ones reports read)."""
    s: dict[str, Any] = {
        "task_id": task_id,
        "arm": arm,
        "seed": seed,
        "domain": task_id.split("/")[0],
        "outcome": outcome,
        "reason": "boom" if outcome == "harness_error" else None,
        "budget": None,
        "budget_tag": None,
        "tokens": None
        if tokens is None
        else {"input": tokens - 10, "output": 10, "reasoning": 0, "cache_read": 0, "cache_write": 0, "total": tokens},
        "token_measurement": "missing" if tokens is None else "measured",
        "cost_usd": None,
        "turns": None,
        "tool_calls": None,
        "wallclock_ms": wallclock_ms,
        "verifier": {"kind": "script", "exit_code": 0},
        "model": "m",
        "prompt_version": "akm-v1",
        "fingerprint_hash": f"fp-{arm}",
    }
    if trajectory is not None:
        s["trajectory"] = trajectory
    s.update(extra)
    return s


def traj(
    *,
    searches: list[int | None] = (),
    shown: list[str] = (),
    feedback: str | None = None,
    gold: str | None = "skill:gold",
    before: bool | None = True,
    irrelevant: list[str] | None = None,
    t_search: int | None = None,
) -> dict[str, Any]:
    """A trajectory dict shaped like trajectory.analyse_cell's output."""
    actions: list[dict[str, Any]] = [{"kind": "search", "query": "q", "results": [], "gold_rank": r} for r in searches]
    actions += [{"kind": "show", "ref": r, "ok": True} for r in shown]
    if feedback:
        actions.append({"kind": "feedback", "ref": "skill:gold", "polarity": feedback, "ok": True})
    return {
        "source": "transcript",
        "akm_events": False,
        "actions": actions,
        "actions_truncated": False,
        "search_count": len(searches),
        "show_count": len(shown),
        "feedback_count": int(bool(feedback)),
        "positive_feedback_count": int(feedback == "positive"),
        "negative_feedback_count": int(feedback == "negative"),
        "gold_ranks": list(searches),
        "assets_loaded": list(shown),
        "correct_asset_loaded": None if gold is None else gold in shown,
        "feedback_recorded": bool(feedback),
        "feedback_polarity": feedback,
        "searched_before_acting": before,
        "workspace_writes": 1,
        "irrelevant_assets_loaded": irrelevant if irrelevant is not None else [r for r in shown if r != gold],
        "time_to_first_search_ms": t_search,
        "time_to_first_correct_asset_ms": None,
        "asset_bytes_loaded": 10 * len(shown),
        "context_bytes_loaded": 20 * len(shown),
        "warnings": [],
    }


class TestPerTask:
    """One task under one arm."""

    RUNS: ClassVar = [
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

    def test_tokens_need_both_the_measurement_and_the_figures(self) -> None:
        """A record says ``measured`` but lost its tokens block (a store written by hand or cut):
        it counts as unmeasured, and the report is still made; a block beside a measurement the
        agent marked ``unsupported`` is not counted either."""
        no_block = sample("a/t", "akm", 1, "pass", tokens=None, token_measurement="measured")
        stray = sample("a/t", "akm", 2, "pass", tokens=999, token_measurement="unsupported")
        row = metrics.per_task([no_block, stray, sample("a/t", "akm", 3, "pass", tokens=100)])
        assert row is not None and row["tokens_per_run"] == 100 and row["runs_with_measured_tokens"] == 1

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
        # The row still has its k = 1 point (null), as every task row of the report does.
        assert only_errors["pass_at_k"] == {"1": None} and only_errors["pass_hat_k"] == {"1": None}

    def test_whole_row_with_seeds_out_of_order(self) -> None:
        """The task's row as the report prints it. Seed 1 is a harness error that burned 9,999
        tokens and 99 s: it is in no figure. pass@1 is the first *valid* seed's outcome (seed 2,
        a pass; the last seed failed). Without a seed count the curves stop at the 4 valid runs."""
        runs = [
            sample("a/t", "akm", 3, "pass", tokens=300, wallclock_ms=3000),
            sample("a/t", "akm", 5, "fail", tokens=50, wallclock_ms=1000),
            sample("a/t", "akm", 1, "harness_error", tokens=9999, wallclock_ms=99_000),
            sample("a/t", "akm", 4, "budget_exceeded", wallclock_ms=6000),
            sample("a/t", "akm", 2, "pass", tokens=100, wallclock_ms=2000),
        ]
        row = metrics.per_task(runs)
        assert row is not None
        ci, sd = row.pop("pass_rate_ci"), row.pop("pass_rate_stdev")
        assert row == {
            "pass_rate": 0.5,
            "pass_at_1": 1,
            "tokens_per_pass": 200,
            "tokens_per_run": 150,
            "wallclock_ms": 3000,
            "budget_exceeded_count": 1,
            "harness_error_count": 1,
            "count": 5,
            "valid_count": 4,
            "runs_with_measured_tokens": 3,
            "passes": 2,
            "pass_at_k": {"1": 0.5, "2": pytest.approx(5 / 6), "3": 1.0, "4": 1.0},
            "pass_hat_k": {"1": 0.5, "2": pytest.approx(1 / 6), "3": 0.0, "4": 0.0},
            "flaky": True,
            "floor_status": "covered",
        }
        assert ci == pytest.approx(dict(zip(("low", "high"), wilson(2, 4), strict=True)), abs=1e-12)
        assert sd == pytest.approx(math.sqrt(1 / 3))

    def test_no_runs_is_none(self) -> None:
        """An arm with no run of the task is None, not zeros."""
        assert metrics.per_task([]) is None


class TestAggregate:
    """Corpus aggregate and the paired delta."""

    def test_macro_rate_and_task_interval(self) -> None:
        """Macro mean over tasks, not the pooled rate; the interval is the exact binomial one over the
        tasks with valid runs. Task x passes 2 of 3, task y 1 of 4 valid runs (plus a harness
        error), task z has only harness errors: it counts as a task the arm ran, not one with valid runs."""
        x = [sample("a/x", "akm", s, o) for s, o in ((1, "pass"), (2, "pass"), (3, "fail"))]
        y = [
            sample("a/y", "akm", s, o)
            for s, o in ((1, "pass"), (2, "fail"), (3, "fail"), (4, "fail"), (5, "harness_error"))
        ]
        z = [sample("a/z", "akm", s, "harness_error") for s in (1, 2)]
        agg = metrics.aggregate([metrics.per_task(x), metrics.per_task(y), metrics.per_task(z), None])
        assert agg is not None
        assert agg["pass_rate"] == pytest.approx((2 / 3 + 1 / 4) / 2)  # 11/24; pooled would be 3/7
        assert (
            agg["tasks"],
            agg["tasks_with_valid_runs"],
            agg["runs"],
            agg["valid_runs"],
            agg["passes"],
            agg["harness_error_count"],
        ) == (3, 2, 10, 7, 3, 3)
        # Rates 2/3 and 1/4: the exact binomial interval of 2 trials at the count 11/12 (scipy's beta law).
        count = 2 / 3 + 1 / 4
        assert agg["pass_rate_ci"]["low"] == pytest.approx(beta.ppf(0.025, count, 2 - count + 1))
        assert agg["pass_rate_ci"]["high"] == pytest.approx(beta.ppf(0.975, count + 1, 2 - count))
        assert agg["pass_rate_ci"]["method"] == "clopper_pearson_tasks"

    def test_all_pass_is_bounded_by_the_task_count(self) -> None:
        """Every run of every task passed (issue 30, item 6): 10 tasks × 10 seeds. A population
        with a few hard tasks that these 10 missed would show the same, so the lower bound is
        the exact binomial one of 10 trials, 0.025^(1/10) = 0.69, not 0.95 or above: the gate
        ``akm.pass_rate.low>=0.95`` cannot pass on it."""
        runs = [[sample(f"a/t{t}", "akm", s, "pass") for s in range(1, 11)] for t in range(10)]
        agg = metrics.aggregate([metrics.per_task(r) for r in runs])
        assert agg is not None
        assert agg["pass_rate_ci"]["low"] == pytest.approx(0.025**0.1) and agg["pass_rate_ci"]["high"] == 1.0
        assert agg["pass_rate_ci"]["low"] < 0.95

    def test_pass_k_curves_share_one_task_set(self) -> None:
        """Task x has 3 valid runs, y only 2 (one harness error): the curves stop at k = 2, over both
        tasks, so they are monotone. x: 2/3 pass; y: 1/2 pass."""
        x = [sample("a/x", "akm", s, o) for s, o in ((1, "pass"), (2, "pass"), (3, "fail"))]
        y = [sample("a/y", "akm", s, o) for s, o in ((1, "pass"), (2, "fail"), (3, "harness_error"))]
        agg = metrics.aggregate([metrics.per_task(x, seeds=3), metrics.per_task(y, seeds=3)])
        assert agg is not None
        assert list(agg["pass_at_k"]) == ["1", "2"] and agg["pass_k_tasks"] == 2
        # pass@2: x 1 - C(1,2)/C(3,2) = 1, y 1 - C(1,2)/C(2,2) = 1; pass^2: x C(2,2)/C(3,2) = 1/3, y 0.
        assert agg["pass_at_k"]["2"] == 1.0 and agg["pass_hat_k"]["2"] == pytest.approx(1 / 6)
        assert agg["pass_hat_k"]["1"] == pytest.approx((2 / 3 + 1 / 2) / 2)

    def test_only_harness_errors_give_no_pass_k_curve(self) -> None:
        """An arm whose every run was a harness error ran its tasks but measured nothing: no pass
        rate, no interval and empty pass@k / pass^k curves (not a k = 1 point of null)."""
        z = [sample("a/z", "akm", s, "harness_error") for s in (1, 2)]
        agg = metrics.aggregate([metrics.per_task(z, seeds=2)])
        assert agg is not None
        assert (agg["tasks"], agg["tasks_with_valid_runs"], agg["pass_rate"], agg["pass_rate_ci"]) == (1, 0, None, None)
        assert (agg["pass_at_k"], agg["pass_hat_k"], agg["pass_k_tasks"]) == ({}, {}, 0)

    def test_flaky_tasks_are_counted_per_arm(self) -> None:
        """The arm's ``flaky_tasks`` (what an ``akm.flaky_tasks`` gate reads): task x passes and
        fails (stdev 0.58 > 0.2), task y always passes; one flaky task."""
        x = [sample("a/x", "akm", s, o) for s, o in ((1, "pass"), (2, "fail"), (3, "pass"))]
        y = [sample("a/y", "akm", s, "pass") for s in (1, 2, 3)]
        agg = metrics.aggregate([metrics.per_task(x), metrics.per_task(y)])
        assert agg is not None and agg["flaky_tasks"] == 1

    def test_arm_not_run(self) -> None:
        """No task rows: None."""
        assert metrics.aggregate([None, None]) is None
        assert metrics.delta(None, {"pass_rate": 1}) is None

    def test_task_delta_is_akm_minus_noakm(self) -> None:
        """A task's delta in the report: akm − noakm per figure (pass rate up, tokens and time down
        are better); a figure either arm lacks is None."""
        akm = metrics.per_task([sample("a/t", "akm", s, "pass", tokens=800, wallclock_ms=2000) for s in (1, 2)])
        noakm = metrics.per_task(
            [sample("a/t", "noakm", 1, "pass", wallclock_ms=5000), sample("a/t", "noakm", 2, "fail", wallclock_ms=3000)]
        )
        assert metrics.delta(akm, noakm) == {
            "pass_rate": 0.5,
            "tokens_per_pass": None,
            "tokens_per_run": None,
            "wallclock_ms": -2000.0,
        }

    def test_token_measurement_counts_each_kind(self) -> None:
        """The report's token_measurement block: 3 measured, 1 the agent cannot measure, 2 with
        nothing recorded; coverage is 3 of 6 and the figures are not reliable."""
        runs = [sample("a/t", "akm", s, "pass", tokens=10) for s in (1, 2, 3)]
        runs += [sample("a/t", "akm", 4, "pass", token_measurement="unsupported")]
        runs += [sample("a/t", "akm", s, "fail") for s in (5, 6)]
        assert metrics.token_measurement(runs) == {
            "total_runs": 6,
            "runs_with_measured_tokens": 3,
            "runs_missing_measurement": 2,
            "runs_unsupported_measurement": 1,
            "coverage": 0.5,
            "reliable": False,
        }
        every = metrics.token_measurement(runs[:3])
        assert every["reliable"] is True and every["coverage"] == 1.0 and every["runs_missing_measurement"] == 0
        assert metrics.token_measurement(runs[:1])["reliable"] is True
        assert metrics.token_measurement([])["coverage"] is None and metrics.token_measurement([])["reliable"] is False

    def test_tokens_per_run_leaves_harness_errors_out(self) -> None:
        """A harness-error run that burned 30,000 tokens does not count in tokens_per_run."""
        runs = [sample("a/t", "akm", 1, "pass", tokens=1500), sample("a/t", "akm", 2, "harness_error", tokens=30_000)]
        row = metrics.per_task(runs)
        assert row is not None and row["tokens_per_run"] == 1500 and row["runs_with_measured_tokens"] == 1


class TestAkmSections:
    """Trajectory aggregate, bridge, per-asset, overhead."""

    def runs(self) -> list[dict[str, Any]]:
        return [
            sample(
                "a/t",
                "akm",
                1,
                "pass",
                tokens=100,
                trajectory=traj(searches=[2], shown=["skill:gold"], feedback="positive", t_search=400),
            ),
            sample("a/t", "akm", 2, "fail", trajectory=traj(searches=[None, 7], shown=["skill:other"], before=False)),
            sample("a/t", "akm", 3, "fail", trajectory=traj()),
            sample("a/t", "akm", 4, "pass"),  # e.g. the oracle agent: no trajectory
        ]

    def test_trajectory_aggregate(self) -> None:
        """Rates over observed runs only; the run without a trajectory is not counted as false."""
        t = akm_usage.trajectory_aggregate(self.runs())
        assert t["correct_asset_loaded"] == pytest.approx(1 / 3)
        assert t["feedback_recorded"] == pytest.approx(1 / 3)
        assert t["searched_before_acting"] == pytest.approx(2 / 3)
        assert t["irrelevant_assets_loaded"] == pytest.approx(1 / 3)
        assert t["counts"]["runs"] == 4 and t["counts"]["runs_with_trajectory"] == 3
        assert t["counts"]["feedback_positive"] == 1 and t["counts"]["feedback_negative"] == 0

    def test_trajectory_aggregate_without_any_trajectory(self) -> None:
        """Nothing observed: every rate is None, never 0."""
        t = akm_usage.trajectory_aggregate([sample("a/t", "akm", 1, "pass")])
        assert t["correct_asset_loaded"] is None and t["feedback_recorded"] is None
        assert t["searched_before_acting"] is None

    def test_search_bridge(self) -> None:
        """Three searches: ranks 2, missing, 7; last-search buckets 2 (pass) and 7 (fail)."""
        sb = akm_usage.search_bridge(self.runs(), {"a/t": "skill:gold"})
        assert sb["runs_observed"] == 3 and sb["searches_observed"] == 3
        assert sb["gold_rank_distribution"]["2"] == 1 and sb["gold_rank_distribution"]["7"] == 1
        assert sb["gold_rank_distribution"]["missing"] == 1
        # sorted [2, 7, inf]: p50 index ceil(1.5)-1 = 1 -> 7; p90 index ceil(2.7)-1 = 2 -> missing
        assert sb["gold_rank_p50"] == 7 and sb["gold_rank_p90"] == "missing"
        assert sb["gold_at_rank_1"] == 0 and sb["gold_missing"] == pytest.approx(1 / 3)
        assert sb["pass_rate_by_rank"] == [
            {"rank": "2", "pass_rate": 1.0, "run_count": 1},
            {"rank": "7", "pass_rate": 0.0, "run_count": 1},
        ]

    def test_harness_errors_stay_out_of_akm_figures(self) -> None:
        """An errored run that searched, showed and gave feedback changes none of the akm figures."""
        errored = sample(
            "a/t", "akm", 5, "harness_error", trajectory=traj(searches=[1], shown=["skill:bad"], feedback="positive")
        )
        runs = self.runs()
        with_error = runs + [errored]
        assert (
            akm_usage.trajectory_aggregate(with_error)["feedback_recorded"]
            == akm_usage.trajectory_aggregate(runs)["feedback_recorded"]
        )
        assert akm_usage.trajectory_aggregate(with_error)["counts"]["harness_error_runs"] == 1
        assert akm_usage.search_bridge(with_error, {"a/t": "skill:gold"}) == akm_usage.search_bridge(
            runs, {"a/t": "skill:gold"}
        )
        assert transfer.asset_regression_candidates([errored], {"a/t"}) == []
        ov = akm_usage.akm_overhead(with_error)["aggregate"]
        assert ov["mean_feedback_count"] == akm_usage.akm_overhead(runs)["aggregate"]["mean_feedback_count"]
        assert ov["harness_error_runs"] == 1 and ov["runs_with_trajectory"] == 3

    def test_search_bridge_without_searches_is_null(self) -> None:
        """No search observed: the shares are null, not 0."""
        sb = akm_usage.search_bridge([sample("a/t", "akm", 1, "pass", trajectory=traj())], {"a/t": "skill:gold"})
        assert sb["searches_observed"] == 0 and sb["gold_at_rank_1"] is None and sb["gold_missing"] is None

    def test_per_asset(self) -> None:
        """Loads split by outcome; sorted by load count then pass rate."""
        pa = akm_usage.per_asset(self.runs())
        assert pa["total_akm_runs"] == 4
        assert pa["rows"] == [
            {
                "asset_ref": "skill:gold",
                "load_count": 1,
                "load_count_passing": 1,
                "load_count_failing": 0,
                "load_pass_rate": 1.0,
            },
            {
                "asset_ref": "skill:other",
                "load_count": 1,
                "load_count_passing": 0,
                "load_count_failing": 1,
                "load_pass_rate": 0.0,
            },
        ]

    def test_overhead(self) -> None:
        """Means over observed runs; polarity counted; cost per success needs every pass measured."""
        ov = akm_usage.akm_overhead(self.runs())
        a = ov["aggregate"]
        assert (a["total_runs"], a["runs_with_trajectory"], a["passing_runs"]) == (4, 3, 1)
        assert a["mean_search_count"] == pytest.approx(1.0)
        assert a["mean_positive_feedback_count"] == pytest.approx(1 / 3)
        assert a["mean_time_to_first_search_ms"] == 400
        assert a["total_tool_calls"] == 1 + 1 + 1 + 2 + 1
        assert a["tool_calls_per_success"] == 6 / 1
        assert a["cost_per_success"] == 100
        assert a["search_to_show_ratio"] == pytest.approx(2 / 3)
        # Of the 3 observed runs, 2 searched, 2 showed an asset, 1 gave feedback.
        engagement = (a["search_engagement_rate"], a["show_engagement_rate"], a["feedback_engagement_rate"])
        assert engagement == pytest.approx((2 / 3, 2 / 3, 1 / 3))
        assert ov["per_run"][3]["search_count"] is None
