"""One report from several stores: the shards of a CI matrix, or benches run on several machines.

The stores' samples are read as one store would be: each store in its own append order, the
stores interleaved by each sample's start time, so "the latest valid sample of a trial wins"
(``run/resume.py``) means the same as in one store, and a trial two stores hold is counted
once. What a merge cannot make whole it says, one line each, and the report is then
incomplete: a store given that is not there, a shard of the plan that no store ran, a shard
whose stores lack samples of its own cells (a store cut short, torn or emptied after the run:
its shard record alone does not count as having run the cells), shards that split the cells
differently, and cells whose samples are all under another fingerprint than the report's
(docs/ci.md).
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..cell.context import Cell, RunContext, cell_fingerprint
from ..corpus.tasks import Task
from ..records import ARMS, CellKey, of_a_track
from ..report.envelope import ReportInput
from ..report.envelope_rows import IncompleteShard
from ..report.envelope_types import MergeBlock
from ..store import shards
from ..store.samples import STORE_FILE, Cursor, Line, SampleStore, fingerprint_hash, record_fingerprint
from .resume import StoredSamples


@dataclass
class Merged:
    """The stores read together, and what their shard records say."""

    stores: list[Path]
    records: list[list[Line]]  # per store, in append order: every line, of any schema
    stored: StoredSamples
    plan: shards.Plan | None = None  # the newest shard plan, when the stores hold one
    of: int = 0
    present: list[int] = field(default_factory=list)
    missing: list[int] = field(default_factory=list)  # not run, and some of their cells have no sample
    own_runs: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)
    ran_by: dict[int, list[Path]] = field(default_factory=dict)  # shard -> the stores that recorded running it
    damage: dict[Path, list[str]] = field(default_factory=dict)  # store -> what is wrong with its samples file
    unreadable: dict[Path, int] = field(default_factory=dict)  # store -> lines of samples.jsonl skipped
    incomplete: list[IncompleteShard] = field(default_factory=list)  # shards that ran but whose cells lack samples
    checked: list[str] = field(default_factory=list)  # every line of check(), for the block

    def latest(self, agent: str) -> Line | None:
        """The newest sample of ``agent`` in any store (by start time, then store order)."""
        found = None
        for record in _interleaved(self.records):
            if (record.get("agent") or {}).get("name") == agent:
                found = record
        return found

    def cells(self) -> list[CellKey] | None:
        """Every cell of the plan (the whole selection of the sharded run), if there is one."""
        return sorted(self.plan) if self.plan is not None else None

    def arms(self) -> tuple[str, ...]:
        used = {c[1] for c in self.plan or {}}
        return tuple(a for a in ARMS if a in used)

    def seeds(self) -> int:
        return max((c[2] for c in self.plan or {}), default=0)

    def notes(self) -> list[str]:
        """The damage of a store's samples file that no problem line names already (a torn last
        line when every cell still has a sample): said, but the report stays whole."""
        said = " ".join(self.checked)
        return [d for store in dict.fromkeys(self.stores) for d in self.damage.get(store, []) if d not in said]

    def block(self) -> MergeBlock:
        """The envelope's ``merge`` block (docs/report.md)."""
        return {
            "stores": [str(s) for s in self.stores],
            "shards": self.of or None,
            "present": self.present,
            "missing": self.missing,
            "incomplete": self.incomplete,
            "problems": self.checked,
        }


def _start(record: Mapping[str, Any]) -> str:
    started = record.get("started_at")
    return started if isinstance(started, str) else ""


def _interleaved(per_store: list[list[Line]]) -> Iterable[Line]:
    # heapq.merge keeps each store's own order whatever the keys: only the stores interleave.
    return heapq.merge(*per_store, key=_start)


def load(stores: Sequence[Path]) -> Merged:
    warnings: list[str] = []
    per_store: list[list[Line]] = []
    damage: dict[Path, list[str]] = {}
    unreadable: dict[Path, int] = {}
    for d in stores:
        store, cursor = SampleStore(d), Cursor()
        skipped: list[str] = []
        per_store.append(list(store.iter_records(skipped, cursor)))
        warnings.extend(skipped)
        unreadable[d] = len(skipped)
        damage[d] = _damage(store.path, skipped, cursor)
    shard_records = [shards.read(d, warnings) for d in stores]
    merged = Merged(list(stores), per_store, StoredSamples(_interleaved(per_store), warnings))
    merged.damage, merged.unreadable = damage, unreadable
    _read_plan(merged, shard_records)
    return merged


def _damage(path: Path, skipped: list[str], cursor: Cursor) -> list[str]:
    """What is wrong with a store's samples file: the lines skipped, the last one named torn when
    the file ends in it (a copy or upload cut short, or a writer killed mid-record)."""
    # iter_records' warnings are "<path>:<line>: skipped ..."; the cursor stops before a torn tail.
    lines = [int(w.removeprefix(f"{path}:").split(":", 1)[0]) for w in skipped]
    torn = lines[-1] if lines and lines[-1] == cursor.lines + 1 else None
    corrupt = [n for n in lines if n != torn]
    out = []
    if corrupt:
        listed = ", ".join(map(str, corrupt[:3])) + (" …" if len(corrupt) > 3 else "")
        out.append(f"{path}: {len(corrupt)} corrupt line(s) skipped (line {listed})")
    if torn is not None:
        out.append(f"{path}: line {torn} is torn (the file ends mid-record), skipped")
    return out


def _read_plan(merged: Merged, per_store: list[list[shards.ShardRecord]]) -> None:
    """The newest plan of all stores; the shards that ran it; stores whose newest plan differs."""
    latest = [(store, max(recs, key=_start)) for store, recs in zip(merged.stores, per_store) if recs]
    if not latest:
        return
    chosen = max((r for _, r in latest), key=_start)
    merged.plan = shards.plan_of(chosen)
    merged.of = int(chosen["of"])
    ran = [
        (store, r)
        for store, recs in zip(merged.stores, per_store)
        for r in recs
        if r["plan_hash"] == chosen["plan_hash"]
    ]
    merged.present = sorted({int(r["shard"]) for _, r in ran})
    merged.own_runs = {str(r["run_id"]) for _, r in ran}
    for store, r in ran:
        by = merged.ran_by.setdefault(int(r["shard"]), [])
        if store not in by:
            by.append(store)
    differ = [
        f"{store} ran shard {r['shard']}/{r['of']} of plan {r['plan_hash']}"
        for store, r in latest
        if r["plan_hash"] != chosen["plan_hash"]
    ]
    if differ:
        merged.problems.append(
            f"shards split the cells differently (their stores' histories differed): {'; '.join(differ)}; "
            f"the report follows plan {chosen['plan_hash']} of shard {chosen['shard']}/{chosen['of']}: give every "
            "shard job the same store history (or none)"
        )


def check(merged: Merged, tasks: Sequence[Task], cells: Iterable[CellKey], ctx: RunContext) -> list[str]:
    """What keeps the merged report from being whole, one line each: stores that are not there,
    the problems of the plan, the shards missing, the shards whose cells lack samples, the cells
    held only under another fingerprint."""
    by_id = {t.id: t for t in tasks}
    expected: dict[CellKey, tuple[str, dict[str, Any]]] = {}
    for cell in cells:
        if cell[0] in by_id:
            fp = cell_fingerprint(Cell(by_id[cell[0]], cell[1], cell[2]), ctx)
            expected[cell] = (fingerprint_hash(fp), fp)
    held = {c for c, (h, _) in expected.items() if merged.stored.done(c, h) is not None}
    # A harness error is a sample: it is reported as one (and fails the gates), not as lost.
    sampled = {c for c, (h, _) in expected.items() if merged.stored.for_report([(c, h)])}
    conflicts, apart = _conflicts(merged, expected, held)
    merged.checked = [
        *_absent(merged),
        *merged.problems,
        *_missing(merged, held),
        *_lost(merged, sampled | apart, set(expected)),
        *_unplanned(merged, sampled | apart, set(expected)),
        *conflicts,
    ]
    return list(merged.checked)


def _absent(merged: Merged) -> list[str]:
    """The stores given that are not there, or hold neither samples nor a shard record."""
    out = []
    for store in dict.fromkeys(merged.stores):
        if not store.is_dir():
            what = "no such store (the directory does not exist)" if not store.exists() else "not a directory"
        elif not (store / STORE_FILE).exists() and not (store / shards.SHARDS_FILE).exists():
            what = f"not a store: it holds neither {STORE_FILE} nor {shards.SHARDS_FILE}"
        else:
            continue
        out.append(f"{store}: {what}; give the store the shard or bench wrote (its whole directory), or leave it out")
    return out


def _missing(merged: Merged, held: set[CellKey]) -> list[str]:
    """The shards of the plan no store ran, unless another store holds every one of their cells."""
    out = []
    for k in range(1, merged.of + 1):
        cells = sorted(c for c, s in (merged.plan or {}).items() if s == k and c not in held)
        if k in merged.present or not cells:
            continue
        merged.missing.append(k)
        shown = ", ".join(f"{t}::{a}-s{n}" for t, a, n in cells[:3])
        more = f" and {len(cells) - 3} more" if len(cells) > 3 else ""
        out.append(
            f"shard {k}/{merged.of} missing: no store given ran it ({len(cells)} cells without a sample: "
            f"{shown}{more}); add its store with --store, or run it with --bench-shard {k}/{merged.of}"
        )
    return out


def _lost(merged: Merged, accounted: set[CellKey], known: set[CellKey]) -> list[str]:
    """The shards a store recorded running whose own cells no store holds a sample of: the
    store was cut short, torn, emptied or replaced after the run. Its shard record says the cells
    ran; only their samples count (docs/ci.md)."""
    out = []
    for k in merged.present:
        own = sorted(c for c, s in (merged.plan or {}).items() if s == k and c in known)
        cells = [c for c in own if c not in accounted]
        if not cells:
            continue
        stores = merged.ran_by.get(k, [])
        damage = [
            d
            for store in stores
            for d in (
                merged.damage.get(store) or ([] if (store / STORE_FILE).exists() else [f"{store} has no {STORE_FILE}"])
            )
        ]
        merged.incomplete.append(
            {
                "shard": k,
                "stores": [str(s) for s in stores],
                "cells": len(own),
                "without_sample": len(cells),
                "unreadable_lines": sum(merged.unreadable.get(s, 0) for s in stores),
            }
        )
        shown = ", ".join(f"{t}::{a}-s{n}" for t, a, n in cells[:3])
        more = f" and {len(cells) - 3} more" if len(cells) > 3 else ""
        holders = ", ".join(map(str, stores))
        verb = "holds" if len(stores) == 1 else "hold"
        why = f"; {'; '.join(damage)}" if damage else ""
        out.append(
            f"shard {k}/{merged.of} incomplete: {holders} ran it but {verb} no sample for {len(cells)} of its "
            f"{len(own)} cells ({shown}{more}){why}; rerun them with --bench-shard {k}/{merged.of} into that store "
            "(it runs exactly the missing cells), then merge again"
        )
    return out


def _unplanned(merged: Merged, accounted: set[CellKey], known: set[CellKey]) -> list[str]:
    """Without a shard plan (benches run apart, not as shards), the selected cells no store holds
    a sample of: no record says which store should have had them, so they are named together."""
    if merged.plan is not None or len(merged.stores) < 2:
        return []
    cells = sorted(known - accounted)
    if not cells:
        return []
    shown = ", ".join(f"{t}::{a}-s{n}" for t, a, n in cells[:3])
    more = f" and {len(cells) - 3} more" if len(cells) > 3 else ""
    damage = [d for store in merged.stores for d in merged.damage.get(store, [])]
    why = f"; {'; '.join(damage)}" if damage else ""
    return [
        f"no store given holds a sample of {len(cells)} of the {len(known)} selected cells ({shown}{more}){why}; "
        "run them into one of the stores (a bench resumes: it runs exactly the missing cells), then merge again"
    ]


def _conflicts(
    merged: Merged, expected: dict[CellKey, tuple[str, dict[str, Any]]], held: set[CellKey]
) -> tuple[list[str], set[CellKey]]:
    """Per store, the selected cells it holds only under another fingerprint than the report's:
    they are left out of the report, never mixed in. Names the fields that differ; also returns
    those cells, which are then not counted again as lost."""
    out = []
    every: set[CellKey] = set()
    for store, records in zip(merged.stores, merged.records):
        apart: set[CellKey] = set()
        fields: set[str] = set()
        for record in records:
            seed = record.get("seed")
            cell = (str(record.get("task_id")), str(record.get("arm")), seed if type(seed) is int else 0)
            if cell not in expected or cell in held or of_a_track(record):
                continue
            if record_fingerprint(record) == expected[cell][0]:
                continue
            apart.add(cell)
            theirs, ours = record.get("fingerprint") or {}, expected[cell][1]
            fields.update(k for k in set(theirs) | set(ours) if theirs.get(k) != ours.get(k))
        every |= apart
        if apart:
            by_arm = ", ".join(f"{a} {sum(1 for c in apart if c[1] == a)}" for a in sorted({c[1] for c in apart}))
            fix = (
                "report that store apart, or rerun those cells with this report's settings"
                if len(merged.stores) > 1
                else "rerun those cells (a bench runs exactly them), or give --run-id of the run that made them"
            )
            out.append(
                f"conflicting fingerprints: {store} holds {len(apart)} selected cells ({by_arm}) only under another "
                f"fingerprint (differing in {', '.join(sorted(fields)) or 'its hash'}), left out of this report: {fix}"
            )
    return out, every


def finish(inp: ReportInput, merged: Merged, problems: Sequence[str]) -> ReportInput:
    """The merged report's input: the shards' own runs are this report's (not "from store"),
    and every problem is a warning that makes the report incomplete."""
    samples = inp.samples
    if merged.own_runs:
        samples = [{**s, "from_store": s.get("run_id") not in merged.own_runs} for s in inp.samples]
    return dataclasses.replace(
        inp,
        samples=samples,
        complete=inp.complete and not problems,
        warnings=[*problems, *inp.warnings],
    )
