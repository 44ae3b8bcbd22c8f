"""The one JSONL appender of the package, and the store's small record files
(``shards.jsonl``, ``runs.jsonl``): one JSON object a line.

Benches, shards and xdist workers may share a store, so every line (a sample, a shard or run
record, a soundness result) is appended whole under an exclusive lock, after terminating a
line a killed writer left torn, and fsync'd (the directory too when the file is new). A reader
skips a line it cannot use (torn by a crash, or of another schema) with a warning rather than
failing the report.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeGuard, TypeVar

from ..errors import StoreError

Record = TypeVar("Record")


def append_line(path: Path, payload: bytes, *, lock: Path | None = None, fsync: bool = True) -> None:
    """Append ``payload`` (one line, ending in a newline) to ``path``; raises OSError.

    The lock is ``lock`` when given (the samples file's readers take it shared for a snapshot),
    else the file itself.
    """
    lock_fd = open_making_parent(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC) if lock is not None else -1
    fd = -1
    try:
        if lock_fd >= 0:
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
        # O_RDWR, not O_WRONLY: the torn-line check preads the last byte; O_APPEND still
        # sends every write to the end of the file.
        fd = open_making_parent(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC)
        held = lock_fd if lock_fd >= 0 else fd
        if lock_fd < 0:
            fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            payload = b"\n" + payload  # terminate a killed writer's torn line
        view = memoryview(payload)
        while view:  # regular files rarely write short, but never assume it
            view = view[os.write(fd, view) :]
        # Unlock before fsync so writers are not serialised on disk latency; the fsync still
        # covers our bytes.
        fcntl.flock(held, fcntl.LOCK_UN)
        if fsync:
            os.fsync(fd)
            if size == 0:  # a new file: make its directory entry durable too
                _sync_dir(path.parent)
    finally:
        if fd >= 0:
            os.close(fd)
        if lock_fd >= 0:
            os.close(lock_fd)  # also releases the lock after an error


def open_making_parent(path: Path, flags: int) -> int:
    """``os.open(path, flags, 0o600)``, making its directory (0700) only when it is missing:
    a store's files are opened once or twice a cell, their directory made once a run."""
    try:
        return os.open(path, flags, 0o600)
    except (FileNotFoundError, NotADirectoryError):  # a file in the way: mkdir says so, as before
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        return os.open(path, flags, 0o600)


def _sync_dir(directory: Path) -> None:
    dir_fd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def append(path: Path, record: Mapping[str, Any], what: str) -> None:
    """One record appended (``append_line``); ``what`` names it in the error ("the shard")."""
    payload = (json.dumps(record, separators=(",", ":")) + "\n").encode()
    try:
        append_line(path, payload)
    except OSError as exc:
        raise StoreError(f"{path}: cannot record {what} ({exc.strerror or exc}); check the store is writable") from exc


def read(
    path: Path, well_formed: Callable[[Any], TypeGuard[Record]], what: str, warnings: list[str] | None = None
) -> list[Record]:
    """The file's well-formed records in append order, typed by ``well_formed`` (each kind of
    line has its own); an unreadable line is skipped with a warning."""
    try:
        lines = path.read_bytes().splitlines()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise StoreError(f"{path}: cannot read the {what} records ({exc.strerror or exc})") from exc
    out: list[Record] = []
    for lineno, line in enumerate(lines, start=1):
        try:
            record = json.loads(line) if line.strip() else None
        except ValueError:
            record = None
        if isinstance(record, dict) and well_formed(record):
            out.append(record)
        elif line.strip() and warnings is not None:
            warnings.append(f"{path}:{lineno}: skipped unreadable {what} record")
    return out
