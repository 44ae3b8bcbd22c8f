"""Each track's pytest wiring, in one table: how its Track is made, its hooks, the check once
the agent has started, and the controller's session (docs/architecture.md, "Where to add": a
track). Everything else a track does, it declares on its Track (tracks/track.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from ..tracks.track import SoundnessTrack, Track, chosen

if TYPE_CHECKING:
    from .state import BenchState

# A track's modules and the controller's session (the report, compare, lift, adaptive and evolve
# code below them) are imported when a run of that track needs them, not at start-up: a `--co`
# uses none of them (benchmarks/README.md, "Collection, third pass").


def _nothing(*_: object) -> None:
    return None


def _bench_session(state: BenchState, config: pytest.Config) -> object:
    from .session import BenchSession  # the controller's, once a run starts: not for --co

    return BenchSession(state, config)


@dataclass(frozen=True, slots=True)
class Wiring:
    make: Callable[[pytest.Config, BenchState], Track]  # once the corpus is loaded
    session: Callable[[BenchState, pytest.Config], object] = _bench_session  # the controller's
    install: Callable[[pytest.Config, BenchState], None] = _nothing  # its hooks, after the run's features
    check: Callable[[BenchState], None] = _nothing  # on the controller, once the agent has started


def _attribute() -> Wiring:
    from . import attribute  # an attribute run's only

    return Wiring(make=attribute.setup, session=attribute.AttributeSession, check=attribute.check_base)


def _evolve() -> Wiring:
    from ..tracks.evolve.track import EvolveTrack  # an evolve run's only
    from . import evolve
    from .evolve_session import EvolveSession

    return Wiring(make=lambda config, state: EvolveTrack(state), session=EvolveSession, install=evolve.install)


WIRING: dict[str, Callable[[], Wiring]] = {
    "utility": lambda: Wiring(make=lambda config, state: Track()),
    "soundness": lambda: Wiring(make=lambda config, state: SoundnessTrack()),
    "attribute": _attribute,
    "evolve": _evolve,
}


def wired(name: str) -> Wiring:
    """The track's wiring, its modules imported on first use. Made on every call, never kept: a
    kept one would hold the classes of a module that pytester's in-process runs unload."""
    return WIRING[name]()


def of(state: BenchState) -> Wiring:
    return wired(state.track.name)


def setup(config: pytest.Config, state: BenchState) -> None:
    """The run's track, chosen by its settings (a BenchError says why it cannot be made)."""
    state.track = wired(chosen(state.settings)).make(config, state)
