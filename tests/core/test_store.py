"""Tests of the append-only sample store (pytest_akmbench.store.samples)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import multiprocessing
import os
import stat
import threading
import time
from pathlib import Path

import pytest

from pytest_akmbench.errors import StoreError
from pytest_akmbench.store.samples import Cursor, SampleStore, fingerprint_hash, latest_valid

FP_A = {"model": "m1", "arm_config": {"k": 1}}
FP_B = {"model": "m2", "arm_config": {"k": 1}}


def sample(task: str = "t1", arm: str = "akm", seed: int = 1, outcome: str = "pass", fp: dict = FP_A, **extra) -> dict:
    return {
        "task_id": task,
        "arm": arm,
        "seed": seed,
        "outcome": outcome,
        "fingerprint": fp,
        "fingerprint_hash": fingerprint_hash(fp),
        **extra,
    }


def by_hash(record: dict) -> str:
    return record["fingerprint_hash"]


def _writer(directory: str, writer: int, count: int, start: multiprocessing.synchronize.Event) -> None:
    # fsync=False: this test is about interleaving under the lock, not about disk flushes.
    store = SampleStore(Path(directory), fsync=False)
    start.wait()
    for i in range(count):
        # Sizes cycle through ~1, 2, 4 and 10 KB; the 10 KB ones exceed PIPE_BUF (4096).
        size = (1_000, 2_000, 4_000, 10_000)[i % 4] + writer * 7
        store.append({"writer": writer, "i": i, "pad": f"w{writer}" * (size // 2), "text": "é✓\u2028"})


class TestRoundTrip:
    def test_append_then_read_preserves_records_and_order(self, tmp_path: Path) -> None:
        """Records come back equal to what was appended, in append order, with no warnings."""
        store = SampleStore(tmp_path / "store")
        records = [
            sample(seed=s, extra={"nested": [1, 2.5, None, True], "text": "ünï\ncode\u2028"}) for s in range(1, 6)
        ]
        records.append({"arbitrary": {"json": ["object"]}})
        for r in records:
            store.append(r)
        assert store.read() == (records, [])
        assert list(store.iter_records()) == records

    def test_missing_store_reads_empty(self, tmp_path: Path) -> None:
        """A directory without a store (or no directory at all) reads as no records and no warnings."""
        assert SampleStore(tmp_path / "nope").read() == ([], [])

    def test_append_creates_directory_with_private_files_one_line_each(self, tmp_path: Path) -> None:
        """The first append creates the directory, a 0600 store and lock file, and writes compact single lines."""
        store = SampleStore(tmp_path / "a" / "b")
        store.append({"x": 1, "y": "z"})
        store.append({"x": 2})
        assert store.path.read_bytes() == b'{"x":1,"y":"z"}\n{"x":2}\n'
        assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
        assert stat.S_IMODE(store.lock_path.stat().st_mode) == 0o600

    def test_bad_records_are_rejected_without_touching_the_file(self, tmp_path: Path) -> None:
        """A non-dict or non-serialisable record raises TypeError and leaves the store unchanged."""
        store = SampleStore(tmp_path)
        store.append({"ok": 1})
        with pytest.raises(TypeError):
            store.append(["not", "a", "dict"])  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            store.append({"bad": object()})
        assert store.read() == ([{"ok": 1}], [])

    def test_unwritable_directory_raises_store_error(self, tmp_path: Path) -> None:
        """An I/O failure surfaces as a StoreError naming the store file."""
        (tmp_path / "file").write_text("")
        store = SampleStore(tmp_path / "file" / "sub")  # parent is a regular file
        with pytest.raises(StoreError, match=r"samples.jsonl"):
            store.append({"x": 1})


class TestConcurrentAppend:
    def test_eight_processes_appending_at_once_never_interleave(self, tmp_path: Path) -> None:
        """8 processes x 2,000 records of 1-10 KB yield exactly 16,000 intact lines, each record once."""
        writers, count = 8, 2_000
        ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
        start = ctx.Event()
        procs = [ctx.Process(target=_writer, args=(str(tmp_path), w, count, start)) for w in range(writers)]
        for p in procs:
            p.start()
        start.set()
        for p in procs:
            p.join(60)
            assert p.exitcode == 0
        store = SampleStore(tmp_path)
        with open(store.path, "rb") as f:
            lines = f.read().split(b"\n")
        assert lines[-1] == b"" and len(lines) - 1 == writers * count
        assert all(isinstance(json.loads(line), dict) for line in lines[:-1])
        records, warnings = store.read()
        assert warnings == []
        seen = [(r["writer"], r["i"]) for r in records]
        assert sorted(seen) == [(w, i) for w in range(writers) for i in range(count)]
        assert max(len(line) for line in lines) > 10_000  # some records really exceeded PIPE_BUF
        for w in range(writers):  # each writer's own records stay in its append order
            assert [i for ww, i in seen if ww == w] == list(range(count))

    def test_durable_appends_read_back(self, tmp_path: Path) -> None:
        """The default fsync=True mode writes the same bytes as the fast mode."""
        store = SampleStore(tmp_path)
        assert store.fsync is True
        for s in range(1, 21):
            store.append(sample(seed=s))
        assert store.read() == ([sample(seed=s) for s in range(1, 21)], [])

    def test_read_waits_for_an_append_in_flight(self, tmp_path: Path) -> None:
        """A read during a locked, half-finished write sees the whole record, not a torn line."""
        store = SampleStore(tmp_path)
        store.append({"n": 1})
        line = json.dumps({"n": 2}).encode() + b"\n"
        lock_fd = os.open(store.lock_path, os.O_RDWR)
        fcntl.flock(lock_fd, fcntl.LOCK_EX)  # act as a writer holding the lock mid-write
        with open(store.path, "ab") as f:
            f.write(line[:4])
        result: list = []
        reader = threading.Thread(target=lambda: result.append(store.read()))
        reader.start()
        time.sleep(0.2)
        assert reader.is_alive()  # blocked on the shared lock, not reading half a line
        with open(store.path, "ab") as f:
            f.write(line[4:])
        os.close(lock_fd)
        reader.join(5)
        assert result == [([{"n": 1}, {"n": 2}], [])]


class TestTornAndCorruptLines:
    def test_torn_last_line_is_skipped_then_repaired_by_next_append(self, tmp_path: Path) -> None:
        """A half-written last line yields one warning; the next append starts on its own line and reads back."""
        store = SampleStore(tmp_path)
        good = [sample(seed=s) for s in range(1, 4)]
        for r in good:
            store.append(r)
        with open(store.path, "ab") as f:  # a writer killed mid-record
            f.write(json.dumps(sample(seed=4)).encode()[:25])
        records, warnings = store.read()
        assert records == good
        assert warnings == [f"{store.path}:4: skipped unreadable record (torn or corrupt line)"]
        store.append(sample(seed=5))
        assert store.path.read_bytes().count(b"\n") == 5
        records, warnings = store.read()
        assert records == [*good, sample(seed=5)]
        assert warnings == [f"{store.path}:4: skipped unreadable record (torn or corrupt line)"]

    def test_corrupt_line_in_the_middle_of_a_large_store(self, tmp_path: Path) -> None:
        """One garbage line among 2,500 records is skipped with a warning; every other record is kept in order."""
        store = SampleStore(tmp_path, fsync=False)
        for i in range(2_500):
            store.append({"i": i})
            if i == 1_200:
                with open(store.path, "ab") as f:
                    f.write(b'{"i": 99999, "trunc\x00\xff\n')
        records, warnings = store.read()
        assert [r["i"] for r in records] == list(range(2_500))
        assert warnings == [f"{store.path}:1202: skipped unreadable record (torn or corrupt line)"]

    def test_non_objects_and_fragments_are_skipped_blank_lines_ignored(self, tmp_path: Path) -> None:
        """Valid JSON that is not an object, and fragments that only parse when joined, are each reported."""
        store = SampleStore(tmp_path)
        store.path.write_bytes(b'{"a":1}\n[1,2]\n\n42\n{"x":[1\n2]}\n"s"\n{"b":2}\n')
        records, warnings = store.read()
        assert records == [{"a": 1}, {"b": 2}]
        assert [w.rsplit(":", 2)[-2] for w in warnings] == ["2", "4", "5", "6", "7"]


class TestIndexes:
    def test_fingerprint_hash_is_canonical_sha256_prefix(self) -> None:
        """The hash ignores key order and is the first 16 hex chars of sha256 of compact sorted JSON."""
        fp = {"b": [1, {"d": 2, "c": 3}], "a": "x"}
        expected = hashlib.sha256(b'{"a":"x","b":[1,{"c":3,"d":2}]}').hexdigest()[:16]
        assert fingerprint_hash(fp) == expected == fingerprint_hash(dict(reversed(fp.items())))

    def test_only_valid_samples_of_the_same_fingerprint_count(self) -> None:
        """harness_error samples and other fingerprints do not mark a seed done; pass, fail and budget_exceeded do."""
        records = [
            sample(seed=1, outcome="pass"),
            sample(seed=2, outcome="fail"),
            sample(seed=3, outcome="budget_exceeded"),
            sample(seed=4, outcome="harness_error"),
            sample(seed=5, fp=FP_B),
            sample(task="t2", seed=1, outcome="harness_error"),
        ]
        a, b = fingerprint_hash(FP_A), fingerprint_hash(FP_B)
        assert set(latest_valid(records, by_hash)) == {
            ("t1", "akm", a, 1),
            ("t1", "akm", a, 2),
            ("t1", "akm", a, 3),
            ("t1", "akm", b, 5),
        }
        assert ("t2", "akm", a, 1) in latest_valid(records, by_hash, valid=lambda r: True)

    def test_records_without_a_usable_identity_are_ignored(self) -> None:
        """Records lacking task/arm, with a bool, zero or non-int seed, or without a fingerprint are skipped."""
        records = [
            sample(seed=True),
            sample(seed=0),
            sample(seed="1"),
            {"arm": "akm", "seed": 1, "outcome": "pass"},
            {"task_id": "t", "arm": "akm", "seed": 1, "outcome": "pass"},
        ]
        assert latest_valid(records) == {}

    def test_default_fingerprint_of_falls_back_to_hashing_the_fingerprint(self) -> None:
        """Without fingerprint_hash, the default key hashes the record's fingerprint dict."""
        record = sample()
        del record["fingerprint_hash"]
        assert set(latest_valid([record])) == {("t1", "akm", fingerprint_hash(FP_A), 1)}

    def test_stored_hash_is_the_key_even_when_the_fingerprint_dict_differs(self) -> None:
        """The hash a sample was stored under identifies its fingerprint: a record whose dict was
        written by an older version (other keys, same stored hash) still resumes under that hash."""
        record = {**sample(), "fingerprint": {"model": "m1", "legacy": True}}
        assert latest_valid([record]) == {("t1", "akm", fingerprint_hash(FP_A), 1): record}
        assert set(latest_valid([{**sample(), "fingerprint": None}])) == {("t1", "akm", fingerprint_hash(FP_A), 1)}
        assert set(latest_valid([{**sample(), "fingerprint_hash": 7}])) == {("t1", "akm", fingerprint_hash(FP_A), 1)}

    def test_latest_valid_keeps_the_last_valid_record(self) -> None:
        """A later valid sample supersedes an earlier one; a later harness_error does not."""
        first, second = sample(outcome="pass", run="r1"), sample(outcome="fail", run="r2")
        broken = sample(outcome="harness_error", run="r3")
        other = sample(seed=2, run="r1")
        latest = latest_valid([first, other, second, broken], by_hash)
        fph = fingerprint_hash(FP_A)
        assert latest == {("t1", "akm", fph, 1): second, ("t1", "akm", fph, 2): other}


class TestTranscripts:
    def test_new_transcript_rel_layout_and_sanitising(self, tmp_path: Path) -> None:
        """Paths follow transcripts/<run>/<cell>-<attempt>.jsonl; unsafe keys are sanitised yet kept distinct."""
        store = SampleStore(tmp_path)
        assert store.new_transcript_rel("run1", "t1.akm.3", "a1") == "transcripts/run1/t1.akm.3-a1.jsonl"
        a = store.new_transcript_rel("run1", "dom/t1[akm-3]", "a1")
        b = store.new_transcript_rel("run1", "dom_t1_akm-3_", "a1")
        assert a != b and a.startswith("transcripts/run1/dom_t1_akm-3_~") and a.count("/") == 2
        evil = store.new_transcript_rel("../..", "../x", "/etc")
        assert ".." not in evil.split("/") and store.transcript_path(evil).is_relative_to(tmp_path)
        assert len(store.new_transcript_rel("r", "k" * 1000, "a").rsplit("/", 1)[1]) < 200

    def test_transcript_path_resolves_and_optionally_creates_parents(self, tmp_path: Path) -> None:
        """A relative path resolves under the store directory; mkdir=True creates its parent only on request."""
        store = SampleStore(tmp_path / "s")
        rel = store.new_transcript_rel("run1", "cell", "a1")
        path = store.transcript_path(rel)
        assert path == tmp_path / "s" / "transcripts" / "run1" / "cell-a1.jsonl" and not path.parent.exists()
        assert store.transcript_path(rel, mkdir=True).parent.is_dir()

    @pytest.mark.parametrize("rel", ["../outside.jsonl", "/etc/passwd", "transcripts/../../x", ""])
    def test_transcript_path_rejects_escaping_paths(self, tmp_path: Path, rel: str) -> None:
        """Absolute, empty and '..' paths from a record are refused with a StoreError."""
        with pytest.raises(StoreError):
            SampleStore(tmp_path).transcript_path(rel)


class TestWhatTheFilesLookLike:
    """What a user finds on disk: lines as written, private directories and files, plain messages."""

    def test_a_line_keeps_the_records_field_order_and_its_text_readable(self, tmp_path: Path) -> None:
        store = SampleStore(tmp_path / "s")
        store.append({"task_id": "b", "arm": "akm", "final": "café ✓"})
        assert store.path.read_bytes() == '{"task_id":"b","arm":"akm","final":"café ✓"}\n'.encode()
        assert repr(store) == f"SampleStore({str(tmp_path / 's')!r})"

    def test_a_record_that_is_not_a_dict_is_named(self, tmp_path: Path) -> None:
        with pytest.raises(TypeError, match=r"^sample record must be a dict, not list$"):
            SampleStore(tmp_path).append([1])  # type: ignore[arg-type]

    def test_a_failed_append_says_why_and_closes_only_its_own_files(self, tmp_path: Path) -> None:
        store = SampleStore(tmp_path / "s")
        store.path.mkdir(parents=True)  # samples.jsonl is a directory: the open fails
        before = sorted(os.listdir("/proc/self/fd"))
        with pytest.raises(StoreError) as err:
            store.append({"x": 1})
        assert str(err.value) == (
            f"{store.path}: cannot append sample (Is a directory); "
            "check that the results directory is writable and the disk is not full"
        )
        assert sorted(os.listdir("/proc/self/fd")) == before

    def test_a_cursor_reads_only_what_was_appended_since(self, tmp_path: Path) -> None:
        """The resume index reads a growing store with a cursor: each read yields only the records
        appended since the last, with their line numbers, and an unterminated tail is read again."""
        store = SampleStore(tmp_path / "s")
        for i in range(3):
            store.append({"i": i})
        cursor = Cursor()
        assert [r["i"] for r in store.iter_records(cursor=cursor)] == [0, 1, 2]
        assert (cursor.offset, cursor.lines) == (store.path.stat().st_size, 3)
        store.append({"i": 3})
        store.append({"i": 4})
        assert [r["i"] for r in store.iter_records(cursor=cursor)] == [3, 4]
        with store.path.open("ab") as f:
            f.write(b'{"i": 5')  # a writer killed mid-record
        warnings: list[str] = []
        assert list(store.iter_records(warnings, cursor=cursor)) == []
        assert warnings == [f"{store.path}:6: skipped unreadable record (torn or corrupt line)"]
        assert cursor.lines == 5

    def test_a_read_sees_the_store_as_it_was_when_it_began(self, tmp_path: Path) -> None:
        """Records appended while a read is under way are left to the next read (the reader
        stops at the size it saw when it began)."""
        store = SampleStore(tmp_path / "s")
        for i in range(2500):
            store.append({"i": i})
        reader = store.iter_records()
        assert next(reader)["i"] == 0  # the first batch of lines is read
        store.append({"i": 2500})
        assert [r["i"] for r in reader][-1] == 2499

    def test_a_read_that_fails_midway_says_why(self, tmp_path: Path) -> None:
        """An I/O error while reading (here the store is a link to /proc/self/mem, whose first page
        cannot be read) is one line with the system's reason."""
        store = SampleStore(tmp_path / "s")
        store.directory.mkdir(parents=True)
        store.path.symlink_to("/proc/self/mem")
        with pytest.raises(StoreError) as err:
            store.read()
        assert str(err.value) == f"{store.path}: cannot read sample store (Input/output error)"

    def test_reading_leaves_the_garbage_collector_on(self, tmp_path: Path) -> None:
        """The reader pauses garbage collection while it reads, and turns it back on after: a
        process that read the store must not grow without bound from then on."""
        import gc

        store = SampleStore(tmp_path / "s")
        store.append({"x": 1})
        assert gc.isenabled()
        assert store.read() == ([{"x": 1}], [])
        assert gc.isenabled()

    def test_a_store_that_cannot_be_read_says_why(self, tmp_path: Path) -> None:
        """Reading fails with one line naming the store and the system's reason (a missing store
        is only empty)."""
        store = SampleStore(tmp_path / "s")
        assert store.read() == ([], [])
        store.path.mkdir(parents=True)  # samples.jsonl is a directory: the open fails
        with pytest.raises(StoreError) as err:
            store.read()
        assert str(err.value) == f"{store.path}: cannot read sample store (Is a directory)"

    def test_store_and_transcript_directories_are_private(self, tmp_path: Path) -> None:
        old = os.umask(0o022)
        try:
            appended = SampleStore(tmp_path / "a" / "store")
            appended.append({"x": 1})
            written = SampleStore(tmp_path / "b" / "store")
            first = written.transcript_path(written.new_transcript_rel("run1", "cell", "a1"), mkdir=True)
            second = written.transcript_path(written.new_transcript_rel("run1", "cell", "a2"), mkdir=True)
        finally:
            os.umask(old)
        assert stat.S_IMODE(appended.directory.stat().st_mode) == 0o700
        for directory in (written.directory, written.directory / "transcripts", first.parent):
            assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
        assert second.parent == first.parent
        assert [stat.S_IMODE(p.stat().st_mode) for p in (first, second)] == [0o600, 0o600]
        assert first.read_bytes() == b""

    def test_transcript_path_errors_name_the_path(self, tmp_path: Path) -> None:
        store = SampleStore(tmp_path / "s")
        for rel in ("../x.jsonl", "transcripts\\x.jsonl"):
            with pytest.raises(StoreError) as err:
                store.transcript_path(rel)
            assert str(err.value) == (
                f"{store.path}: transcript path {rel!r} must be relative to {store.directory} without '..'"
            )
        store.directory.mkdir()
        (store.directory / "transcripts").write_text("")  # a file where the directory belongs
        with pytest.raises(StoreError) as err:
            store.transcript_path("transcripts/run1/cell-a1.jsonl", mkdir=True)
        assert str(err.value) == f"{store.directory / 'transcripts' / 'run1'}: cannot create transcript (File exists)"

    def test_names_that_need_a_digest_get_one_and_only_those(self, tmp_path: Path) -> None:
        store = SampleStore(tmp_path)

        def digest(text: str) -> str:
            return hashlib.sha256(text.encode()).hexdigest()[:8]

        assert (
            store.new_transcript_rel("run", ".hidden", "a1") == f"transcripts/run/_hidden~{digest('.hidden')}-a1.jsonl"
        )
        assert store.new_transcript_rel("run", "k" * 120, "a") == f"transcripts/run/{'k' * 120}-a.jsonl"
        assert (
            store.new_transcript_rel("run", "k" * 121, "a")
            == f"transcripts/run/{'k' * 120}~{digest('k' * 121)}-a.jsonl"
        )
