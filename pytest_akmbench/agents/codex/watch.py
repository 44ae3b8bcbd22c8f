"""What one Codex run is to agents/watching.py, which watches it, and what its end means
(docs/codex.md, "Budgets").

Codex reports its usage on stdout only when the whole turn ends. While it runs, each model
response's usage is in its session log (``$CODEX_HOME/sessions/…/rollout-*.jsonl``, a
``token_count`` event per response), which :class:`Rollout` follows for the budgets. The tokens a
run records are stdout's when the turn ended, else the session log's last total. The turn budget
is the forwarder's first (docs/codex.md, "Budgets"): the session log only notices it later.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from ..base import AgentRequest, AgentResult
from ..transcript import json_dict
from .events import EventStream, tokens_of

READ_CAP = 1024 * 1024  # of the session log per look


class Rollout:
    """The model responses of a run so far, from Codex's session log under ``codex_home``."""

    def __init__(self, codex_home: Path) -> None:
        self.sessions = codex_home / "sessions"
        self.path: Path | None = None
        self.pos = 0
        self.rest = b""
        self.turns = 0
        self.tokens: dict[str, int] | None = None

    def poll(self) -> None:
        """Read what the log gained; a log that is not a regular file is not read."""
        if self.path is None:
            found = sorted(self.sessions.glob("*/*/*/rollout-*.jsonl"))
            if not found:
                return
            self.path = found[0]
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return
            fh.seek(self.pos)
            data = fh.read(READ_CAP)
        self.pos += len(data)
        *lines, self.rest = (self.rest + data).split(b"\n")
        for line in lines:
            self._line(line)

    def _line(self, line: bytes) -> None:
        try:
            record = json.loads(line)
        except (ValueError, UnicodeDecodeError):
            return
        payload = json_dict(json_dict(record).get("payload"))
        info = json_dict(payload.get("info"))
        if payload.get("type") == "token_count" and info:
            self.turns += 1
            self.tokens = tokens_of(json_dict(info.get("total_token_usage")))


class Progress:
    """A Codex run as agents/watching.py watches it: stdout's events for the wall budget and the
    tool calls, the session log (polled, :class:`Rollout`) for the tokens and turns."""

    def __init__(self, stream: EventStream, rollout: Rollout) -> None:
        self.stream = stream
        self.rollout = rollout

    def feed(self, line: bytes) -> object:
        return self.stream.feed(line)

    def close(self) -> None:
        self.stream.close()

    def idle_for(self) -> float:
        return self.stream.idle_for()

    def total_tokens(self) -> int:
        return self.rollout.tokens["total"] if self.rollout.tokens is not None else 0

    def over_turns(self, limit: int) -> bool:
        """A turn budget reached with the agent still calling tools: the next response would pass it."""
        return self.rollout.turns >= limit and self.stream.calling

    @property
    def turns(self) -> int:
        return max(self.rollout.turns, self.stream.turns_completed)


def agent_result(
    request: AgentRequest, returncode: int | None, stream: EventStream, rollout: Rollout, warnings: list[str]
) -> AgentResult:
    tokens: dict[str, Any] | None = dict(stream.tokens) if stream.measured else rollout.tokens
    return AgentResult(
        final_text=stream.final_text,
        exit_code=returncode,
        tokens=dict(tokens) if tokens is not None else None,
        token_measurement="measured" if tokens is not None else "missing",
        turns=max(rollout.turns, stream.turns_completed),
        tool_calls=stream.tool_calls,
        transcript_written=request.transcript.is_file() and stream.bytes_written > 0,
        akm={k: list(v) for k, v in stream.akm.items()},
        warnings=[*warnings, *stream.warnings]
        + ([f"{stream.bad_lines} non-JSON line(s) on codex stdout"] if stream.bad_lines else []),
    )


def failure(stream: EventStream, returncode: int | None, stderr_text: str) -> str | None:
    """Why the run failed on Codex's or the provider's side, or None."""
    if stream.failed is not None:
        return f"provider error: {stream.failed}"
    if returncode not in (0, None):
        last = stream.errors[-1] if stream.errors else stderr_text[-500:].strip() or "(empty)"
        return f"codex exited with status {returncode}: {last}"
    return None
