"""Each track's pytest wiring, in one table: how its Track is made, its hooks, the check once
the agent has started, and the controller's session (docs/architecture.md, "Where to add": a
track). Everything else a track does, it declares on its Track (tracks/track.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from ..tracks.evolve.track import EvolveTrack
from ..tracks.track import SoundnessTrack, Track, chosen
from . import attribute, evolve
from .evolve_session import EvolveSession
from .session import BenchSession
from .state import BenchState


def _nothing(*_: object) -> None:
    return None


@dataclass(frozen=True, slots=True)
class Wiring:
    make: Callable[[pytest.Config, BenchState], Track]  # once the corpus is loaded
    session: Callable[[BenchState, pytest.Config], object] = BenchSession  # the controller's
    install: Callable[[pytest.Config, BenchState], None] = _nothing  # its hooks, after the run's features
    check: Callable[[BenchState], None] = _nothing  # on the controller, once the agent has started


WIRING = {
    "utility": Wiring(make=lambda config, state: Track()),
    "soundness": Wiring(make=lambda config, state: SoundnessTrack()),
    "attribute": Wiring(make=attribute.setup, session=attribute.AttributeSession, check=attribute.check_base),
    "evolve": Wiring(make=lambda config, state: EvolveTrack(state), session=EvolveSession, install=evolve.install),
}


def of(state: BenchState) -> Wiring:
    return WIRING[state.track.name]


def setup(config: pytest.Config, state: BenchState) -> None:
    """The run's track, chosen by its settings (a BenchError says why it cannot be made)."""
    state.track = WIRING[chosen(state.settings)].make(config, state)
