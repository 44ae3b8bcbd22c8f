"""An agent's transcript read for akm: the akm calls the agent attempted, found by reading each
shell command as a shell would (:mod:`shell`), with the tool's exit status, and its workspace
writes, in order. The agent's own reader turns its format into neutral events
(``agents/transcript.py``); only those are read here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..agents.transcript import Moment, ToolEvent, TranscriptReader
from . import akm
from .akm_calls import calls
from .shell import writes_files

MAX_RESULTS = 10
WRITES = ("write", "edit")  # the tool kinds that write a workspace file


class Transcript:
    """The akm calls and workspace writes of one agent transcript, in order."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []  # every akm call attempted, with ok True/False/None
        self.writes: list[dict[str, Any]] = []
        self.tools: list[ToolEvent] = []  # every tool call
        self.first_ts: int | None = None
        self.context_bytes = 0  # output of the tool calls that ran akm

    def read(self, path: Path, reader: TranscriptReader) -> None:
        """Take in the items ``reader`` (the agent's own) finds in ``path``."""
        for item in reader(path):
            if isinstance(item, Moment):
                self._seen_time(item.t_ms)
            else:
                self._tool(item)

    def _seen_time(self, ts: int | None) -> None:
        if ts is not None and (self.first_ts is None or ts < self.first_ts):
            self.first_ts = ts

    def _tool(self, tool: ToolEvent) -> None:
        start, end, output, command = tool.start_ms, tool.end_ms, tool.output, tool.command
        self._seen_time(start)  # a tool may start before the transcript's first event about it
        self.tools.append(tool)
        if tool.kind in WRITES:
            if tool.finished:
                self._write(tool.tool, tool.path, end)
            return
        if tool.kind != "run-shell" or command is None:
            return
        exit_code, failed = tool.exit, not tool.ok
        found = calls(command)
        if found:
            self.context_bytes += len(output.encode("utf-8", "replace"))
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
        if not failed and writes_files(command):
            self._write(tool.tool, None, end)

    def _write(self, tool: str | None, path: str | None, at: int | None) -> None:
        self.writes.append({"kind": "write", "tool": tool, "path": path, "t_ms": at})


def cap_refs(refs: list[str] | None) -> list[str] | None:
    """At most :data:`MAX_RESULTS` refs of a search."""
    return None if refs is None else refs[:MAX_RESULTS]
