"""Collection nodes: one ``TaskFile`` per task.yaml, one ``CellItem`` per (arm, seed)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import pytest

from ..cell.context import Cell
from ..corpus.tasks import Task
from ..records import Sample
from ..tracks.track import ItemSpec
from . import internals
from .state import STATE_KEY, BenchState

# The soundness check's, a cell's report's and the evolve track's modules are imported where they
# are used: a --co needs none of them (benchmarks/README.md, "Collection, third pass").

if TYPE_CHECKING:
    from ..system.procs import ProcessTracker

CELL_KEY = pytest.StashKey[Cell]()
SAMPLE_KEY = pytest.StashKey[Sample]()
STORED_KEY = pytest.StashKey[Sample]()
TASK_KEY = pytest.StashKey[Any]()
CLAIMED_KEY = pytest.StashKey[str]()
_GUARDS_KEY = pytest.StashKey[list[pytest.MarkDecorator]]()


def guard_marks(config: pytest.Config) -> list[pytest.MarkDecorator]:
    """Markers that keep other plugins from bending a cell's numbers (see the README).

    pytest-rerunfailures would run a failed trial again and keep the better outcome: a cell
    whose true pass rate is 0.5 reported 1.0. pytest-timeout's thread method ends the process
    with os._exit, orphaning the agent; a cell is bounded by its own budgets instead.
    Asked once per run, not once per task: the plugins do not change during collection.
    """
    marks = config.stash.get(_GUARDS_KEY, None)
    if marks is not None:
        return marks
    marks = config.stash[_GUARDS_KEY] = []
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


class TaskDir(pytest.Directory):
    """A task's directory. Every entry of it but task.yaml is ignored (``bench.pytest_ignore_collect``),
    so only task.yaml is asked about, as pytest's ``Dir`` would ask: not every file of the
    workspace, verifier and solution listed and refused one by one (benchmarks/README.md, "Where
    the overhead goes"). It is shown as the ``Dir`` it stands in for."""

    def collect(self) -> Any:
        path, ihook = self.path / "task.yaml", self.ihook
        is_dir = path.is_dir()
        if not is_dir and not path.is_file():
            return
        asked = not self.session.isinitpath(path, with_parents=is_dir)
        if asked and ihook.pytest_ignore_collect(collection_path=path, config=self.config):
            return
        if not is_dir:
            yield from ihook.pytest_collect_file(file_path=path, parent=self)
        elif (col := ihook.pytest_collect_directory(path=path, parent=self)) is not None:
            yield col

    def __repr__(self) -> str:
        return f"<Dir {self.name}>"


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
        build = _Items(self, task)
        kinds = {"cell": build.cell, "check": build.check, "evolve": build.evolve}
        for spec in state.track.items(task, state):
            yield kinds[spec.kind](spec)


class _Items:
    """The pytest items of one task, from the specs its track yields (tracks/track.py)."""

    def __init__(self, parent: TaskFile, task: Task) -> None:
        self.parent, self.task = parent, task
        self.marks = guard_marks(parent.config)
        self.fixtureinfo: Any = None
        # Once per task, not per cell: a task's slice may be a SHA-1 of its id
        # (benchmarks/README.md, "Where a cell's time goes").
        self.slice = task.slice

    def cell(self, spec: ItemSpec) -> pytest.Item:
        cell, task = spec.cell, self.task
        assert cell is not None
        # Every cell of a task has the same function and parent, so the same fixture
        # closure: computing it once (as pytest does for parametrize) halves the
        # collection time of a large corpus.
        item = CellItem.from_parent(self.parent, name=spec.name, callobj=_check_cell, fixtureinfo=self.fixtureinfo)
        self.fixtureinfo = internals.fixture_info(item)
        item.stash[CELL_KEY] = cell
        masked = {} if cell.mask is None else {"mask": cell.mask}
        mark = internals.mark(
            "cell",
            {"task": task.id, "arm": cell.arm, "seed": cell.seed, "domain": task.domain, "slice": self.slice, **masked},
        )
        # What add_marker does for the cell mark, then each guard mark, in one step each
        # (benchmarks/README.md, "Collection, third pass").
        marks = [mark, *self.marks]
        item.keywords.update({m.name: m for m in marks})
        item.own_markers.extend(m.mark for m in marks)
        item.extra_keyword_matches.update({task.id, task.domain, *masked.values()})
        return item

    def check(self, spec: ItemSpec) -> pytest.Item:
        item = pytest.Function.from_parent(self.parent, name=spec.name, callobj=check_soundness)
        item.stash[TASK_KEY] = self.task
        for mark in self.marks:
            item.add_marker(mark)
        return item

    def evolve(self, spec: ItemSpec) -> pytest.Item:
        from .evolve import EvolveItem

        return EvolveItem.build(self.parent, self.task, spec)


class CellFailure(Exception):
    """A cell that did not pass: its outcome, the one reason, and the verifier's tail."""

    def __init__(self, outcome: str, reason: str, detail: str = "") -> None:
        super().__init__(f"{outcome}: {reason}")
        self.outcome, self.reason, self.detail = outcome, reason, detail


_HARNESS_PREFIX = "harness_error: "


class CellItem(internals.ReprFunction):
    """A benchmark cell; the sample is produced by the ``bench_sample`` fixture at setup."""

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, 0, f"cell: {self.stash[CELL_KEY].key}"

    def setup(self) -> None:
        try:
            super().setup()
        finally:
            # At setup, so that a harness error's report (it fails the setup) carries them too.
            sample = self.stash.get(SAMPLE_KEY, None)
            if sample is not None and not self.user_properties:
                self.user_properties.extend(cell_properties(sample))

    def cell_repr(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:
        """The failure at the task's task.yaml with its one reason (``--tb=line`` and the short
        summary show ``<task.yaml>:1: <reason>``), then the verifier's tail without that reason."""
        err = excinfo.value
        if isinstance(err, pytest.fail.Exception) and str(err.msg).startswith(_HARNESS_PREFIX):
            err = CellFailure("harness_error", str(err.msg)[len(_HARNESS_PREFIX) :])
        if not isinstance(err, CellFailure):
            return None
        message = failure_message(err.outcome, err.reason)
        lines = [line for line in err.detail.splitlines() if line.strip() and line.strip() != err.reason.strip()]
        # --tb=line prints the crash line itself after the body: the body is then empty.
        body = self.config.getoption("tbstyle", "auto") != "line"
        return internals.failure_repr(self.nodeid.split("::")[0], message, lines, body)


DETAIL_LINES = 15  # of the verifier's output shown under a failed cell


def failure_message(outcome: str, reason: str) -> str:
    """One line naming what went wrong, without pytest's "Failed:" in front."""
    if outcome == "fail":
        return f"verifier rejected the work: {reason}"
    if outcome == "harness_error":
        return f"harness error (not the agent's fault): {reason}"
    return reason or outcome


def cell_properties(sample: Sample) -> list[tuple[str, object]]:
    """The junit ``<property>`` entries of a cell (``--junitxml``)."""
    from ..report.metrics import sample_tokens

    total = sample_tokens(sample)
    return [
        ("outcome", sample["outcome"]),
        ("tokens", "" if total is None else total),
        ("cost_usd", "" if sample.get("cost_usd") is None else sample["cost_usd"]),
        ("wall_ms", "" if sample.get("wallclock_ms") is None else sample["wallclock_ms"]),
        ("budget", sample.get("budget") or ""),
        ("from_store", str(bool(sample.get("from_store"))).lower()),
    ]


def _check_cell(bench_sample: Sample) -> None:
    """Pass when the verifier accepted the agent's work; fail with the reason otherwise."""
    outcome = bench_sample["outcome"]
    if outcome == "pass":
        return
    verifier = bench_sample.get("verifier") or {}
    lines = verifier.get("output_tail", "").strip().splitlines() if outcome == "fail" else []
    if verifier.get("kind") == "pytest":
        lines = _without_summary(lines)
    if len(lines) > DETAIL_LINES:
        lines = [
            f"[… {len(lines) - DETAIL_LINES} earlier lines of the verifier's output cut …]",
            *lines[-DETAIL_LINES:],
        ]
    raise CellFailure(outcome, bench_sample.get("reason") or outcome, "\n".join(lines))


def _without_summary(lines: list[str]) -> list[str]:
    """A pytest verifier's output without its "short test summary info" block: it repeats each
    failure above it as a FAILED line, which the bench's own summary would then show twice over."""
    start = next((i for i, line in enumerate(lines) if "short test summary info" in line), None)
    if start is None:
        return lines
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith(("FAILED ", "ERROR "))), len(lines))
    return lines[:start] + lines[end:]


def check_soundness(request: pytest.FixtureRequest, bench_procs: ProcessTracker) -> None:
    """Pass when the task is sound: nop fails, the solution passes, the verifier repeats itself,
    and, when an akm is given, the task's keywords find its gold asset (as separate words, else as
    one phrase: the record's ``found_by``). The result is appended to
    the store's soundness file, so the reports of this store show it (docs/report.md)."""
    from ..cell.checks import behaviour_checks, gold_search
    from ..report import soundness
    from ..store import soundness as soundness_store

    state: BenchState = request.config.stash[STATE_KEY]
    task = request.node.stash[TASK_KEY]
    work_root = state.tmp_root / state.run_id
    checks, problems = behaviour_checks(task, work_root, bench_procs, timeout_s=state.settings.verify_timeout)
    found_by = None
    if state.akm is not None:
        found_by, missed = gold_search(task, state.settings.stashes_root, state.akm, work_root, bench_procs)
        checks["akm_finds_gold"] = None if found_by is None else not missed
        problems += missed
    extra = {"akm_version": state.akm.version if state.akm is not None else None, "run_id": state.run_id}
    extra["found_by"] = found_by
    extra["checked_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    soundness_store.append(state.store_dir, state.scrub.obj(soundness.record(task, checks, problems, **extra)))
    if problems:
        pytest.fail(f"{task.id}: " + "; ".join(problems), pytrace=False)
