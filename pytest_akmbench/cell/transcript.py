"""Reading an agent transcript (``opencode run --format json`` events, docs/opencode.md): the
akm calls the agent attempted, found by reading each bash command as a shell would
(:mod:`shell`), with the tool's exit status, and its workspace writes, in order. Files are
streamed line by line with a per-line cap, never read whole."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import akm
from .akm_calls import calls
from .shell import writes_files

LINE_CAP = 4 * 1024 * 1024
MAX_RESULTS = 10
WRITE_TOOLS = frozenset(("write", "edit", "patch", "multiedit", "apply_patch"))


def iter_json_lines(path: Path, cap: int = LINE_CAP) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSON-lines file, streamed; lines longer than ``cap`` are skipped."""
    with open(path, "rb") as fh:
        while True:
            line = fh.readline(cap + 1)
            if not line:
                return
            if len(line) > cap and not line.endswith(b"\n"):
                while (rest := fh.readline(cap)) and not rest.endswith(b"\n"):
                    pass  # drain an over-long line without holding it
                continue
            try:
                obj = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue
            if isinstance(obj, dict):
                yield obj


def json_int(value: Any) -> int | None:
    """A JSON number as an int (not a boolean), or None."""
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def json_dict(value: Any) -> dict[str, Any]:
    """A JSON value that should be an object; anything else reads as an empty one."""
    return value if isinstance(value, dict) else {}


class Transcript:
    """The akm calls and workspace writes of one opencode transcript, in order."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []  # every akm call attempted, with ok True/False/None
        self.writes: list[dict[str, Any]] = []
        self.tools: list[dict[str, Any]] = []  # every tool call: tool, t_ms, ok, command (bash)
        self.first_ts: int | None = None
        self.context_bytes = 0  # output of the tool calls that ran akm

    def read(self, path: Path) -> None:
        for event in iter_json_lines(path):
            ts = json_int(event.get("timestamp"))
            self._seen_time(ts)
            if event.get("type") == "tool_use":
                self._tool(json_dict(event.get("part")), ts)

    def _seen_time(self, ts: int | None) -> None:
        if ts is not None and (self.first_ts is None or ts < self.first_ts):
            self.first_ts = ts

    def _tool(self, part: dict[str, Any], ts: int | None) -> None:
        state = json_dict(part.get("state"))
        inputs, times = json_dict(state.get("input")), json_dict(state.get("time"))
        start = json_int(times.get("start")) or ts
        end = json_int(times.get("end")) or start
        self._seen_time(start)  # opencode emits step_start after the tool has started
        completed = state.get("status") == "completed"
        exit_code = json_int(json_dict(state.get("metadata")).get("exit"))
        raw_output = state.get("output")
        output = raw_output if isinstance(raw_output, str) else ""
        tool, command = part.get("tool"), inputs.get("command")
        tool_ok = completed and exit_code in (None, 0)
        self.tools.append({"tool": tool, "t_ms": start, "ok": tool_ok, "command": command if tool == "bash" else None})
        if tool in WRITE_TOOLS:
            if completed:
                self._write(tool, inputs.get("filePath"), end)
            return
        if tool != "bash" or not isinstance(command, str):
            return
        found = calls(command)
        if found:
            self.context_bytes += len(output.encode("utf-8", "replace"))
        failed = not completed or (exit_code is not None and exit_code != 0)
        for call in found:
            # A command's status belongs to its last command: only a lone call can be judged
            # failed by it; in a longer command a failure leaves each call unknown (None).
            ok = (not failed) if len(found) == 1 or not failed else None
            entry: dict[str, Any] = {
                "kind": call.verb,
                "t_ms": start,
                "ok": ok,
                "exit": exit_code if len(found) == 1 else None,
                "t_end": end,  # akm logs a call's events between its tool call's start and end
            }
            if call.verb == "search":
                entry["query"] = call.query
                entry["results"] = cap_refs(akm.search_refs(output)) if ok and len(found) == 1 else None
            elif call.verb in ("show", "feedback"):
                entry["ref"] = call.ref
                entry["polarity"] = call.polarity
                if len(found) == 1:
                    entry["bytes"] = len(output.encode("utf-8", "replace"))
            else:
                entry["args"] = list(call.args[:2])  # `akm workflow start X`: the subcommand
                if call.logged_query is not None:
                    entry["query"] = call.logged_query  # `akm curate Q` (0.7) searches and shows
            self.calls.append(entry)
        if completed and not failed and writes_files(command):
            self._write("bash", None, end)

    def _write(self, tool: str, path: Any, at: int | None) -> None:
        self.writes.append({"kind": "write", "tool": tool, "path": path if isinstance(path, str) else None, "t_ms": at})


def cap_refs(refs: list[str] | None) -> list[str] | None:
    """At most :data:`MAX_RESULTS` refs of a search."""
    return None if refs is None else refs[:MAX_RESULTS]
