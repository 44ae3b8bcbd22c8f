"""An adaptive run's sections: the headline (also the verdict's prefix), the summary's and the
page's "Adaptive seeds" from the envelope's ``adaptive`` block (docs/adaptive.md); nothing for a
fixed design."""

from __future__ import annotations

import json
from collections.abc import Mapping
from html import escape
from typing import Any

STOP_TEXT = {
    "decisive": "decisive",
    "futile": "futile",
    "max_seeds": "the most seeds ran",
    "settled": "every run passed, no room left for akm",
    None: "not finished (interrupted, or cells still to run)",
}


def headline(adaptive: Mapping[str, Any]) -> str:
    """One line: the design, its looks, why it stopped, what the test says and the unbiased lift."""
    reason = STOP_TEXT.get(adaptive["stopping_reason"], str(adaptive["stopping_reason"]))
    if adaptive.get("conditional_power") is not None:
        reason += (
            f" (conditional power {adaptive['conditional_power']:.1%} at the trend so far, below "
            f"{adaptive['futility']:.0%}; not the chance that more seeds would have been decisive)"
        )
    looks = adaptive["looks"]
    lead = adaptive["akm_only"] - adaptive["noakm_only"]
    text = (
        f"adaptive seeds: {looks} look{'s' if looks != 1 else ''}, stopped: {reason}; "
        f"{adaptive['cells_used']} of at most {adaptive['cells_max']} cells; "
        f"sign test lead {abs(lead)} of {adaptive['akm_only'] + adaptive['noakm_only']} discordant pairs"
    )
    if adaptive.get("lead_needed") is not None:
        text += f" (decisive at {adaptive['lead_needed']})"
    if adaptive["decisive"]:
        text += f": {adaptive['direction']} ahead"
    if adaptive.get("floor_lift") is not None:
        text += f"; lift {adaptive['floor_lift']:+.2f} over seeds 1–{adaptive['floor']} of every task (unbiased)"
    return text


def markdown_lines(envelope: Mapping[str, Any]) -> list[str]:
    """The summary's section on an adaptive run; nothing for a fixed design."""
    adaptive = envelope.get("adaptive")
    if not adaptive:
        return []
    lines = ["", "## Adaptive seeds", "", headline(adaptive) + ".", ""]
    lines += [
        f"Design: every task runs seeds 1..{adaptive['floor']}, then one more seed per round, up to "
        f"{adaptive['max_seeds']} (never more cells than a fixed run of {adaptive['max_seeds']} seeds); after "
        f"each round from seed {adaptive['floor']} on, a two-sided sign test on the discordant akm − noakm pairs, "
        f"spending alpha {adaptive['alpha']:g} over the rounds (O'Brien–Fleming-like); futile once its "
        f"conditional power falls below {adaptive.get('futility', 0):.0%} (docs/adaptive.md). "
        "The p-values, intervals and lifts above assume a fixed design: under adaptive stopping the sign test "
        "decides, and the lift over the first seeds is the unbiased one.",
        "",
        "| look | tasks run | pairs | akm only | noakm only | lead needed | alpha spent |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for look in adaptive["history"]:
        lines.append(
            f"| {look['round']} | {look['tasks']} | {look['pairs']} | {look['akm_only']} | "
            f"{look['noakm_only']} | {look['lead_needed']} | {look['alpha_spent']:.4f} |"
        )
    return lines


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
    with the same text as the summary's (``markdown_lines``); nothing for a fixed run."""
    block = envelope.get("adaptive")
    if not block:
        return []
    design = next((line for line in markdown_lines(envelope) if line.startswith("Design:")), "")
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
        f'<p class="note" id="adaptive-headline">{escape(headline(block))}.</p>',
        f'<p class="note">{escape(design)}</p>',
        f'<table id="adaptive-facts"><tbody>{facts}</tbody></table>',
        f'<table id="adaptive-looks"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>',
    ]
