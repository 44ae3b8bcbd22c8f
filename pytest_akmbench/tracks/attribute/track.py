"""The attribute track behind the Track protocol: its plan and the cells it yields (docs/tracks.md)."""

from __future__ import annotations

from dataclasses import dataclass

from ...cell.context import Cell
from ...corpus.config import Settings
from ...corpus.tasks import Task
from ..track import Track
from .core import Base, Target


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

    def cells(self, task: Task, settings: Settings) -> list[Cell]:
        """A task's unmasked reference cells (at seeds after the base's), then (masked asset, seed)."""
        seeds = range(1, settings.seeds + 1)
        refs = self.plan.masks.get(task.id, ())
        reference = [Cell(task, "akm", seed) for seed in self.plan.reference_seeds] if refs else []
        return reference + [Cell(task, "akm", seed, mask=ref) for ref in refs for seed in seeds]
