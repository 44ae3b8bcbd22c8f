"""Every track by its name, without pytest: what a command asks of a track it does not run
(``validate``: the selection a run config's track needs). plugin/wiring.py has each one's
pytest wiring; tests/core/test_tracks.py checks that both know the same tracks."""

from __future__ import annotations

from .attribute.track import AttributeTrack
from .evolve.track import EvolveTrack
from .track import SoundnessTrack, Track

CLASSES: dict[str, type[Track]] = {t.name: t for t in (Track, SoundnessTrack, AttributeTrack, EvolveTrack)}


def named(name: object) -> type[Track]:
    """The track a run config's ``track`` field names; utility when it names none."""
    return CLASSES[name] if isinstance(name, str) and name in CLASSES else Track
