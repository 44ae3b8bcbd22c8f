"""pytest wiring of one cell: its fixtures, its reports, and how a rerun or an interrupt meets it.

The plugin module imports the fixtures and hooks, so they are registered with it.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from ..cell.context import Cell
from ..cell.trial import run_trial
from ..records import Sample
from ..store.samples import reported
from ..system import procs
from ..system.interrupts import Interrupts
from .nodes import CELL_KEY, CLAIMED_KEY, SAMPLE_KEY, STORED_KEY
from .remote import FILES_KEY
from .state import STATE_KEY, BenchState
from .trial import place, settle, unstored


@pytest.fixture
def bench_procs(request: pytest.FixtureRequest) -> procs.ProcessTracker:
    """The processes of this cell. Its finalizer kills every one of them and their orphans."""
    state: BenchState = request.config.stash[STATE_KEY]
    tracker = procs.ProcessTracker(f"{state.run_id}/{request.node.nodeid}")
    request.addfinalizer(tracker.kill_all)
    return tracker


@pytest.fixture
def bench_sample(request: pytest.FixtureRequest, bench_procs: procs.ProcessTracker) -> Sample:
    """Run this cell (agent, then verifier) and return its sample; harness errors are ERRORs."""
    state: BenchState = request.config.stash[STATE_KEY]
    item: pytest.Item = request.node
    failed: str | None = None
    previous = item.stash.get(SAMPLE_KEY, None)
    stored = item.stash.get(STORED_KEY, None)
    if previous is not None:
        # A rerun plugin runs the item again: a trial is one sample, never a second chance.
        sample = previous
    elif stored is not None:
        sample = reported(stored)
    else:
        sample, failed = _run_claimed(request, state, item.stash[CELL_KEY], bench_procs)
    item.stash[SAMPLE_KEY] = sample
    if failed is not None:
        pytest.fail(failed, pytrace=False)
    if sample["outcome"] == "harness_error":
        pytest.fail(f"harness_error: {sample['reason']}", pytrace=False)
    return sample


def _run_claimed(
    request: pytest.FixtureRequest, state: BenchState, cell: Cell, tracker: procs.ProcessTracker
) -> tuple[Sample, str | None]:
    """Run the cell as a trial (cell/trial.py); returns (sample, why it could not be stored)."""
    item = request.node
    ended = run_trial(state.trial(cell), place(state, item.nodeid), tracker, state.scrub, state.interrupts)
    settle(request.session, ended)
    if ended.record is not None:
        item.stash[STORED_KEY] = ended.record
        if ended.claimed_by is not None:
            item.stash[CLAIMED_KEY] = ended.claimed_by
        return reported(ended.record), None
    assert ended.sample is not None
    if state.remote is not None:
        # The transcripts travel to the controller with the cell's first report (plugin/remote.py).
        item.stash[FILES_KEY] = state.remote.outbox()
    return ended.sample, unstored(ended)


class InterruptHooks:
    """Once a cell whose fresh sample was stored has reported all its phases (to the terminal
    or the controller), a Ctrl-C that arrived while the sample was being stored takes effect."""

    def __init__(self, interrupts: Interrupts) -> None:
        self.interrupts = interrupts

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logfinish(self) -> None:
        self.interrupts.release()

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self) -> None:
        # The cells are over: a Ctrl-C from here on must not cost the report (the session
        # drops the hold once it is written; a second Ctrl-C still exits at once).
        self.interrupts.hold()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    # A report carries extra attributes to the controller (pytest serialises its __dict__ for
    # xdist), but its type declares none: mypy cannot know these three.
    if STORED_KEY in item.stash:
        report.akmbench_from_store = True  # type: ignore[attr-defined]
    if SAMPLE_KEY in item.stash:
        # Every report of the cell carries its sample, from the setup report on (the first one
        # sent after the fixture stored it): an interrupt cutting the controller's handling of
        # one report short cannot lose the sample while the terminal counts the cell.
        report.akmbench_sample = item.stash[SAMPLE_KEY]  # type: ignore[attr-defined]
        if CLAIMED_KEY in item.stash:
            report.akmbench_claimed = item.stash[CLAIMED_KEY]  # type: ignore[attr-defined]
        if FILES_KEY in item.stash:
            # A remote cell's transcripts, for the controller to store: once, with the first report.
            report.akmbench_files = item.stash[FILES_KEY]  # type: ignore[attr-defined]
            del item.stash[FILES_KEY]
    return report


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    if getattr(report, "akmbench_from_store", False) and report.when == "call":
        if report.passed:
            return "passed", "p", ("PASSED (from store)", {"green": True})
        if report.failed:
            return "failed", "f", ("FAILED (from store)", {"red": True})
    return None
