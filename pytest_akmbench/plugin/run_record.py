"""The controller's record of an adaptive or capped run in the store (store/runs.py), so the
offline ``report`` command rebuilds the report this session writes (docs/report.md, "Rebuilding offline")."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from ..errors import StoreError
from ..store import runs
from .adaptive import AdaptiveHooks
from .caps import PLUGIN as CAPS_PLUGIN
from .caps import SpendCaps
from .state import BenchState


def make(config: pytest.Config, state: BenchState) -> runs.RunRecord | None:
    """This run's record, or None for a run neither adaptive nor capped (its samples say it all)."""
    hooks = state.plugins.get("akmbench-adaptive")
    capper = state.plugins.get(CAPS_PLUGIN)
    adaptive = hooks if isinstance(hooks, AdaptiveHooks) else None
    caps = capper if isinstance(capper, SpendCaps) else None
    if adaptive is None and caps is None:
        return None
    return {
        "run_id": state.run_id,
        "written_at": datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        # The adaptive plan's stream runs over the tasks in this order (run/sequential.py).
        "tasks": list(adaptive.tasks) if adaptive is not None else [t.id for t in state.tasks],
        "arms": list(state.arms),
        "adaptive": None
        if adaptive is None
        else {
            "until": "decisive",
            "floor": adaptive.floor,
            "max_seeds": adaptive.max_seeds,
            "barrier_wait_s": round(adaptive.waited_s, 3),
        },
        "caps": caps.records() if caps is not None else [],
        "not_run": caps.not_run if caps is not None else 0,
    }


def save(config: pytest.Config, state: BenchState) -> list[str]:
    """Append the record (after the report's part is known); a warning line when it cannot be."""
    record = make(config, state)
    if record is None:
        return []
    try:
        runs.append(state.store_dir, record)
    except StoreError as err:
        return [f"{err}: `python -m pytest_akmbench report` will rebuild this run's report as a fixed design"]
    return []
