"""The sample store's reader at its edges, the memory it shares between records and the
durability of a new store (pytest_akmbench.store.samples); the round trip, concurrency and torn
lines are in test_store.py."""

from __future__ import annotations

from pathlib import Path

from pytest_akmbench.records import SAMPLE_SCHEMA
from pytest_akmbench.store.samples import Cursor, SampleStore, as_sample, fingerprint_hash, latest_valid

FP_A = {"model": "m1", "arm_config": {"k": 1}}
FP_B = {"model": "m2", "arm_config": {"k": 2}}
WARNING = "skipped unreadable record (torn or corrupt line)"


def sample(seed: int = 1, fp: dict = FP_A, **extra: object) -> dict:
    return {
        "task_id": "task-one",
        "arm": "akm",
        "seed": seed,
        "outcome": "pass",
        "fingerprint": fp,
        "fingerprint_hash": fingerprint_hash(fp),
        **extra,
    }


class TestIdentity:
    def test_a_task_id_that_is_not_a_string_marks_nothing_done(self) -> None:
        """A hand-edited record with a numeric or null task id (the arm, seed and fingerprint
        fine) names no cell, so it resumes nothing and no report shows a task ``5``."""
        assert latest_valid([sample(task_id=5), sample(task_id=None)]) == {}

    def test_an_unusable_record_does_not_hide_the_records_after_it(self) -> None:
        """One foreign line early in the store must not make every later sample look missing
        (which would re-run, and pay for, every cell after it)."""
        records = [sample(seed=0), sample(seed=True), sample(seed=2)]
        assert set(latest_valid(records)) == {("task-one", "akm", fingerprint_hash(FP_A), 2)}


class TestReaderEdges:
    def test_a_last_line_without_a_newline_is_read(self, tmp_path: Path) -> None:
        """A store written by hand (or by another tool) whose last record has no final newline
        still gives that record; a cursor stays before it until a newline ends it."""
        store = SampleStore(tmp_path)
        store.path.write_bytes(b'{"a":1}\n{"b":2}')
        assert store.read() == ([{"a": 1}, {"b": 2}], [])
        cursor = Cursor()
        assert list(store.iter_records(cursor=cursor)) == [{"a": 1}, {"b": 2}]
        assert (cursor.offset, cursor.lines) == (8, 1)

    def test_a_writer_killed_after_its_first_byte_leaves_a_reported_torn_line(self, tmp_path: Path) -> None:
        store = SampleStore(tmp_path, fsync=False)
        store.append({"a": 1})
        with store.path.open("ab") as f:
            f.write(b"{")
        assert store.read() == ([{"a": 1}], [f"{store.path}:2: {WARNING}"])

    def test_json_lines_that_are_not_objects_are_reported_not_fatal(self, tmp_path: Path) -> None:
        """A line of JSON that is not an object is skipped with a warning, whether the rest of
        its batch holds records or nothing but such lines."""
        store = SampleStore(tmp_path)
        store.path.write_bytes(b'{"a":1}\n[1,2]\n')
        assert store.read() == ([{"a": 1}], [f"{store.path}:2: {WARNING}"])
        store.path.write_bytes(b"[1,2]\n42\n")
        assert store.read() == ([], [f"{store.path}:1: {WARNING}", f"{store.path}:2: {WARNING}"])

    def test_two_objects_on_one_line_are_a_corrupt_line_not_two_records(self, tmp_path: Path) -> None:
        """Each line is one record: a line holding two comma-joined objects is corrupt, even
        though the batch it is decoded in would parse with it."""
        store = SampleStore(tmp_path)
        store.path.write_bytes(b'{"a":1},{"b":2}\n{"c":3}\n')
        assert store.read() == ([{"c": 3}], [f"{store.path}:1: {WARNING}"])

    def test_a_cursor_read_stops_at_the_size_it_began_with(self, tmp_path: Path) -> None:
        """A cursor read that starts mid-store yields what was there when it began; a record
        appended while it runs is left to the next read, once, not read early."""
        store = SampleStore(tmp_path, fsync=False)
        for i in range(5):
            store.append({"i": i})
        cursor = Cursor()
        assert len(list(store.iter_records(cursor=cursor))) == 5
        for i in range(5, 1105):
            store.append({"i": i})
        size = store.path.stat().st_size
        reader = store.iter_records(cursor=cursor)
        assert next(reader) == {"i": 5}  # the first batch of 1000 lines is read
        store.append({"i": 1105})
        assert [r["i"] for r in reader] == list(range(6, 1105))
        assert (cursor.offset, cursor.lines) == (size, 1105)
        assert list(store.iter_records(cursor=cursor)) == [{"i": 1105}]

    def test_a_torn_line_ended_by_a_writer_during_a_read_is_reported(self, tmp_path: Path) -> None:
        """The read began with a torn last line; a writer then ends it with a newline and
        appends its record. The read reports the torn line (cut where it began) and stops."""
        store = SampleStore(tmp_path, fsync=False)
        for i in range(1000):
            store.append({"i": i})
        with store.path.open("ab") as f:
            f.write(b'{"i": 10')  # a writer killed mid-record
        warnings: list[str] = []
        reader = store.iter_records(warnings)
        assert next(reader) == {"i": 0}  # the first batch of 1000 lines is read
        store.append({"i": 1000})
        assert [r["i"] for r in reader] == list(range(1, 1000))
        assert warnings == [f"{store.path}:1001: {WARNING}"]
        assert [r["i"] for r in store.read()[0]][-1] == 1000


class TestSharedValues:
    """The reader shares equal values between the records it returns: a store of 100k samples
    takes about 30% less memory (benchmarks/store_bench.py). What is shared, and that sharing
    never changes a record."""

    def test_repeated_strings_keys_and_fingerprints_are_one_object(self, tmp_path: Path) -> None:
        digest = "d" * 64  # a sha256 hex digest: the longest string shared
        written = [sample(1, run=digest), sample(2, run=digest), sample(1, FP_B), sample(2, FP_B)]
        store = SampleStore(tmp_path, fsync=False)
        for record in written:
            store.append(record)
        records, warnings = store.read()
        assert (records, warnings) == (written, [])
        first, second, third, fourth = records
        assert first["task_id"] is fourth["task_id"]
        assert first["run"] is second["run"]
        assert first["fingerprint"] is second["fingerprint"]
        assert third["fingerprint"] is fourth["fingerprint"]
        assert first["fingerprint"] is not third["fingerprint"]
        # the key strings too: the batch decoder shares them (the reader's one json.loads per batch)
        assert next(k for k in first if k == "fingerprint_hash") is next(k for k in fourth if k == "fingerprint_hash")

    def test_the_same_hash_with_another_fingerprint_keeps_its_own(self, tmp_path: Path) -> None:
        """A record whose stored hash matches another's but whose fingerprint differs (an older
        version's dict, a hand edit) reads back with its own fingerprint, not the other's."""
        older = {**sample(2), "fingerprint": {"model": "m1", "legacy": True}}
        written = [sample(1), older, sample(3)]
        store = SampleStore(tmp_path, fsync=False)
        for record in written:
            store.append(record)
        records, _ = store.read()
        assert records == written
        assert records[0]["fingerprint"] is records[2]["fingerprint"]

    def test_a_fingerprint_hash_that_is_not_a_string_reads_back(self, tmp_path: Path) -> None:
        """A foreign record with a list or object for its hash is read as written, not a crash."""
        written = [{**sample(1), "fingerprint_hash": ["x"]}, {**sample(2), "fingerprint_hash": {"h": 1}}]
        store = SampleStore(tmp_path, fsync=False)
        for record in written:
            store.append(record)
        assert store.read() == (written, [])


class TestDurability:
    def test_a_new_store_syncs_its_directory_entry_once(self, tmp_path: Path, synced: list[str]) -> None:
        """Without the directory's fsync a power cut right after the first sample could lose the
        whole samples.jsonl, not only its last record; later appends need only the file's."""
        store = SampleStore(tmp_path / "s")
        store.append({"i": 1})
        assert synced == [str(store.path), str(store.directory)]
        store.append({"i": 2})
        store.append({"i": 3})
        assert synced == [str(store.path), str(store.directory), str(store.path), str(store.path)]

    def test_without_fsync_nothing_is_synced(self, tmp_path: Path, synced: list[str]) -> None:
        store = SampleStore(tmp_path / "s", fsync=False)
        store.append({"i": 1})
        store.append({"i": 2})
        assert synced == []
        assert store.read() == ([{"i": 1}, {"i": 2}], [])


class TestTheSampleSchema:
    def test_a_line_of_this_sample_schema_is_a_sample_as_it_is(self) -> None:
        line = sample(schema=SAMPLE_SCHEMA)
        assert as_sample(line) is line

    def test_a_line_of_another_schema_is_not_a_sample(self) -> None:
        """A newer plugin's line, or a hand-made one, may mean something else by the same keys;
        a bool schema is not schema 1 either."""
        for schema in (SAMPLE_SCHEMA + 1, None, "1", True, float(SAMPLE_SCHEMA)):
            assert as_sample(sample(schema=schema)) is None, schema
        assert as_sample(sample()) is None  # no schema at all
