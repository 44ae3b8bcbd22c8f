"""Live parser of ``codex exec --json`` output (docs/codex.md, "The event stream").

Codex prints one JSON object per line: ``thread.started``, ``turn.started``, ``item.started`` /
``item.updated`` / ``item.completed`` (items: ``agent_message``, ``reasoning``,
``command_execution``, ``file_change``, ``mcp_tool_call``, ``web_search``, ``todo_list``,
``error``), ``turn.completed`` with the turn's usage, ``turn.failed`` and ``error``.
:class:`EventStream` is fed those lines as they arrive. It

* appends each line to the transcript with the harness's receipt time added as ``t_ms`` (Codex's
  events carry no time; a command's ``item.started`` arrives before it runs and its
  ``item.completed`` after it ends, so the two bracket what akm logged for it), up to
  :data:`TRANSCRIPT_CAP` bytes, never keeping the transcript in memory;
* takes the tokens of ``turn.completed`` (``input_tokens`` counts the cached ones,
  ``output_tokens`` the reasoning ones) in the harness's vocabulary;
* counts tool calls, keeps the final text (the agent messages after the last tool call), the
  failures (``turn.failed``, ``error``) and the warnings (``error`` items);
* extracts akm usage from the commands, read as a shell would (:func:`akm_calls.calls`);
* remembers when the last event arrived, so the caller can tell a hung agent from a busy one.

Pure: no pytest, no processes. Thread-safe for one feeding thread and any number of readers.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...cell.akm_calls import calls
from ..linelog import TOKEN_KEYS, TRANSCRIPT_CAP, LineLog, empty_akm_usage, note_akm
from ..transcript import json_dict, json_int, json_str
from .transcript import agent_command

TOOL_ITEMS = ("command_execution", "file_change", "mcp_tool_call", "web_search")


def tokens_of(usage: dict[str, Any]) -> dict[str, int]:
    """Codex's usage block in the harness's vocabulary (the one opencode's cells record)."""
    given = {k: json_int(usage.get(k)) or 0 for k in usage}
    inp, out = given.get("input_tokens", 0), given.get("output_tokens", 0)
    cached, reasoning = given.get("cached_input_tokens", 0), given.get("reasoning_output_tokens", 0)
    return {
        "input": inp - cached,
        "output": out - reasoning,
        "reasoning": reasoning,
        "cache_read": cached,
        "cache_write": given.get("cache_write_input_tokens", 0),
        "total": inp + out,
    }


class EventStream(LineLog):
    """Accumulates what a ``codex exec --json`` stream says, line by line."""

    def __init__(
        self,
        transcript: Path | None = None,
        *,
        cap: int = TRANSCRIPT_CAP,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(transcript, cap, clock)
        self._wall = wall
        self.tokens = {k: 0 for k in TOKEN_KEYS}
        self.turns_completed = 0
        self.tool_calls = 0
        self.errors: list[str] = []
        self.failed: str | None = None
        self.bad_lines = 0
        self.akm = empty_akm_usage()
        self._texts_since_tool: list[str] = []
        self.calling = False  # the last response called a tool: the agent is not done

    def feed(self, line: bytes | str) -> dict[str, Any] | None:
        """Take one line of stdout; returns the parsed event."""
        raw = line.encode("utf-8", "replace") if isinstance(line, str) else line
        with self._lock:
            self.last_event_at = self._clock()
            try:
                event = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                event = None
            if not isinstance(event, dict):
                self.bad_lines += bool(raw.strip())
                self._write(raw.rstrip(b"\n") + b"\n" if raw.strip() else b"")
                return None
            event["t_ms"] = int(self._wall() * 1000)
            self._write(json.dumps(event).encode() + b"\n")
            self._apply(event)
            return event

    def _apply(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        item = json_dict(event.get("item"))
        if kind == "turn.completed":
            self.calling = False
            self.turns_completed += 1
            for key, value in tokens_of(json_dict(event.get("usage"))).items():
                self.tokens[key] += value
        elif kind == "turn.failed":
            self.failed = json_str(json_dict(event.get("error")).get("message")) or "turn failed"
        elif kind == "error":
            self.errors.append(json_str(event.get("message")) or "")
        elif kind == "item.started" and item.get("type") in TOOL_ITEMS:
            self._tool(item)
        elif kind == "item.completed":
            if item.get("type") == "agent_message":
                self.calling = False
                self._texts_since_tool.append(json_str(item.get("text")) or "")
            elif item.get("type") == "error":
                self.warnings.append(f"codex: {json_str(item.get('message')) or ''}"[:300])
            elif item.get("type") in TOOL_ITEMS and item.get("type") != "command_execution":
                self._tool(item)  # a file change or a search comes completed, without a start

    def _tool(self, item: dict[str, Any]) -> None:
        self.tool_calls += 1
        self.calling = True
        self._texts_since_tool = []
        command = agent_command(json_str(item.get("command")))
        if item.get("type") != "command_execution" or command is None:
            return
        note_akm(self.akm, calls(command))

    @property
    def measured(self) -> bool:
        """True once a turn reported its usage."""
        return self.turns_completed > 0

    @property
    def final_text(self) -> str:
        with self._lock:
            return "\n".join(t for t in self._texts_since_tool if t).strip()
