"""The pytest face of a trial (cell/trial.py): where a cell of this process is claimed, and how a
trial that ended without a sample of its own becomes pytest's exit, skip or failure."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

from ..cell.trial import INTERRUPTED, Ended, Place, StorePlace
from .state import BenchState


def exit_interrupted() -> NoReturn:
    """No further cell starts: Ctrl-C, SIGTERM or ``kill`` reached the run (system/interrupts.py)."""
    pytest.exit(INTERRUPTED, returncode=pytest.ExitCode.INTERRUPTED)


def place(state: BenchState, nodeid: str) -> Place:
    """The store, claimed by this process; on a remote worker the controller (plugin/remote.py)."""
    if state.remote is not None:
        return state.remote.place(nodeid)
    return StorePlace(state.store_dir, state.stored(), owner=f"run {state.run_id} (pid {os.getpid()})")


def settle(session: pytest.Session, ended: Ended) -> None:
    """Raise the pytest outcome of a trial that has no sample to give; a sample the store
    refused stops the run after this cell (every further cell would spend its agent run for
    nothing), and the caller fails the cell once the sample is kept for its report."""
    if ended.interrupted:
        exit_interrupted()
    if ended.skip is not None:
        pytest.skip(ended.skip)
    if ended.error is not None:
        session.shouldstop = ended.error
        pytest.fail(f"harness_error: {ended.error}", pytrace=False)
    if ended.unstored is not None:
        session.shouldstop = f"akmbench: {ended.unstored}"


def unstored(ended: Ended) -> str | None:
    """The failure of a cell whose fresh sample could not be stored, else None."""
    if ended.unstored is None:
        return None
    return f"harness_error: the sample could not be stored: {ended.unstored}"
