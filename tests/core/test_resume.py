"""Tests for pytest_akmbench.run.resume: which cells a run skips, and which samples its report is made of.

Every sample here is a real one (run_cell with a real verifier) appended to a real store; the
agent fails with a harness error on demand, which leaves the cell's fingerprint unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_akmbench.agents import AgentRequest, AgentResult
from pytest_akmbench.cell.context import Cell, RunContext, cell_fingerprint
from pytest_akmbench.cell.runner import run_cell
from pytest_akmbench.corpus.tasks import Task, load_corpus
from pytest_akmbench.report import envelope as report
from pytest_akmbench.run.resume import StoredSamples, report_input
from pytest_akmbench.store.samples import SampleStore, fingerprint_hash
from tests.core.test_runner import context, tracker
from tests.support.corpus import standard_corpus


class Switchable:
    """Solves the script task, or reports a provider outage (a harness error) while ``down``."""

    name = "switchable"
    version = "1"
    uses_akm = False

    def __init__(self) -> None:
        self.down = False
        self.runs = 0

    def start(self, session: object) -> None: ...

    def stop(self) -> None: ...

    def run(self, request: AgentRequest) -> AgentResult:
        self.runs += 1
        if self.down:
            return AgentResult(error="provider unreachable")
        (request.workspace / "out.txt").write_text("hello\n")
        return AgentResult(exit_code=0)


@pytest.fixture
def task(tmp_path: Path) -> Task:
    tasks_root, stashes = standard_corpus(tmp_path)
    return load_corpus(tasks_root, stashes).by_id()["alpha/script-task"]


class Bench:
    """One task, arm noakm: run seeds into a real store, then ask what resume and the report see."""

    def __init__(self, tmp_path: Path, task: Task) -> None:
        self.task, self.agent = task, Switchable()
        self.store_dir = tmp_path / "store"
        self.ctx: RunContext = context(tmp_path, self.agent)

    def run(self, seed: int, *, down: bool = False) -> dict:
        self.agent.down = down
        sample = run_cell(Cell(self.task, "noakm", seed), self.ctx, tracker())
        SampleStore(self.store_dir).append(sample)
        return sample

    @property
    def fp(self) -> str:
        return fingerprint_hash(cell_fingerprint(Cell(self.task, "noakm", 1), self.ctx))

    def report(self, seeds: int = 1) -> report.ReportInput:
        return report_input(
            tasks=[self.task],
            arms=("noakm",),
            seeds=seeds,
            cells=[(self.task.id, "noakm", s) for s in range(1, seeds + 1)],
            slice_label="all",
            ctx=self.ctx,
            store_dir=self.store_dir,
            floor=1,
        )


@pytest.fixture
def bench(tmp_path: Path, task: Task) -> Bench:
    return Bench(tmp_path, task)


class TestDone:
    """A cell is skipped on resume only when the store has a valid sample of it."""

    def test_harness_error_is_not_done(self, bench: Bench) -> None:
        """A harness error under the same fingerprint leaves the cell to run again; a pass makes it done."""
        error = bench.run(1, down=True)
        assert error["outcome"] == "harness_error" and error["fingerprint_hash"] == bench.fp
        index = StoredSamples.load(bench.store_dir)
        assert index.done((bench.task.id, "noakm", 1), bench.fp) is None
        passed = bench.run(1)
        index.refresh()
        assert index.done((bench.task.id, "noakm", 1), bench.fp) == passed

    def test_failures_and_budget_overruns_are_done(self, bench: Bench) -> None:
        """A fail is a measurement: it is not run again (only harness errors are)."""
        stored = bench.run(1)
        failed = {**stored, "outcome": "fail", "seed": 2}
        over = {**stored, "outcome": "budget_exceeded", "seed": 3}
        for record in (failed, over):
            SampleStore(bench.store_dir).append(record)
        index = StoredSamples.load(bench.store_dir)
        assert [index.done((bench.task.id, "noakm", s), bench.fp)["outcome"] for s in (1, 2, 3)] == [
            "pass",
            "fail",
            "budget_exceeded",
        ]
        assert index.done((bench.task.id, "noakm", 1), "another-fingerprint") is None
        assert index.done((bench.task.id, "akm", 1), bench.fp) is None

    def test_later_valid_sample_wins(self, bench: Bench) -> None:
        """A --bench-fresh re-run appends a newer sample of the trial: resume and the report use it."""
        first = bench.run(1)
        again = {**first, "outcome": "fail", "started_at": "later"}
        SampleStore(bench.store_dir).append(again)
        assert StoredSamples.load(bench.store_dir).done((bench.task.id, "noakm", 1), bench.fp) == again
        assert [s["outcome"] for s in bench.report().samples] == ["fail"]


class TestReportInput:
    """The report is made of one sample per cell: the latest valid one, else the latest attempt."""

    def test_later_harness_error_keeps_the_earlier_valid_sample(self, bench: Bench) -> None:
        """pass, then a harness error of the same trial: the report shows the pass and is complete."""
        bench.run(1)
        bench.run(1, down=True)
        inp = bench.report()
        assert [s["outcome"] for s in inp.samples] == ["pass"] and inp.complete is True
        env = report.build(inp, timestamp="2026-01-01T00:00:00.000Z")
        assert env["aggregate"]["noakm"]["pass_rate"] == 1.0

    def test_cell_ending_in_harness_error_is_incomplete(self, bench: Bench) -> None:
        """Seed 1 passes, seed 2 only has a harness error: the report shows both, and is not complete."""
        bench.run(1)
        bench.run(2, down=True)
        inp = bench.report(seeds=2)
        assert sorted((s["seed"], s["outcome"]) for s in inp.samples) == [(1, "pass"), (2, "harness_error")]
        assert inp.complete is False
        bench.run(2)
        assert bench.report(seeds=2).complete is True

    def test_latest_attempt_when_there_is_no_valid_sample(self, bench: Bench) -> None:
        """Two harness errors of one trial: the report shows the later one (its reason is the news)."""
        bench.run(1, down=True)
        second = {**bench.run(1, down=True), "reason": "second outage"}
        SampleStore(bench.store_dir).append(second)
        (shown,) = bench.report().samples
        assert shown["reason"] == "second outage"

    def test_samples_of_an_earlier_run_are_marked(self, bench: Bench, tmp_path: Path) -> None:
        """A sample another run stored is reported with from_store true; this run's with false."""
        bench.run(1)
        inp = bench.report()
        assert [s["from_store"] for s in inp.samples] == [False]
        later = Bench(tmp_path, bench.task)
        later.ctx = context(tmp_path, later.agent, run_id="another-run")
        assert [s["from_store"] for s in later.report().samples] == [True]

    def test_foreign_schema_is_ignored_with_a_warning(self, bench: Bench) -> None:
        """A record of another schema version is never used, and the report says so."""
        stored = bench.run(1, down=True)
        SampleStore(bench.store_dir).append({**stored, "outcome": "pass", "schema": 99})
        inp = bench.report()
        assert [s["outcome"] for s in inp.samples] == ["harness_error"]
        SampleStore(bench.store_dir).append({**stored, "schema": 99})
        SampleStore(bench.store_dir).append({**stored, "schema": "1"})
        warnings = bench.report().warnings
        assert warnings == [
            '1 store record(s) of schema "1" ignored: this version reads schema 1 only',
            "2 store record(s) of schema 99 ignored: this version reads schema 1 only",
        ]
        kept = [json.loads(line)["schema"] for line in (bench.store_dir / "samples.jsonl").read_text().splitlines()]
        assert kept == [1, 99, 99, "1"]  # kept in the file, never trusted


class TestReportInputFields:
    """Everything the session knows reaches the report unchanged; the selection is what it reports on."""

    def test_selection_and_session_facts(self, bench: Bench, tmp_path: Path) -> None:
        bench.ctx = context(tmp_path, bench.agent, model="local/m")
        bench.run(1)
        extra = {**bench.run(2), "seed": 2}  # produced now, then "not stored" (say, the disk filled up)
        lines = (bench.store_dir / "samples.jsonl").read_text().splitlines()
        (bench.store_dir / "samples.jsonl").write_text(lines[0] + "\n")
        other = Task(**{**{f: getattr(bench.task, f) for f in bench.task.__dataclass_fields__}, "id": "alpha/other"})
        inp = report_input(
            tasks=[other, bench.task],
            arms=("akm", "noakm", "synthetic"),
            seeds=2,
            cells=[(bench.task.id, "noakm", 2), (bench.task.id, "noakm", 1), ("gone/task", "noakm", 1)],
            slice_label="domain=alpha",
            ctx=bench.ctx,
            store_dir=bench.store_dir,
            floor=2,
            extra_samples=[extra, {**extra, "seed": 1, "outcome": "fail"}],
            warnings=["from the session"],
            cwd=tmp_path,
            baseline={"alpha/script-task": 0.5},
            gates=["akm.pass_rate>=0"],
            provenance={"opencode_version": "1.0"},
        )
        assert [t.id for t in inp.tasks] == [bench.task.id] and inp.arms == ("noakm",)
        assert (inp.seeds, inp.slice, inp.floor, inp.store_dir) == (2, "domain=alpha", 2, bench.store_dir)
        assert (inp.model, inp.agent, inp.agent_version) == ("local/m", "switchable", "1")
        assert inp.stashes_root == bench.ctx.stashes_root
        # The stored sample of seed 1 wins over an unstored one; seed 2 comes from the extra samples.
        assert sorted((s["seed"], s["outcome"], s["from_store"]) for s in inp.samples) == [
            (1, "pass", False),
            (2, "pass", False),
        ]
        assert inp.complete is True and inp.warnings == ["from the session"]
        assert (inp.cwd, inp.gates_base_dir, inp.baseline) == (tmp_path, tmp_path, {"alpha/script-task": 0.5})
        assert inp.gates == ("akm.pass_rate>=0",) and inp.provenance == {"opencode_version": "1.0"}

    def test_complete_given_by_the_caller_wins(self, bench: Bench) -> None:
        """An interrupted session says it is incomplete even when every selected cell has a sample."""
        bench.run(1)
        kw = dict(
            tasks=[bench.task],
            arms=("noakm",),
            seeds=1,
            cells=[(bench.task.id, "noakm", 1)],
            slice_label="all",
            ctx=bench.ctx,
            store_dir=bench.store_dir,
            floor=1,
        )
        assert report_input(**kw).complete is True
        assert report_input(**kw, complete=False).complete is False

    def test_store_warnings_follow_the_sessions(self, bench: Bench) -> None:
        bench.run(1)
        with open(bench.store_dir / "samples.jsonl", "a") as fh:
            fh.write('{"torn')
        inp = report_input(
            tasks=[bench.task],
            arms=("noakm",),
            seeds=1,
            cells=[(bench.task.id, "noakm", 1)],
            slice_label="all",
            ctx=bench.ctx,
            store_dir=bench.store_dir,
            floor=1,
            warnings=["first"],
        )
        assert inp.warnings[0] == "first" and "samples.jsonl:2: skipped unreadable record" in inp.warnings[1]
        assert [s["outcome"] for s in inp.samples] == ["pass"]

    def test_an_index_given_is_used_and_refreshes(self, bench: Bench) -> None:
        """The session passes its own index; samples appended since it was loaded are found after refresh."""
        index = StoredSamples.load(bench.store_dir)
        bench.run(1)
        kw = dict(
            tasks=[bench.task],
            arms=("noakm",),
            seeds=1,
            cells=[(bench.task.id, "noakm", 1)],
            slice_label="all",
            ctx=bench.ctx,
            store_dir=bench.store_dir,
            floor=1,
        )
        assert report_input(**kw, stored=index).samples == []
        index.refresh()
        assert [s["outcome"] for s in report_input(**kw, stored=index).samples] == ["pass"]
        index.refresh()  # nothing new: nothing is read twice
        (stored,) = index.of_run("test-run")
        assert stored["outcome"] == "pass" and stored["run_id"] == "test-run" and index.of_run("nobody") == []

    def test_an_index_in_memory_does_not_refresh(self, bench: Bench) -> None:
        """An index built from records (not from a store) has nothing to refresh from."""
        record = bench.run(1)
        index = StoredSamples([record])
        index.refresh()
        assert index.done((bench.task.id, "noakm", 1), bench.fp) == record and index.of_run("test-run") == [record]


class TestFresh:
    def test_after_now_sees_only_what_is_appended_later(self, bench: Bench) -> None:
        """--bench-fresh: samples stored before the run do not count as done; new ones do."""
        bench.run(1)
        fresh = StoredSamples.after_now(bench.store_dir)
        assert fresh.done((bench.task.id, "noakm", 1), bench.fp) is None
        again = bench.run(1)
        fresh.refresh()
        assert fresh.done((bench.task.id, "noakm", 1), bench.fp) == again
