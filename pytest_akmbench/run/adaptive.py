"""An adaptive run's plan read from the store and its report part, shared by the
session and the offline ``report`` command so both give the same envelope (docs/adaptive.md).

The plan is ``run/sequential.py``'s, over the valid samples under the run's fingerprints
plus the run's own harness errors (a round whose cell errored still counts as run).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..cell.context import Cell
from ..corpus.tasks import Task
from ..report.envelope_types import AdaptiveBlock, Envelope
from ..report.render.adaptive import headline
from . import sequential
from .resume import StoredSamples

CAVEAT = (
    "adaptive run: the p-values, intervals and lifts of the comparisons assume a fixed number of seeds "
    "(a run that stops early on a large lift reports it too large); the adaptive block's sign test is the "
    "test valid under its stopping and its floor_lift the unbiased lift"
)


def plan_from_store(
    tasks: Sequence[Task],
    arms: Sequence[str],
    index: StoredSamples,
    fingerprint: Callable[[Cell], str],
    run_id: str,
    *,
    floor: int,
    max_seeds: int,
    cache: dict[sequential.Key, str] | None = None,
) -> sequential.Plan:
    """The plan the store implies now, with ``run_id``'s harness errors counted as run.
    ``cache`` keeps the cells' fingerprint hashes between calls (the barrier asks often)."""
    fps = {} if cache is None else cache
    outcomes: dict[sequential.Key, bool] = {}
    for task in tasks:
        for arm in arms:
            for seed in range(1, max_seeds + 1):
                key = (task.id, arm, seed)
                if key not in fps:
                    fps[key] = fingerprint(Cell(task, arm, seed))
                record = index.done(key, fps[key])
                if record is not None:
                    outcomes[key] = record["outcome"] == "pass"
    errored = {
        (r["task_id"], r["arm"], r["seed"])
        for r in index.of_run(run_id)
        if r["outcome"] == "harness_error" and fps.get((r["task_id"], r["arm"], r["seed"])) == r.get("fingerprint_hash")
    }
    ids = [t.id for t in tasks]
    return sequential.plan(ids, arms, outcomes, errored, floor=floor, max_seeds=max_seeds)


def part(
    plan: sequential.Plan, arms: Sequence[str], *, floor: int, max_seeds: int, waited_s: float
) -> tuple[set[sequential.Key], AdaptiveBlock]:
    """The cells the report is made of (those the plan needed) and the ``adaptive`` block."""
    block = sequential.block(plan, arms=arms, floor=floor, max_seeds=max_seeds)
    block["barrier_wait_s"] = round(waited_s, 3)
    return set(plan.cells(arms)), block


def stamp(envelope: Envelope, block: AdaptiveBlock | None) -> Envelope:
    """The envelope with the ``adaptive`` block; its verdict and warnings say the design."""
    if block is None:
        return envelope
    return {
        **envelope,
        "adaptive": block,
        "verdict": f"{headline(block)} — {envelope['verdict']}",
        "warnings": [*envelope["warnings"], CAVEAT],
    }
