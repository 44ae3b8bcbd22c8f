"""The evolve track with real akm, through pytest, the real opencode binary and the scripted model.

The scripted ``learner`` agent fails a task until the stash holds a lesson on its gold asset, so
the train cells fail, their negative feedback crosses the threshold, akm 0.7's ``distill`` and
``reflect`` (akm 0.9's ``improve``) ask the scripted ``lesson`` model for a lesson and a
revision, the step accepts them, and the post cells pass while the pre and control cells (the
untouched stash) keep failing. With the ``garbage`` model akm refuses every answer: nothing is
accepted and the report says so. A run cut short by ``-x`` or Ctrl-C resumes without rerunning
a finished cell or the proposal step.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_akmbench.cell import akm
from pytest_akmbench.tracks.evolve import core as evolve
from tests.support import opencode as oc
from tests.support import real_akm
from tests.support.bench import samples as store_samples
from tests.support.waiting import wait_until

ROOT = real_akm.ROOT
# Two train tasks on skill:shipyard-manifest (two negatives cross the threshold) and one eval
# task on the same asset: 6 cells and one proposal step.
TASKS = "shipyard/lint-command,shipyard/new-manifest,shipyard/fix-manifest"


def argv(out: Path, info: akm.AkmInfo, *args: str) -> list[str]:
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", "corpus"]
    cmd += ["--bench-track", "evolve", "--bench-tasks", TASKS, "--bench-seeds", "1"]
    cmd += ["--bench-model", "scripted/learner", "--bench-akm", str(info.path), "--bench-opencode", str(oc.binary())]
    cmd += [
        "--bench-store",
        str(out / "store"),
        "--bench-report",
        str(out / "report"),
        "--bench-tmp",
        str(out / "cells"),
    ]
    return [*cmd, *args]


def bench(out: Path, info: akm.AkmInfo, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv(out, info, *args), cwd=ROOT, capture_output=True, text=True, timeout=1200)


def interrupted(out: Path, info: akm.AkmInfo, after: int) -> int:
    """Run, and press Ctrl-C once the store holds ``after`` samples; the run's exit status."""
    proc = subprocess.Popen(argv(out, info), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        store = out / "store" / "samples.jsonl"
        wait_until(
            lambda: store.is_file() and store.read_bytes().count(b"\n") >= after,
            f"the store holds {after} samples",
            timeout=900,
            proc=proc,
            every=0.2,
        )
        proc.send_signal(signal.SIGINT)
        return proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def samples(out: Path) -> list[dict[str, Any]]:
    return store_samples(out / "store")


def report(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "report" / "report.json").read_text())
    return data


@pytest.fixture(scope="module")
def info() -> akm.AkmInfo:
    found = real_akm.get("0.7.0")  # distill, reflect + proposal; 0.9 folded them into improve
    return found


@pytest.fixture(scope="module")
def learned(info: akm.AkmInfo, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A run stopped by -x at its first failing cell, one interrupted by Ctrl-C after the next
    cell, then one resumed to the end, then one more that finds everything stored.

    Built once per test run: under xdist the workers share it (the tests that use it only read
    it, or copy its store), so the second worker waits for the first instead of building a copy.
    """
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # the run's own dir
    out, done = root / "evolve-learned", root / "evolve-learned.json"
    with (root / "evolve-learned.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(out, ignore_errors=True)  # a build that failed in the other worker
            out.mkdir()
            outputs = [bench(out, info, "-x").stdout]
            assert len(samples(out)) == 1, outputs[0][-2000:]
            assert interrupted(out, info, after=2) == pytest.ExitCode.INTERRUPTED
            assert 2 <= len(samples(out)) < 6
            outputs.append(bench(out, info).stdout)
            outputs.append(bench(out, info).stdout)
            done.write_text(json.dumps(outputs))
    return out, json.loads(done.read_text())


def test_post_beats_pre_with_the_control_flat(learned: tuple[Path, list[str]]) -> None:
    out, outputs = learned
    env = report(out)
    assert env["track"] == "evolve", outputs[1][-3000:]
    lon = env["longitudinal"]
    assert lon["pre_pass_rate"] == 0.0 and lon["post_pass_rate"] == 1.0, outputs[1][-3000:]
    assert lon["control_delta"] == 0.0 and lon["control_pass_rate"] == 0.0
    assert env["phases"]["train"]["pass_rate"] == 0.0
    assert env["proposals"]["total_accepted"] == 2
    assert [(r["asset_ref"], r["accepted_count"]) for r in env["proposals"]["rows"]] == [
        ("lesson:skill-shipyard-manifest-lesson", 1), ("skill:shipyard-manifest", 1)
    ]  # fmt: skip
    assert sorted(p["verb"] for p in env["proposals"]["log"]) == ["distill", "reflect"]
    lesson = env["lessons"]["lessons"][0]
    assert lesson["accepted"] and lesson["reuse_count"] == 1 and lesson["reuse_pass_rate"] == 1.0
    # One eval task cannot make an interval exclude 0: no improvement is claimed, and it says why.
    assert env["improvement"]["claimed"] is False
    assert env["verdict"].startswith("evolve: no improvement claimed (interval includes 0): post - control +1.00")
    assert "over 1 eval tasks; post - pre +1.00 [" in env["verdict"]
    assert env["leakage"]["ok"] is True
    fixture = env["leakage"]["per_fixture"][0]
    assert fixture["feedback_events"] == fixture["dispatched_from_train"] == 2
    agg = env["feedback_integrity"]["aggregate"]
    assert agg["trueNegative"] == 2 and agg["feedback_agreement"] == 1.0
    summary = (out / "report" / "summary.md").read_text()
    assert "| shipyard/fix-manifest | 0.00 | 1.00 | 0.00 | 0.00 | +1.00 |" in summary
    assert env["verdict"] in outputs[1]


def test_resume_reruns_no_finished_cell_nor_the_step(learned: tuple[Path, list[str]]) -> None:
    out, outputs = learned
    got = samples(out)
    keys = [(s["task_id"], s["condition"], s["episode"], s["seed"]) for s in got]
    assert len(keys) == len(set(keys)) == 6, keys  # no cell of the -x or the interrupted run ran again
    conditions = sorted(evolve.condition_of(s) for s in got)
    assert conditions == ["control", "post", "pre", "synthetic", "train", "train"]
    assert {s["arm"] for s in got} == {"akm", "synthetic"}  # a sample's arm is one of records.ARMS
    post = next(s for s in got if s["condition"] == "post")
    pre = next(s for s in got if s["condition"] == "pre")
    assert post["fingerprint"]["condition"] == "post" and pre["fingerprint"]["condition"] == "pre"
    assert post["fingerprint"]["stash_hash"] != pre["fingerprint"]["stash_hash"]  # the evolved stash
    assert "PASSED (from store) corpus/tasks/shipyard/lint-command/task.yaml::proposals" in outputs[2]
    assert outputs[2].count("(from store)") == 7 and "5 failed, 2 passed" in outputs[2]
    assert len(list((out / "store" / "evolve" / "shipyard").iterdir())) == 1  # one step, run once
    assert report(out)["verdict"] in outputs[2]


def test_garbage_proposals_accept_nothing_and_say_so(
    learned: tuple[Path, list[str]], info: akm.AkmInfo, tmp_path: Path
) -> None:
    """The same store with akm's LLM answering garbage, under xdist: only the step and the post
    cell run (the rest is stored), nothing is accepted, post stays at pre."""
    out, _ = learned
    shutil.copytree(out / "store", tmp_path / "store")
    before = len(samples(tmp_path))
    proc = bench(tmp_path, info, "--bench-evolve-llm", "scripted/garbage", "-n", "2")
    env = report(tmp_path)
    assert env["proposals"]["total_accepted"] == 0 and env["proposals"]["total_proposals"] == 0, proc.stdout[-3000:]
    assert [(g["verb"], g["outcome"]) for g in env["proposals"]["generation"]] == [
        ("distill", "failed"), ("reflect", "failed")
    ]  # fmt: skip
    assert env["lessons"]["lessons_accepted_count"] == 0
    assert env["longitudinal"]["post_pass_rate"] == 0.0
    assert env["verdict"].endswith("0 of 0 proposals accepted")
    assert "_No proposal was accepted: none was generated._" in (tmp_path / "report" / "summary.md").read_text()
    assert "Distilled lesson failed validation" in json.dumps(env["proposals"]["generation"])
    assert len(samples(tmp_path)) == before + 1  # only the post cell ran again


def test_akm_09_improve_post_beats_pre_and_garbage_accepts_nothing(tmp_path: Path) -> None:
    """akm 0.9: the step drives ``akm improve``; its revision of the gold skill (with the lesson
    section the learner reads) is validated by akm and accepted, post passes while pre and the
    control fail. Then akm's LLM answers garbage on a copy of the store: only the step and the
    post cell run again, improve queues nothing, and the report says so."""
    info = real_akm.get("0.9.0")
    out = tmp_path / "lesson"
    proc = bench(out, info)
    env = report(out)
    lon = env["longitudinal"]
    assert (lon["pre_pass_rate"], lon["post_pass_rate"], lon["control_pass_rate"]) == (0.0, 1.0, 0.0), proc.stdout[
        -3000:
    ]
    [row] = env["proposals"]["log"]
    assert (row["target_ref"], row["kind"], row["verb"], row["decision"]) == (
        "skills/shipyard-manifest", "revision", "improve", "accept"
    )  # fmt: skip
    assert env["akm"]["version"] == "0.9.0" and env["warnings"] == []
    assert env["verdict"].endswith("1 of 1 proposals accepted") and env["verdict"] in proc.stdout
    garbage = tmp_path / "garbage"
    shutil.copytree(out / "store", garbage / "store")
    before = len(samples(garbage))
    proc = bench(garbage, info, "--bench-evolve-llm", "scripted/garbage")
    env = report(garbage)
    [gen] = env["proposals"]["generation"]
    assert (gen["verb"], gen["outcome"]) == ("improve", "failed"), proc.stdout[-3000:]
    assert "AKM_REFLECT_CONTENT_BEGIN" in gen["message"]
    assert env["proposals"]["total_proposals"] == 0 and env["longitudinal"]["post_pass_rate"] == 0.0
    assert env["verdict"].endswith("0 of 0 proposals accepted")
    summary = (garbage / "report" / "summary.md").read_text()
    assert "_No proposal was accepted: none was generated._" in summary
    assert "- improve skill:shipyard-manifest: failed: direct reflect response missing" in summary
    assert len(samples(garbage)) == before + 1  # only the post cell ran again


def test_a_second_episode_extends_the_run_into_a_learning_curve(
    learned: tuple[Path, list[str]], info: akm.AkmInfo, tmp_path: Path
) -> None:
    """The one-episode store, rerun with two episodes (akm 0.7): episode 1 comes from the store;
    episode 2's train cells run on episode 1's evolved stash and pass, so its step evolves
    nothing, and its post cell passes: a flat curve at 1.00, called a plateau. A rerun finds
    every cell and both steps in the store."""
    out, _ = learned
    shutil.copytree(out / "store", tmp_path / "store")
    before = len(samples(tmp_path))
    proc = bench(tmp_path, info, "--bench-evolve-episodes", "2")
    env = report(tmp_path)
    learning = env["learning"]
    points = [(p["episode"], p["post_pass_rate"], p["train_pass_rate"]) for p in learning["episodes"]]
    assert points == [(1, 1.0, 0.0), (2, 1.0, 1.0)], proc.stdout[-3000:]
    assert learning["pre_pass_rate"] == 0.0 and learning["time_to_improvement"] == 1
    assert learning["trend"] == "plateau" and learning["slope"]["slope"] == 0.0
    assert learning["slope"]["p_value"] is None  # two episodes: no degree of freedom across episodes
    assert not learning["last_below_best"] and env["corpus"]["episodes"] == 2
    assert {p["episode"] for p in env["proposals"]["log"]} == {1}  # episode 2 had nothing to fix
    assert "learning over 2 episodes: plateau, slope +0.00/episode" in env["verdict"]
    got = samples(tmp_path)
    new = sorted(evolve.condition_of(s) for s in got[before:])  # only episode 2 ran: episode 1 is the stored run's
    assert new == ["post-e2", "train-e2", "train-e2"], new
    post2 = next(s for s in got if evolve.condition_of(s) == "post-e2")
    assert post2["fingerprint"]["episode"] == 2 and "episode" not in got[0]["fingerprint"]
    assert "PASSED (from store) corpus/tasks/shipyard/lint-command/task.yaml::proposals" in proc.stdout
    assert "| 2 | 1.00 [" in (tmp_path / "report" / "summary.md").read_text()
    again = bench(tmp_path, info, "--bench-evolve-episodes", "2").stdout
    assert again.count("(from store)") == 11 and len(samples(tmp_path)) == len(got), again[-2000:]
    assert "PASSED (from store) corpus/tasks/shipyard/lint-command/task.yaml::proposals-e2" in again
