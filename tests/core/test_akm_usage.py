"""Tests for pytest_akmbench.report.akm_usage: the akm arm's trajectory rates, failure modes, search
bridge, per-asset loads and overhead, each block pinned whole (every key a report reader sees)."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_akmbench.report import akm_usage
from tests.core.test_metrics import sample, traj

GOLD = "skill:gold"


def searched(*ranks: int | None, outcome: str = "fail", task: str = "a/t", seed: int = 1) -> dict[str, Any]:
    """An akm-arm run whose searches ranked the gold at ``ranks`` (None: missed)."""
    return sample(task, "akm", seed, outcome, trajectory=traj(searches=list(ranks)))


class TestTrajectoryAggregate:
    def test_counts(self) -> None:
        """Every count of the block; mixed feedback counts as both positive and negative."""
        no_gold = traj(shown=["skill:x"], gold=None, before=None)
        no_gold["irrelevant_assets_loaded"] = None
        runs = [
            sample("a/t", "akm", 1, "pass", trajectory=traj(searches=[1], shown=[GOLD], feedback="mixed")),
            sample("a/t", "akm", 2, "fail", trajectory=traj(shown=["skill:x", "skill:y"], feedback="negative")),
            sample("a/t", "akm", 3, "fail", trajectory=no_gold),
            sample("a/t", "akm", 4, "fail", trajectory={**traj(), "source": None}),  # not observed
            sample("a/t", "akm", 5, "harness_error", trajectory=traj(shown=[GOLD], feedback="positive")),
        ]
        t = akm_usage.trajectory_aggregate(runs)
        assert t["counts"] == {
            "runs": 5,
            "harness_error_runs": 1,
            "runs_with_trajectory": 3,
            "gold_ref_runs": 2,
            "correct_asset_loaded": 1,
            "feedback_recorded": 2,
            "feedback_positive": 1,
            "feedback_negative": 2,
            "searched_before_acting_judged": 2,
            "searched_before_acting": 2,
            "irrelevant_assets_loaded": 2,
            "unconfirmed_runs": 0,
            "unconfirmed_events": 0,
        }
        assert (t["correct_asset_loaded"], t["feedback_recorded"], t["searched_before_acting"]) == (0.5, 2 / 3, 1.0)
        assert t["irrelevant_assets_loaded"] == 1.0 and t["unconfirmed_cells"] == []

    def test_runs_with_unconfirmed_akm_events_are_named(self) -> None:
        """Every akm-arm run whose akm log held events no call accounts for is named with how many,
        observed or not, harness errors included; a run whose log was not read (None) or had none
        (0) is not."""
        runs = [
            sample("a/t", "akm", 1, "pass", trajectory={**traj(), "unconfirmed_events": 3}),
            sample("a/t", "akm", 2, "pass", trajectory={**traj(), "unconfirmed_events": 0}),
            sample("b/t", "akm", 1, "fail", trajectory={**traj(), "source": None, "unconfirmed_events": 2}),
            sample("b/t", "akm", 2, "harness_error", trajectory={**traj(), "unconfirmed_events": 1}),
            sample("b/t", "akm", 3, "fail", trajectory={**traj(), "unconfirmed_events": None}),
            sample("c/t", "akm", 1, "fail"),
        ]
        t = akm_usage.trajectory_aggregate(runs)
        assert t["unconfirmed_cells"] == [
            {"task_id": "a/t", "seed": 1, "outcome": "pass", "unconfirmed_events": 3},
            {"task_id": "b/t", "seed": 1, "outcome": "fail", "unconfirmed_events": 2},
            {"task_id": "b/t", "seed": 2, "outcome": "harness_error", "unconfirmed_events": 1},
        ]
        assert (t["counts"]["unconfirmed_runs"], t["counts"]["unconfirmed_events"]) == (3, 6)

    def test_a_trajectory_without_a_source_is_not_observed(self) -> None:
        """A trajectory dict whose source is None (the analysis saw nothing) is left out, as no dict is."""
        assert akm_usage.observed({"trajectory": {**traj(), "source": None}}) is None
        assert akm_usage.observed({"trajectory": "junk"}) is None
        assert akm_usage.observed({"trajectory": traj()}) == traj()


def test_failure_modes_by_label_and_by_task() -> None:
    """Labels counted overall and per task, in run order; None (not classified) skipped."""
    labelled = [("a/t", "no_search"), ("b/t", "hung"), ("a/t", "no_search"), ("a/t", None), ("a/t", "hung")]
    assert akm_usage.failure_modes(labelled) == {
        "by_label": {"no_search": 2, "hung": 2},
        "by_task": {"a/t": {"no_search": 2, "hung": 1}, "b/t": {"hung": 1}},
    }


class TestSearchBridge:
    def test_ranks_up_to_ten_are_buckets_and_beyond_are_missing(self) -> None:
        """Ranks 1 to 10 are their own bucket, 11 and a miss are "missing"; every run after a run
        without a trajectory still counts; the last search of a run decides its bucket."""
        runs = [
            sample("a/t", "akm", 9, "pass"),  # no trajectory
            searched(1, 1, 10, outcome="pass"),
            searched(11, seed=2),
            searched(2, None, seed=3),
            searched(None, 1, seed=4, outcome="pass"),
            searched(3, 10, seed=5),
        ]
        sb = akm_usage.search_bridge(runs, {"a/t": GOLD})
        assert sb["runs_observed"] == 5 and sb["searches_observed"] == 10
        expected = dict.fromkeys([*map(str, range(1, 11)), "missing"], 0)
        expected.update({"1": 3, "2": 1, "3": 1, "10": 2, "missing": 3})
        assert sb["gold_rank_distribution"] == expected
        assert sb["gold_at_rank_1"] == 0.3 and sb["gold_missing"] == 0.3
        assert sb["pass_rate_by_rank"] == [
            {"rank": "1", "pass_rate": 1.0, "run_count": 1},
            {"rank": "10", "pass_rate": 0.5, "run_count": 2},
            {"rank": "missing", "pass_rate": 0.0, "run_count": 2},
        ]

    @pytest.mark.parametrize(
        ("ranks", "p50", "p90"),
        [
            ([1, 3], 1, 3),
            ([1] * 9 + [2], 1, 1),  # p90 of 10: the 9th smallest
            ([1] * 17 + [2, 3], 1, 2),  # p90 of 19: the 18th smallest
            ([None], "missing", "missing"),
        ],
    )
    def test_percentiles_are_nearest_rank(self, ranks: list[int | None], p50: Any, p90: Any) -> None:
        """p50 and p90 are the nearest-rank percentiles: the ceil(p·n)-th smallest rank."""
        sb = akm_usage.search_bridge([searched(*ranks)], {"a/t": GOLD})
        assert (sb["gold_rank_p50"], sb["gold_rank_p90"]) == (p50, p90)

    def test_half_the_searches_at_rank_one(self) -> None:
        sb = akm_usage.search_bridge([searched(1, 4)], {"a/t": GOLD})
        assert sb["gold_at_rank_1"] == 0.5 and sb["gold_missing"] == 0.0


def test_per_asset_rows_and_order() -> None:
    """Loads counted per run and outcome (every run after one without a trajectory too); rows by
    load count, then pass rate, then ref."""
    runs = [
        sample("a/t", "akm", 9, "pass"),  # no trajectory
        sample("a/t", "akm", 1, "pass", trajectory=traj(shown=["skill:a", "skill:d", "skill:b"])),
        sample("a/t", "akm", 2, "pass", trajectory=traj(shown=["skill:a"])),
        sample("a/t", "akm", 3, "fail", trajectory=traj(shown=["skill:a", "skill:d", "skill:c"])),
    ]
    rows = akm_usage.per_asset(runs)["rows"]
    assert [(r["asset_ref"], r["load_count"], r["load_count_passing"], r["load_count_failing"]) for r in rows] == [
        ("skill:a", 3, 2, 1),
        ("skill:d", 2, 1, 1),
        ("skill:b", 1, 1, 0),
        ("skill:c", 1, 0, 1),
    ]
    assert [r["load_pass_rate"] for r in rows] == [pytest.approx(2 / 3), 0.5, 1.0, 0.0]
    assert akm_usage.per_asset(runs)["total_akm_runs"] == 4


class TestOverhead:
    def runs(self) -> list[dict[str, Any]]:
        irrelevant_unknown = traj(searches=[None], gold=None)
        irrelevant_unknown["irrelevant_assets_loaded"] = None
        return [
            sample(
                "a/t",
                "akm",
                1,
                "pass",
                tokens=100,
                trajectory={
                    **traj(searches=[2], shown=[GOLD, "skill:x"], feedback="negative", t_search=300),
                    "time_to_first_correct_asset_ms": 500,
                },
            ),
            sample("a/t", "akm", 2, "fail", trajectory=irrelevant_unknown),
            sample("a/t", "akm", 3, "harness_error", trajectory=traj(searches=[1])),
        ]

    def test_per_run_rows(self) -> None:
        """Each run's figures; the irrelevant count is None when the task names no asset; a harness
        error's figures are all None."""
        per_run = akm_usage.akm_overhead(self.runs())["per_run"]
        assert per_run[0] == {
            "task_id": "a/t",
            "arm": "akm",
            "seed": 1,
            "outcome": "pass",
            "search_count": 1,
            "show_count": 2,
            "feedback_count": 1,
            "positive_feedback_count": 0,
            "negative_feedback_count": 1,
            "total_tool_calls": 4,
            "assets_loaded_count": 2,
            "irrelevant_assets_loaded_count": 1,
            "time_to_first_search_ms": 300,
            "time_to_first_correct_asset_ms": 500,
            "context_bytes_loaded": 40,
            "asset_bytes_loaded": 20,
        }
        assert per_run[1]["irrelevant_assets_loaded_count"] is None and per_run[1]["total_tool_calls"] == 1
        assert all(per_run[2][k] is None for k in ("search_count", "total_tool_calls", "asset_bytes_loaded"))

    def test_aggregate(self) -> None:
        """Every figure of the aggregate, over the two runs that count."""
        assert akm_usage.akm_overhead(self.runs())["aggregate"] == {
            "total_runs": 3,
            "harness_error_runs": 1,
            "runs_with_trajectory": 2,
            "passing_runs": 1,
            "mean_search_count": 1.0,
            "mean_show_count": 1.0,
            "mean_feedback_count": 0.5,
            "mean_tool_calls": 2.5,
            "mean_assets_loaded": 1.0,
            "mean_irrelevant_assets_loaded": 1.0,
            "mean_time_to_first_search_ms": 300,
            "mean_time_to_first_correct_asset_ms": 500,
            "mean_context_bytes_loaded": 20.0,
            "mean_asset_bytes_loaded": 10.0,
            "total_tool_calls": 5,
            "tool_calls_per_success": 5.0,
            "cost_per_success": 100,
            "search_engagement_rate": 1.0,
            "show_engagement_rate": 0.5,
            "feedback_engagement_rate": 0.5,
            "search_to_show_ratio": 1.0,
            "mean_positive_feedback_count": 0.0,
            "mean_negative_feedback_count": 0.5,
        }

    def test_two_passing_runs_share_the_tool_calls(self) -> None:
        runs = [sample("a/t", "akm", s, "pass", trajectory=traj(searches=[1], shown=[GOLD])) for s in (1, 2)]
        assert akm_usage.akm_overhead(runs)["aggregate"]["tool_calls_per_success"] == 2.0

    def test_nothing_observed_gives_no_rates(self) -> None:
        """No run with a trajectory, no pass, no search: the ratios are None, never a division by zero."""
        aggregate = akm_usage.akm_overhead([sample("a/t", "akm", 1, "fail")])["aggregate"]
        assert aggregate["runs_with_trajectory"] == 0 and aggregate["search_engagement_rate"] is None
        assert aggregate["tool_calls_per_success"] is None and aggregate["search_to_show_ratio"] is None
        quiet = akm_usage.akm_overhead([sample("a/t", "akm", 1, "fail", trajectory=traj())])["aggregate"]
        assert quiet["search_to_show_ratio"] is None and quiet["search_engagement_rate"] == 0.0
