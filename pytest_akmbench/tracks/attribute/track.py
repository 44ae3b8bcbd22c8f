"""The attribute track behind the Track protocol: its plan and the cells it yields (docs/tracks.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ...cell.context import Cell, RunContext
from ...corpus.tasks import Task
from ...records import Sample
from ...report.envelope_types import AttributeEnvelope
from ...run.resume import StoredSamples
from ..track import Run, Track
from .core import Base, Target, build

Key = tuple[str, str, int]  # task id, mask ("" for the reference), seed


def providers(ctx: RunContext) -> dict[str, Any]:
    """The digest of the provider/model configuration the run's agent is given: the report's
    ``provenance.providers``, which an attribute run's must equal its base's."""
    return ctx.providers or {}


@dataclass(frozen=True, slots=True)
class Plan:
    """What an attribute run masks: the base, the ranked assets, and each task's masks."""

    base: Base
    targets: tuple[Target, ...]
    assets_loaded: int
    masks: dict[str, tuple[str, ...]]  # task id -> the refs masked on it, in rank order
    reference_seeds: tuple[int, ...] = ()  # the unmasked reruns' seeds (tracks/attribute/core.py)


class AttributeTrack(Track):
    """Masked reruns of the base's akm cells, and unmasked reference reruns, all on one machine."""

    name = "attribute"
    supports = frozenset()
    plan: Plan  # set once the base is read (plugin/attribute.py)

    def cells(self, task: Task, run: Run) -> list[Cell]:
        """A task's unmasked reference cells (at seeds after the base's), then (masked asset, seed)."""
        seeds = range(1, run.seeds + 1)
        refs = self.plan.masks.get(task.id, ())
        reference = [Cell(task, "akm", seed) for seed in self.plan.reference_seeds] if refs else []
        return reference + [Cell(task, "akm", seed, mask=ref) for ref in refs for seed in seeds]

    def envelope(self, state: Run, reported: Mapping[Key, Sample], interrupted: bool) -> AttributeEnvelope:
        """attribute.json's envelope: each cell of the plan from the store under this run's
        fingerprint, else as this run reported it (``reported``: by task, mask, seed)."""
        plan = self.plan
        ctx = state.context()
        stored = StoredSamples.load(state.store_dir)
        by_id = {t.id: t for t in state.tasks}
        runs: dict[str, dict[str, list[Sample]]] = {}  # mask ("" for the reference) -> task -> samples
        missing = errors = 0
        wanted = [
            (t.ref, task_id, seed) for t in plan.targets for task_id in t.tasks for seed in range(1, state.seeds + 1)
        ]
        wanted += [("", task_id, seed) for task_id in sorted(plan.masks) for seed in plan.reference_seeds]
        for ref, task_id, seed in wanted:
            cell = Cell(by_id[task_id], "akm", seed, mask=ref or None)
            found = stored.for_report([((task_id, "akm", seed), state.fingerprint_hash(cell))])
            record = found[0] if found else reported.get((task_id, ref, seed))
            if record is None:
                missing += 1
                continue
            errors += record["outcome"] == "harness_error"
            runs.setdefault(ref, {}).setdefault(task_id, []).append(record)
        warnings = [*state.warnings, *stored.warnings]
        if missing:
            warnings.append(f"{missing} cell(s) of the plan have no sample: run again to complete it")
        if not plan.base.complete:
            warnings.append(f"the base report {plan.base.path} is incomplete: the plan rests on fewer runs")
        return build(
            base=plan.base,
            targets=plan.targets,
            assets_loaded=plan.assets_loaded,
            top=state.settings.top,
            masked={ref: by_task for ref, by_task in runs.items() if ref},
            reference=runs.get("", {}),
            seeds=plan.reference_seeds,
            agent={
                "harness": ctx.agent.name,
                "version": ctx.agent.version,
                "model": ctx.model,
                "providers": providers(ctx),
            },
            complete=not (missing or errors or interrupted),
            warnings=warnings,
            timestamp=datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        )
