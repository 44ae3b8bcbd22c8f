"""Codex's transcript (``codex exec --json`` events, each stamped with the harness's receipt time
``t_ms``, docs/codex.md) read as the neutral events every analysis takes
(``agents/transcript.py``): each tool item a :class:`ToolEvent`, each event's time a
:class:`Moment`."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..transcript import Moment, ToolEvent, ToolKind, TranscriptItem, iter_json_lines, json_dict, json_int, json_str

SHELLS = ("bash", "sh", "zsh", "dash")
# A file_change's kinds; Codex's other tool items (mcp_tool_call, web_search) are "other".
CHANGES: dict[str, ToolKind] = {"add": "write", "update": "edit", "delete": "edit"}
DONE = ("completed", "failed")  # a command that ran to its end, whatever its exit status


def agent_command(shown: str | None) -> str | None:
    """The command as the model gave it: Codex shows it wrapped in its shell
    (``/bin/bash -c '<command>'``, or ``-lc`` for a login shell)."""
    if shown is None:
        return None
    try:
        words = shlex.split(shown)
    except ValueError:
        return shown
    if len(words) == 3 and Path(words[0]).name in SHELLS and words[1] in ("-c", "-lc"):
        return words[2]
    return shown


def read_transcript(path: Path) -> Iterator[TranscriptItem]:
    """The items of one Codex transcript, streamed (``iter_json_lines``); a command started and
    never completed (the run was stopped) ends unfinished."""
    started: dict[str, tuple[dict[str, Any], int | None]] = {}
    for event in iter_json_lines(path):
        ts = json_int(event.get("t_ms"))
        if ts is not None:
            yield Moment(ts)
        item = json_dict(event.get("item"))
        key = json_str(item.get("id")) or ""
        if event.get("type") == "item.started" and item.get("type") == "command_execution":
            started[key] = (item, ts)
        elif event.get("type") == "item.completed":
            begun = started.pop(key, (item, ts))[1] if item.get("type") == "command_execution" else ts
            yield from tool_events(item, begun, ts)
    for item, ts in started.values():
        yield from tool_events({**item, "status": "in_progress"}, ts, None)


def tool_events(item: dict[str, Any], start: int | None, end: int | None) -> Iterator[ToolEvent]:
    """The tool calls of one completed item; a field of the wrong type reads as missing."""
    kind = item.get("type")
    status = json_str(item.get("status"))
    if kind == "command_execution":
        yield ToolEvent(
            kind="run-shell",
            tool="exec_command",
            command=agent_command(json_str(item.get("command"))),
            output=json_str(item.get("aggregated_output")) or "",
            start_ms=start,
            end_ms=end or start,
            finished=status in DONE,
            exit=json_int(item.get("exit_code")),
        )
    elif kind == "file_change":
        given = item.get("changes")
        changes = given if isinstance(given, list) else []
        for change in (json_dict(c) for c in changes):
            yield ToolEvent(
                kind=CHANGES.get(json_str(change.get("kind")) or "", "edit"),
                tool="apply_patch",
                path=json_str(change.get("path")),
                start_ms=start,
                end_ms=end or start,
                finished=status == "completed",
            )
    elif kind in ("mcp_tool_call", "web_search"):
        yield ToolEvent(kind="other", tool=str(kind), start_ms=start, end_ms=end or start, finished=status != "failed")
