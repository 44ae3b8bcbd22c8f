"""One trial, the one way every cell runs: claim → refresh → done-check → run → scrub → append →
report (docs/architecture.md, "One cell, from collection to the report").

A trial is a cell under one fingerprint. Utility, attribute, adaptive, evolve and remote cells
all run through ``run_trial``; what differs is the context and fingerprint extras a track gives
(``Trial.of``) and where the trial is claimed and its sample appended (a ``Place``): the store
itself (``StorePlace``), or for a remote worker the controller, which uses a ``StorePlace`` of
its own (plugin/remote.py). Every error of the protocol ends here as one line in ``Ended``: the
plugin turns it into pytest's skip, fail or exit, and no error raises out of a trial.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..errors import StoreError
from ..records import CellKey, Sample
from ..store.claims import Claim
from ..store.samples import SampleStore, fingerprint_hash
from ..store.scrub import Scrubber
from ..system import lifecycle
from ..system.interrupts import Interrupts
from ..system.procs import ProcessTracker
from .context import Cell, RunContext, cell_fingerprint
from .runner import run_cell

INTERRUPTED = "akmbench: the run was interrupted; no further cell starts"


@dataclass(frozen=True, slots=True)
class Trial:
    """A cell, the context it runs in, and its fingerprint, computed once."""

    cell: Cell
    ctx: RunContext
    fingerprint: dict[str, Any]
    hash: str
    arm: str  # what the sample is stored under: the cell's arm
    marks: Mapping[str, Any]  # a track's own sample fields (evolve: condition, episode)
    legacy: str | None  # the arm an older store may hold the trial under (evolve-<condition>)

    @classmethod
    def of(
        cls,
        cell: Cell,
        ctx: RunContext,
        extra: Mapping[str, Any] | None = None,
        marks: Mapping[str, Any] | None = None,
        legacy: str | None = None,
    ) -> Trial:
        fp = {**cell_fingerprint(cell, ctx), **(extra or {})}
        return cls(cell, ctx, fp, fingerprint_hash(fp), cell.arm, dict(marks or {}), legacy)

    @property
    def key(self) -> CellKey:
        return (self.cell.task.id, self.arm, self.cell.seed)

    @property
    def legacy_key(self) -> CellKey | None:
        return None if self.legacy is None else (self.cell.task.id, self.legacy, self.cell.seed)

    def run(self, tracker: ProcessTracker) -> Sample:
        sample = run_cell(self.cell, self.ctx, tracker, fingerprint=self.fingerprint)
        sample.update(self.marks)  # type: ignore[typeddict-item]
        return sample


@dataclass(frozen=True, slots=True)
class Ended:
    """How a trial ended: a fresh ``sample``, or the stored ``record`` it reports instead, or
    one of the reasons it has neither."""

    sample: Sample | None = None
    record: Sample | None = None  # the store held the trial (it is reported, not run)
    claimed_by: str | None = None  # another run stored it while this one waited for the claim
    unstored: str | None = None  # the fresh sample could not be appended: why (the run stops)
    error: str | None = None  # the trial could not be claimed: the one line that stops the run
    skip: str | None = None  # the controller's spend cap was reached (plugin/caps.py)
    interrupted: bool = False


class Held(Protocol):
    def release(self) -> None: ...


class Place(Protocol):
    """Where a trial is claimed and its sample appended."""

    def claim(self, key: CellKey, fp: str, legacy: CellKey | None = None) -> Held | Ended:
        """Hold the trial for this run, or say how it ended without running here (stored under
        ``key``, or in an older store under ``legacy``)."""
        ...

    def append(self, sample: Sample) -> str | None:
        """Keep a fresh sample; why it could not be kept, else None."""
        ...


class Index(Protocol):
    """The store's samples as this process knows them (run/resume.py ``StoredSamples``)."""

    def refresh(self) -> None: ...

    def done(self, cell: CellKey, fingerprint_hash: str) -> Sample | None: ...


class StorePlace:
    """The store itself: a claim per trial (store/claims.py), the samples appended there."""

    def __init__(
        self, directory: Path, index: Index, owner: str, lock: contextlib.AbstractContextManager[Any] | None = None
    ) -> None:
        self.directory = directory
        self.index = index
        self.owner = owner
        self.lock = lock or contextlib.nullcontext()

    def claim(self, key: CellKey, fp: str, legacy: CellKey | None = None) -> Held | Ended:
        claim = Claim(self.directory, "\0".join((key[0], key[1], str(key[2]), fp)), owner=self.owner)
        try:
            waited = claim.acquire()
            with self.lock:
                self.index.refresh()
                record = self.index.done(key, fp) or (self.index.done(legacy, fp) if legacy else None)
        except (OSError, StoreError) as err:
            claim.release()
            return Ended(error=cannot_claim(self.directory, err))
        if record is None:
            return claim
        # Another bench on the same store ran this trial meanwhile: report its sample.
        claim.release()
        return Ended(record=record, claimed_by=waited or "another run")

    def append(self, sample: Sample) -> str | None:
        return append(self.directory, sample)


def cannot_claim(directory: Path, err: OSError | StoreError) -> str:
    """The one line that stops a run whose store cannot be claimed in."""
    why = err.strerror if isinstance(err, OSError) and err.strerror else err
    return f"akmbench: {directory}: cannot claim a cell ({why})"


def append(directory: Path, sample: Sample, files: Mapping[str, bytes] | None = None) -> str | None:
    """Append a fresh sample (after a remote cell's transcript files) by the claim's holder, the
    moment the cell ends: a crash later in the session cannot lose it. Why it failed, else None."""
    try:
        store = SampleStore(directory)
        for rel, data in (files or {}).items():
            store.transcript_path(rel, mkdir=True).write_bytes(data)
        store.append(sample)
    except (OSError, StoreError) as err:
        return str(err)
    return None


def run_trial(
    trial: Trial, place: Place, tracker: ProcessTracker, scrub: Scrubber, interrupts: Interrupts | None
) -> Ended:
    """Run the trial unless the run was interrupted or ``place`` says it ended already."""
    if lifecycle.is_interrupted(trial.ctx.tmp_root / trial.ctx.run_id):
        return Ended(interrupted=True)
    held = place.claim(trial.key, trial.hash, trial.legacy_key)
    if isinstance(held, Ended):
        return held
    try:
        sample = scrub.obj(trial.run(tracker))
        if interrupts is not None:
            # A Ctrl-C now waits until the cell has reported (plugin/cells.py InterruptHooks).
            interrupts.hold()
        return Ended(sample=sample, unstored=place.append(sample))
    finally:
        held.release()
