"""One trial (cell/trial.py): its fingerprint computed once, its claim and append, and every way
it ends without raising."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_akmbench.agents import OracleAgent
from pytest_akmbench.cell.context import Cell, RunContext, cell_fingerprint
from pytest_akmbench.cell.trial import Ended, StorePlace, Trial, append, run_trial
from pytest_akmbench.corpus.tasks import Task, load_corpus
from pytest_akmbench.errors import StoreError
from pytest_akmbench.records import CellKey
from pytest_akmbench.store.claims import Claim
from pytest_akmbench.store.samples import fingerprint_hash
from pytest_akmbench.store.scrub import Scrubber
from pytest_akmbench.system import lifecycle
from pytest_akmbench.system.procs import ProcessTracker
from tests.core.test_runner import context, tracker
from tests.support.corpus import standard_corpus


class Index:
    """The store as a process knows it: ``done`` answers from ``records``, refreshes counted."""

    def __init__(self, records: dict[tuple[CellKey, str], dict[str, Any]] | None = None) -> None:
        self.records = records or {}
        self.refreshed = 0

    def refresh(self) -> None:
        self.refreshed += 1

    def done(self, cell: CellKey, fingerprint_hash: str) -> dict[str, Any] | None:
        return self.records.get((cell, fingerprint_hash))


class Place:
    """A place that records what the trial asked of it."""

    def __init__(self, ended: Ended | None = None, unstored: str | None = None) -> None:
        self.ended = ended
        self.unstored = unstored
        self.claimed: list[tuple[CellKey, str]] = []
        self.appended: list[dict[str, Any]] = []
        self.released = 0

    def claim(self, key: CellKey, fp: str, legacy: CellKey | None = None) -> Place | Ended:
        self.claimed.append((key, fp))
        self.legacy = legacy
        return self.ended or self

    def release(self) -> None:
        self.released += 1

    def append(self, sample: dict[str, Any]) -> str | None:
        self.appended.append(sample)
        return self.unstored


class Holds:
    def __init__(self) -> None:
        self.held = 0

    def hold(self) -> None:
        self.held += 1


@pytest.fixture
def task(tmp_path: Path) -> Task:
    tasks_root, stashes = standard_corpus(tmp_path)
    return load_corpus(tasks_root, stashes).by_id()["alpha/script-task"]


@pytest.fixture
def ctx(tmp_path: Path) -> RunContext:
    return context(tmp_path, OracleAgent())


def run(trial: Trial, place: Any, holds: Holds | None = None) -> Ended:
    return run_trial(trial, place, tracker(), Scrubber(), holds)  # type: ignore[arg-type]


class TestTrial:
    def test_the_fingerprint_its_hash_and_key_are_the_cells(self, task: Task, ctx: RunContext) -> None:
        trial = Trial.of(Cell(task, "noakm", 2), ctx)
        assert trial.fingerprint == cell_fingerprint(Cell(task, "noakm", 2), ctx)
        assert trial.hash == fingerprint_hash(trial.fingerprint)
        assert trial.key == ("alpha/script-task", "noakm", 2)

    def test_a_tracks_extras_and_legacy_arm_make_another_trial(self, task: Task, ctx: RunContext) -> None:
        extra = {"track": "evolve", "condition": "post"}
        trial = Trial.of(Cell(task, "akm", 1), ctx, extra, marks={"condition": "post"}, legacy="evolve-post")
        plain = cell_fingerprint(Cell(task, "akm", 1), ctx)
        assert trial.fingerprint == {**plain, "track": "evolve", "condition": "post"}
        assert trial.key == ("alpha/script-task", "akm", 1)
        assert trial.legacy_key == ("alpha/script-task", "evolve-post", 1)
        assert trial.hash != fingerprint_hash(plain)

    def test_its_sample_carries_its_arm_marks_and_fingerprint(self, task: Task, ctx: RunContext) -> None:
        trial = Trial.of(Cell(task, "noakm", 1), ctx, {"condition": "pre"}, marks={"condition": "pre", "episode": 1})
        sample = trial.run(tracker())
        assert sample["outcome"] == "pass"
        assert (sample["arm"], sample["fingerprint"]) == ("noakm", trial.fingerprint)
        assert (sample.get("condition"), sample.get("episode")) == ("pre", 1)
        assert sample["fingerprint_hash"] == trial.hash

    def test_the_legacy_key_is_asked_of_the_place(self, task: Task, ctx: RunContext) -> None:
        trial = Trial.of(Cell(task, "akm", 1), ctx, legacy="evolve-post")
        place = Place(Ended(record={"outcome": "pass"}))
        run(trial, place)
        assert place.legacy == ("alpha/script-task", "evolve-post", 1)


class TestRunTrial:
    def test_a_fresh_sample_is_kept_under_the_claim(self, task: Task, ctx: RunContext) -> None:
        trial, place, holds = Trial.of(Cell(task, "noakm", 1), ctx), Place(), Holds()
        ended = run(trial, place, holds)
        assert ended.sample is not None and ended.sample["outcome"] == "pass"
        assert (ended.record, ended.unstored, ended.error) == (None, None, None)
        assert place.claimed == [(trial.key, trial.hash)] and place.appended == [ended.sample]
        assert place.released == 1 and holds.held == 1  # a Ctrl-C waits until the cell reported

    def test_a_sample_the_place_refuses_is_still_given_back(self, task: Task, ctx: RunContext) -> None:
        place = Place(unstored="disk full")
        ended = run(Trial.of(Cell(task, "noakm", 1), ctx), place)
        assert ended.unstored == "disk full" and ended.sample == place.appended[0]
        assert place.released == 1

    @pytest.mark.parametrize(
        "ended",
        [Ended(record={"outcome": "pass"}), Ended(error="akmbench: x"), Ended(skip="cap"), Ended(interrupted=True)],
    )
    def test_a_trial_the_place_ends_does_not_run(self, task: Task, ctx: RunContext, ended: Ended) -> None:
        place = Place(ended)
        assert run(Trial.of(Cell(task, "noakm", 1), ctx), place) is ended
        assert place.appended == [] and place.released == 0
        assert not (ctx.tmp_root / ctx.run_id).exists()  # no run dir: the agent never ran

    def test_an_interrupted_run_starts_no_trial(self, task: Task, ctx: RunContext) -> None:
        run_dir = ctx.tmp_root / ctx.run_id
        run_dir.mkdir(parents=True)
        lifecycle.mark_interrupted(run_dir)
        place = Place()
        assert run(Trial.of(Cell(task, "noakm", 1), ctx), place) == Ended(interrupted=True)
        assert place.claimed == []


class TestStorePlace:
    def test_a_claim_is_held_until_released(self, tmp_path: Path) -> None:
        place = StorePlace(tmp_path / "store", Index(), owner="run a")
        held = place.claim(("t", "noakm", 1), "fp")
        assert isinstance(held, Claim) and held.path.read_text() == "run a"
        held.release()
        assert list((tmp_path / "store" / "claims").iterdir()) == []

    def test_the_claim_key_is_the_trial(self, tmp_path: Path) -> None:
        """The same key a bench of an earlier version locks: two versions on one store still
        never run a trial twice."""
        held = StorePlace(tmp_path, Index(), owner="me").claim(("t", "akm", 3), "abc")
        assert isinstance(held, Claim)
        assert held.path == Claim(tmp_path, "t\0akm\x003\0abc", owner="").path
        held.release()

    def test_a_trial_stored_meanwhile_is_reported(self, tmp_path: Path) -> None:
        record = {"outcome": "fail"}
        index = Index({(("t", "noakm", 1), "fp"): record})
        ended = StorePlace(tmp_path, index, owner="me").claim(("t", "noakm", 1), "fp")
        assert ended == Ended(record=record, claimed_by="another run")
        assert index.refreshed == 1  # read again under the claim
        assert list((tmp_path / "claims").iterdir()) == []  # released

    def test_a_trial_an_older_store_holds_under_its_legacy_arm_is_reported(self, tmp_path: Path) -> None:
        record = {"outcome": "pass", "arm": "evolve-post"}
        index = Index({(("t", "evolve-post", 1), "fp"): record})
        place = StorePlace(tmp_path, index, owner="me")
        assert place.claim(("t", "akm", 1), "fp", ("t", "evolve-post", 1)) == Ended(
            record=record, claimed_by="another run"
        )
        held = place.claim(("t", "akm", 1), "other fp", ("t", "evolve-post", 1))
        assert isinstance(held, Claim)  # the legacy sample is of another fingerprint: run it
        held.release()

    def test_the_store_is_read_under_the_lock(self, tmp_path: Path) -> None:
        """Workers of one run share the store's index: it is refreshed and read under their lock."""
        seen: list[str] = []

        class Lock:
            def __enter__(self) -> None:
                seen.append("enter")

            def __exit__(self, *exc: object) -> None:
                seen.append("exit")

        class Watched(Index):
            def done(self, cell: CellKey, fingerprint_hash: str) -> dict[str, Any] | None:
                seen.append("done")
                return None

        held = StorePlace(tmp_path, Watched(), owner="me", lock=Lock()).claim(("t", "akm", 1), "fp")  # type: ignore[arg-type]
        assert seen == ["enter", "done", "exit"] and isinstance(held, Claim)
        held.release()

    def test_a_store_that_cannot_be_read_under_the_claim_is_one_line(self, tmp_path: Path) -> None:
        class Broken(Index):
            def refresh(self) -> None:
                raise StoreError("samples.jsonl: unreadable")

        ended = StorePlace(tmp_path, Broken(), owner="me").claim(("t", "noakm", 1), "fp")
        assert ended == Ended(error=f"akmbench: {tmp_path}: cannot claim a cell (samples.jsonl: unreadable)")
        assert list((tmp_path / "claims").iterdir()) == []  # released

    def test_a_claim_that_fails_is_one_line(self, tmp_path: Path) -> None:
        (tmp_path / "claims").write_text("")  # a file where the claims directory goes
        ended = StorePlace(tmp_path, Index(), owner="me").claim(("t", "noakm", 1), "fp")
        assert ended == Ended(error=f"akmbench: {tmp_path}: cannot claim a cell (File exists)")

    def test_an_append_that_fails_is_one_line_and_loses_nothing(self, tmp_path: Path) -> None:
        assert append(tmp_path, {"n": 1}) is None
        (tmp_path / "samples.lock").unlink()
        (tmp_path / "samples.lock").mkdir()
        why = StorePlace(tmp_path, Index(), owner="me").append({"n": 2})
        assert why is not None and why.startswith(f"{tmp_path / 'samples.jsonl'}: cannot append sample (Is a")
        assert "\n" not in why
        assert [json.loads(line) for line in (tmp_path / "samples.jsonl").read_text().splitlines()] == [{"n": 1}]

    def test_a_remote_cells_files_are_written_before_its_sample(self, tmp_path: Path) -> None:
        assert append(tmp_path, {"n": 1}, {"transcripts/r/a.jsonl": b"line\n"}) is None
        assert (tmp_path / "transcripts" / "r" / "a.jsonl").read_bytes() == b"line\n"


def test_no_error_of_a_trial_raises(tmp_path: Path, task: Task, ctx: RunContext) -> None:
    """A claim that fails ends the trial with its line; the agent never runs."""
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "claims").write_text("")
    place = StorePlace(tmp_path / "store", Index(), owner="me")
    ended = run_trial(Trial.of(Cell(task, "noakm", 1), ctx), place, ProcessTracker("t"), Scrubber(), None)
    assert ended.error is not None and ended.sample is None
