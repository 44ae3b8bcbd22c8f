"""A path given to a --bench-* option is never taken for a test path (issue 29, item 4).

pytest chooses its rootdir and ini file before it loads this plugin, so in `--bench-akm PATH` it
took PATH for a test path: `--bench-akm <another checkout>/...` benchmarked that checkout's
corpus into its store, `--bench-config /abs/x.json` from another directory wrote the store
beside the config, and `--bench-report <outside>` under -n 2 split the store between the
controller and its workers. The `=` form never did; both forms must behave the same.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.bench import INI, samples
from tests.support.corpus import standard_corpus, write_stash, write_task

ROOT = Path(__file__).resolve().parents[2]
FORMS = ["space", "equals"]


def option(name: str, value: Path | str, form: str) -> list[str]:
    return [name, str(value)] if form == "space" else [f"{name}={value}"]


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


@pytest.fixture
def two_projects(tmp_path: Path) -> tuple[Path, Path]:
    """This project (one task) and another checkout beside it (three tasks, an ini whose addopts
    would add a seed), each with its own corpus and ini."""
    here, other = tmp_path / "here", tmp_path / "other"
    tasks = here / "corpus" / "tasks"
    write_stash(here / "corpus" / "stashes")
    write_task(tasks, "mine/only-task")
    (here / "pytest.ini").write_text(INI)
    standard_corpus(other)
    (other / "pytest.ini").write_text(INI + "addopts = --bench-seeds 2\n")
    (other / "tools").mkdir()
    (other / "tools" / "akm").write_text("#!/bin/sh\nexit 1\n")
    return here, other


@pytest.mark.parametrize("form", FORMS)
def test_a_path_into_another_checkout_leaves_the_corpus_and_store_here(
    two_projects: tuple[Path, Path], form: str
) -> None:
    here, other = two_projects
    proc = run(
        here,
        "--bench-agent",
        "oracle",
        "--bench-arms",
        "noakm",
        "--bench-seeds",
        "1",
        *option("--bench-akm", other / "tools" / "akm", form),
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert f"rootdir: {here}" in out and "1 passed" in out, out
    assert [s["task_id"] for s in samples(here / ".akmbench" / "store")] == ["mine/only-task"]
    assert not (other / ".akmbench").exists()


@pytest.mark.parametrize("form", FORMS)
def test_a_config_by_absolute_path_stores_where_pytest_starts(two_projects: tuple[Path, Path], form: str) -> None:
    """README, "Run configs": the store and report go under the directory pytest starts in."""
    here, _ = two_projects
    (here / "configs").mkdir()
    config = here / "configs" / "one.json"
    config.write_text(json.dumps({"schemaVersion": 1, "agent": "oracle", "arms": ["noakm"], "seeds": 1}))
    start = here.parent / "elsewhere"
    start.mkdir()
    proc = run(start, *option("--bench-config", config, form))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert len(samples(start / ".akmbench" / "store")) == 1, out
    assert (start / ".akmbench" / "report" / "report.json").is_file()
    assert not (here / ".akmbench").exists()


@pytest.mark.parametrize("form", FORMS)
def test_a_report_dir_outside_keeps_one_store_under_xdist(two_projects: tuple[Path, Path], form: str) -> None:
    _, other = two_projects
    (other / "configs").mkdir()
    (other / "configs" / "c.json").write_text(
        json.dumps({"schemaVersion": 1, "agent": "oracle", "arms": ["noakm"], "seeds": 1})
    )
    outside = other.parent / "out"
    outside.mkdir()
    proc = run(other, "--bench-config=configs/c.json", "-n", "2", *option("--bench-report", outside, form))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    report = json.loads((outside / "report.json").read_text())
    assert report["complete"] is True and not any(w.startswith("report mismatch") for w in report["warnings"])
    # The ini's addopts (two seeds) apply: it is this project's ini, whichever form.
    assert len(report["runs"]) == 3 * 2 == len(samples(other / ".akmbench" / "store"))
    assert not (outside / ".akmbench").exists()
