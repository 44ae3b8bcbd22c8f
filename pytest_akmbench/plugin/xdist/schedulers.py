"""The xdist schedulers of a run, registered on the controller only: the evolve track's work
units (docs/tracks.md, "evolve") and an adaptive run's rounds (docs/adaptive.md)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from .. import internals

LOOKAHEAD = 2  # cells a worker holds under xdist: the one it runs and the next
_CHAIN = re.compile(r"(train|post)(-e\d+)?-s\d+|proposals(-e\d+)?")


def scope(nodeid: str) -> str:
    """The work unit of an item: ``evolve-<domain>`` for the chain that depends on the proposal
    steps (``<domain>/<task>/task.yaml::train-s1``, ``::proposals``, ``::post-s2``, and a later
    episode's ``::train-e2-s1``, ``::proposals-e2``, ``::post-e2-s1``), else itself."""
    path, _, name = nodeid.partition("::")
    if _CHAIN.fullmatch(name):
        return "evolve-" + Path(path).parent.parent.name
    return nodeid


class EvolveScheduler:
    """Under xdist, a domain's train cells, its proposal step and its post cells are one work
    unit: one worker runs them in collection order. (``xdist_group`` cannot do it with pytest 9,
    whose node ids ignore the suffix xdist writes.)"""

    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        return internals.scope_scheduler(config, log, scope)


class RoundScheduler:
    """The xdist scheduler of an adaptive run (registered on the controller when xdist is on)."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        """Cells one at a time, in collection order, each worker holding only the cell after
        the one it runs. xdist's load scheduling fills a worker's queue up to an eighth of what
        is pending, and worksteal first splits everything in halves: either way one worker may
        hold most of a round while another waits at the barrier with the next round's cell."""
        return internals.round_scheduler(config, log, LOOKAHEAD)
