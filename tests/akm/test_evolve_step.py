"""The evolve track's proposal step alone, against real akm: feedback from train samples,
akm's distill answered by the scripted model, the lint verdict, accept, re-index, the evolved
stash and the leakage check. No agent runs: the train samples are given."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_akmbench.cell import akm
from pytest_akmbench.corpus.hashes import fixture_hash
from pytest_akmbench.corpus.tasks import load_corpus
from pytest_akmbench.system.procs import ProcessTracker
from pytest_akmbench.tracks import evolve
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


def test_a_lesson_is_distilled_accepted_and_published(tmp_path: Path) -> None:
    info = real_akm.get("0.7.0")
    part = step(info, tmp_path, "scripted/lesson", train("fail", "negative"))
    assert [(e["signal"], e["ok"]) for e in part["feedback"]] == [("negative", True)] * 2
    assert part["evolved_refs"] == ["skill:shipyard-manifest"]
    assert [g["outcome"] for g in part["generation"]] == ["queued"]
    [row] = part["proposals"]
    assert (row["target_ref"], row["kind"], row["lint_pass"], row["decision"]) == (
        "lesson:skill-shipyard-manifest-lesson", "lesson", True, "accept"
    )  # fmt: skip
    lesson = part["evolved"] / "lessons" / "skill-shipyard-manifest-lesson.md"
    assert "when_to_use: Before working on a task that needs skill:shipyard-manifest" in lesson.read_text()
    assert not (part["evolved"] / ".akm").exists()
    assert part["evolved_stash_hash"] == fixture_hash(part["evolved"]) != part["original_stash_hash"]
    assert part["leakage"]["ok"] is True and part["leakage"]["feedback_events"] == 2


def test_garbage_is_refused_by_akms_lint(tmp_path: Path) -> None:
    info = real_akm.get("0.7.0")
    part = step(info, tmp_path, "scripted/garbage", train("fail"))
    assert part["proposals"] == []
    [gen] = part["generation"]
    assert gen["outcome"] == "failed" and "Distilled lesson failed validation" in gen["message"]
    assert part["evolved_stash_hash"] == part["original_stash_hash"]  # nothing changed


def test_passing_train_runs_evolve_nothing(tmp_path: Path) -> None:
    info = real_akm.get("0.7.0")
    part = step(info, tmp_path, "scripted/lesson", train("pass", "positive"))
    assert [e["signal"] for e in part["feedback"]] == ["positive", "positive"]
    assert part["evolved_refs"] == [] and part["generation"] == [] and part["proposals"] == []


def test_akm_09_has_no_distill_and_the_step_says_so(tmp_path: Path) -> None:
    info = real_akm.get("0.9.0")
    part = step(info, tmp_path, "scripted/lesson", train("fail"))
    assert part["verbs"]["improve"] is True and part["verbs"]["distill"] is False
    assert all(e["ok"] for e in part["feedback"]), part["feedback"]  # 0.9's negative feedback carries a reason
    assert part["leakage"]["ok"] is True and part["leakage"]["feedback_events"] == 2
    assert part["proposals"] == [] and part["warnings"] == [
        "akm 0.9.0 has no distill verb (it offers: improve, proposal); no proposal was generated"
    ]


def test_the_step_leaves_no_process(tmp_path: Path) -> None:
    info = real_akm.get("0.7.0")
    part = step(info, tmp_path, "scripted/lesson", train("fail"))
    # Every akm the step ran had its HOME under the step's work dir: none of them is left.
    assert processes_under(part["evolved"].parents[1] / "work") == []
