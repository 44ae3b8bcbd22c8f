"""``--bench-shard K/N``: run only shard K of the selected cells, say so in the report, record it.

The split (``store/shards.py``) is made after ``-k``/``-m`` and the corpus selection, at the end
of collection. Under xdist every worker collects and must make the same split, so the expected
walls come from the controller's store, handed to each worker with its ``workerinput``; the
first worker to finish hands the plan back through ``workeroutput``. The controller appends one
record of the plan to ``<store>/shards.jsonl`` and marks the report as a shard's (docs/ci.md).
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import BenchError
from ..report.envelope_types import Envelope, ShardBlock
from ..store import shards
from ..store.samples import SampleStore
from ..tracks.track import SHARDS
from .nodes import CELL_KEY
from .state import register

if TYPE_CHECKING:
    from ..records import CellKey
    from ..report.envelope import ReportInput
    from .state import BenchState

SHARD_KEY = pytest.StashKey["ShardHooks"]()
WALLS = "akmbench_shard_walls"
PLAN = "akmbench_shard_plan"


def activate(config: pytest.Config, state: BenchState) -> None:
    """Parse ``--bench-shard`` (or its ini twin) and register the hooks of a shard run."""
    given = state.settings.shard
    if given is None:
        return
    try:
        shard = shards.parse(given, state.settings.origins["shard"])
    except BenchError as err:
        raise pytest.UsageError(str(err)) from None
    # A shard splits cells by (task, arm, seed); the other tracks' items depend on each other
    # (evolve) or share that key (attribute's masks): the track says so (tracks/track.py).
    refusal = state.track.refusal(SHARDS)
    if refusal:
        raise pytest.UsageError(f"--bench-shard: {refusal}")
    hooks = ShardHooks(config, state, shard)
    config.stash[SHARD_KEY] = hooks
    register(config, state, hooks, "akmbench-shard")


class ShardHooks:
    def __init__(self, config: pytest.Config, state: BenchState, shard: shards.Shard) -> None:
        self.config = config
        self.state = state
        self.shard = shard
        self.plan: shards.Plan | None = None
        self.started_at = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        self._walls: dict[str, int] | None = None

    def walls(self) -> dict[str, int]:
        """Expected walls from the store's history: the worker's copy of the controller's, if any."""
        if self._walls is None:
            given = getattr(self.config, "workerinput", {}).get(WALLS)
            if isinstance(given, dict):
                self._walls = {str(k): int(v) for k, v in given.items()}
            else:
                try:
                    self._walls = shards.expected_walls(SampleStore(self.state.store_dir).iter_records())
                except BenchError as err:
                    raise pytest.UsageError(str(err)) from None
        return self._walls

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[WALLS] = self.walls()

    @pytest.hookimpl(trylast=True)  # after -k (ours, tryfirst) and -m (pytest's own)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        cells: dict[CellKey, pytest.Item] = {}
        for item in items:
            if CELL_KEY in item.stash:
                cell = item.stash[CELL_KEY]
                cells[(cell.task.id, cell.arm, cell.seed)] = item
        self.plan = shards.split(cells, self.shard.of, self.walls())
        dropped = [item for key, item in cells.items() if self.plan[key] != self.shard.index]
        if dropped:
            gone = set(map(id, dropped))
            config.hook.pytest_deselected(items=dropped)
            items[:] = [item for item in items if id(item) not in gone]
        output = getattr(config, "workeroutput", None)
        if output is not None:
            output[PLAN] = [[*key, s] for key, s in sorted(self.plan.items())]

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        given = getattr(node, "workeroutput", {}).get(PLAN)
        if self.plan is None and isinstance(given, list):
            self.plan = {(str(t), str(a), int(s)): int(k) for t, a, s, k in given}

    @pytest.hookimpl(tryfirst=True)  # before the session writes the report
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        config = session.config
        if hasattr(config, "workerinput") or config.option.collectonly or not self.plan or not self.state.run_id:
            return  # a worker, a listing, or no cell (a soundness run): nothing to record
        record = shards.make_record(self.shard, self.plan, self.state.run_id, self.started_at)
        try:
            shards.append(self.state.store_dir, record)
        except BenchError as err:
            self.state.warnings.append(str(err))

    def report(self, inp: ReportInput) -> tuple[ReportInput, ShardBlock]:
        """The report input of this shard, and the envelope's ``shard`` block (docs/report.md).

        A shard of several never reports itself complete: it covers part of the selection.
        ``shard.complete`` says whether its own cells all have a valid sample."""
        selected = len(self.plan) if self.plan is not None else None
        mine = sum(1 for s in (self.plan or {}).values() if s == self.shard.index)
        block: ShardBlock = {
            "index": self.shard.index,
            "of": self.shard.of,
            "cells": mine,
            "selected": selected,
            "complete": inp.complete,
        }
        if self.shard.of == 1:
            return inp, block
        note = (
            f"shard {self.shard.label}: this report covers {mine} of {selected} selected cells; merge the "
            "shards' stores with `python -m pytest_akmbench report --store A --store B ...` for the whole run"
        )
        return dataclasses.replace(inp, complete=False, warnings=[note, *inp.warnings]), block


def for_report(config: pytest.Config, inp: ReportInput) -> tuple[ReportInput, ShardBlock | None]:
    """``inp`` and the envelope's ``shard`` block of a shard run; unchanged without ``--bench-shard``."""
    hooks = config.stash.get(SHARD_KEY, None)
    return (inp, None) if hooks is None else hooks.report(inp)


def terminal_line(envelope: Envelope) -> str | None:
    """What the terminal says of a shard's report instead of "INCOMPLETE"."""
    block = envelope.get("shard")
    if not block or block["of"] == 1:
        return None
    state = "every one with a sample" if block["complete"] else "NOT every one with a sample"
    return f"report covers shard {block['index']}/{block['of']} only: {block['cells']} of {block['selected']} cells, {state}"
