"""One JSONL appender and one atomic writer: every record file of the store has the samples
file's guarantees (lock, torn line terminated, fsync), every report file appears whole."""

from __future__ import annotations

import json
import shutil
import stat
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import pytest

from pytest_akmbench.store import atomic, jsonl, soundness
from pytest_akmbench.store.samples import SampleStore


def _samples(directory: Path, record: dict[str, Any]) -> Path:
    store = SampleStore(directory)
    store.append(record)
    return store.path


def _records(directory: Path, record: dict[str, Any]) -> Path:
    jsonl.append(directory / "runs.jsonl", record, "the run")
    return directory / "runs.jsonl"


def _soundness(directory: Path, record: dict[str, Any]) -> Path:
    soundness.append(directory, record)
    return directory / soundness.SOUNDNESS_FILE


APPENDERS = [_samples, _records, _soundness]


@pytest.mark.parametrize("append", APPENDERS)
def test_a_torn_last_line_is_terminated_before_the_next_record(
    tmp_path: Path, append: Callable[[Path, dict[str, Any]], Path]
) -> None:
    path = append(tmp_path / "s", {"task_id": "a", "task_hash": "h"})
    with open(path, "ab") as fh:
        fh.write(b'{"task_id": "torn')  # a writer killed mid-record
    append(tmp_path / "s", {"task_id": "b", "task_hash": "h"})
    lines = path.read_bytes().splitlines()
    assert lines[1] == b'{"task_id": "torn'
    assert json.loads(lines[2]) == {"task_id": "b", "task_hash": "h"} and len(lines) == 3


@pytest.mark.parametrize("append", APPENDERS)
def test_a_new_file_syncs_its_directory_entry_once(
    tmp_path: Path, append: Callable[[Path, dict[str, Any]], Path], synced: list[str]
) -> None:
    path = append(tmp_path / "s", {"i": 1})
    append(tmp_path / "s", {"i": 2})
    assert synced == [str(path), str(path.parent), str(path)]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_the_atomic_writer_leaves_the_old_file_when_filling_fails(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    atomic.write_text(target, "old\n")

    def fill(fh: IO[str]) -> None:
        fh.write("half")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        atomic.write(target, fill)
    assert target.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


def test_the_atomic_writer_syncs_and_makes_the_file_readable_by_all(tmp_path: Path, synced: list[str]) -> None:
    target = tmp_path / "summary.md"
    atomic.write_text(target, "# hi\n")
    assert target.read_text() == "# hi\n" and stat.S_IMODE(target.stat().st_mode) == 0o644
    assert len(synced) == 1 and synced[0].startswith(str(tmp_path / ".summary.md."))


def test_a_store_emptied_while_a_run_writes_is_made_again(tmp_path: Path) -> None:
    """A store's directories are made when first missing, not asked for before every write: one
    removed while a run goes on (a user clearing it) is made again, private, at the next record,
    claim or transcript."""
    from pytest_akmbench.store.claims import Claim

    store = SampleStore(tmp_path / "store")
    store.append({"n": 1})
    claim = Claim(store.directory, "trial", owner="run a")
    claim.acquire()
    claim.release()
    store.transcript_path("transcripts/r/a.jsonl", mkdir=True)
    for gone in (store.directory / "claims", store.directory / "transcripts", store.directory):
        shutil.rmtree(gone)
        store.append({"n": 2})
        claim.acquire()
        claim.release()
        assert store.transcript_path("transcripts/r/b.jsonl", mkdir=True).is_file()
    assert [json.loads(line) for line in store.path.read_text().splitlines()] == [{"n": 2}]
    for d in (store.directory, store.directory / "claims", store.directory / "transcripts" / "r"):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
