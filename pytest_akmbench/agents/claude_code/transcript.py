"""Claude Code's transcript (its ``stream-json`` lines, docs/claude-code.md) read as the neutral
events every analysis takes (``agents/transcript.py``): each ``tool_use`` block of an assistant
line and the ``tool_result`` that answers it make one :class:`ToolEvent`; each line's timestamp
is a :class:`Moment`."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from ..transcript import Moment, ToolEvent, ToolKind, TranscriptItem, iter_json_lines, json_dict, json_str

# Claude Code's tool names; any other (Task, TodoWrite, WebFetch, ...) is "other".
KINDS: dict[str, ToolKind] = {
    "Bash": "run-shell",
    "Write": "write",
    "Edit": "edit",
    "MultiEdit": "edit",
    "NotebookEdit": "edit",
    "Read": "read",
    "Grep": "read",
    "Glob": "read",
    "LS": "read",
}
# A failed Bash call's result starts with its exit status (docs/claude-code.md).
_EXIT = re.compile(r"\AExit code (\d+)\n?")


def read_transcript(path: Path) -> Iterator[TranscriptItem]:
    """The items of one Claude Code transcript, streamed; a call cut off before its result is
    yielded unfinished at the end."""
    open_calls: dict[str, tuple[dict[str, Any], int | None]] = {}
    for event in iter_json_lines(path):
        ts = _ms(event.get("timestamp"))
        if ts is not None:
            yield Moment(ts)
        content = json_dict(event.get("message")).get("content")
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict):
                continue
            if event.get("type") == "assistant" and block.get("type") == "tool_use":
                open_calls[str(block.get("id"))] = (block, ts)
            elif event.get("type") == "user" and block.get("type") == "tool_result":
                call = open_calls.pop(str(block.get("tool_use_id")), None)
                if call is not None:
                    yield tool_event(call[0], call[1], block, ts)
    for block, started in open_calls.values():
        yield tool_event(block, started, None, None)


def tool_event(call: dict[str, Any], start: int | None, result: dict[str, Any] | None, end: int | None) -> ToolEvent:
    """One tool call and its result (None: it never came); a field of the wrong type reads as
    missing."""
    tool = json_str(call.get("name"))
    kind = KINDS.get(tool, "other") if tool is not None else "other"
    inputs = json_dict(call.get("input"))
    output = _text(result.get("content")) if result is not None else ""
    failed = result is not None and result.get("is_error") is True
    status = _EXIT.match(output) if failed else None
    if status is not None:
        output = output[status.end() :]
    exit_code = int(status.group(1)) if status is not None else 0 if kind == "run-shell" and result else None
    return ToolEvent(
        kind=kind,
        tool=tool,
        command=json_str(inputs.get("command")) if kind == "run-shell" else None,
        path=json_str(inputs.get("file_path")) or json_str(inputs.get("notebook_path")) or json_str(inputs.get("path")),
        output=output,
        start_ms=start,
        end_ms=end if end is not None else start,
        finished=result is not None and (not failed or status is not None),
        exit=exit_code if result is not None else None,
    )


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _ms(stamp: Any) -> int | None:
    """An ISO timestamp (``2026-12-06T03:04:39.499Z``) as epoch ms."""
    if not isinstance(stamp, str):
        return None
    try:
        return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None
