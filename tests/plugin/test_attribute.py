"""The attribute track's collection and refusals through pytest: no agent runs here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_akmbench.cell.trial import Trial
from tests.akm.test_attribute import TASKS, corpus


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    tasks = tmp_path / "corpus" / "tasks"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", str(tasks), "--bench-corpus", str(tasks)]
        + ["--bench-stashes", str(tmp_path / "corpus" / "stashes"), "--bench-store", str(tmp_path / "store"), *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )


def write_base(tmp_path: Path) -> Path:
    """A base report by hand: greeting-rule loaded on every task, greeting-lore on three, and a
    harness error whose loads never count."""
    runs = [
        {"task_id": t, "arm": "akm", "seed": s, "outcome": "pass", "assets_loaded": ["skills/greeting-rule"]}
        for t in TASKS
        for s in (1, 2)
    ]
    for t in TASKS[:3]:
        runs.append(
            {"task_id": t, "arm": "akm", "seed": 3, "outcome": "fail", "assets_loaded": ["skill:greeting-lore"]}
        )
    runs.append(
        {"task_id": TASKS[6], "arm": "akm", "seed": 3, "outcome": "harness_error", "assets_loaded": ["skill:x"]}
    )
    path = tmp_path / "base.json"
    path.write_text(json.dumps({"track": "utility", "corpus": {"seedsPerArm": 3}, "runs": runs}))
    return path


def test_cells_are_task_masked_asset_seed_with_stable_ids(tmp_path: Path) -> None:
    corpus(tmp_path)
    base = write_base(tmp_path)
    listed = run(tmp_path, "--bench-track", "attribute", "--bench-base", str(base), "--co", "-q")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    ids = [line.split("::")[1] for line in listed.stdout.splitlines() if "::" in line]
    # Seeds are the base's (3); greeting-lore only on the three tasks that loaded it; skill:x
    # (a harness error's load) never; each task's unmasked rerun at the seeds after the base's.
    assert len(ids) == 7 * 3 + 3 * 3 + 7 * 3
    assert ids[:7] == [
        "akm-s4",
        "akm-s5",
        "akm-s6",
        "akm-mask[skill:greeting-rule]-s1",
        "akm-mask[skill:greeting-rule]-s2",
        "akm-mask[skill:greeting-rule]-s3",
        "akm-mask[skill:greeting-lore]-s1",
    ]
    assert not any("skill:x" in i for i in ids)
    lore = run(
        tmp_path,
        "--bench-track",
        "attribute",
        "--bench-base",
        str(base),
        "--co",
        "-q",
        "-m",
        "cell(mask='skill:greeting-lore')",
    )
    lore_ids = [line for line in lore.stdout.splitlines() if "::" in line]
    assert len(lore_ids) == 9 and all("greeting-lore" in i for i in lore_ids), lore.stdout
    top1 = ["--bench-track", "attribute", "--bench-base", str(base), "--bench-top", "1", "--bench-seeds", "1"]
    only = run(tmp_path, *top1, "--co", "-q")
    assert [line.split("::")[1] for line in only.stdout.splitlines() if "::" in line] == [
        "akm-s4",  # the one unmasked rerun: the seed after the base's three
        "akm-mask[skill:greeting-rule]-s1",
    ] * 7


def test_bad_base_is_one_line(tmp_path: Path) -> None:
    """A missing, non-JSON or non-utility --bench-base stops the run with one line naming it."""
    corpus(tmp_path)
    (tmp_path / "junk.json").write_text("{not json")
    (tmp_path / "attr.json").write_text('{"track": "attribute", "runs": []}')
    (tmp_path / "empty.json").write_text('{"track": "utility", "runs": []}')
    cases = {
        "missing.json": "base report not found",
        "junk.json": "not JSON",
        "attr.json": "the base of attribute is a utility report",
        "empty.json": "the base has no akm-arm run",
    }
    for name, words in cases.items():
        proc = run(tmp_path, "--bench-track", "attribute", "--bench-base", str(tmp_path / name))
        assert proc.returncode == 4, proc.stdout + proc.stderr
        errors = [line for line in proc.stderr.splitlines() if line.strip()]
        assert len(errors) == 1 and errors[0].startswith(f"ERROR: --bench-base {tmp_path / name}: "), proc.stderr
        assert words in errors[0]
        assert not (tmp_path / "store").exists()
    proc = run(tmp_path, "--bench-track", "attribute")
    assert proc.returncode == 4 and proc.stderr.strip() == (
        "ERROR: --bench-track attribute: needs --bench-base <report.json of a utility run> (or base in the run config)"
    )


@pytest.mark.parametrize("value", ["attrib", "bogus"])
def test_other_tracks_are_refused_in_one_line(tmp_path: Path, value: str) -> None:
    corpus(tmp_path)
    proc = run(tmp_path, "--bench-track", value)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("ERROR: --bench-track: ") and "Traceback" not in proc.stderr


def test_a_run_config_as_base_uses_the_report_its_run_wrote(tmp_path: Path) -> None:
    """--bench-base configs/x.json: the report.json in the report directory, checked to be the
    config's run; every way that fails is one line naming the config and the fix."""
    corpus(tmp_path)
    configs = tmp_path / "configs"
    configs.mkdir()
    good = configs / "base.json"
    good.write_text(json.dumps({"schemaVersion": 1, "name": "base", "tasks": "greet", "arms": ["akm"], "seeds": 3}))
    report_dir = tmp_path / "out"
    listed_args = ("--bench-track", "attribute", "--bench-report", str(report_dir), "--co", "-q")
    missing = run(tmp_path, *listed_args, "--bench-base", str(good))
    assert missing.returncode == 4, missing.stdout + missing.stderr
    assert missing.stderr.strip() == (
        f"ERROR: --bench-base {good}: its run's report {report_dir / 'report.json'} does not exist; run "
        f"`pytest --bench-config {good}` first, or pass --bench-report with the directory its run wrote to"
    )
    report_dir.mkdir()
    data = json.loads(write_base(tmp_path).read_text())
    (report_dir / "report.json").write_text(
        json.dumps({**data, "corpus": {"seedsPerArm": 3, "selectedTaskIds": TASKS}})
    )
    via_config = run(tmp_path, *listed_args, "--bench-base", str(good))
    via_report = run(tmp_path, *listed_args, "--bench-base", str(report_dir / "report.json"))
    assert via_config.returncode == 0, via_config.stdout + via_config.stderr
    cells = [line for line in via_config.stdout.splitlines() if "::" in line]
    assert len(cells) == 7 * 3 + 3 * 3 + 7 * 3 and cells == [
        line for line in via_report.stdout.splitlines() if "::" in line
    ]

    other = configs / "other.json"
    cases = {
        json.dumps({"schemaVersion": 1, "tasks": ["greet/t1"], "arms": ["akm"]}): "is not its run's report (it ran "
        "greet/t2, which the config does not select)",
        json.dumps({"schemaVersion": 1, "track": "evolve"}): "a run config of the evolve track",
        json.dumps({"schemaVersion": 1, "arms": ["noakm"]}): "its arms (noakm) leave out akm",
        json.dumps({"schemaVersion": 1, "tasks": "nodomain"}): "no task with id or domain 'nodomain'",
        json.dumps({"schemaVersion": 1, "seeds": "three"}): str(other),
    }
    for text, words in cases.items():
        other.write_text(text)
        proc = run(tmp_path, *listed_args, "--bench-base", str(other))
        errors = [line for line in proc.stderr.splitlines() if line.strip()]
        assert proc.returncode == 4 and len(errors) == 1, proc.stdout + proc.stderr
        assert errors[0].startswith("ERROR: ") and words in errors[0] and "Traceback" not in proc.stderr


def test_the_check_against_the_base_takes_the_runs_fingerprints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each task's plain akm cell is fingerprinted once in the process, by the check or a cell."""
    from pytest_akmbench.agents import OracleAgent
    from pytest_akmbench.cell.context import Cell
    from pytest_akmbench.corpus.config import Settings
    from pytest_akmbench.corpus.tasks import load_corpus
    from pytest_akmbench.plugin.attribute import check_base, providers_setup
    from pytest_akmbench.plugin.state import BenchState
    from pytest_akmbench.tracks.attribute.core import Base
    from pytest_akmbench.tracks.attribute.track import AttributeTrack, Plan
    from tests.core.test_tracks import Counted

    tasks_root, stashes = corpus(tmp_path)
    loaded = load_corpus(tasks_root, stashes)
    settings = Settings(rootdir=tmp_path, tasks_root=tasks_root, stashes_root=stashes, store=tmp_path / "store")
    state = BenchState(settings, loaded, list(loaded.tasks), "", {}, {}, set(), False, run_id="r", agent=OracleAgent())
    probes = [Cell(t, "akm", 1) for t in loaded.tasks]
    hashes = frozenset(Trial.of(c, state.context()).hash for c in probes)
    base = Base(tmp_path / "base.json", None, None, 2, tuple(TASKS), (), hashes, True, providers_setup(state))
    state.track = AttributeTrack()
    state.track.plan = Plan(base, (), 0, {})
    counted = Counted(monkeypatch)
    check_base(state)
    assert [state.fingerprint_hash(c) for c in probes] and counted.cells == probes
