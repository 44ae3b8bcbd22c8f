"""Live parser of ``opencode run --format json`` output (docs/opencode.md, "The event stream").

opencode prints one JSON object per line: ``{"type", "timestamp", "sessionID", "part"|"error"}``
with ``type`` one of ``step_start``, ``tool_use``, ``step_finish``, ``text``, ``reasoning`` and
``error``. :class:`EventStream` is fed those lines as they arrive. It

* appends each raw line to the transcript file, up to :data:`TRANSCRIPT_CAP` bytes (whole lines
  only; past the cap it stops writing, keeps parsing and records a warning), and never keeps
  the transcript in memory;
* sums ``step_finish`` tokens into ``{input, output, reasoning, cache_read, cache_write, total}``
  and their cost, counts turns (one per ``step_finish``) and tool calls (``tool_use`` parts);
* keeps the final text: the text parts that came after the last tool call;
* records ``error`` events (name, message, statusCode) and permission auto-rejections;
* extracts akm usage from bash tool commands (``akm search``, ``akm show``, ``akm feedback``,
  read as a shell would: :func:`akm_calls.calls`);
* remembers when the last event arrived, so the caller can tell a hung agent from a busy one.

Pure: no pytest, no processes. Thread-safe for one feeding thread and any number of readers.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...cell.akm_calls import calls
from ..linelog import TOKEN_KEYS, TRANSCRIPT_CAP, LineLog, empty_akm_usage, note_akm

_REJECTED = re.compile(r"rejected permission|user rejected|permission .*rejected", re.IGNORECASE)


class EventStream(LineLog):
    """Accumulates what an opencode ``run --format json`` stream says, line by line."""

    def __init__(
        self,
        transcript: Path | None = None,
        *,
        cap: int = TRANSCRIPT_CAP,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(transcript, cap, clock)
        self.transcript = transcript
        self.tokens = {k: 0 for k in TOKEN_KEYS}
        self.cost = 0.0
        self.turns = 0
        self.tool_calls = 0
        self.reasoning_parts = 0
        self.last_finish_reason: str | None = None
        self.errors: list[dict[str, Any]] = []
        self.errors_after_last_step = 0
        self.permission_rejections: list[str] = []
        self.tool_errors = 0
        self.bad_lines = 0
        self.session_id: str | None = None
        self.akm = empty_akm_usage()
        self._texts_since_tool: list[str] = []

    # ------------------------------------------------------------------ input

    def feed(self, line: bytes | str) -> dict[str, Any] | None:
        """Take one line of stdout (with or without its newline); returns the parsed event."""
        raw = line.encode("utf-8", "replace") if isinstance(line, str) else line
        if not raw.endswith(b"\n"):
            raw += b"\n"
        with self._lock:
            self._write(raw)
            self.last_event_at = self._clock()
            text = raw.strip()
            if not text:
                return None
            try:
                event = json.loads(text)
            except (json.JSONDecodeError, UnicodeDecodeError):
                self.bad_lines += 1
                return None
            if not isinstance(event, dict):
                self.bad_lines += 1
                return None
            self._apply(event)
            return event

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _apply(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        part = _dict(event.get("part"))
        if self.session_id is None and isinstance(event.get("sessionID"), str):
            self.session_id = event["sessionID"]
        if kind == "step_finish":
            self._step_finish(part)
        elif kind == "tool_use":
            self._tool_use(part)
        elif kind == "text":
            text = part.get("text")
            if isinstance(text, str):
                self._texts_since_tool.append(text)
        elif kind == "reasoning":
            self.reasoning_parts += 1
        elif kind == "error":
            self._error(_dict(event.get("error")))

    def _step_finish(self, part: dict[str, Any]) -> None:
        """One turn ended: its tokens, cost and finish reason."""
        self.turns += 1
        self.errors_after_last_step = 0
        tokens = _dict(part.get("tokens"))
        cache = _dict(tokens.get("cache"))
        values = {
            "input": tokens.get("input"),
            "output": tokens.get("output"),
            "reasoning": tokens.get("reasoning"),
            "cache_read": cache.get("read"),
            "cache_write": cache.get("write"),
        }
        step_total = 0
        for key, value in values.items():
            number = _number(value)
            n = int(number) if number is not None else 0
            self.tokens[key] += n
            step_total += n
        total = _number(tokens.get("total"))
        self.tokens["total"] += int(total) if total is not None else step_total
        cost = _number(part.get("cost"))
        if cost is not None:
            self.cost += float(cost)
        reason = part.get("reason")
        self.last_finish_reason = reason if isinstance(reason, str) else None

    def _tool_use(self, part: dict[str, Any]) -> None:
        """A tool call: counted, its permission rejection noted, its akm calls read."""
        self.tool_calls += 1
        self._texts_since_tool = []
        state = _dict(part.get("state"))
        tool = part.get("tool")
        if state.get("status") == "error":
            self.tool_errors += 1
            message = str(state.get("error") or state.get("output") or "")
            if _REJECTED.search(message):
                self.permission_rejections.append(f"{tool}: {message[:200]}")
        command = _dict(state.get("input")).get("command")
        if tool == "bash" and isinstance(command, str):
            note_akm(self.akm, calls(command))

    def _error(self, err: dict[str, Any]) -> None:
        """An error event (a provider's failure): name, message and HTTP status."""
        data = _dict(err.get("data"))
        message = data.get("message", err.get("message", ""))
        self.errors.append(
            {"name": str(err.get("name", "")), "message": str(message), "statusCode": data.get("statusCode")}
        )
        self.errors_after_last_step += 1

    # ------------------------------------------------------------------ output

    @property
    def measured(self) -> bool:
        """True once at least one step_finish reported tokens."""
        return self.turns > 0

    @property
    def final_text(self) -> str:
        with self._lock:
            return "\n".join(t for t in self._texts_since_tool if t).strip()

    def total_tokens(self) -> int:
        return self.tokens["total"]

    def over_turns(self, limit: int) -> bool:
        """A turn budget reached with the agent still calling tools: its last step ended for
        another reason than a final answer, so the next one would pass the budget."""
        return (
            self.turns >= limit
            and self.last_finish_reason not in (None, "stop", "length", "content-filter")
            and self.turns > 0
        )


def _dict(value: Any) -> dict[str, Any]:
    """A JSON value that should be an object; anything else reads as an empty one."""
    return value if isinstance(value, dict) else {}


def _number(value: Any) -> int | float | None:
    """A JSON number (not a boolean), or None."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
