"""Tests for pytest_akmbench.report.transfer: where akm helped or hurt, as the report shows it.

Each test gives task rows shaped like the report's ``tasks`` entries (an arm's row, or None when
the arm did not run the task) and checks the whole block the report would print, worked out by
hand: a wrong order, a lost row or a figure taken from the wrong arm changes it.
"""

from __future__ import annotations

import random
from typing import Any, ClassVar

import pytest
import scipy.stats as ss

from pytest_akmbench.report import transfer
from tests.core.test_metrics import make_task, sample, traj


def arm(rate: float | None, tokens: float | None = None, wall: float | None = None) -> dict[str, Any]:
    return {"pass_rate": rate, "tokens_per_pass": tokens, "wallclock_ms": wall}


def row(task_id: str, akm: dict[str, Any] | None, noakm: dict[str, Any] | None) -> dict[str, Any]:
    return {"id": task_id, "akm": akm, "noakm": noakm}


def domains(rows: list[dict[str, Any]]) -> dict[str, str]:
    return {r["id"]: r["id"].split("/")[0] for r in rows}


def counted(passes: int, runs: int) -> dict[str, Any]:
    """An arm's per-task row with its counts, as metrics.per_task gives it."""
    return {"pass_rate": passes / runs, "passes": passes, "valid_count": runs}


class TestNegativeTransfer:
    ROWS: ClassVar = [
        row("y/c", counted(2, 10), counted(9, 10)),
        row("x/b", counted(0, 10), counted(10, 10)),
        row("x/a", counted(0, 10), counted(10, 10)),
        row("y/slight", counted(4, 10), counted(6, 10)),
        row("y/tie", counted(5, 10), counted(5, 10)),
        row("y/win", counted(10, 10), counted(0, 10)),
        row("y/no-akm", None, counted(10, 10)),
        row("y/no-noakm", counted(0, 10), None),
        row("y/errors", arm(None), counted(10, 10)),
    ]

    def test_regressed_beyond_noise_worst_first(self) -> None:
        """Only tasks where akm passes less often than noakm beyond noise (one-sided Fisher exact at
        0.05/K, K = Tarone's family: here all 6 tasks both arms measured could show a drop): y/slight,
        4/10 against 6/10, is below noakm but within noise; a tie, a win, an arm not run and an arm
        with no valid run are not tested. Worst first; equal severity by id. The p-values are scipy's."""
        tested = {"y/c": (2, 9), "x/b": (0, 10), "x/a": (0, 10), "y/slight": (4, 6), "y/tie": (5, 5), "y/win": (10, 0)}
        raw = {
            t: ss.fisher_exact([[a, 10 - a], [b, 10 - b]], alternative="less").pvalue for t, (a, b) in tested.items()
        }
        assert 6 * raw["y/slight"] > 0.05 and 6 * raw["y/c"] < 0.05
        got = transfer.negative_transfer(self.ROWS, domains(self.ROWS))
        assert [r["task_id"] for r in got] == ["x/a", "x/b", "y/c"]
        assert got[2] == {
            "task_id": "y/c",
            "domain": "y",
            "noakm_pass_rate": 0.9,
            "akm_pass_rate": 0.2,
            "delta": pytest.approx(-0.7),
            "severity": pytest.approx(0.7),
            "p_value": pytest.approx(raw["y/c"]),
            "p_value_adjusted": pytest.approx(6 * raw["y/c"]),
            "family": 6,
        }

    def test_tarone_leaves_out_tasks_that_cannot_show_a_drop(self) -> None:
        """17 tasks × 5 seeds: the best one-sided p is 1/252, which Holm or Bonferroni over 17 could
        never reach (17/252 > 0.05). A task with 1 pass in its 10 runs has a smallest p of 0.5: it
        cannot be a false claim, so Tarone's K counts only the tasks that can reach 0.05/K. Here 2
        tasks fell from 5/5 to 0/5 and 15 have 1 pass in 10: K = 2, both are found."""
        rows = [row(f"d/t{i:02d}", counted(0, 5), counted(5, 5)) for i in range(2)]
        rows += [row(f"d/u{i:02d}", counted(0, 5), counted(1, 5)) for i in range(15)]
        smallest = [ss.hypergeom(10, 5, 5).pmf(0)] * 2 + [ss.hypergeom(10, 1, 5).pmf(0)] * 15
        assert transfer.tarone_family(smallest) == 2
        got = transfer.negative_transfer(rows, domains(rows))
        assert [(r["task_id"], r["family"]) for r in got] == [("d/t00", 2), ("d/t01", 2)]
        assert got[0]["p_value_adjusted"] == pytest.approx(2 / 252)
        # Every task able to show a drop: K = 17 and 17/252 > 0.05, so nothing is claimed.
        same = [row(f"d/t{i:02d}", counted(0, 5), counted(5, 5)) for i in range(17)]
        assert transfer.negative_transfer(same, domains(same)) == []

    def test_the_count_noise_alone_gives(self) -> None:
        """Beside the count beyond noise: how many tested tasks are below noakm at all (y/c, x/b, x/a,
        y/slight) and how many a random split of each task's passes between the arms puts below on
        average (scipy's hypergeometric, summed over the 6 tested tasks)."""
        expected = 0.0
        for a, b in ((2, 9), (0, 10), (0, 10), (4, 6), (5, 5), (10, 0)):
            dist = ss.hypergeom(20, a + b, 10)  # akm's share of the task's passes
            expected += sum(dist.pmf(x) for x in range(11) if x < a + b - x)
        noise = transfer.negative_transfer_noise(self.ROWS, 3)
        assert (noise["tasks_tested"], noise["tasks_below"], noise["beyond_noise"]) == (6, 4, 3)
        assert noise["expected_below_by_chance"] == pytest.approx(expected)

    def test_null_benches_rarely_list_any(self) -> None:
        """17 tasks × 5 seeds, both arms at the same rate (Uniform(0.05, 0.75)), 300 seeded benches:
        before, every task merely below noakm was listed (about 6 per bench; the gate
        negative_transfer_count<=0 failed on nearly every bench); now a bench lists any task at
        most 5% of the time (the one-sided Fisher test at 5 seeds is conservative)."""
        rng = random.Random(9)
        below = listed = 0
        for _ in range(300):
            rows = []
            for i in range(17):
                p = rng.uniform(0.05, 0.75)
                a, b = (sum(rng.random() < p for _ in range(5)) for _ in range(2))
                rows.append(row(f"d/t{i:02d}", counted(a, 5), counted(b, 5)))
            below += transfer.negative_transfer_noise(rows, 0)["tasks_below"]
            listed += bool(transfer.negative_transfer(rows, domains(rows)))
        assert 5.5 < below / 300 < 7.0
        assert listed / 300 <= 0.05


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
        how many of its tasks regressed beyond noise (the set given: x/a, y/d and y/g), and the
        mean workflow compliance of the tasks that have one (None when none has)."""
        compliance = {"x/a": 0.5, "y/c": 1.0, "y/d": 0.25}
        cc = transfer.corpus_coverage(self.TASKS, self.ROWS, compliance, {"x/a", "y/d", "y/g"})
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


def test_the_summary_prints_the_count_beside_what_chance_gives() -> None:
    """summary.md's negative-transfer section: the count beyond noise, how many tasks are below
    noakm at all and how many chance alone puts there, then the regressed tasks."""
    from pytest_akmbench.report import envelope as report
    from pytest_akmbench.report.render.markdown import render_markdown
    from tests.core.test_report import TS, inp

    tasks = [make_task("x/a"), make_task("x/b")]
    outcomes = {("x/a", "akm"): 0, ("x/a", "noakm"): 5, ("x/b", "akm"): 2, ("x/b", "noakm"): 3}
    samples = [
        sample(t, arm, s, "pass" if s <= passes else "fail")
        for (t, arm), passes in outcomes.items()
        for s in range(1, 6)
    ]
    text = render_markdown(report.build(inp(tasks, samples, seeds=5), timestamp=TS))
    section = text[text.index("## Negative transfer") :]
    assert section.split("\n")[2].startswith(
        "1 of 2 tasks regressed beyond noise (one-sided Fisher exact test per task (akm passes less often than "
        "noakm) at 0.05/K, K = Tarone's count of the tasks whose passes could show a drop that small); "
        "2 are below noakm at all, where chance alone puts "
    )
    assert "count=1, severity=1.00 (sum of noakm − akm pass rate over the tasks regressed beyond noise)" in section
