"""What the offline ``report`` command needs beyond the samples: whether the reported run was
adaptive and which cells its plan needed, and its spend cap (docs/report.md, "Rebuilding offline").

The run's own record in the store (store/runs.py) says it; for a run that left none (it was
killed before its end), the run config's ``until``/``floor``/``maxSeeds`` and caps, or the
command's own options, stand in for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..cell.context import RunContext, cell_fingerprint
from ..corpus.config import Settings
from ..corpus.tasks import Task
from ..errors import ConfigError
from ..report import spend
from ..report.envelope_types import AdaptiveBlock, SpendCap
from ..run import adaptive as adaptive_run
from ..run import sequential
from ..run.resume import StoredSamples
from ..store import runs
from ..store.samples import fingerprint_hash


@dataclass
class Recalled:
    """The reported run's design: for an adaptive run its tasks (in the plan's order), arms,
    cells and block; its ``spend.cap`` block when it had a cap."""

    tasks: list[Task] | None = None
    arms: tuple[str, ...] = ()
    floor: int = 0
    max_seeds: int = 0
    cells: list[tuple[str, str, int]] | None = None
    block: AdaptiveBlock | None = None
    cap: SpendCap | None = None


def recall(
    stores: Sequence[Path],
    ctx: RunContext,
    settings: Settings,
    selected: Sequence[Task],
    corpus: Sequence[Task],
    stored: StoredSamples,
    *,
    fixed: bool,
) -> Recalled:
    """The design of run ``ctx.run_id``; ``fixed`` (a selection given on the command line) keeps
    the report a fixed design's whatever the run was."""
    record = runs.find(stores, ctx.run_id) or _from_settings(settings, selected)
    if record is None:
        return Recalled()
    own = stored.of_run(ctx.run_id)
    cap = spend.cap_block(record["caps"], own, record.get("not_run", 0)) if record["caps"] else None
    design = record.get("adaptive")
    if design is None or fixed:
        return Recalled(cap=cap)
    by_id = {t.id: t for t in corpus}
    missing = [t for t in record["tasks"] if t not in by_id]
    if missing:
        raise ConfigError(
            f"run {ctx.run_id} ran task {missing[0]}, which is not in {settings.tasks_root}: give --corpus that run's "
            "tasks root",
            usage=True,
        )
    tasks = [by_id[t] for t in record["tasks"]]
    arms = tuple(record["arms"])
    floor, most = int(design["floor"]), int(design["max_seeds"])
    plan = adaptive_run.plan_from_store(
        tasks,
        arms,
        stored,
        lambda cell: fingerprint_hash(cell_fingerprint(cell, ctx)),
        ctx.run_id,
        floor=floor,
        max_seeds=most,
    )
    needed, block = adaptive_run.part(plan, arms, floor=floor, max_seeds=most, waited_s=design.get("barrier_wait_s", 0))
    return Recalled(tasks, arms, floor, most, sorted(needed), block, cap)


def _from_settings(settings: Settings, selected: Sequence[Task]) -> runs.RunRecord | None:
    """A record from the run config or options, for a run that wrote none; None when they set
    neither adaptive seeds nor a cap."""
    caps: list[runs.CapRecord] = [
        {"kind": kind, "limit": value}
        for kind, value in (("usd", settings.budget_usd), ("tokens", settings.budget_run_tokens))
        if value is not None
    ]
    if settings.until is None and not caps:
        return None
    adaptive: runs.AdaptiveRecord | None = None
    if settings.until is not None:
        floor = settings.floor if "floor" in settings.origins else sequential.DEFAULT_FLOOR
        adaptive = {"floor": floor, "max_seeds": settings.max_seeds or sequential.DEFAULT_MAX_SEEDS}
    return {"tasks": [t.id for t in selected], "arms": list(settings.arms), "adaptive": adaptive, "caps": caps}
