"""What a run that compares nothing says (issue 14, item 5): an oracle or nop check of the corpus,
a scripted dry run, a soundness run; and the soundness block a report of the same store shows."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from pytest_akmbench.corpus.tasks import load_corpus
from pytest_akmbench.report import envelope as report
from pytest_akmbench.report import soundness
from pytest_akmbench.report.render.markdown import render_markdown
from pytest_akmbench.store import soundness as soundness_store
from tests.core.test_metrics import make_task, sample
from tests.core.test_report import inp
from tests.support.corpus import write_stash, write_task

TASKS = [make_task(f"d{i}/t{i}") for i in range(4)]


def _all(outcome_of: Any, arms: tuple[str, ...] = ("noakm", "akm")) -> list[dict[str, Any]]:
    return [sample(t.id, a, 1, outcome_of(t.id, a)) for t in TASKS for a in arms]


def test_an_oracle_run_is_a_check_not_a_comparison() -> None:
    env = report.build(dataclasses.replace(inp(TASKS, _all(lambda t, a: "pass"), seeds=1), agent="oracle"))
    assert env["verdict"] == (
        "oracle check: 8 of 8 valid cells pass (noakm 4/4, akm 4/4): every selected task is solved by its own solution"
    )
    assert "no significant difference" not in render_markdown(env)


def test_an_oracle_failure_names_the_cells() -> None:
    samples = _all(lambda t, a: "fail" if t == "d2/t2" and a == "akm" else "pass")
    env = report.build(dataclasses.replace(inp(TASKS, samples, seeds=1), agent="oracle"))
    assert env["verdict"].startswith(
        "oracle check FAILED: 1 of 8 valid cells are not solved by its own solution (d2/t2 akm s1)"
    )


def test_a_nop_run_says_doing_nothing_solves_nothing() -> None:
    samples = _all(lambda t, a: "fail")
    samples[0] = {**samples[0], "outcome": "harness_error"}
    env = report.build(dataclasses.replace(inp(TASKS, samples, seeds=1), agent="nop"))
    assert env["verdict"] == (
        "nop check: 0 of 7 valid cells pass (noakm 0/3, akm 0/4, 1 harness error): "
        "every selected task is failed by doing nothing"
    )


def test_a_scripted_dry_run_measures_no_lift() -> None:
    env = report.build(dataclasses.replace(inp(TASKS, _all(lambda t, a: "pass"), seeds=1), model="scripted/oracle"))
    assert env["verdict"].startswith("dry run with the scripted model scripted/oracle: 8 of 8 valid cells pass")
    assert "no lift is measured" in env["verdict"]


def test_a_real_model_still_gets_its_comparison() -> None:
    env = report.build(inp(TASKS, _all(lambda t, a: "pass"), seeds=1))
    assert "no significant difference between akm and noakm" in env["verdict"]


def test_the_soundness_of_the_tasks_as_they_are_now(tmp_path: Path) -> None:
    """A report shows each task's latest soundness result for its current content; a task edited
    since it was checked is unchecked, never sound."""
    root, store = tmp_path / "tasks", tmp_path / "store"
    for tid in ("a/one", "a/two"):
        write_task(root, tid)
    write_stash(tmp_path / "stashes")
    tasks = list(load_corpus(root, tmp_path / "stashes").tasks)
    ok = {"nop_fails": True, "solution_passes": True, "repeatable": True}
    for task in tasks:
        soundness_store.append(store, soundness.record(task, ok, []))
    (tasks[1].task_dir / "README.md").write_text("edited\n")
    block = soundness.block(tasks, store)
    assert block is not None
    assert (block["checked"], block["sound"], block["unchecked"]) == (1, 1, ["a/two"])
    assert soundness.headline(block) == (
        "corpus sound: 1 of 1 checked tasks (nop fails, solution passes, verifier repeatable); "
        "1 not checked as they are now"
    )
    env = report.build(dataclasses.replace(inp(tasks, [], seeds=1), store_dir=store))
    assert env["verdict"] == soundness.headline(block)
    assert "## Corpus soundness" in render_markdown(env)
    assert soundness.block(tasks, tmp_path / "elsewhere") is None


def test_an_oracle_failure_of_many_cells_names_three() -> None:
    samples = _all(lambda t, a: "fail" if a == "akm" else "pass")
    samples[0] = {**samples[0], "outcome": "harness_error"}
    env = report.build(dataclasses.replace(inp(TASKS, samples, seeds=1), agent="oracle"))
    assert env["verdict"] == (
        "oracle check FAILED: 4 of 7 valid cells are not solved by its own solution "
        "(d0/t0 akm s1, d1/t1 akm s1, d2/t2 akm s1 …); 3 pass (noakm 3/3, akm 0/4, 1 harness error)"
    )


def test_a_nop_run_with_harness_errors_counts_them() -> None:
    samples = [
        {**s, "outcome": "harness_error"} if s["task_id"] in ("d0/t0", "d1/t1") else s
        for s in _all(lambda t, a: "fail")
    ]
    env = report.build(dataclasses.replace(inp(TASKS, samples, seeds=1), agent="nop"))
    assert env["verdict"] == (
        "nop check: 0 of 4 valid cells pass (noakm 0/2, akm 0/2, 4 harness errors): "
        "every selected task is failed by doing nothing"
    )


def test_one_arm_and_arms_without_a_shared_task() -> None:
    one = report.build(
        inp(TASKS, _all(lambda t, a: "pass" if t != "d3/t3" else "fail", arms=("akm",)), arms=("akm",), seeds=1)
    )
    assert one["verdict"] == (
        "provisional: 4 of 4 cells below the floor of 3 — only one arm ran (akm): pass rate 0.75 [0.19, 0.99] "
        "over 4 tasks, valid runs akm 4/4; no lift measured"
    )
    apart = [sample("d0/t0", "akm", 1, "pass"), sample("d1/t1", "noakm", 1, "fail")]
    env = report.build(inp(TASKS[:2], apart, seeds=1))
    assert env["verdict"] == (
        "provisional: 4 of 4 cells below the floor of 3 — arms noakm, akm ran, but akm and another arm share no "
        "task with valid runs: no lift measured"
    )
    none = report.build(inp(TASKS, [{**s, "outcome": "harness_error"} for s in _all(lambda t, a: "pass")], seeds=1))
    assert none["verdict"] == "no valid runs: no arm produced a pass or fail outcome"
