"""The Track protocol (tracks/track.py): each track declares what it supports, and the features
refuse the others with the track's own sentence; the items a task yields, without pytest."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_akmbench.agents import OracleAgent
from pytest_akmbench.corpus.config import Settings
from pytest_akmbench.corpus.config_fields import TRACKS
from pytest_akmbench.corpus.tasks import load_corpus
from pytest_akmbench.errors import ConfigError, CorpusError
from pytest_akmbench.run.resume import StoredSamples
from pytest_akmbench.tracks import catalog
from pytest_akmbench.tracks.attribute.track import AttributeTrack
from pytest_akmbench.tracks.evolve.track import EvolveTrack
from pytest_akmbench.tracks.track import ADAPTIVE, CAPS, FEATURES, REMOTE, SHARDS, SoundnessTrack, Track, chosen

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = Settings(rootdir=ROOT, tasks_root=ROOT / "corpus" / "tasks", stashes_root=ROOT / "corpus" / "stashes")


def test_the_tracks_import_without_pytest() -> None:
    modules = (
        "pytest_akmbench.tracks.track, pytest_akmbench.tracks.attribute.track, pytest_akmbench.tracks.evolve.track"
    )
    code = f"import sys, {modules}; print('pytest' in sys.modules or '_pytest' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_every_track_the_settings_name_has_a_class() -> None:
    names = {Track.name, SoundnessTrack.name, AttributeTrack.name, EvolveTrack.name}
    assert set(TRACKS) | {"soundness"} == names == set(catalog.CLASSES)
    assert catalog.named(None) is Track and catalog.named("evolve") is EvolveTrack


def test_a_track_checks_the_selection_it_runs() -> None:
    corpus = load_corpus(SETTINGS.tasks_root, SETTINGS.stashes_root)
    eval_only = [t for t in corpus.tasks if t.slice == "eval"]
    for track in (Track, SoundnessTrack, AttributeTrack):
        track.check_selection(eval_only)  # no refusal
    EvolveTrack.check_selection(corpus.tasks)
    with pytest.raises(CorpusError, match=r"^evolve: domain '.+' has no train-slice task in the selection"):
        EvolveTrack.check_selection(eval_only)


def test_utility_supports_every_feature() -> None:
    assert all(Track().refusal(f) is None and Track().wants(f) for f in FEATURES)


@pytest.mark.parametrize("track", [AttributeTrack(), EvolveTrack.__new__(EvolveTrack)])
def test_other_tracks_refuse_every_feature_by_name(track: Track) -> None:
    name = track.name
    assert track.refusal(SHARDS) == f"splits utility runs only; run the {name} track without it"
    assert track.refusal(CAPS) == f"spend caps apply to utility runs only; run the {name} track without it"
    assert track.refusal(ADAPTIVE) == "adaptive seeds are for utility runs; drop it for this track or --bench-soundness"
    assert track.refusal(REMOTE) == f"the {name} track runs on this machine's workers: drop --tx {{tx}} (use -n)"


def test_soundness_shards_ignores_caps_and_stays_on_this_machine() -> None:
    track = SoundnessTrack()
    assert track.refusal(SHARDS) is None and track.wants(SHARDS)
    assert track.refusal(CAPS) is None and not track.wants(CAPS)
    assert track.refusal(REMOTE) == "--bench-soundness runs on this machine: drop --tx {tx}"
    assert track.refusal(ADAPTIVE) is not None
    assert not track.runs_agent and track.report_subdir == "soundness"


def test_the_settings_choose_the_track() -> None:
    assert chosen(SETTINGS) == "utility"
    assert chosen(dataclasses.replace(SETTINGS, track="evolve")) == "evolve"
    assert chosen(dataclasses.replace(SETTINGS, soundness=True)) == "soundness"
    with pytest.raises(
        ConfigError, match=r"^--bench-track: --bench-soundness checks the corpus; drop the evolve track$"
    ):
        chosen(dataclasses.replace(SETTINGS, soundness=True, track="evolve"))
    from_config = dataclasses.replace(
        SETTINGS, soundness=True, track="attribute", origins={"track": "bench.json track"}
    )
    with pytest.raises(ConfigError, match=r"^bench.json track: --bench-soundness checks the corpus") as err:
        chosen(from_config)
    assert err.value.usage is True  # a usage error: pytest's exit status 4


def test_the_items_of_a_task() -> None:
    task = load_corpus(SETTINGS.tasks_root, SETTINGS.stashes_root).tasks[0]
    settings = dataclasses.replace(SETTINGS, arms=("noakm", "akm"), seeds=2)
    items = list(Track().items(task, settings))
    assert [(i.kind, i.name) for i in items] == [("cell", c) for c in ("noakm-s1", "noakm-s2", "akm-s1", "akm-s2")]
    assert [(i.cell.arm, i.cell.seed) for i in items if i.cell is not None] == [
        (a, s) for a in ("noakm", "akm") for s in (1, 2)
    ]
    assert [(i.kind, i.name) for i in SoundnessTrack().items(task, settings)] == [("check", "soundness")]
    assert SoundnessTrack().arms(settings) == () and Track().arms(settings) == ("noakm", "akm")


def test_every_track_has_one_row_of_pytest_wiring() -> None:
    from pytest_akmbench.plugin.wiring import WIRING

    assert set(WIRING) == set(TRACKS) | {SoundnessTrack.name}


class Counted:
    """``cell_fingerprint`` wrapped wherever the package calls it, each computation counted."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from pytest_akmbench.cell import context

        self.cells: list[object] = []
        self.real = context.cell_fingerprint
        for module in list(sys.modules.values()):
            if module.__name__.startswith("pytest_akmbench") and vars(module).get("cell_fingerprint") is self.real:
                monkeypatch.setattr(module, "cell_fingerprint", self)

    def __call__(self, cell: Any, ctx: Any) -> dict[str, Any]:
        self.cells.append(cell)
        return self.real(cell, ctx)


def test_an_evolve_cell_is_fingerprinted_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.core.test_runner import context
    from tests.support.corpus import standard_corpus

    tasks_root, stashes = standard_corpus(tmp_path)
    task = load_corpus(tasks_root, stashes).by_id()["alpha/script-task"]
    ctx = context(tmp_path, OracleAgent())
    run = SimpleNamespace(settings=SimpleNamespace(evolve_episodes=1), context=lambda: ctx, stored=StoredSamples)
    track = EvolveTrack(run)  # type: ignore[arg-type]
    counted = Counted(monkeypatch)
    first = track.trial(task, "pre", 1, ctx)  # the cell's item
    assert track.stored(task, "pre", 1, ctx) is None  # the session's report, the next step's inputs
    assert track.trial(task, "pre", 1, ctx) is first and len(counted.cells) == 1
    shutil.copytree(stashes, tmp_path / "evolved")
    post = dataclasses.replace(ctx, stashes_root=tmp_path / "evolved", _hashes={})  # an episode's evolved stash
    assert track.trial(task, "post", 1, post) is track.trial(task, "post", 1, post)
    assert track.trial(task, "control", 1, ctx).hash != first.hash
    assert len(counted.cells) == 3
