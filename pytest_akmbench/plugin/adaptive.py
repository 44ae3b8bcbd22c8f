"""``--bench-until decisive``: adaptive seeds, wired into pytest (docs/adaptive.md).

Every cell up to ``--bench-max-seeds`` is collected, ordered by seed (a round is a seed). At
its setup a cell asks the plan (``run/sequential.py``), computed from the store by whichever
process runs it, whether it is needed. A cell of a round whose predecessor has not finished
waits for it (the barrier: under xdist a worker idles there); an unneeded cell ends as
``NOT NEEDED`` (a skip, never a failure). The controller reports the needed cells only, with
the ``adaptive`` block.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterable
from typing import Any

import pytest

from ..cell.context import Cell
from ..errors import ConfigError
from ..report.envelope_types import AdaptiveBlock, Envelope
from ..run import adaptive as adaptive_run
from ..run import sequential
from ..run.resume import StoredSamples
from ..system import lifecycle
from ..tracks.track import ADAPTIVE
from .caps import PLUGIN as CAPS_PLUGIN
from .nodes import CELL_KEY
from .state import STATE_KEY, BenchState, register
from .trial import exit_interrupted
from .xdist.schedulers import RoundScheduler

POLL_S = 0.25  # how often a cell waiting at the barrier reads the store again
STALL_MARGIN_S = 120.0  # beyond a cell's wall budget and verify timeout, before the barrier gives up
NOT_NEEDED_KEY = pytest.StashKey[str]()
WAIT_KEY = pytest.StashKey[float]()
BARRIER_DISTS = ("no", "load", "worksteal")  # replaced by RoundScheduling; the others group cells


def _setting(state: BenchState, name: str) -> tuple[Any, str]:
    """A value resolved from the command line, run config or ini (corpus/config.py), and its origin."""
    return getattr(state.settings, name), state.settings.origins.get(name, "")


def activate(config: pytest.Config, state: BenchState) -> None:
    """Make this run adaptive when ``--bench-until`` asks for it; refuse what it cannot do."""
    until, where = _setting(state, "until")
    most, most_where = _setting(state, "max_seeds")
    if until is None:
        if most is not None:
            raise pytest.UsageError(f"{most_where}: needs --bench-until decisive")
        return
    if until != "decisive":
        raise pytest.UsageError(f"{where}: unknown value {until!r}; the one choice is decisive")
    try:
        max_seeds = _positive(most, most_where) if most is not None else sequential.DEFAULT_MAX_SEEDS
    except ConfigError as err:
        raise pytest.UsageError(str(err)) from None
    if "floor" not in state.settings.origins:
        state.floor = sequential.DEFAULT_FLOOR
    settings = state.settings
    problem = _refusal(config, state, max_seeds)
    if problem:
        raise pytest.UsageError(f"{where}: {problem}")
    if "seeds" in settings.origins and not hasattr(config, "workerinput"):
        line = (
            f"{settings.origins['seeds']} is not used by an adaptive run: every task runs "
            f"{state.floor} first (--bench-floor) and at most {max_seeds} (--bench-max-seeds)"
        )
        state.warnings.append(line)
        config.issue_config_time_warning(pytest.PytestConfigWarning(line), stacklevel=2)
    state.seeds = max_seeds
    register(config, state, AdaptiveHooks(state, state.floor, max_seeds), "akmbench-adaptive")
    if config.pluginmanager.hasplugin("xdist") and not hasattr(config, "workerinput"):
        register(config, state, RoundScheduler(), "akmbench-adaptive-xdist")


def _positive(value: Any, where: str) -> int:
    try:
        number = int(str(value))
    except ValueError:
        number = 0
    if number < 1:
        raise ConfigError(f"{where}: {value!r} is not a whole number of seeds of at least 1")
    return number


def _refusal(config: pytest.Config, state: BenchState, max_seeds: int) -> str | None:
    refusal = state.track.refusal(ADAPTIVE)
    if refusal:
        return refusal
    if not {"akm", "noakm"} <= set(state.arms):
        return "the test pairs akm with noakm: run both arms (--bench-arms noakm,akm)"
    if max_seeds < state.floor:
        return f"--bench-max-seeds {max_seeds} is below the floor of {state.floor} seeds (--bench-floor)"
    if state.settings.shard:
        return "a shard runs part of each round; run the adaptive run whole, without --bench-shard"
    txs = getattr(config.option, "tx", None) or []  # -n N is N popen specs; remote ones go elsewhere
    if any("chdir=" in t or not t.split("*", 1)[-1].startswith("popen") for t in txs):
        return "remote workers cannot read the store the rounds are decided from; use -n or --parallel"
    dist = getattr(config.option, "dist", "no")
    if dist not in BARRIER_DISTS:
        return f"--dist {dist} could hold a round's cells behind the next round's; use --dist load or worksteal"
    return None


class Stall:
    """Whether the store has stopped growing for longer than any cell can take."""

    def __init__(self, state: BenchState) -> None:
        s = state.settings
        walls = [s.budget_wall_ms, *(t.budget.wall_ms or 0 for t in state.tasks)]
        self.limit_s = max(walls) / 1000 + s.verify_timeout + STALL_MARGIN_S
        self.path = state.store_dir / "samples.jsonl"
        self.size = self._size()
        self.since = time.monotonic()

    def _size(self) -> int:
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    def over(self) -> bool:
        size = self._size()
        if size != self.size:
            self.size, self.since = size, time.monotonic()
        return time.monotonic() - self.since > self.limit_s


class AdaptiveHooks:
    """The adaptive run in this process: the order of the cells, the barrier, the report part."""

    def __init__(self, state: BenchState, floor: int, max_seeds: int) -> None:
        self.state = state
        self.floor = floor
        self.max_seeds = max_seeds
        self.tasks: list[str] = [t.id for t in state.tasks]
        self.waited_s = 0.0  # on the controller: the time cells spent at the barrier
        self._fps: dict[sequential.Key, str] = {}

    @pytest.hookimpl(trylast=True)  # after -k/-m: the rounds are those of the selected cells
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        arms = self.state.arms
        cells = [item.stash[CELL_KEY] for item in items if CELL_KEY in item.stash]
        selected: dict[str, set[tuple[str, int]]] = {}
        for cell in cells:
            selected.setdefault(cell.task.id, set()).add((cell.arm, cell.seed))
        whole = {(a, s) for a in arms for s in range(1, self.max_seeds + 1)}
        partial = sorted(t for t, got in selected.items() if got != whole)
        if partial:
            raise pytest.UsageError(
                f"--bench-until decisive needs every arm and seed of a selected task ({partial[0]} has "
                f"{len(selected[partial[0]])} of {len(whole)}): select tasks, not arms or seeds"
            )
        self.tasks = [t.id for t in self.state.tasks if t.id in selected]
        order = {t: i for i, t in enumerate(self.tasks)}

        def rank(item: pytest.Item) -> tuple[int, int, int]:
            cell = item.stash.get(CELL_KEY, None)
            if cell is None:
                return (0, 0, 0)
            return (cell.seed, order[cell.task.id], arms.index(cell.arm))

        items.sort(key=rank)

    def plan(self, index: StoredSamples) -> sequential.Plan:
        """The plan the store implies now, with this run's harness errors counted as run."""
        by_task = {t.id: t for t in self.state.tasks}
        return adaptive_run.plan_from_store(
            [by_task[t] for t in self.tasks],
            self.state.arms,
            index,
            self.state.fingerprint_hash,
            self.state.run_id,
            floor=self.floor,
            max_seeds=self.max_seeds,
            cache=self._fps,
        )

    @pytest.hookimpl(tryfirst=True)  # before the cell's fixtures run it
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        cell = item.stash.get(CELL_KEY, None)
        if cell is None:
            return
        started = time.monotonic()
        current, needed = self._wait(item, cell)
        item.stash[WAIT_KEY] = time.monotonic() - started
        if not needed:
            why = sequential.STOP_TEXT.get(current.stop, "")
            reason = (
                f"not needed: the adaptive run stopped after {len(current.looks)} looks ({why})"
                if current.stop
                else f"not needed: {cell.task.id} is settled (every outcome so far the same)"
            )
            item.stash[NOT_NEEDED_KEY] = reason
            pytest.skip(reason)

    def _wait(self, item: pytest.Item, cell: Cell) -> tuple[sequential.Plan, bool]:
        """The plan once it can say whether ``cell`` runs (the barrier), and what it says."""
        stall = Stall(self.state)
        caps = item.config.pluginmanager.get_plugin(CAPS_PLUGIN)
        while True:
            index = self.state.stored()
            index.refresh()
            current = self.plan(index)
            needed = current.needs(cell.task.id, cell.seed)
            if needed is not None:
                return current, needed
            if caps is not None and caps.reached(index.of_run(self.state.run_id)) is not None:
                # A spend cap skips every cell from now on, the round before's included: its
                # own setup hook (plugin/caps.py) says so, rather than the barrier waiting.
                return current, True
            if lifecycle.is_interrupted(self.state.run_dir):
                exit_interrupted()
            if stall.over():
                # A cell of the round before will never report (its worker crashed): rerunning
                # the command runs it, and the rounds go on from there.
                pytest.fail(
                    f"harness_error: round {current.waiting} of the adaptive run stored nothing for "
                    f"{stall.limit_s:.0f} s (a worker lost?); run the same command again to resume",
                    pytrace=False,
                )
            time.sleep(POLL_S)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        # Attributes of a report reach the controller under xdist; its type declares none.
        if NOT_NEEDED_KEY in item.stash:
            report.akmbench_not_needed = True  # type: ignore[attr-defined]
        if WAIT_KEY in item.stash and call.when == "setup":
            report.akmbench_wait_s = item.stash[WAIT_KEY]  # type: ignore[attr-defined]
        return report

    def pytest_report_teststatus(self, report: pytest.TestReport) -> Any:
        if getattr(report, "akmbench_not_needed", False) and report.skipped:
            return "unneeded", "u", ("NOT NEEDED", {"yellow": True})
        return None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.waited_s += getattr(report, "akmbench_wait_s", 0.0)

    def report_part(
        self, cells: Iterable[tuple[str, str, int]], stored: StoredSamples
    ) -> tuple[set[tuple[str, str, int]], AdaptiveBlock]:
        """The cells the report is made of (those the plan needed) and the ``adaptive`` block."""
        ran = {c[0] for c in cells}
        if ran:  # under xdist the controller collected nothing: the node ids say which tasks
            self.tasks = [t for t in self.tasks if t in ran]
        needed, part = adaptive_run.part(
            self.plan(stored),
            self.state.arms,
            floor=self.floor,
            max_seeds=self.max_seeds,
            waited_s=self.waited_s,
        )
        return {c for c in cells if c in needed}, part


def narrow(
    config: pytest.Config, cells: set[tuple[str, str, int]], stored: StoredSamples
) -> tuple[set[tuple[str, str, int]], AdaptiveBlock | None]:
    """For the session: the cells an adaptive run's report covers, and its block (None if fixed)."""
    hooks = config.stash[STATE_KEY].plugins.get("akmbench-adaptive")
    if not isinstance(hooks, AdaptiveHooks):
        return cells, None
    return hooks.report_part(cells, stored)


def stamp(envelope: Envelope, part: AdaptiveBlock | None) -> Envelope:
    """The envelope with the ``adaptive`` block; its verdict and warnings say the design."""
    return adaptive_run.stamp(envelope, part)
