"""The Track protocol: what a run measures, without pytest (docs/architecture.md, "Where to add").

A track says which items each task yields (``ItemSpec``: plugin/nodes.py turns each into a
pytest item by its ``kind``), whether the run's agent runs, and which run features it works
with. The features ask the track instead of naming tracks: a feature a track does not support
is refused with the track's own sentence, one it ignores is not installed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from ..cell.akm import AkmInfo
from ..cell.context import Cell, RunContext
from ..corpus.config import Settings
from ..corpus.tasks import Task
from ..errors import ConfigError
from ..run.resume import StoredSamples

SHARDS, CAPS, ADAPTIVE, REMOTE = "shards", "caps", "adaptive", "remote"
FEATURES = (SHARDS, CAPS, ADAPTIVE, REMOTE)


@dataclass(frozen=True, slots=True)
class ItemSpec:
    """One item of a task: ``cell`` (a cell run by the agent), ``check`` (the task's soundness
    check) or ``evolve`` (an evolve condition's cell or a domain's proposal step)."""

    kind: str
    name: str
    cell: Cell | None = None
    data: tuple[Any, ...] = ()  # what the kind needs beyond the cell (evolve: condition, seed, episode)


class Run(Protocol):
    """What a track reads of the run it is part of (plugin/state.py's BenchState)."""

    settings: Settings
    arms: tuple[str, ...]  # the arms and seeds the run uses (a track may derive its own)
    seeds: int
    tasks: list[Task]
    warnings: list[str]
    akm: AkmInfo | None
    run_id: str

    @property
    def store_dir(self) -> Path: ...

    def context(self) -> RunContext: ...

    def stored(self) -> StoredSamples: ...

    def fingerprint_hash(self, cell: Cell) -> str:
        """The hash of the cell's fingerprint, computed once per cell in this process."""
        ...


class Track:
    """A track: its name, what it supports, the items of a task. Utility is the plain one."""

    name: ClassVar[str] = "utility"
    supports: ClassVar[frozenset[str]] = frozenset(FEATURES)
    ignores: ClassVar[frozenset[str]] = frozenset()  # features that have nothing to do here
    runs_agent: ClassVar[bool] = True  # False: the oracle stands in, nothing is started or spent
    report_subdir: ClassVar[str] = ""  # where its report goes under the report dir

    def cells(self, task: Task, run: Run) -> list[Cell]:
        """The cells of a task: (arm, seed)."""
        seeds = range(1, run.seeds + 1)
        return [Cell(task, arm, seed) for arm in run.arms for seed in seeds]

    def items(self, task: Task, run: Run) -> Iterator[ItemSpec]:
        for cell in self.cells(task, run):
            yield ItemSpec("cell", cell.name, cell)

    def arms(self, run: Run) -> tuple[str, ...]:
        """The arms the run's cells use (for the corpus warnings)."""
        return run.arms

    @classmethod
    def check_selection(cls, tasks: Sequence[Task]) -> None:
        """Refuse a run config's task selection this track cannot run (a BenchError says why);
        ``validate`` asks it of every run config. Any selection makes a utility run."""

    def wants(self, feature: str) -> bool:
        """Whether ``feature`` is installed on this track (refused first when not supported)."""
        return feature not in self.ignores

    def refusal(self, feature: str) -> str | None:
        """Why this track refuses ``feature``; None when it supports or ignores it."""
        if feature in self.supports or feature in self.ignores:
            return None
        return {
            SHARDS: f"splits utility runs only; run the {self.name} track without it",
            CAPS: f"spend caps apply to utility runs only; run the {self.name} track without it",
            ADAPTIVE: "adaptive seeds are for utility runs; drop it for this track or --bench-soundness",
            REMOTE: f"the {self.name} track runs on this machine's workers: drop --tx {{tx}} (use -n)",
        }[feature]


class SoundnessTrack(Track):
    """``--bench-soundness``: one check per task (nop fails, the solution passes, ...), no agent."""

    name = "soundness"
    supports = frozenset({SHARDS})
    ignores = frozenset({CAPS})  # a check spends no model tokens
    runs_agent = False
    report_subdir = "soundness"  # never replaces the report of the last bench run (README, "Corpus")

    def items(self, task: Task, run: Run) -> Iterator[ItemSpec]:
        yield ItemSpec("check", "soundness")

    def arms(self, run: Run) -> tuple[str, ...]:
        return ()

    def refusal(self, feature: str) -> str | None:
        if feature == REMOTE:
            # Soundness results go to the store of the process that checked the task.
            return "--bench-soundness runs on this machine: drop --tx {tx}"
        return super().refusal(feature)


def chosen(settings: Settings) -> str:
    """The track a run's settings ask for: ``--bench-soundness`` checks the corpus instead of a
    track's measurement, so it comes alone."""
    if not settings.soundness:
        return settings.track
    if settings.track != Track.name:
        origin = settings.origins.get("track", "--bench-track")
        raise ConfigError(f"{origin}: --bench-soundness checks the corpus; drop the {settings.track} track", usage=True)
    return SoundnessTrack.name
