"""Small record files of the store (``shards.jsonl``, ``runs.jsonl``): one JSON object a line.

Benches and shards may share a store, so a line is appended whole under a lock and fsync'd; a
reader skips a line it cannot use (torn by a crash, or of another schema) with a warning rather
than failing the report.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..errors import StoreError


def append(path: Path, record: Mapping[str, Any], what: str) -> None:
    """One fsync'd line under a lock; ``what`` names the record in the error ("the shard")."""
    payload = (json.dumps(record, separators=(",", ":")) + "\n").encode()
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise StoreError(f"{path}: cannot record {what} ({exc.strerror or exc}); check the store is writable") from exc


def read(
    path: Path, well_formed: Callable[[Any], bool], what: str, warnings: list[str] | None = None
) -> list[dict[str, Any]]:
    """The file's well-formed records in append order; an unreadable line is skipped with a warning."""
    try:
        lines = path.read_bytes().splitlines()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise StoreError(f"{path}: cannot read the {what} records ({exc.strerror or exc})") from exc
    out: list[dict[str, Any]] = []
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
