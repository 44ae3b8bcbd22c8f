"""An adaptive run's plan read from the store and its report part, shared by the
session and the offline ``report`` command so both give the same envelope (docs/adaptive.md).

The plan is ``run/sequential.py``'s, over the valid samples under the run's fingerprints
plus the run's own harness errors (a round whose cell errored still counts as run).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import Any

from ..cell.context import Cell
from ..corpus.tasks import Task
from ..report.envelope_types import AdaptiveBlock, Envelope
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
        "verdict": f"{sequential.headline(block)} — {envelope['verdict']}",
        "warnings": [*envelope["warnings"], CAVEAT],
    }


# ---------------------------------------------------------------- the page's section

_LOOK_COLUMNS: tuple[tuple[str, str], ...] = (
    ("round", "look"),
    ("tasks", "tasks run"),
    ("pairs", "pairs"),
    ("akm_only", "akm only"),
    ("noakm_only", "noakm only"),
    ("lead_needed", "lead needed"),
    ("alpha_spent", "alpha spent"),
)
_FACTS = (
    ("stopping_reason", "stopping reason"),
    ("akm_only", "akm only"),
    ("noakm_only", "noakm only"),
    ("lead_needed", "lead needed at the last look"),
    ("direction", "ahead"),
    ("floor_lift", "lift over the floor seeds (unbiased)"),
    ("conditional_power", "conditional power at a futile stop"),
    ("cells_used", "cells used"),
    ("cells_max", "cells at most"),
    ("barrier_wait_s", "time cells waited at the barrier (s)"),
)


def _shown(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else "n/a" if value is None else str(value)


def _value(value: Any) -> str:
    """The exact figure, for a reader (or a check) that needs the JSON's number."""
    return escape(json.dumps(value))


def html_lines(envelope: Mapping[str, Any]) -> list[str]:
    """The page's "Adaptive seeds" section: the design, why it stopped, each look and its bound,
    with the same text as the summary's (``sequential.markdown_lines``); nothing for a fixed run."""
    block = envelope.get("adaptive")
    if not block:
        return []
    design = next((line for line in sequential.markdown_lines(envelope) if line.startswith("Design:")), "")
    facts = "".join(
        f'<tr><th>{escape(label)}</th><td data-field="{key}" data-value="{_value(block.get(key))}">'
        f"{escape(_shown(block.get(key)))}</td></tr>"
        for key, label in _FACTS
    )
    head = "".join(f"<th>{escape(label)}</th>" for _, label in _LOOK_COLUMNS)
    rows = "".join(
        f'<tr data-look="{look["round"]}">'
        + "".join(
            f'<td class="n" data-field="{key}" data-value="{_value(look[key])}">{escape(_shown(look[key]))}</td>'
            for key, _ in _LOOK_COLUMNS
        )
        + "</tr>"
        for look in block["history"]
    )
    return [
        '<h2 id="adaptive">Adaptive seeds</h2>',
        f'<p class="note" id="adaptive-headline">{escape(sequential.headline(block))}.</p>',
        f'<p class="note">{escape(design)}</p>',
        f'<table id="adaptive-facts"><tbody>{facts}</tbody></table>',
        f'<table id="adaptive-looks"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>',
    ]
