"""Tests for pytest_akmbench.report.transfer: where akm helped or hurt, as the report shows it.

Each test gives task rows shaped like the report's ``tasks`` entries (an arm's row, or None when
the arm did not run the task) and checks the whole block the report would print, worked out by
hand: a wrong order, a lost row or a figure taken from the wrong arm changes it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pytest_akmbench.report import transfer
from tests.core.test_metrics import make_task, sample, traj


def arm(rate: float | None, tokens: float | None = None, wall: float | None = None) -> dict[str, Any]:
    return {"pass_rate": rate, "tokens_per_pass": tokens, "wallclock_ms": wall}


def row(task_id: str, akm: dict[str, Any] | None, noakm: dict[str, Any] | None) -> dict[str, Any]:
    return {"id": task_id, "akm": akm, "noakm": noakm}


def domains(rows: list[dict[str, Any]]) -> dict[str, str]:
    return {r["id"]: r["id"].split("/")[0] for r in rows}


class TestNegativeTransfer:
    def test_regressed_tasks_worst_first(self) -> None:
        """Only tasks where akm is strictly below noakm, both measured: a tie, a win, an arm not
        run and an arm with no valid run are not negative transfer. Worst first; equal severity by id."""
        rows = [
            row("y/c", arm(0.25), arm(0.5)),
            row("x/b", arm(0.0), arm(1.0)),
            row("x/a", arm(0.0), arm(1.0)),
            row("y/tie", arm(0.5), arm(0.5)),
            row("y/win", arm(1.0), arm(0.0)),
            row("y/no-akm", None, arm(1.0)),
            row("y/no-noakm", arm(0.0), None),
            row("y/errors", arm(None), arm(1.0)),
            row("y/errors-noakm", arm(0.0), arm(None)),
        ]
        assert transfer.negative_transfer(rows, domains(rows)) == [
            {
                "task_id": "x/a",
                "domain": "x",
                "noakm_pass_rate": 1.0,
                "akm_pass_rate": 0.0,
                "delta": -1.0,
                "severity": 1.0,
            },
            {
                "task_id": "x/b",
                "domain": "x",
                "noakm_pass_rate": 1.0,
                "akm_pass_rate": 0.0,
                "delta": -1.0,
                "severity": 1.0,
            },
            {
                "task_id": "y/c",
                "domain": "y",
                "noakm_pass_rate": 0.5,
                "akm_pass_rate": 0.25,
                "delta": -0.25,
                "severity": 0.25,
            },
        ]


class TestDomainDeltas:
    def test_one_row_per_domain_in_name_order(self) -> None:
        """Domain y: two tasks, one regressed; akm − noakm of the mean pass rate, tokens per pass
        (over the tasks that have the figure) and time. Domain x: akm did not run its task, so
        every akm figure and delta is None, not 0."""
        rows = [
            row("y/c", arm(0.25, 100, 1000), arm(0.5, 300, 4000)),
            row("y/d", arm(0.5, None, 3000), arm(0.5, 200, 2000)),
            row("x/a", None, arm(1.0, 50, 500)),
        ]
        assert transfer.domain_level_deltas(rows, domains(rows), {"y/c"}) == [
            {
                "domain": "x",
                "task_count": 1,
                "regression_count": 0,
                "pass_rate_noakm": 1.0,
                "pass_rate_akm": None,
                "pass_rate_delta": None,
                "tokens_per_pass_delta": None,
                "wallclock_ms_delta": None,
            },
            {
                "domain": "y",
                "task_count": 2,
                "regression_count": 1,
                "pass_rate_noakm": 0.5,
                "pass_rate_akm": 0.375,
                "pass_rate_delta": -0.125,
                "tokens_per_pass_delta": 100 - 250,
                "wallclock_ms_delta": 2000 - 3000,
            },
        ]


class TestAssetCandidates:
    def test_assets_of_regressed_tasks_ranked(self) -> None:
        """Assets loaded by akm runs of regressed tasks: by how many regressed tasks loaded them,
        then how often, then by ref. Runs of a task that did not regress, a harness error and a
        run without a trajectory add nothing."""
        runs = [
            sample("y/d", "akm", 1, "pass", trajectory=traj(shown=["skill:a", "skill:d"])),
            sample("y/g", "akm", 1, "fail", trajectory=traj(shown=["skill:b", "skill:e", "skill:d"])),
            sample("y/c", "akm", 3, "harness_error", trajectory=traj(shown=["skill:z"])),
            sample("y/c", "akm", 1, "fail", trajectory=traj(shown=["skill:a", "skill:b"])),
            sample("y/c", "akm", 4, "fail"),
            sample("y/c", "akm", 2, "fail", trajectory=traj(shown=["skill:a"])),
        ]
        assert transfer.asset_regression_candidates(runs, {"y/c", "y/g"}) == [
            {
                "asset_ref": "skill:b",
                "regressed_task_count": 2,
                "regressed_task_ids": ["y/c", "y/g"],
                "total_load_count": 2,
            },
            {"asset_ref": "skill:a", "regressed_task_count": 1, "regressed_task_ids": ["y/c"], "total_load_count": 2},
            {"asset_ref": "skill:d", "regressed_task_count": 1, "regressed_task_ids": ["y/g"], "total_load_count": 1},
            {"asset_ref": "skill:e", "regressed_task_count": 1, "regressed_task_ids": ["y/g"], "total_load_count": 1},
        ]


class TestCorpusCoverage:
    TASKS: ClassVar = [
        make_task("x/a", memory_ability="procedural_lookup", task_family="f2"),
        make_task("x/b", memory_ability="temporal_update", task_family="f1"),
        make_task("y/c", memory_ability="procedural_lookup"),
        make_task("y/d", task_family="f1"),
        make_task("y/e", task_family="f2"),
        make_task("y/f", task_family="f1"),
        make_task("y/g"),
    ]
    ROWS: ClassVar = [
        row("x/a", arm(0.0), arm(1.0)),
        row("x/b", arm(0.5), None),
        row("y/c", arm(1.0), arm(0.5)),
        row("y/d", arm(0.25), arm(0.75)),
        row("y/e", arm(1.0), arm(1.0)),
        row("y/f", arm(None), arm(0.25)),
        row("y/g", arm(0.0), arm(1.0)),
    ]

    def test_counts_by_ability_and_family(self) -> None:
        """Every ability is listed (0 when no task has it), untagged first; families in the order
        the tasks name them, untagged last."""
        coverage = transfer.corpus_coverage(self.TASKS, self.ROWS)["coverage"]
        assert coverage["totalTasks"] == 7
        assert list(coverage["memoryAbilityCounts"].items()) == [
            ("untagged", 4),
            ("procedural_lookup", 2),
            ("multi_asset_composition", 0),
            ("temporal_update", 1),
            ("conflict_resolution", 0),
            ("abstention", 0),
            ("noisy_retrieval", 0),
        ]
        assert list(coverage["taskFamilyCounts"].items()) == [("f2", 2), ("f1", 3), ("untagged", 2)]

    def test_rows_by_ability_and_family(self) -> None:
        """Per category: mean pass rate of each arm over the tasks that have one, akm − noakm,
        how many tasks regressed (both arms measured, akm strictly below: y/e's tie in f2 is
        not one), and the mean workflow compliance of the tasks that have one (None when none has)."""
        compliance = {"x/a": 0.5, "y/c": 1.0, "y/d": 0.25}
        cc = transfer.corpus_coverage(self.TASKS, self.ROWS, compliance)
        assert cc["by_memory_ability"] == [
            {
                "category": "procedural_lookup",
                "task_count": 2,
                "pass_rate_noakm": 0.75,
                "pass_rate_akm": 0.5,
                "pass_rate_delta": -0.25,
                "negative_transfer_count": 1,
                "workflow_compliance": 0.75,
            },
            {
                "category": "temporal_update",
                "task_count": 1,
                "pass_rate_noakm": None,
                "pass_rate_akm": 0.5,
                "pass_rate_delta": None,
                "negative_transfer_count": 0,
                "workflow_compliance": None,
            },
        ]
        assert cc["by_task_family"] == [
            {
                "category": "f1",
                "task_count": 3,
                "pass_rate_noakm": 0.5,
                "pass_rate_akm": 0.375,
                "pass_rate_delta": -0.125,
                "negative_transfer_count": 1,
                "workflow_compliance": 0.25,
            },
            {
                "category": "f2",
                "task_count": 2,
                "pass_rate_noakm": 1.0,
                "pass_rate_akm": 0.5,
                "pass_rate_delta": -0.5,
                "negative_transfer_count": 1,
                "workflow_compliance": 0.5,
            },
        ]

    def test_no_workflow_compliance_given(self) -> None:
        """Without workflow specs no category has a compliance figure."""
        cc = transfer.corpus_coverage(self.TASKS, self.ROWS)
        assert [r["workflow_compliance"] for r in cc["by_memory_ability"] + cc["by_task_family"]] == [None] * 4
