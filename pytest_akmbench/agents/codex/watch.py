"""Watching one Codex run: its stdout fed to the event stream, the wall, token and turn budgets
enforced, and what the run's end means (docs/codex.md, "Budgets").

Codex reports its usage on stdout only when the whole turn ends. While it runs, each model
response's usage is in its session log (``$CODEX_HOME/sessions/…/rollout-*.jsonl``, a
``token_count`` event per response), which :class:`Rollout` follows for the budgets. The tokens a
run records are stdout's when the turn ended, else the session log's last total. The turn budget
is the forwarder's first (docs/codex.md, "Budgets"): the session log only notices it later.
"""

from __future__ import annotations

import json
import os
import queue
import stat
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from ...store.scrub import Scrubber
from ...system.forwarder import TurnGate
from ..base import AgentRequest, AgentResult, Limits
from ..transcript import json_dict
from ..watching import turns_held, wake_on
from .events import EventStream, tokens_of

HUNG_AFTER_S = 20.0
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


def watch(
    proc: subprocess.Popen[bytes],
    stream: EventStream,
    rollout: Rollout,
    request: AgentRequest,
    scrub: Scrubber,
    gate: TurnGate | None = None,
) -> tuple[str | None, float]:
    """Feed Codex's stdout to the stream until it ends or a budget is hit; then stop it.
    Returns (the budget hit or None, seconds since the last agent event)."""
    lines: queue.Queue[bool | None] = queue.Queue()
    wake_on(gate, lines)

    def read() -> None:
        assert proc.stdout is not None
        try:
            for line in iter(proc.stdout.readline, b""):
                stream.feed(scrub.bytes(line))
                lines.put(True)
        except (OSError, ValueError):
            pass
        lines.put(False)

    reader = threading.Thread(target=read, name="akmbench-codex-reader", daemon=True)
    reader.start()
    deadline = stream.started_at + request.limits.wall_s
    budget, eof = _until_end(proc, stream, rollout, lines, request.limits, deadline, gate)
    idle = stream.idle_for()
    if budget is not None or not eof:
        request.procs.stop(proc)
    else:
        try:
            proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            budget = "wall"
            request.procs.stop(proc)
    reader.join(timeout=5)
    stream.close()
    rollout.poll()
    return budget, idle


def _until_end(
    proc: subprocess.Popen[bytes],
    stream: EventStream,
    rollout: Rollout,
    lines: queue.Queue[bool | None],
    limits: Limits,
    deadline: float,
    gate: TurnGate | None,
) -> tuple[str | None, bool]:
    """Wait for the end of Codex's output, a budget or its exit: (budget hit, output ended)."""
    exited_at: float | None = None
    while True:
        now = time.monotonic()
        if now >= deadline:
            return "wall", False
        if gate is not None and gate.over.is_set():
            rollout.poll()
        if turns_held(gate, max(rollout.turns, stream.turns_completed)):  # the forwarder holds one past it
            return "turns", False
        try:
            item = lines.get(timeout=min(0.25, deadline - now))
        except queue.Empty:
            item = None
        if item is False:
            return None, True
        rollout.poll()
        if limits.tokens is not None and rollout.tokens is not None and rollout.tokens["total"] > limits.tokens:
            return "tokens", False
        # A turn budget reached with the agent still calling tools: the next response would pass it.
        if limits.turns is not None and rollout.turns >= limits.turns and stream.calling:
            return "turns", False
        if proc.poll() is not None:
            exited_at = exited_at or time.monotonic()
            if time.monotonic() - exited_at > 2.0:  # a leaked child holding stdout must not keep us
                return None, False


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


def over_budget(result: AgentResult, budget: str, idle: float, elapsed: float, limits: Limits) -> None:
    """Mark the budget hit, tagged ``hung`` (no agent event for a while) or ``confused``."""
    result.budget = budget
    if budget == "wall":
        result.budget_tag = "hung" if idle >= min(HUNG_AFTER_S, 0.5 * limits.wall_s) else "confused"
        result.warnings.append(
            f"wall budget of {limits.wall_s:g}s reached after {elapsed:.1f}s (no agent event for {idle:.1f}s)"
        )
        return
    result.budget_tag = "confused"
    if budget == "tokens":
        total = (result.tokens or {}).get("total")
        result.warnings.append(f"token budget of {limits.tokens} exceeded: {total} tokens after {result.turns} turn(s)")
    else:
        result.warnings.append(f"turn budget of {limits.turns} reached with the agent still calling tools")


def failure(stream: EventStream, returncode: int | None, stderr_text: str) -> str | None:
    """Why the run failed on Codex's or the provider's side, or None."""
    if stream.failed is not None:
        return f"provider error: {stream.failed}"
    if returncode not in (0, None):
        last = stream.errors[-1] if stream.errors else stderr_text[-500:].strip() or "(empty)"
        return f"codex exited with status {returncode}: {last}"
    return None
