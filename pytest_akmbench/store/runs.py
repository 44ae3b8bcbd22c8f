"""``<store>/runs.jsonl``: what a run decided that its samples do not say (docs/report.md, "Rebuilding offline").

An adaptive run (``--bench-until decisive``) and a run under a spend cap end up with cells that
never ran on purpose; the offline ``report`` command must know that to give the report the
session wrote. At its end the controller of such a run appends one line: the run id, its tasks
in collection order and arms (the adaptive plan's stream order), the adaptive settings and the
time cells waited at the barrier, the caps and how many cells a cap kept from starting. The
latest line of a run id is that run's.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict, TypeGuard

from . import jsonl

RUNS_FILE = "runs.jsonl"
RUN_SCHEMA = 1


class _CapFields(TypedDict):
    kind: str  # "usd" or "tokens"
    limit: float


class CapRecord(_CapFields, total=False):
    """A spend cap as a run record keeps it; ``origin`` (the option or config that set it) is
    absent from a record made from the settings."""

    origin: str


class AdaptiveRecord(TypedDict, total=False):
    """An adaptive run's settings; ``until`` and ``barrier_wait_s`` are absent from a record
    made from the settings."""

    until: str
    floor: int
    max_seeds: int
    barrier_wait_s: float


class _RunFields(TypedDict):
    tasks: list[str]
    arms: list[str]
    adaptive: AdaptiveRecord | None
    caps: list[CapRecord]


class RunRecord(_RunFields, total=False):
    """A line of ``runs.jsonl`` (or the same made from a run config or options, which has only
    the required fields): what the run decided that its samples do not say."""

    schema: int
    run_id: str
    written_at: str
    not_run: int


def append(store_dir: Path, record: RunRecord) -> None:
    """One line in ``<store>/runs.jsonl``: benches may share a store."""
    jsonl.append(store_dir / RUNS_FILE, {"schema": RUN_SCHEMA, **record}, "the run")


def find(stores: Sequence[Path], run_id: str, warnings: list[str] | None = None) -> RunRecord | None:
    """The latest record of ``run_id`` in any of ``stores`` (the later store wins a tie), or None."""
    found = None
    for store_dir in stores:
        for record in read(store_dir, warnings):
            if record["run_id"] == run_id:
                found = record
    return found


def read(store_dir: Path, warnings: list[str] | None = None) -> list[RunRecord]:
    """The store's run records in append order; an unreadable line is skipped with a warning."""
    return jsonl.read(store_dir / RUNS_FILE, _well_formed, "run", warnings)


def _well_formed(record: Any) -> TypeGuard[RunRecord]:
    if not isinstance(record, dict) or record.get("schema") != RUN_SCHEMA or not isinstance(record.get("run_id"), str):
        return False
    tasks, arms, adaptive = record.get("tasks"), record.get("arms"), record.get("adaptive")
    if not (isinstance(tasks, list) and all(isinstance(t, str) for t in tasks)):
        return False
    if not (isinstance(arms, list) and all(isinstance(a, str) for a in arms)):
        return False
    if adaptive is not None:
        ints = [adaptive.get(k) for k in ("floor", "max_seeds")] if isinstance(adaptive, dict) else [None]
        if not all(type(v) is int and v >= 1 for v in ints):
            return False
    caps = record.get("caps")
    return isinstance(caps, list) and all(
        isinstance(c, dict) and c.get("kind") in ("usd", "tokens") and isinstance(c.get("limit"), (int, float))
        for c in caps
    )
