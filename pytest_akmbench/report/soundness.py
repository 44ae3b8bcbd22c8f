"""The envelope's ``soundness`` block and how the summary and the page show it (docs/report.md,
"Soundness").

Per task, what ``--bench-soundness`` found the last time it checked the task as it is now: the
untouched workspace fails (``nop_fails``), the solution passes (``solution_passes``), the
verifier says the same twice (``repeatable``) and, when an akm was given, searching the task's
keywords lists its gold asset (``akm_finds_gold``), and with which query form (``found_by``:
``words`` as separate arguments, as akm-bench's prompt shows them, else ``phrase``, the words quoted
as one argument, else ``none``; docs/akm.md, "Query forms").
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any, cast

from ..cell.rundir import task_hash
from ..corpus.tasks import Task
from ..store import soundness as store
from .envelope_rows import SoundnessRow
from .envelope_types import Envelope, SoundnessBlock

CHECKS = ("nop_fails", "solution_passes", "repeatable", "akm_finds_gold")


def record(task: Task, checks: dict[str, bool | None], problems: list[str], **extra: Any) -> store.SoundnessRecord:
    """One task's result as stored; ``extra``: what the run knows of the check (its akm, its run
    id, the query form that found the gold asset, when)."""
    out: dict[str, Any] = {
        "task_id": task.id,
        "task_hash": task_hash(task),
        "sound": not problems,
        "checks": {k: checks.get(k) for k in CHECKS},
        "problems": list(problems),
        **extra,
    }
    return cast("store.SoundnessRecord", out)


def block(tasks: list[Task], store_dir: Path | None) -> SoundnessBlock | None:
    """The ``soundness`` block for ``tasks``, or None when the store holds no result at all."""
    found = store.latest(store_dir) if store_dir is not None else {}
    if not found:
        return None
    rows: list[SoundnessRow] = []
    unchecked: list[str] = []
    for task in tasks:
        rec = found.get(f"{task.id}\0{task_hash(task)}")
        if rec is None:
            unchecked.append(task.id)
            continue
        rows.append(
            {
                "task_id": rec["task_id"],
                "sound": rec.get("sound"),
                "checks": rec.get("checks"),
                "problems": rec.get("problems"),
                "found_by": rec.get("found_by"),
                "akm_version": rec.get("akm_version"),
                "checked_at": rec.get("checked_at"),
            }
        )
    return {
        "tasks": len(tasks),
        "checked": len(rows),
        "sound": sum(bool(r["sound"]) for r in rows),
        "unchecked": unchecked,
        "by_task": rows,
    }


def _what(rows: list[SoundnessRow]) -> str:
    checked = ["nop fails", "solution passes", "verifier repeatable"]
    if any((r["checks"] or {}).get("akm_finds_gold") is not None for r in rows):
        checked.append(f"akm finds each gold asset{found_by_counts(rows)}")
    return ", ".join(checked)


def found_by_counts(rows: list[SoundnessRow]) -> str:
    """How many gold assets each query form found, as `` (by words 30, only as a phrase 2,
    by neither 1)``; empty when no row says (results stored before ``found_by`` was recorded)."""
    forms = [r.get("found_by") for r in rows if r.get("found_by")]
    if not forms:
        return ""
    parts = [
        f"{label} {forms.count(form)}"
        for form, label in (("words", "by words"), ("phrase", "only as a phrase"), ("none", "by neither"))
        if form in forms
    ]
    return f" ({', '.join(parts)})"


def headline(b: SoundnessBlock) -> str:
    """What the soundness block shows, in one clause."""
    rows = b["by_task"]
    if not rows:
        return f"corpus soundness: none of the {b['tasks']} tasks checked as they are now"
    bad = [r for r in rows if not r["sound"]]
    tail = f"; {len(b['unchecked'])} not checked as they are now" if b["unchecked"] else ""
    if bad:
        first = bad[0]
        return (
            f"corpus NOT sound: {len(bad)} of {len(rows)} checked tasks fail their checks "
            f"({first['task_id']}: {(first['problems'] or ['?'])[0]}{' …' if len(bad) > 1 else ''}){tail}"
        )
    return f"corpus sound: {len(rows)} of {len(rows)} checked tasks ({_what(rows)}){tail}"


def _mark(value: Any) -> str:
    return {True: "✓", False: "✗"}.get(value, "—")


def markdown_lines(envelope: Envelope) -> list[str]:
    b = envelope.get("soundness")
    if not b:
        return []
    lines = ["", "## Corpus soundness", "", headline(b)]
    bad = [r for r in b["by_task"] if not r["sound"]]
    if bad:
        lines += [""] + [f"- {r['task_id']}: {'; '.join(r['problems'] or [])}" for r in bad[:50]]
    phrase = [r["task_id"] for r in b["by_task"] if r.get("found_by") == "phrase"]
    if phrase:
        lines += [
            "",
            f"Found only as a quoted phrase, not as separate words (akm searches the first word of "
            f"`akm search a b`; docs/akm.md): {', '.join(phrase[:50])}{' …' if len(phrase) > 50 else ''}",
        ]
    return lines


def html_lines(envelope: Envelope) -> list[str]:
    b = envelope.get("soundness")
    if not b:
        return []
    head = "".join(f"<th>{h}</th>" for h in ("task", *CHECKS, "found_by", "problems"))
    rows = "".join(
        f'<tr data-sound="{str(bool(r["sound"])).lower()}"><td>{escape(r["task_id"])}</td>'
        + "".join(f"<td>{_mark((r['checks'] or {}).get(k))}</td>" for k in CHECKS)
        + f"<td>{escape(r.get('found_by') or '—')}</td>"
        + f"<td>{escape('; '.join(r['problems'] or []))}</td></tr>"
        for r in b["by_task"]
    )
    return [
        '<h2 id="soundness">Corpus soundness</h2>',
        f'<p id="soundness-headline">{escape(headline(b))}</p>',
        f'<table id="soundness-table"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>',
    ]
