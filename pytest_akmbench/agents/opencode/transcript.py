"""opencode's transcript (``opencode run --format json`` events, docs/opencode.md) read as the
neutral events every analysis takes (``agents/transcript.py``): each ``tool_use`` event a
:class:`ToolEvent`, each event's timestamp a :class:`Moment`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..transcript import Moment, ToolEvent, ToolKind, TranscriptItem, iter_json_lines, json_dict, json_int, json_str

# opencode's tool names; any other tool (todowrite, webfetch, task, skill) is "other".
KINDS: dict[str, ToolKind] = {
    "bash": "run-shell",
    "write": "write",
    "edit": "edit",
    "patch": "edit",
    "multiedit": "edit",
    "apply_patch": "edit",
    "read": "read",
    "grep": "read",
    "glob": "read",
    "list": "read",
}


def read_transcript(path: Path) -> Iterator[TranscriptItem]:
    """The items of one opencode transcript, streamed (``iter_json_lines``)."""
    for event in iter_json_lines(path):
        ts = json_int(event.get("timestamp"))
        if ts is not None:
            yield Moment(ts)
        if event.get("type") == "tool_use":
            yield tool_event(json_dict(event.get("part")), ts)


def tool_event(part: dict[str, Any], ts: int | None) -> ToolEvent:
    """One ``tool_use`` part; a field of the wrong type reads as missing (opencode emits the
    event after the tool started: its own start time, else the event's)."""
    state = json_dict(part.get("state"))
    inputs, times = json_dict(state.get("input")), json_dict(state.get("time"))
    start = json_int(times.get("start")) or ts
    tool = json_str(part.get("tool"))
    kind = KINDS.get(tool, "other") if tool is not None else "other"
    return ToolEvent(
        kind=kind,
        tool=tool,
        command=json_str(inputs.get("command")) if kind == "run-shell" else None,
        path=json_str(inputs.get("filePath")),
        output=json_str(state.get("output")) or "",
        start_ms=start,
        end_ms=json_int(times.get("end")) or start,
        finished=state.get("status") == "completed",
        exit=json_int(json_dict(state.get("metadata")).get("exit")),
    )
