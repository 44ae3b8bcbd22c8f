"""The state of a bench run in one process (controller or xdist worker), shared by every hook."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..agents.base import Agent
from ..cell.akm import AkmInfo
from ..cell.context import Cell, RunContext
from ..cell.trial import Trial
from ..corpus.config import Settings, run_caps
from ..corpus.tasks import Corpus, Task
from ..run.resume import StoredSamples
from ..store.scrub import Scrubber
from ..system import lifecycle
from ..system.cleaner import Cleaner
from ..system.interrupts import Interrupts
from ..tracks.track import SoundnessTrack, Track

if TYPE_CHECKING:
    from .remote import RemoteWorker

STATE_KEY = pytest.StashKey["BenchState"]()


@dataclass
class BenchState:
    """Everything resolved for this run, shared by every hook in this process."""

    settings: Settings
    corpus: Corpus
    tasks: list[Task]
    slice: str
    selected: dict[Path, Task]
    errors: dict[Path, str]
    task_dirs: set[Path]
    explicit: bool
    run_id: str = ""
    agent: Agent = field(default=None)  # type: ignore[assignment]
    model: str | None = None
    warnings: list[str] = field(default_factory=list)
    started: bool = False
    baseline: dict[str, float] | None = None
    akm: AkmInfo | None = None
    interrupts: Interrupts | None = None
    scrub: Scrubber = field(default_factory=Scrubber)
    track: Track = field(default_factory=Track)  # what the run measures (tracks/track.py)
    remote: RemoteWorker | None = None  # on a remote worker: the channel to the controller, which owns the store
    # What the run does of its settings, which stay as resolved: the settings' values until a track
    # or mode derives its own (attribute: the akm arm and the base's seeds; adaptive: its floor and
    # most seeds; the sandbox: the mode in use once chosen).
    arms: tuple[str, ...] = ()
    seeds: int = 0
    floor: int = 0
    sandbox: str = ""
    plugins: dict[str, object] = field(default_factory=dict)  # this run's plugins by name (register)
    cleaner: Cleaner = field(default_factory=Cleaner)  # deletes finished cells' dirs (system/cleaner.py)
    _stored: StoredSamples | None = None
    _context: RunContext | None = None
    _trials: dict[Cell, Trial] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.arms = self.arms or self.settings.arms
        self.seeds = self.seeds or self.settings.seeds
        self.floor = self.floor or self.settings.floor
        self.sandbox = self.sandbox or self.settings.sandbox

    @property
    def report_dir(self) -> Path:
        return self.settings.report or self.settings.rootdir / ".akmbench" / "report"

    @property
    def soundness_report_dir(self) -> Path:
        """A soundness run's own report, beside the bench's: checking the corpus never replaces
        the report of the last bench run (README, "Corpus")."""
        return self.report_dir / SoundnessTrack.report_subdir

    @property
    def store_dir(self) -> Path:
        return self.settings.store or self.settings.rootdir / ".akmbench" / "store"

    def stored(self) -> StoredSamples:
        """The store's samples, read once per process and refreshed before each cell runs
        (with --bench-fresh only what is appended after the start counts)."""
        if self._stored is None:
            load = StoredSamples.after_now if self.settings.fresh else StoredSamples.load
            self._stored = load(self.store_dir)
        return self._stored

    @property
    def run_dir(self) -> Path:
        return self.tmp_root / self.run_id

    def trial(self, cell: Cell) -> Trial:
        """The cell's trial (cell/trial.py): its fingerprint computed once in this process."""
        if cell not in self._trials:
            self._trials[cell] = Trial.of(cell, self.context())
        return self._trials[cell]

    def fingerprint_hash(self, cell: Cell) -> str:
        return self.trial(cell).hash

    @property
    def tmp_root(self) -> Path:
        return self.settings.tmp or lifecycle.default_tmp_root()

    def _providers(self) -> dict[str, Any]:
        """The digest of the provider/model configuration this run's agent is given; an agent
        without providers has its model only."""
        return self.agent.provider_setup(self.model)

    def context(self) -> RunContext:
        if self._context is None:
            s = self.settings
            self._context = RunContext(
                run_id=self.run_id,
                tmp_root=self.tmp_root,
                stashes_root=s.stashes_root,
                agent=self.agent,
                model=self.model,
                budget_tokens=s.budget_tokens,
                budget_wall_ms=s.budget_wall_ms,
                budget_turns=s.budget_turns,
                verify_timeout_s=s.verify_timeout,
                keep_runs=s.keep_runs,
                akm=self.akm,
                # A remote worker stages its transcripts for the controller, never in a store here.
                transcripts_dir=self.remote.staging if self.remote is not None else self.store_dir,
                sandbox=self.sandbox,
                sandbox_ro=s.sandbox_ro,
                network=s.network,
                providers=self._providers(),
                cleaner=self.cleaner,
                **run_caps(s),
            )
        return self._context


def register(config: pytest.Config, state: BenchState, plugin: object, name: str) -> None:
    """Register one of this run's plugins: ``pytest_unconfigure`` unregisters every one of them,
    and the features find each other in ``state.plugins`` rather than by pytest's name lookup."""
    config.pluginmanager.register(plugin, name)
    state.plugins[name] = plugin
