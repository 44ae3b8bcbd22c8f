"""An adaptive run's plan read from the store and its report part (run/adaptive.py), in process:
what counts as a round run, under which fingerprint, and what the envelope says of the design."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from pytest_akmbench.cell.context import Cell
from pytest_akmbench.corpus.tasks import Task
from pytest_akmbench.report.envelope_types import Envelope
from pytest_akmbench.report.render.adaptive import headline
from pytest_akmbench.run import adaptive, sequential
from pytest_akmbench.run.resume import StoredSamples

TASKS = cast(list[Task], [SimpleNamespace(id="d/a"), SimpleNamespace(id="d/b")])
ARMS = ("noakm", "akm")


def fp(cell: Cell) -> str:
    return f"fp-{cell.task.id}-{cell.arm}"


def record(task: str, arm: str, seed: int, outcome: str, run: str = "r1", fingerprint: str | None = None) -> dict:
    return {
        "schema": 1,
        "task_id": task,
        "arm": arm,
        "seed": seed,
        "outcome": outcome,
        "run_id": run,
        "started_at": f"2026-01-01T00:00:0{seed}.000Z",
        "fingerprint_hash": fingerprint or f"fp-{task}-{arm}",
    }


def rounds(n: int, akm: str = "pass", noakm: str = "fail") -> list[dict]:
    return [
        record(t.id, arm, s, akm if arm == "akm" else noakm) for s in range(1, n + 1) for t in TASKS for arm in ARMS
    ]


def plan(records: list[dict], **kw: Any) -> sequential.Plan:
    args: dict[str, Any] = {"floor": 2, "max_seeds": 4, **kw}
    return adaptive.plan_from_store(TASKS, ARMS, StoredSamples(records), fp, "r1", **args)


def test_the_plan_is_the_sequential_plan_of_the_stored_outcomes() -> None:
    stored = rounds(2)
    outcomes = {(r["task_id"], r["arm"], r["seed"]): r["outcome"] == "pass" for r in stored}
    expected = sequential.plan(["d/a", "d/b"], ARMS, outcomes, floor=2, max_seeds=4)
    got = plan(stored)
    assert got == expected
    assert got.waiting == 3 and got.seeds == {"d/a": 3, "d/b": 3}
    assert got.floor_lift == 1.0  # akm passes and noakm fails: read as pass/fail, not as present


def test_a_sample_under_another_fingerprint_is_not_a_round_run() -> None:
    stored = rounds(2)
    stored[-1] = {**stored[-1], "fingerprint_hash": "an older prompt"}
    got = plan(stored)
    assert got.waiting == 2 and got.looks == []


def test_this_runs_harness_errors_count_as_run_and_no_others() -> None:
    stored = rounds(2)
    last = stored.pop()
    error = {**last, "outcome": "harness_error"}
    assert plan([*stored, error]).waiting == 3  # the round is over, its errored pair left out
    assert plan([*stored, {**error, "run_id": "r0"}]).waiting == 2  # another run's error
    assert plan([*stored, {**error, "fingerprint_hash": "old"}]).waiting == 2
    other_cell = {**error, "task_id": "d/c", "fingerprint_hash": "fp-d/c-akm"}
    assert plan([*stored, other_cell]).waiting == 2


def test_the_fingerprints_are_computed_once_per_cell() -> None:
    calls: list[Cell] = []

    def counted(cell: Cell) -> str:
        calls.append(cell)
        return fp(cell)

    cache: dict[sequential.Key, str] = {}
    index = StoredSamples(rounds(1))
    for _ in range(2):
        adaptive.plan_from_store(TASKS, ARMS, index, counted, "r1", floor=2, max_seeds=3, cache=cache)
    assert len(calls) == len(TASKS) * len(ARMS) * 3 == len(cache)
    assert cache[("d/b", "akm", 3)] == "fp-d/b-akm"
    assert {(c.task.id, c.arm, c.seed) for c in calls} == set(cache)


def test_the_part_is_the_cells_the_plan_needed_and_its_block() -> None:
    state = plan(rounds(2))
    cells, block = adaptive.part(state, ARMS, floor=2, max_seeds=4, waited_s=1.23456)
    assert cells == set(state.cells(ARMS)) and ("d/a", "akm", 3) in cells and len(cells) == 12
    assert block == {
        **sequential.block(state, arms=ARMS, floor=2, max_seeds=4),
        "barrier_wait_s": 1.235,
    }


def test_the_envelope_says_the_design_in_its_verdict_and_warnings() -> None:
    envelope = cast(Envelope, {"verdict": "akm lifts pass rate", "warnings": ["w"], "n": 1})
    assert adaptive.stamp(envelope, None) is envelope
    block = adaptive.part(plan(rounds(2)), ARMS, floor=2, max_seeds=4, waited_s=0)[1]
    stamped = cast(dict, adaptive.stamp(envelope, block))
    assert stamped == {
        "verdict": f"{headline(block)} — akm lifts pass rate",
        "warnings": ["w", adaptive.CAVEAT],
        "n": 1,
        "adaptive": block,
    }
    assert envelope["warnings"] == ["w"]  # the envelope given is left as it was


def test_the_block_before_the_first_look_and_after_it() -> None:
    """The report's ``adaptive`` block, every key: before the floor no look was taken."""
    early = sequential.block(plan(rounds(1)), arms=ARMS, floor=2, max_seeds=4)
    assert early == {
        "design": "adaptive",
        "until": "decisive",
        "method": sequential.METHOD,
        "reference": sequential.REFERENCE,
        "alpha": sequential.ALPHA,
        "spending": "obrien_fleming",
        "futility": sequential.FUTILITY,
        "conditional_power": None,
        "floor": 2,
        "max_seeds": 4,
        "looks": 0,
        "stopping_reason": None,
        "decisive": False,
        "direction": None,
        "lead_needed": None,
        "alpha_spent": 0.0,
        "pairs": 0,
        "akm_only": 0,
        "noakm_only": 0,
        "floor_lift": None,
        "floor_lift_tasks": 0,
        "cells_used": 8,
        "cells_max": 16,
        "seeds_by_task": {"d/a": 2, "d/b": 2},
        "history": [],
    }
    state = plan(rounds(2))
    (look,) = state.looks
    later = sequential.block(state, arms=ARMS, floor=2, max_seeds=4)
    assert later["history"] == [
        {
            "round": 2,
            "tasks": 2,
            "pairs": 4,
            "akm_only": 4,
            "noakm_only": 0,
            "lead_needed": look.bound,
            "alpha_spent": round(look.spent, 6),
        }
    ]
    assert (later["lead_needed"], later["pairs"], later["alpha_spent"]) == (look.bound, 4, round(look.spent, 6))
    assert state.needs("d/zz", 1) is False  # a task the plan does not hold needs no seed


def test_a_floor_without_one_valid_pair_has_no_floor_lift() -> None:
    """Every cell of the floor rounds errored: the floor lift is unknown, not a division by zero."""
    errored = {(t.id, arm, s) for t in TASKS for arm in ARMS for s in (1, 2)}
    state = sequential.plan(["d/a", "d/b"], ARMS, {}, errored, floor=2, max_seeds=4)
    assert (state.floor_lift, state.floor_tasks) == (None, 0)
