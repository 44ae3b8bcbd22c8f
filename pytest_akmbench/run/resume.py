"""Which cells the store already holds, and which samples a report is made of (docs/architecture.md).

A trial counts as done when the store has a valid sample (pass, fail, budget_exceeded) for
the same task, arm, seed and fingerprint. ``harness_error`` attempts stay in the file but
never count, so they run again. When a trial has several valid samples (``--bench-fresh``
re-runs), the latest one is the trial's sample.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..cell.context import Cell, RunContext, cell_fingerprint
from ..corpus.tasks import Task
from ..records import SAMPLE_SCHEMA, CellKey, Sample
from ..store.samples import Cursor, Line, SampleStore, TrialKey, as_sample, fingerprint_hash, latest_valid

if TYPE_CHECKING:
    from ..report.envelope import ReportInput


class StoredSamples:
    """An index over the store: latest valid and latest attempt per (task, arm, seed, fingerprint).

    Loaded with :meth:`load` (or :meth:`after_now`, which skips what the store holds already),
    it can :meth:`refresh` itself with what was appended since, cheaply: the store is
    append-only, so only the new bytes are read. A cell claimed for running refreshes first,
    so a sample another bench stored meanwhile is used instead of running the trial twice.
    """

    def __init__(self, records: Iterable[Line] = (), warnings: list[str] | None = None) -> None:
        self._read_warnings = list(warnings or [])
        self._valid: dict[TrialKey, Sample] = {}
        self._attempt: dict[TrialKey, Sample] = {}
        self._by_run: dict[object, list[Sample]] = {}
        self._foreign: dict[str, int] = {}
        self._store: SampleStore | None = None
        self._cursor = Cursor()
        self.add(records)

    @classmethod
    def load(cls, directory: Path) -> StoredSamples:
        index = cls()
        index._store = SampleStore(directory)
        index.refresh()
        return index

    @classmethod
    def after_now(cls, directory: Path) -> StoredSamples:
        """An index of only what is appended from now on (``--bench-fresh``)."""
        index = cls.load(directory)
        fresh = cls()
        fresh._store, fresh._cursor = index._store, index._cursor
        return fresh

    def refresh(self) -> None:
        """Index the records appended since the last read."""
        if self._store is not None:
            self.add(self._store.iter_records(self._read_warnings, self._cursor))

    def add(self, records: Iterable[Line]) -> None:
        known: list[Sample] = []
        for record in records:
            # A record of another schema (a newer plugin's, or a hand-made line) may mean
            # something else by the same keys: it is kept in the file but never trusted.
            sample = as_sample(record)
            if sample is not None:
                known.append(sample)
                self._by_run.setdefault(sample.get("run_id"), []).append(sample)
            else:
                label = json.dumps(record.get("schema"))
                self._foreign[label] = self._foreign.get(label, 0) + 1
        # The store's own index, so resume and the store agree on what a usable record is.
        self._valid.update(latest_valid(known))
        self._attempt.update(latest_valid(known, valid=lambda r: True))

    @property
    def warnings(self) -> list[str]:
        """Unreadable lines, then one line per unknown schema version met."""
        return [
            *dict.fromkeys(self._read_warnings),
            *(
                f"{count} store record(s) of schema {label} ignored: this version reads schema {SAMPLE_SCHEMA} only"
                for label, count in sorted(self._foreign.items())
            ),
        ]

    def done(self, cell: CellKey, fingerprint_hash: str) -> Sample | None:
        """The valid sample of this trial under this fingerprint, if any."""
        task_id, arm, seed = cell
        return self._valid.get((task_id, arm, fingerprint_hash, seed))

    def of_run(self, run_id: str) -> list[Sample]:
        """Every record (of the known schema) a run wrote, in append order."""
        return list(self._by_run.get(run_id, ()))

    def for_report(self, cells: Iterable[tuple[CellKey, str]]) -> list[Sample]:
        """One sample per cell: the latest valid one, else the latest attempt (a harness error)."""
        chosen = []
        for (task_id, arm, seed), fp in cells:
            key = (task_id, arm, fp, seed)
            record = self._valid.get(key) or self._attempt.get(key)
            if record is not None:
                chosen.append(record)
        return chosen


def mark_origin(record: Sample, run_id: str) -> Sample:
    """A copy of ``record`` with ``from_store`` telling whether an earlier run produced it."""
    return {**record, "from_store": record.get("run_id") != run_id}


def report_input(
    *,
    tasks: list[Task],
    arms: tuple[str, ...],
    seeds: int,
    cells: Iterable[CellKey],
    slice_label: str,
    ctx: RunContext,
    store_dir: Path,
    floor: int,
    extra_samples: Iterable[Sample] = (),
    complete: bool | None = None,
    warnings: Iterable[str] = (),
    cwd: Path | None = None,
    baseline: dict[str, float] | None = None,
    gates: Iterable[str] = (),
    provenance: dict[str, Any] | None = None,
    stored: StoredSamples | None = None,
    hash_of: Callable[[Cell], str] | None = None,
) -> ReportInput:
    """The report of ``cells`` made from the store: the session and ``report`` CLI share it,
    so both give the same envelope. ``complete`` defaults to "every cell has a sample".
    ``hash_of`` is a cell's fingerprint hash as the run already computed it (cell/trial.py)."""
    by_id = {t.id: t for t in tasks}
    wanted = sorted(c for c in cells if c[0] in by_id)
    hash_of = hash_of or (lambda cell: fingerprint_hash(cell_fingerprint(cell, ctx)))
    keys = [(c, hash_of(Cell(by_id[c[0]], c[1], c[2]))) for c in wanted]
    stored = stored if stored is not None else StoredSamples.load(store_dir)
    chosen = {(r["task_id"], r["arm"], r["seed"]): r for r in stored.for_report(keys)}
    for sample in extra_samples:  # produced now but not stored (e.g. the disk was full)
        chosen.setdefault((sample["task_id"], sample["arm"], sample["seed"]), {**sample})
    if complete is None:
        # An empty report is never complete: it proves nothing about the selection.
        complete = bool(wanted) and all(c in chosen and chosen[c]["outcome"] != "harness_error" for c in wanted)
    present = {c[0] for c in wanted}
    used_arms = {c[1] for c in wanted}
    # Here, not at the top: the done-check and a --co import this module, the report only here.
    from ..report.envelope import ReportInput

    return ReportInput(
        tasks=[t for t in tasks if t.id in present],
        arms=tuple(a for a in arms if a in used_arms),
        seeds=seeds,
        slice=slice_label,
        stashes_root=ctx.stashes_root,
        samples=[mark_origin(r, ctx.run_id) for r in chosen.values()],
        model=ctx.model,
        agent=ctx.agent.name,
        agent_version=ctx.agent.version,
        complete=complete,
        warnings=[*warnings, *stored.warnings],
        cwd=cwd,
        floor=floor,
        baseline=baseline,
        gates=tuple(gates),
        gates_base_dir=cwd,
        provenance=provenance,
        store_dir=store_dir,
    )
