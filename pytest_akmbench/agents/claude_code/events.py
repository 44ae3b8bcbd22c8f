"""Live parser of ``claude -p --output-format stream-json --verbose`` (docs/claude-code.md,
"The event stream").

Claude Code prints one JSON object per line: ``system`` (``init``: tools, model, version),
``assistant`` (one content block of a model message: text, thinking or a ``tool_use``, with
the message's id and its usage as ``message_start`` gave it), ``user`` (the ``tool_result`` of a
tool call), and at the end one ``result`` (the final text, the run's exact usage summed over its
requests, the cost Claude Code computes, ``num_turns``, ``subtype`` and ``is_error``).
:class:`ClaudeStream` is fed those lines as they come. It writes each to the transcript (whole
lines, up to :data:`TRANSCRIPT_CAP`), counts requests (distinct message ids) and tool calls,
keeps a running token count for the budget (each message's input once, its output as last
seen) and takes the ``result``'s usage as the measurement, reads the akm calls of Bash commands,
and remembers when the last line came.
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

SHELL = "Bash"


def tokens_of(usage: dict[str, Any]) -> dict[str, int]:
    """Anthropic's usage in the bench's token vocabulary (thinking is counted inside output)."""
    thinking = json_int(json_dict(usage.get("output_tokens_details")).get("thinking_tokens")) or 0
    found = {
        "input": json_int(usage.get("input_tokens")) or 0,
        "output": (json_int(usage.get("output_tokens")) or 0) - thinking,
        "reasoning": thinking,
        "cache_read": json_int(usage.get("cache_read_input_tokens")) or 0,
        "cache_write": json_int(usage.get("cache_creation_input_tokens")) or 0,
    }
    return {**found, "total": sum(found.values())}


class ClaudeStream(LineLog):
    """Accumulates what one Claude Code stream says, line by line (one feeding thread)."""

    def __init__(
        self, transcript: Path | None = None, *, cap: int = TRANSCRIPT_CAP, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__(transcript, cap, clock)
        self.messages: dict[str, dict[str, int]] = {}  # message id -> its tokens as last seen
        self.tool_calls = 0
        self.pending_tools = 0  # tool calls without their result yet
        self.result: dict[str, Any] | None = None
        self.version: str | None = None
        self.bad_lines = 0
        self.akm = empty_akm_usage()

    def feed(self, line: bytes) -> dict[str, Any] | None:
        raw = line if line.endswith(b"\n") else line + b"\n"
        with self._lock:
            self._write(raw)
            self.last_event_at = self._clock()
            if not raw.strip():
                return None
            try:
                event = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                self.bad_lines += 1
                return None
            if not isinstance(event, dict):
                self.bad_lines += 1
                return None
            self._apply(event)
            return event

    def _apply(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "system" and event.get("subtype") == "init":
            self.version = json_str(event.get("claude_code_version"))
        elif kind == "assistant":
            self._assistant(json_dict(event.get("message")))
        elif kind == "user":
            for block in _blocks(json_dict(event.get("message")).get("content")):
                if block.get("type") == "tool_result":
                    self.pending_tools = max(0, self.pending_tools - 1)
        elif kind == "result":
            self.result = event

    def _assistant(self, message: dict[str, Any]) -> None:
        """One block of a model message: its request counted once, its tool call read."""
        key = json_str(message.get("id")) or f"unnamed-{len(self.messages)}"
        self.messages[key] = tokens_of(json_dict(message.get("usage")))
        for block in _blocks(message.get("content")):
            if block.get("type") != "tool_use":
                continue
            self.tool_calls += 1
            self.pending_tools += 1
            command = json_dict(block.get("input")).get("command")
            if block.get("name") == SHELL and isinstance(command, str):
                note_akm(self.akm, calls(command))

    # ------------------------------------------------------------------ what it says

    @property
    def measured(self) -> bool:
        """Tokens are measured once the run's result reported its usage."""
        return self.result is not None and isinstance(self.result.get("usage"), dict)

    @property
    def tokens(self) -> dict[str, int]:
        """The result's exact usage once it came; until then the running count."""
        with self._lock:
            if self.result is not None and isinstance(self.result.get("usage"), dict):
                return tokens_of(self.result["usage"])
            total = {k: 0 for k in TOKEN_KEYS}
            for seen in self.messages.values():
                for k in TOKEN_KEYS:
                    total[k] += seen[k]
            return total

    @property
    def turns(self) -> int:
        """Model requests: the distinct messages seen (the result's ``num_turns`` counts one more
        when ``--max-turns`` stopped the run)."""
        return len(self.messages)

    @property
    def cost(self) -> float | None:
        value = (self.result or {}).get("total_cost_usd")
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    @property
    def final_text(self) -> str:
        return (json_str((self.result or {}).get("result")) or "").strip()

    def total_tokens(self) -> int:
        return self.tokens["total"]

    def over_turns(self, limit: int) -> bool:
        """More requests than ``limit`` and no result: Claude Code's own ``--max-turns`` (which the
        adapter passes) did not stop it, so the harness does."""
        return len(self.messages) > limit and self.result is None


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
