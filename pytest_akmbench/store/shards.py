"""CI shards: ``--bench-shard K/N`` splits the selected cells into N disjoint parts (docs/ci.md).

The split is a function of the selected cells and of the expected wall of each cell alone:
cells are ordered by expected wall (longest first), then by task id, arm and seed, and each
goes to the shard with the least expected wall so far (the lowest index on a tie). Nothing in
it depends on paths, hash seeds, the host or xdist, so N jobs on N machines that see the same
cells and the same history agree on it. Without history every cell weighs the same and the
shards differ by at most one cell.

Each shard run appends one line to ``<store>/shards.jsonl``: which shard it ran, of how many,
and the whole plan (every selected cell and its shard), so a merge of the shards' stores knows
which cells it expects and can name the shards that are missing.
"""

from __future__ import annotations

import hashlib
import json
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict, TypeGuard

from ..errors import ConfigError
from ..records import VALID_OUTCOMES, CellKey
from . import jsonl

SHARDS_FILE = "shards.jsonl"
SHARD_SCHEMA = 1
Plan = dict[CellKey, int]  # cell -> its shard, 1..N


class ShardRecord(TypedDict):
    """A line of ``shards.jsonl``: which shard a run ran, of how many, and the whole plan
    (``[task, arm, seed, shard]`` per selected cell)."""

    schema: int
    run_id: str
    started_at: str
    shard: int
    of: int
    plan_hash: str
    plan: list[list[Any]]


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``of`` (both counted from 1)."""

    index: int
    of: int

    @property
    def label(self) -> str:
        return f"{self.index}/{self.of}"


def parse(text: object, origin: str = "--bench-shard") -> Shard:
    """``"K/N"`` as a shard; anything else is a one-line error naming ``origin`` and the fix."""
    found = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(text))
    if found:
        index, of = int(found.group(1)), int(found.group(2))
        if 1 <= index <= of:
            return Shard(index, of)
    raise ConfigError(
        f"{origin}: {text!r} is not a shard: give K/N with whole numbers 1 <= K <= N (e.g. 1/2 and 2/2 for two jobs)",
        usage=True,
    )


def expected_walls(records: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Median wall (ms) of the valid samples of each ``task|arm`` and of each ``task|``.

    Every fingerprint counts: a new model or prompt changes a cell's wall less than its task does.
    """
    seen: dict[str, list[int]] = {}
    for record in records:
        wall, task, arm = record.get("wallclock_ms"), record.get("task_id"), record.get("arm")
        if record.get("outcome") not in VALID_OUTCOMES or type(wall) is not int or wall <= 0:
            continue
        if type(task) is str and type(arm) is str:
            seen.setdefault(f"{task}|{arm}", []).append(wall)
            seen.setdefault(f"{task}|", []).append(wall)
    return {key: round(statistics.median(walls)) for key, walls in sorted(seen.items())}


def weights(cells: Sequence[CellKey], walls: Mapping[str, int]) -> dict[CellKey, int]:
    """Each cell's expected wall: its task and arm's, else its task's, else the median of the
    known cells'; all 1 when the history knows none of them (the split is then by count)."""
    known = {c: walls.get(f"{c[0]}|{c[1]}", walls.get(f"{c[0]}|")) for c in cells}
    values = [w for w in known.values() if w is not None]
    if not values:
        return dict.fromkeys(cells, 1)
    fallback = round(statistics.median(values))
    return {c: w if w is not None else fallback for c, w in known.items()}


def split(cells: Iterable[CellKey], of: int, walls: Mapping[str, int]) -> Plan:
    """Assign every cell to one of ``of`` shards, balancing the expected wall (module docstring)."""
    unique = sorted(set(cells))
    weight = weights(unique, walls)
    loads = [0] * of
    plan: Plan = {}
    for cell in sorted(unique, key=lambda c: (-weight[c], c)):
        shard = min(range(of), key=lambda i: (loads[i], i))
        loads[shard] += weight[cell]
        plan[cell] = shard + 1
    return plan


def plan_hash(plan: Plan) -> str:
    """16 hex digits naming the plan: equal for two shards only if they split alike."""
    canonical = json.dumps(sorted([list(c) + [s] for c, s in plan.items()]), separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def make_record(shard: Shard, plan: Plan, run_id: str, started_at: str) -> ShardRecord:
    return {
        "schema": SHARD_SCHEMA,
        "run_id": run_id,
        "started_at": started_at,
        "shard": shard.index,
        "of": shard.of,
        "plan_hash": plan_hash(plan),
        "plan": [[*cell, s] for cell, s in sorted(plan.items())],
    }


def append(store_dir: Path, record: ShardRecord) -> None:
    """One line in ``<store>/shards.jsonl``: shards may share a store."""
    jsonl.append(store_dir / SHARDS_FILE, record, "the shard")


def read(store_dir: Path, warnings: list[str] | None = None) -> list[ShardRecord]:
    """The store's shard records in append order; an unreadable line is skipped with a warning."""
    return jsonl.read(store_dir / SHARDS_FILE, _well_formed, "shard", warnings)


def _well_formed(record: Any) -> TypeGuard[ShardRecord]:
    if not isinstance(record, dict) or record.get("schema") != SHARD_SCHEMA:
        return False
    if not isinstance(record.get("plan_hash"), str) or not isinstance(record.get("run_id"), str):
        return False
    index, of, plan = record.get("shard"), record.get("of"), record.get("plan")
    if type(index) is not int or type(of) is not int or not 1 <= index <= of or not isinstance(plan, list):
        return False
    return all(
        isinstance(e, list) and len(e) == 4 and type(e[2]) is int and type(e[3]) is int and 1 <= e[3] <= of
        for e in plan
    )


def plan_of(record: ShardRecord) -> Plan:
    return {(str(t), str(a), int(s)): int(k) for t, a, s, k in record["plan"]}
