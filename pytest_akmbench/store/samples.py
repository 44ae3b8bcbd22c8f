"""Append-only sample store: one JSON object per line in ``<dir>/samples.jsonl``.

Each benchmark cell (task, arm, seed) yields one *sample* record. Records are only ever
appended: re-running a command resumes (seeds with a valid sample are skipped), more
seeds deepen cells, and a ``--fresh`` re-run's newer sample supersedes the old one in
reports (:func:`latest_valid`: later appends win). Nothing rewrites or truncates the file.

Concurrency and crashes: xdist workers append concurrently, each record with one
``os.write`` on an ``O_APPEND`` fd under an exclusive ``flock`` of ``samples.lock``. The
lock keeps records larger than ``PIPE_BUF`` whole on any file system, covers partial-write
continuations, and makes the torn-line repair atomic: a writer killed mid-record leaves a
torn last line, which readers skip with a warning and the next writer terminates with
``"\\n"`` before its own record. Records are fsync-ed by default (see :class:`SampleStore`).
"""

from __future__ import annotations

import fcntl
import gc
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, cast

from ..errors import StoreError
from ..records import SAMPLE_SCHEMA, VALID_OUTCOMES, Sample
from . import jsonl

STORE_FILE = "samples.jsonl"
LOCK_FILE = "samples.lock"
TRANSCRIPTS_DIR = "transcripts"

TrialKey = tuple[str, str, str, int]  # (task_id, arm, fingerprint_hash, seed)
# A line of the store as read: a JSON object nothing has checked yet (``as_sample`` checks it).
Line = dict[str, Any]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_BATCH = 1000  # lines decoded per json.loads call (~1.5 MB): see SampleStore._decode
_MAX_NAME = 120  # keeps "<name>-<attempt>.jsonl" well under the 255-byte file name limit


def fingerprint_hash(fingerprint: dict[str, Any]) -> str:
    """Return the first 16 hex chars of the sha256 of the canonical JSON of ``fingerprint``."""
    canonical = json.dumps(fingerprint, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def record_fingerprint(record: Mapping[str, Any]) -> str | None:
    """Default ``fingerprint_of``: the record's ``fingerprint_hash``, else the hash of its
    ``fingerprint`` dict, else ``None`` (the record is then ignored by the indexes)."""
    stored = record.get("fingerprint_hash")
    if isinstance(stored, str):
        return stored
    fp = record.get("fingerprint")
    return fingerprint_hash(fp) if isinstance(fp, dict) else None


def is_valid(record: Sample) -> bool:
    """Default validity test: the sample measured the agent (``harness_error`` does not)."""
    return record.get("outcome") in VALID_OUTCOMES


def as_sample(record: Line) -> Sample | None:
    """A stored line as a :class:`Sample` when it is one of this sample schema, else ``None``.

    Lines are read back as plain objects: a line may be foreign or of another sample schema,
    which may mean something else by the same keys. A line of this schema is typed from here
    on; its readers still check the values they use (:func:`latest_valid`: the trial's
    identity), as a hand-edited line can hold anything.
    """
    if record.get("schema") == SAMPLE_SCHEMA and type(record.get("schema")) is int:
        return cast(Sample, record)
    return None


def _valid_trials(
    records: Iterable[Sample],
    fingerprint_of: Callable[[Sample], str | None],
    valid: Callable[[Sample], bool],
) -> Iterator[tuple[TrialKey, Sample]]:
    for record in records:
        if not valid(record):
            continue
        # A record without a usable identity cannot mark any cell done; skipping it (not
        # raising) keeps one hand-edited or foreign line from blocking a whole resume.
        task_id, arm, seed = record.get("task_id"), record.get("arm"), record.get("seed")
        if type(task_id) is not str or type(arm) is not str or type(seed) is not int or seed < 1:
            continue  # ``type(...) is int`` also rejects bools: True is not seed 1
        fp = fingerprint_of(record)
        if isinstance(fp, str):
            yield (task_id, arm, fp, seed), record


def latest_valid(
    records: Iterable[Sample],
    fingerprint_of: Callable[[Sample], str | None] = record_fingerprint,
    valid: Callable[[Sample], bool] = is_valid,
) -> dict[TrialKey, Sample]:
    """Map each ``(task_id, arm, fingerprint_hash, seed)`` to its LAST valid record.

    ``records`` must be in append order (as :meth:`SampleStore.read` returns them); a later
    valid sample supersedes an earlier one, an invalid one (e.g. ``harness_error``) never
    does. Records lacking ``task_id``/``arm``/an int ``seed`` >= 1/a fingerprint are ignored.
    """
    return dict(_valid_trials(records, fingerprint_of, valid))  # later keys overwrite earlier


def reported(record: Sample) -> Sample:
    """A stored sample as the sample a run reports without running its cell (``from_store``)."""
    return {**record, "from_store": True}


def _share_values(record: Line, shared: dict[Any, Any]) -> None:
    """Replace equal fingerprint dicts and short top-level strings by one shared object."""
    # Most records repeat the same fingerprint and task/arm/run/timestamp strings; sharing
    # them cuts the memory of 100k loaded samples by ~30% (410 -> 280 MB) for ~0.3 s.
    for key, value in record.items():
        if type(value) is str and len(value) <= 64:
            record[key] = shared.setdefault(value, value)
    fp = record.get("fingerprint")
    fph = record.get("fingerprint_hash")
    if type(fp) is dict and type(fph) is str:
        canonical = shared.setdefault(("fingerprint", fph), fp)
        if canonical is not fp and canonical == fp:  # equal check: never trust the hash alone
            record["fingerprint"] = canonical


def _safe_name(text: str) -> str:
    """Turn ``text`` into one portable file-name component; distinct inputs stay distinct."""
    safe = _UNSAFE.sub("_", text)
    if safe.startswith("."):  # no hidden files, no "." or ".." components
        safe = "_" + safe[1:]
    if safe != text or len(safe) > _MAX_NAME or not safe:
        # Sanitising or truncating can map two keys ("a/b", "a_b") to one name; a short
        # hash of the original keeps their transcripts apart.
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
        safe = f"{safe[:_MAX_NAME]}~{digest}"
    return safe


@dataclass
class Cursor:
    """How far :meth:`SampleStore.iter_records` has read: always the end of a complete line."""

    offset: int = 0
    lines: int = 0


class SampleStore:
    """The append-only JSONL sample store of one results directory.

    Layout: ``directory/samples.jsonl`` (records), ``directory/samples.lock`` (flock
    target, never holds data) and ``directory/transcripts/<run_id>/...`` (one JSONL
    transcript per attempt, referenced from records by a path relative to ``directory``).

    ``fsync`` (default ``True``) forces each record to stable storage. Without it a killed
    *process* still loses nothing written (the kernel page cache keeps it), but an OS
    crash or power cut could lose recent records. A sample costs an agent run (seconds to
    minutes, real money) and an fsync ~1 ms, so durability is the default; tests and bulk
    imports may pass ``fsync=False``. No descriptor is cached between calls, so a store
    object is safe to use across ``fork`` (an inherited fd would share its flock).
    """

    def __init__(self, directory: Path, *, fsync: bool = True) -> None:
        self.directory = Path(directory)
        self.path = self.directory / STORE_FILE
        self.lock_path = self.directory / LOCK_FILE
        self.fsync = fsync

    def __repr__(self) -> str:
        return f"SampleStore({str(self.directory)!r})"

    def append(self, record: Sample) -> None:
        """Append the sample ``record`` as one JSON line; safe across processes and crashes.

        Creates the directory and files on first use. Raises ``TypeError``/``ValueError``
        if the record is not a JSON-serialisable dict, :class:`StoreError` on I/O failure.
        """
        if not isinstance(record, dict):
            raise TypeError(f"sample record must be a dict, not {type(record).__name__}")
        # Serialise before taking the lock: a bad record must fail without touching the file.
        payload = (json.dumps(record, separators=(",", ":"), sort_keys=False, ensure_ascii=False) + "\n").encode()
        try:
            jsonl.append_line(self.path, payload, lock=self.lock_path, fsync=self.fsync)
        except OSError as exc:
            raise StoreError(
                f"{self.path}: cannot append sample ({exc.strerror or exc}); "
                "check that the results directory is writable and the disk is not full"
            ) from exc

    def _snapshot_size(self, fd: int) -> int:
        # Writers hold LOCK_EX for the whole write, so the size seen under LOCK_SH ends on
        # a record boundary: an append in flight is neither reported as torn nor half-read.
        # No lock file (e.g. a store copied from elsewhere) means no live writers.
        try:
            lock_fd = os.open(self.lock_path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return os.fstat(fd).st_size
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_SH)
            return os.fstat(fd).st_size
        finally:
            os.close(lock_fd)  # closing releases the lock

    def iter_records(self, warnings: list[str] | None = None, cursor: Cursor | None = None) -> Iterator[Line]:
        """Yield the stored records in append order, streaming the file in line batches.

        Blank lines are ignored; a line that is not UTF-8 JSON or not an object is skipped
        and reported in ``warnings`` (if given) as ``"<path>:<lineno>: skipped unreadable
        record (torn or corrupt line)"``. A missing store yields nothing; StoreError only
        if the file exists but cannot be read. Treat records as read-only: equal
        ``fingerprint`` dicts and short top-level strings are shared between them.

        With a ``cursor`` the read starts where the cursor stands and advances it past every
        complete line read, so the next call yields only what was appended since (the store
        is append-only). An unterminated last line is read (and warned about) again next
        time: a writer killed mid-record leaves one, and the next writer terminates it.
        """
        try:
            f = open(self.path, "rb")  # noqa: SIM115 - the `with f:` below closes it; only the open may be missing
        except FileNotFoundError:
            return
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot read sample store ({exc.strerror or exc})") from exc
        shared: dict[Any, Any] = {}
        with f:
            try:
                start = cursor.offset if cursor is not None else 0
                remaining = self._snapshot_size(f.fileno()) - start
                if start:
                    f.seek(start)
                linenos: list[int] = []
                lines: list[bytes] = []
                for lineno, line in enumerate(f, start=1 + (cursor.lines if cursor is not None else 0)):
                    if remaining <= 0:
                        break  # appended after the snapshot: the next read will see it
                    if len(line) > remaining:
                        line = line[:remaining]
                    remaining -= len(line)
                    if cursor is not None and line.endswith(b"\n"):
                        # An unterminated tail (a writer killed mid-record) is read, but the
                        # cursor stays before it: the next writer terminates it.
                        cursor.offset += len(line)
                        cursor.lines += 1
                    if not line.strip():
                        continue
                    linenos.append(lineno)
                    lines.append(line if line.endswith(b"\n") else line + b"\n")
                    if len(lines) >= _BATCH:
                        yield from self._decode(linenos, lines, warnings, shared)
                        linenos, lines = [], []
                if lines:
                    yield from self._decode(linenos, lines, warnings, shared)
            except OSError as exc:
                raise StoreError(f"{self.path}: cannot read sample store ({exc.strerror or exc})") from exc

    def _decode(
        self, linenos: list[int], lines: list[bytes], warnings: list[str] | None, shared: dict[Any, Any]
    ) -> list[Line]:
        # Fast path: decode a whole batch as one JSON array. One C call beats per-line
        # calls, and the decoder's key memo then shares key strings across the batch
        # (~40% less memory). It is trusted only if it yields one object per line: each
        # line keeps its "\n", and a raw newline is illegal inside a JSON string, so a
        # torn line (an unclosed prefix) can never absorb its neighbours and still parse.
        # Only several deliberately crafted lines could fool it, and a hand-edited store
        # can forge records anyway.
        records: list[Any] | None = None
        try:
            batch = json.loads(b"[" + b",".join(lines) + b"]")
            if len(batch) == len(lines) and all(type(r) is dict for r in batch):
                records = batch
        except (ValueError, RecursionError):
            pass
        if records is None:  # some line is bad: decode one by one to isolate it
            records = []
            for lineno, line in zip(linenos, lines):
                try:
                    record = json.loads(line)
                except (ValueError, RecursionError):  # JSONDecodeError, UnicodeDecodeError
                    record = None
                if isinstance(record, dict):
                    records.append(record)
                elif warnings is not None:
                    warnings.append(f"{self.path}:{lineno}: skipped unreadable record (torn or corrupt line)")
        for record in records:
            _share_values(record, shared)
        return records

    def read(self) -> tuple[list[Line], list[str]]:
        """Return ``(records, warnings)``: all readable records in append order, plus one
        warning per skipped line. Never raises for bad lines; a missing store is ``([], [])``."""
        warnings: list[str] = []
        # JSON yields no reference cycles, yet each batch of new dicts would trigger
        # generational collections that re-scan every record read so far (~30% of the
        # time at 100k records). No foreign code runs in between, so pausing GC is safe.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            records = list(self.iter_records(warnings))
        finally:
            if gc_was_enabled:
                gc.enable()
        return records, warnings

    def new_transcript_rel(self, run_id: str, cell_key: str, attempt: str) -> str:
        """Return ``transcripts/<run_id>/<safe cell key>-<attempt>.jsonl`` (relative, POSIX).

        Pure: nothing is created. Components are reduced to ``[A-Za-z0-9._-]`` (a hash
        suffix keeps sanitised keys distinct); pass the result to :meth:`transcript_path`.
        """
        name = f"{_safe_name(cell_key)}-{_safe_name(attempt)}.jsonl"
        return f"{TRANSCRIPTS_DIR}/{_safe_name(run_id)}/{name}"

    def transcript_path(self, rel: str, *, mkdir: bool = False) -> Path:
        """Resolve a record's relative transcript path against the store directory.

        Absolute paths and ``..`` raise :class:`StoreError` (records are data, not trusted
        paths). Parents are created only with ``mkdir=True``: the transcript writer passes
        it, readers do not. Then the directories are made private (0700) and the file is
        created empty and private (0600), so a transcript is never world-readable, whoever
        writes it.
        """
        parts = PurePosixPath(rel).parts
        if not parts or PurePosixPath(rel).is_absolute() or ".." in parts or "\\" in rel:
            raise StoreError(f"{self.path}: transcript path {rel!r} must be relative to {self.directory} without '..'")
        path = self.directory.joinpath(*parts)
        if mkdir:
            flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC
            try:
                try:
                    os.close(os.open(path, flags, 0o600))
                except (FileNotFoundError, NotADirectoryError):  # its directories first (a file in the way says so)
                    self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
                    for parent in list(reversed(path.relative_to(self.directory).parents))[1:]:
                        (self.directory / parent).mkdir(mode=0o700, exist_ok=True)
                    os.close(os.open(path, flags, 0o600))
            except OSError as exc:
                raise StoreError(f"{path.parent}: cannot create transcript ({exc.strerror or exc})") from exc
        return path
