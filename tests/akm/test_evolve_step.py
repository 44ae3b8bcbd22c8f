"""The evolve track's proposal step alone, against real akm: feedback from train samples,
akm 0.7's distill and reflect and akm 0.9's improve answered by the scripted model, the lint
verdict, accept, re-index, the evolved stash and the leakage check. No agent runs: the train
samples are given."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pytest_akmbench.cell import akm
from pytest_akmbench.corpus.hashes import fixture_hash
from pytest_akmbench.corpus.tasks import load_corpus
from pytest_akmbench.system.procs import ProcessTracker
from pytest_akmbench.tracks.evolve import core as evolve
from tests.support import real_akm
from tests.support.procs import processes_under

ROOT = real_akm.ROOT
STASHES = ROOT / "corpus" / "stashes"


def shipyard() -> evolve.DomainPlan:
    corpus = load_corpus(ROOT / "corpus" / "tasks", STASHES)
    wanted = {"shipyard/lint-command", "shipyard/new-manifest", "shipyard/fix-manifest"}
    return evolve.plan([t for t in corpus.tasks if t.id in wanted])[0]


def train(outcome: str, agent_signal: str | None = None) -> list[dict[str, Any]]:
    return [
        {"task_id": t, "seed": 1, "outcome": outcome, "fingerprint_hash": "f", "started_at": "t",
         "trajectory": {"feedback_polarity": agent_signal}}
        for t in ("shipyard/lint-command", "shipyard/new-manifest")
    ]  # fmt: skip


def step(info: akm.AkmInfo, tmp_path: Path, llm: str, samples: list[dict[str, Any]]) -> dict[str, Any]:
    plan = shipyard()
    inputs = evolve.step_input(plan, samples, info, llm, STASHES)
    directory = evolve.step_dir(tmp_path / "store", plan.domain, inputs)
    tracker = ProcessTracker(f"evolve-step-test/{tmp_path.name}")
    try:
        with evolve.llm_endpoint(llm) as url:
            record = evolve.run_step(
                plan, samples, inputs, info=info, stashes_root=STASHES, directory=directory, llm_url=url, procs=tracker
            )
    finally:
        tracker.kill_all()
    assert evolve.load_step(directory) == record
    part: dict[str, Any] = record["fixtures"]["shipyard"]
    part["evolved"] = directory / "evolved" / "shipyard"
    return part


def test_a_lesson_is_distilled_a_revision_reflected_both_accepted_and_published(tmp_path: Path) -> None:
    info = real_akm.get("0.7.0")
    started = time.monotonic()
    part = step(info, tmp_path, "scripted/lesson", train("fail", "negative"))
    # akm 0.7's reflect, once it has printed its proposal, lingers on a timer for its agent
    # timeout + 2 s (122 s); the step ends it instead (a step without reflect takes seconds).
    assert time.monotonic() - started < 110, "the step waited out reflect's agent timeout"
    assert [(e["signal"], e["ok"]) for e in part["feedback"]] == [("negative", True)] * 2
    assert part["evolved_refs"] == ["skill:shipyard-manifest"]
    assert [(g["verb"], g["outcome"]) for g in part["generation"]] == [("distill", "queued"), ("reflect", "queued")]
    rows = [(r["target_ref"], r["kind"], r["verb"], r["lint_pass"], r["decision"]) for r in part["proposals"]]
    assert sorted(rows) == [
        ("lesson:skill-shipyard-manifest-lesson", "lesson", "distill", True, "accept"),
        ("skill:shipyard-manifest", "revision", "reflect", True, "accept"),
    ]
    lesson = part["evolved"] / "lessons" / "skill-shipyard-manifest-lesson.md"
    assert "when_to_use: Before working on a task that needs skill:shipyard-manifest" in lesson.read_text()
    # reflect's revision (written by the scripted model through the agent bridge) replaced the skill
    skill = (part["evolved"] / "skills" / "shipyard-manifest" / "SKILL.md").read_text()
    assert skill.startswith("---\nname: shipyard-manifest\n") and skill.rstrip().endswith("step by step.")
    assert "## Lesson from feedback\n\n2 failed attempts skipped skill:shipyard-manifest" in skill
    assert not (part["evolved"] / ".akm").exists()
    assert part["evolved_stash_hash"] == fixture_hash(part["evolved"]) != part["original_stash_hash"]
    assert part["leakage"]["ok"] is True and part["leakage"]["feedback_events"] == 2
    # Every akm the step ran (and reflect's agent bridge) had its HOME under the step's work dir:
    # none of them is left. Checked on this step rather than a second one: a step takes minutes.
    assert processes_under(part["evolved"].parents[1] / "work") == []


def test_garbage_is_refused_by_akms_lint(tmp_path: Path) -> None:
    info = real_akm.get("0.7.0")
    part = step(info, tmp_path, "scripted/garbage", train("fail"))
    assert part["proposals"] == []
    distill, reflect = part["generation"]
    assert distill["outcome"] == "failed" and "Distilled lesson failed validation" in distill["message"]
    assert (
        reflect["outcome"] == "failed" and reflect["message"] == 'JSON Parse error: Unexpected identifier "Looks"'
    )  # akm's parse
    assert part["evolved_stash_hash"] == part["original_stash_hash"]  # nothing changed


def test_passing_train_runs_evolve_nothing(tmp_path: Path) -> None:
    info = real_akm.get("0.7.0")
    part = step(info, tmp_path, "scripted/lesson", train("pass", "positive"))
    assert [e["signal"] for e in part["feedback"]] == ["positive", "positive"]
    assert part["evolved_refs"] == [] and part["generation"] == [] and part["proposals"] == []


def test_akm_09_improve_revises_the_asset_and_it_is_accepted(tmp_path: Path) -> None:
    info = real_akm.get("0.9.0")
    part = step(info, tmp_path, "scripted/lesson", train("fail"))
    assert part["verbs"]["improve"] is True and part["verbs"]["distill"] is False
    assert all(e["ok"] for e in part["feedback"]), part["feedback"]  # 0.9's negative feedback carries a reason
    [gen] = part["generation"]
    assert (gen["verb"], gen["outcome"], gen["processes"]) == ("improve", "queued", ["reflect"]), gen
    [row] = part["proposals"]
    assert (row["id"], row["target_ref"], row["kind"], row["verb"]) == (
        gen["proposal_id"], "skills/shipyard-manifest", "revision", "improve"
    )  # fmt: skip
    assert row["lint_pass"] is True and row["decision"] == "accept" and part["warnings"] == []
    skill = (part["evolved"] / "skills" / "shipyard-manifest" / "SKILL.md").read_text()
    assert "when_to_use: Before working on a task that needs skills/shipyard-manifest" in skill
    assert "## Lesson from feedback" in skill and "harbor.corp.internal" in skill  # the body kept whole
    assert part["leakage"]["ok"] is True and part["leakage"]["feedback_events"] == 2


def test_akm_09_garbage_queues_nothing_and_says_why(tmp_path: Path) -> None:
    info = real_akm.get("0.9.0")
    part = step(info, tmp_path, "scripted/garbage", train("fail"))
    [gen] = part["generation"]
    assert (gen["verb"], gen["outcome"], gen["proposal_id"]) == ("improve", "failed", None)
    assert "AKM_REFLECT_CONTENT_BEGIN" in gen["message"]  # akm's own parser refused the answer
    assert part["proposals"] == [] and part["evolved_stash_hash"] == part["original_stash_hash"]
