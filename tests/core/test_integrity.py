"""The report invariant (pytest_akmbench.store.integrity) and report completeness, without pytest runs."""

from __future__ import annotations

from pathlib import Path

from pytest_akmbench.agents import NopAgent
from pytest_akmbench.cell.context import RunContext
from pytest_akmbench.corpus.tasks import load_corpus
from pytest_akmbench.run.resume import report_input
from pytest_akmbench.store.integrity import check
from tests.support.corpus import standard_corpus


def sample(
    task: str = "d/t",
    arm: str = "akm",
    seed: int = 1,
    run: str = "r1",
    at: str = "t1",
    outcome: str = "pass",
    **extra: object,
) -> dict:
    return {
        "task_id": task,
        "arm": arm,
        "seed": seed,
        "run_id": run,
        "started_at": at,
        "fingerprint_hash": "f",
        "outcome": outcome,
        **extra,
    }


class TestCheck:
    def test_consistent_run_has_no_problem(self) -> None:
        mine, old = sample(), sample(seed=2, run="r0", from_store=True)
        assert check(chosen=[mine, old], received=[mine, old], stored_by_run=[mine]) == []

    def test_unstored_sample(self) -> None:
        """A sample the terminal counted that the store never got (a failed append)."""
        mine = sample()
        problems = check(chosen=[mine], received=[mine], stored_by_run=[])
        assert problems == [
            "report mismatch: 1 samples this run produced are not in the store (d/t::akm-s1); "
            "they are in this report only, and a resumed run will run them again"
        ]

    def test_newer_sample_from_another_writer(self) -> None:
        mine, theirs = sample(), sample(run="other", at="t2", outcome="fail")
        (problem,) = check(chosen=[theirs], received=[mine], stored_by_run=[mine])
        assert problem.startswith("report mismatch: 1 cells have a newer sample in the store")

    def test_stored_but_never_reported(self) -> None:
        mine, extra = sample(), sample(seed=2)
        (problem,) = check(chosen=[mine, extra], received=[mine], stored_by_run=[mine, extra])
        assert "1 samples of this run are in the store but were never reported" in problem and "akm-s2" in problem

    def test_harness_error_keeps_an_earlier_valid_sample(self) -> None:
        """A new harness error does not replace the stored pass in the report, and that is no mismatch."""
        error, earlier = sample(outcome="harness_error", at="t2"), sample(run="r0")
        assert check(chosen=[earlier], received=[error], stored_by_run=[error]) == []

    def test_unidentified_node_ids(self) -> None:
        (problem,) = check(chosen=[], received=[], stored_by_run=[], unidentified=["x/task.yaml::akm-s1"])
        assert "1 collected cells could not be matched" in problem

    def test_many_cells_are_summarised(self) -> None:
        received = [sample(seed=s) for s in range(1, 8)]
        (problem,) = check(chosen=received, received=received, stored_by_run=[])
        assert problem.count("::") == 3 and "and 4 more" in problem

    def test_a_received_cell_missing_from_the_report_is_named(self) -> None:
        mine = sample(seed=3)
        assert check(chosen=[], received=[mine], stored_by_run=[mine]) == [
            "report mismatch: 1 cells this run reported have no sample in the report (d/t::akm-s3)"
        ]

    def test_each_kind_is_one_whole_line(self) -> None:
        """What a user reads: every kind of disagreement, in its order, with the cells named."""
        unstored, theirs = sample(seed=1, at="t0"), sample(seed=2, run="other")
        mine, absent, late = sample(seed=2), sample(seed=4), sample(task="d/u", seed=5)
        problems = check(
            chosen=[unstored, theirs],
            received=[unstored, mine, absent],
            stored_by_run=[mine, absent, late],
            unidentified=["x/b.yaml::akm-s1", "x/a.yaml::akm-s1"],
        )
        assert problems == [
            "report mismatch: 2 collected cells could not be matched to a selected task "
            "('x/a.yaml::akm-s1' and 1 more); they are missing from this report",
            "report mismatch: 1 samples this run produced are not in the store (d/t::akm-s1); "
            "they are in this report only, and a resumed run will run them again",
            "report mismatch: 1 cells have a newer sample in the store than the one this run reported "
            "(another run wrote to the same store) (d/t::akm-s2)",
            "report mismatch: 1 cells this run reported have no sample in the report (d/t::akm-s4)",
            "report mismatch: 1 samples of this run are in the store but were never reported to this "
            "session (a worker went on after the run stopped) (d/u::akm-s5); the terminal's counts leave them out",
        ]

    def test_a_sample_of_another_moment_or_fingerprint_is_not_the_one_stored(self) -> None:
        """A cell's sample is the stored one only if its run, start, fingerprint and outcome all match."""
        mine = sample()
        for other in (sample(at="t2"), sample(fingerprint_hash="g"), sample(run="r2"), sample(outcome="fail")):
            (problem,) = check(chosen=[mine], received=[mine], stored_by_run=[other])
            assert "not in the store" in problem
            assert check(chosen=[other], received=[mine], stored_by_run=[mine])[0].startswith(
                "report mismatch: 1 cells have a newer sample"
            )

    def test_a_harness_error_does_not_hide_the_cells_after_it(self) -> None:
        error, absent = sample(seed=1, outcome="harness_error"), sample(seed=2, at="t2")
        (problem,) = check(chosen=[], received=[error, absent], stored_by_run=[error, absent])
        assert problem == "report mismatch: 1 cells this run reported have no sample in the report (d/t::akm-s2)"

    def test_a_sample_from_the_store_is_not_looked_for_among_this_runs(self) -> None:
        old = sample(run="r0", from_store=True)
        assert check(chosen=[old], received=[old], stored_by_run=[]) == []

    def test_four_cells_name_three_and_one_more(self) -> None:
        received = [sample(seed=s) for s in (1, 2, 3, 4)]
        (problem,) = check(chosen=received, received=received, stored_by_run=[])
        assert "(d/t::akm-s1, d/t::akm-s2, d/t::akm-s3 and 1 more)" in problem

    def test_three_cells_are_all_named(self) -> None:
        received = [sample(seed=s) for s in (3, 1, 2)]
        (problem,) = check(chosen=received, received=received, stored_by_run=[])
        assert "(d/t::akm-s1, d/t::akm-s2, d/t::akm-s3)" in problem and "more" not in problem
        assert problem.startswith("report mismatch: 3 samples")

    def test_one_unidentified_item_is_named_alone(self) -> None:
        (problem,) = check(chosen=[], received=[], stored_by_run=[], unidentified=["x/task.yaml::akm-s1"])
        assert "('x/task.yaml::akm-s1'); they are missing" in problem


def test_empty_report_is_never_complete(tmp_path: Path) -> None:
    """No selected cell means no evidence: complete is false, however little went wrong."""
    tasks_root, stashes = standard_corpus(tmp_path)
    tasks = list(load_corpus(tasks_root, stashes).tasks)
    ctx = RunContext(
        run_id="r",
        tmp_root=tmp_path,
        stashes_root=stashes,
        agent=NopAgent(),
        model=None,
        budget_tokens=1,
        budget_wall_ms=1,
        budget_turns=None,
        verify_timeout_s=1,
    )
    kw = dict(tasks=tasks, arms=("akm",), seeds=1, slice_label="all", ctx=ctx, store_dir=tmp_path / "store", floor=1)
    assert report_input(cells=[], **kw).complete is False
    assert report_input(cells=[(tasks[0].id, "akm", 1)], **kw).complete is False  # selected, but no sample
