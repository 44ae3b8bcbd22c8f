"""Run-level spend caps: ``--bench-budget-usd`` and ``--bench-budget-run-tokens`` (README, "Spend caps").

Before a cell starts, the process about to run it reads what this run has spent so far from the
store (the samples this run appended, every worker's, read incrementally) and, once a cap is
reached, skips the cell with ``not run: spend cap …`` instead of running it. Cells already running
finish; a skipped cell stores nothing, so a later run (resume) runs it. Two workers that check at
the same moment may each start one more cell past the cap: the cap bounds when cells *start*, and
the overshoot is at most one cell per worker. A remote worker cannot read the store: the controller
checks the cap when the worker claims a cell (plugin/remote.py) and the cell is skipped alike. The controller counts the
skipped cells and gives the report its ``spend.cap`` block.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass

import pytest

from ..records import Sample
from ..report.envelope_types import SpendCap
from ..report.spend import cap_block, spent
from ..run import resume
from ..store.runs import CapRecord
from ..tracks.track import CAPS
from .nodes import CELL_KEY, STORED_KEY
from .state import STATE_KEY, BenchState, register

REASON = "not run: spend cap"
PLUGIN = "akmbench-caps"


@dataclass(frozen=True, slots=True)
class Cap:
    kind: str  # "usd" or "tokens"
    limit: float
    origin: str  # where it was set, for messages

    def text(self, value: float) -> str:
        return f"${value:.4f}" if self.kind == "usd" else f"{int(value)} tokens"


def parse(state: BenchState) -> list[Cap]:
    """The caps set on the command line, in the run config or the ini (corpus/config.py resolves
    them and refuses a bad value in one line naming where it came from)."""
    s = state.settings
    found = [("usd", s.budget_usd, "budget_usd"), ("tokens", s.budget_run_tokens, "budget_run_tokens")]
    return [Cap(kind, value, s.origins[name]) for kind, value, name in found if value is not None]


class SpendCaps:
    """Skips cells once a cap is reached (every process) and counts them (the controller)."""

    def __init__(self, state: BenchState, caps: list[Cap]) -> None:
        self.state = state
        self.caps = caps
        self.not_run = 0
        self._counted = 0  # this run's records already summed into _so_far (the store only grows)
        self._so_far = {"usd": 0.0, "tokens": 0.0}

    def reached(self, records: list[Sample]) -> tuple[Cap, float] | None:
        """The first cap ``records`` (this run's, in store order) reach, with what they spent."""
        for kind, value in spent(records[self._counted :]).items():
            self._so_far[kind] += value
        self._counted = len(records)
        so_far = self._so_far
        for cap in self.caps:
            if so_far[cap.kind] >= cap.limit:
                return cap, so_far[cap.kind]
        return None

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if CELL_KEY not in item.stash or STORED_KEY in item.stash or self.state.remote is not None:
            return  # not a cell, or one the store answers at no cost, or a worker with no store
        index = self.state.stored()
        index.refresh()
        why = self.reason(index.of_run(self.state.run_id))
        if why is not None:
            pytest.skip(why)

    def reason(self, records: list[Sample]) -> str | None:
        """Why no further cell starts, once ``records`` (this run's) reach a cap; else None."""
        hit = self.reached(records)
        if hit is None:
            return None
        cap, value = hit
        return f"{REASON} {cap.text(cap.limit)} reached ({cap.text(value)} spent by this run; {cap.origin})"

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        longrepr = report.longrepr
        if report.skipped and call.when == "setup" and isinstance(longrepr, tuple) and REASON in longrepr[2]:
            # Said at the cell's task.yaml, where every other cell outcome is reported, not here.
            path, line, _ = item.location
            report.longrepr = (path, (line or 0) + 1, longrepr[2])
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped and report.when == "setup" and REASON in str(report.longrepr):
            self.not_run += 1

    def block(self, stored: resume.StoredSamples) -> SpendCap:
        """The envelope's ``spend.cap``: the cap that stopped the run, else the first one set."""
        return cap_block(self.records(), stored.of_run(self.state.run_id), self.not_run)

    def records(self) -> list[CapRecord]:
        """The caps as the store's run record keeps them (store/runs.py)."""
        return [{"kind": c.kind, "limit": c.limit, "origin": c.origin} for c in self.caps]


def install(config: pytest.Config, state: BenchState) -> None:
    """Register the caps, when any is set, in this process (controller and workers alike)."""
    caps = parse(state)
    # Only the utility report says that a cap stopped the run; elsewhere a cell left out
    # would go unexplained (the track says so, tracks/track.py).
    refusal = state.track.refusal(CAPS)
    if caps and refusal:
        raise pytest.UsageError(f"{caps[0].origin}: {refusal}")
    if caps and state.track.wants(CAPS):
        register(config, state, SpendCaps(state, caps), PLUGIN)


def report_block(config: pytest.Config, stored: resume.StoredSamples) -> SpendCap | None:
    plugin = config.stash[STATE_KEY].plugins.get(PLUGIN)
    return plugin.block(stored) if isinstance(plugin, SpendCaps) else None
