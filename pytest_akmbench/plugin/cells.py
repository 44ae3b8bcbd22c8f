"""pytest wiring of one cell: its fixtures, its reports, and how a rerun or an interrupt meets it.

The plugin module imports the fixtures and hooks, so they are registered with it.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest

from ..cell.context import Cell
from ..cell.runner import run_cell
from ..errors import StoreError
from ..records import Sample
from ..store.claims import Claim
from ..store.samples import SampleStore, reported
from ..system import lifecycle, procs
from ..system.interrupts import Interrupts
from .nodes import CELL_KEY, CLAIMED_KEY, SAMPLE_KEY, STORED_KEY
from .remote import FILES_KEY
from .state import STATE_KEY, BenchState


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
    unstored: str | None = None
    previous = item.stash.get(SAMPLE_KEY, None)
    stored = item.stash.get(STORED_KEY, None)
    if previous is not None:
        # A rerun plugin runs the item again: a trial is one sample, never a second chance.
        sample = previous
    elif stored is not None:
        sample = reported(stored)
    else:
        sample, unstored = _run_claimed(request, state, item.stash[CELL_KEY], bench_procs)
    item.stash[SAMPLE_KEY] = sample
    if unstored is not None:
        pytest.fail(f"harness_error: the sample could not be stored: {unstored}", pytrace=False)
    if sample["outcome"] == "harness_error":
        pytest.fail(f"harness_error: {sample['reason']}", pytrace=False)
    return sample


def _run_claimed(
    request: pytest.FixtureRequest, state: BenchState, cell: Cell, tracker: procs.ProcessTracker
) -> tuple[Sample, str | None]:
    """Run the cell under its claim; returns (sample, why it could not be stored)."""
    if lifecycle.is_interrupted(state.run_dir):
        pytest.exit("akmbench: the run was interrupted; no further cell starts", returncode=pytest.ExitCode.INTERRUPTED)
    item = request.node
    fp = state.fingerprint_hash(cell)
    if state.remote is not None:
        return _run_remote(request, state, cell, tracker, fp)
    claim = Claim(
        state.store_dir,
        f"{cell.task.id}\0{cell.arm}\0{cell.seed}\0{fp}",
        owner=f"run {state.run_id} (pid {os.getpid()})",
    )
    try:
        waited = claim.acquire()
    except OSError as err:
        request.session.shouldstop = f"akmbench: {state.store_dir}: cannot claim a cell ({err.strerror or err})"
        pytest.fail(f"harness_error: {request.session.shouldstop}", pytrace=False)
    try:
        index = state.stored()
        index.refresh()
        record = index.done((cell.task.id, cell.arm, cell.seed), fp)
        if record is not None:
            # Another bench on the same store ran this trial meanwhile: use its sample.
            item.stash[STORED_KEY] = record
            item.stash[CLAIMED_KEY] = waited or "another run"
            return reported(record), None
        sample = state.scrub.obj(run_cell(cell, state.context(), tracker))
        if state.interrupts is not None:
            state.interrupts.hold()  # released once the cell has reported: see _InterruptHooks
        try:
            # Appended by the process that ran the cell, the moment it ends: a crash later
            # in the session cannot lose it.
            SampleStore(state.store_dir).append(sample)
        except StoreError as err:
            # Every further cell would spend its agent run for nothing: stop the run here.
            request.session.shouldstop = f"akmbench: {err}"
            return sample, str(err)
        return sample, None
    finally:
        claim.release()


def _run_remote(
    request: pytest.FixtureRequest, state: BenchState, cell: Cell, tracker: procs.ProcessTracker, fp: str
) -> tuple[Sample, str | None]:
    """A remote worker's cell: the controller claims the trial and appends the sample
    (plugin/remote.py); the transcripts travel with the first report."""
    assert state.remote is not None
    item = request.node
    kind, body = state.remote.claim(cell, fp, item.nodeid)
    if kind == "stop":
        pytest.exit("akmbench: the run was interrupted; no further cell starts", returncode=pytest.ExitCode.INTERRUPTED)
    if kind == "capped":
        pytest.skip(body)  # the run's spend cap, checked by the controller (plugin/remote.py)
    if kind == "error":
        request.session.shouldstop = body
        pytest.fail(f"harness_error: {body}", pytrace=False)
    if kind in ("stored", "claimed"):
        record = body if kind == "stored" else body["record"]
        item.stash[STORED_KEY] = record
        if kind == "claimed":
            item.stash[CLAIMED_KEY] = body["by"]
        return reported(record), None
    sample = state.scrub.obj(run_cell(cell, state.context(), tracker))
    if state.interrupts is not None:
        state.interrupts.hold()  # until the report carrying the sample is sent: see InterruptHooks
    item.stash[FILES_KEY] = state.remote.outbox()
    return sample, None


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
