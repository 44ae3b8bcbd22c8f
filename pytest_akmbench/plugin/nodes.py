"""Collection nodes: one ``TaskFile`` per task.yaml, one ``CellItem`` per (arm, seed)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import pytest

from ..cell.checks import behaviour_checks, search_problems
from ..cell.runner import Cell
from ..report import soundness
from ..store import soundness as soundness_store
from .state import STATE_KEY, BenchState

if TYPE_CHECKING:
    from ..system.procs import ProcessTracker

CELL_KEY = pytest.StashKey[Cell]()
SAMPLE_KEY = pytest.StashKey[dict[str, Any]]()
STORED_KEY = pytest.StashKey[dict[str, Any]]()
TASK_KEY = pytest.StashKey[Any]()
CLAIMED_KEY = pytest.StashKey[str]()


def guard_marks(config: pytest.Config) -> list[pytest.MarkDecorator]:
    """Markers that keep other plugins from bending a cell's numbers (see the README).

    pytest-rerunfailures would run a failed trial again and keep the better outcome: a cell
    whose true pass rate is 0.5 reported 1.0. pytest-timeout's thread method ends the process
    with os._exit, orphaning the agent; a cell is bounded by its own budgets instead.
    """
    marks = []
    if config.pluginmanager.hasplugin("rerunfailures"):
        marks.append(pytest.mark.flaky(reruns=0))
    if config.pluginmanager.hasplugin("timeout"):
        marks.append(pytest.mark.timeout(0))
    return marks


def guard_notes(config: pytest.Config) -> list[str]:
    """One header line per plugin option the cells ignore, so nobody thinks it applied."""
    notes = []
    if config.pluginmanager.hasplugin("rerunfailures") and (
        config.getoption("reruns", None) or config.getoption("force_reruns", None)
    ):
        notes.append(
            "akmbench: cells are never rerun (a rerun would keep the better outcome of a trial); "
            "for more trials use --bench-seeds"
        )
    if config.pluginmanager.hasplugin("timeout"):
        try:
            timeout = config.getoption("timeout", None) or config.getini("timeout")
        except ValueError:
            timeout = None
        if timeout and float(timeout) > 0:
            notes.append(
                "akmbench: pytest-timeout is off for cells; each is bounded by its own budget "
                "(--bench-budget-wall-ms) and the verify timeout"
            )
    return notes


class TaskFile(pytest.File):
    """A task.yaml under the tasks root; its items are the task's cells."""

    def collect(self) -> Any:
        state: BenchState = self.config.stash[STATE_KEY]
        error = state.errors.get(self.path)
        if error is not None:
            raise self.CollectError(error)
        task = state.selected.get(self.path)
        if task is None:
            return
        marks = guard_marks(self.config)
        if state.settings.soundness:
            item = pytest.Function.from_parent(self, name="soundness", callobj=check_soundness)
            item.stash[TASK_KEY] = task
            for mark in marks:
                item.add_marker(mark)
            yield item
            return
        fixtureinfo = None
        for arm in state.settings.arms:
            for seed in range(1, state.settings.seeds + 1):
                cell = Cell(task=task, arm=arm, seed=seed)
                # Every cell of a task has the same function and parent, so the same fixture
                # closure: computing it once (as pytest does for parametrize) halves the
                # collection time of a large corpus.
                item = CellItem.from_parent(self, name=cell.name, callobj=_check_cell, fixtureinfo=fixtureinfo)
                fixtureinfo = item._fixtureinfo
                item.stash[CELL_KEY] = cell
                item.add_marker(
                    pytest.mark.cell(task=task.id, arm=arm, seed=seed, domain=task.domain, slice=task.slice)
                )
                item.extra_keyword_matches.update({task.id, task.domain})
                for mark in marks:
                    item.add_marker(mark)
                yield item


class CellItem(pytest.Function):
    """A benchmark cell; the sample is produced by the ``bench_sample`` fixture at setup."""

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, 0, f"cell: {self.stash[CELL_KEY].key}"


def _check_cell(bench_sample: dict[str, Any]) -> None:
    """Pass when the verifier accepted the agent's work; fail with the reason otherwise."""
    outcome = bench_sample["outcome"]
    if outcome == "pass":
        return
    tail = bench_sample.get("verifier", {}).get("output_tail", "").strip()
    message = f"{outcome}: {bench_sample.get('reason') or ''}"
    if tail and outcome == "fail":
        message += "\n" + "\n".join(tail.splitlines()[-15:])
    pytest.fail(message, pytrace=False)


def check_soundness(request: pytest.FixtureRequest, bench_procs: ProcessTracker) -> None:
    """Pass when the task is sound: nop fails, the solution passes, the verifier repeats itself,
    and, when an akm is given, the task's keywords find its gold asset. The result is appended to
    the store's soundness file, so the reports of this store show it (docs/report.md)."""
    state: BenchState = request.config.stash[STATE_KEY]
    task = request.node.stash[TASK_KEY]
    work_root = state.tmp_root / state.run_id
    checks, problems = behaviour_checks(task, work_root, bench_procs, timeout_s=state.settings.verify_timeout)
    if state.akm is not None:
        found = search_problems(task, state.settings.stashes_root, state.akm, work_root, bench_procs)
        checks["akm_finds_gold"] = None if not task.gold_ref else not found
        problems += found
    extra = {"akm_version": state.akm.version if state.akm is not None else None, "run_id": state.run_id}
    extra["checked_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    soundness_store.append(state.store_dir, state.scrub.obj(soundness.record(task, checks, problems, **extra)))
    if problems:
        pytest.fail(f"{task.id}: " + "; ".join(problems), pytrace=False)
