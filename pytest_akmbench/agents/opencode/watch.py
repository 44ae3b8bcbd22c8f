"""Watching one opencode run: its stdout fed to the event stream, the wall, token and turn
budgets enforced (the turn budget first at the forwarder, docs/opencode.md "Budgets"), and what
the run's end means."""

from __future__ import annotations

import queue
import subprocess
import threading
import time

from ...store.scrub import Scrubber
from ...system.forwarder import TurnGate
from ..base import AgentRequest, AgentResult, Limits
from ..watching import turns_held, wake_on
from .events import EventStream

HUNG_AFTER_S = 20.0


def watch(
    proc: subprocess.Popen[bytes],
    stream: EventStream,
    request: AgentRequest,
    started: float,
    scrub: Scrubber,
    gate: TurnGate | None = None,
) -> tuple[str | None, float]:
    """Feed opencode's stdout to the stream until it ends or a budget is hit; then stop it.
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

    reader = threading.Thread(target=read, name="akmbench-opencode-reader", daemon=True)
    reader.start()
    deadline = started + request.limits.wall_s
    budget, eof = _until_end(proc, stream, lines, request.limits, deadline, gate)
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
    return budget, idle


def _until_end(
    proc: subprocess.Popen[bytes],
    stream: EventStream,
    lines: queue.Queue[bool | None],
    limits: Limits,
    deadline: float,
    gate: TurnGate | None,
) -> tuple[str | None, bool]:
    """Wait for the end of opencode's output, a budget or its exit: (budget hit, output ended)."""
    exited_at: float | None = None
    while True:
        now = time.monotonic()
        if now >= deadline:
            return "wall", False
        if turns_held(gate, stream.turns):  # the forwarder holds a request past the budget
            return "turns", False
        try:
            item = lines.get(timeout=min(0.25, deadline - now))
        except queue.Empty:
            item = None
        if item is False:
            return None, True
        if item:
            if limits.tokens is not None and stream.tokens["total"] > limits.tokens:
                return "tokens", False
            if (
                limits.turns is not None
                and stream.turns >= limits.turns
                and stream.last_finish_reason not in (None, "stop", "length", "content-filter")
                and stream.turns > 0
            ):
                return "turns", False
        if proc.poll() is not None:
            # opencode exited; give the reader a moment to drain stdout (a leaked child
            # holding the pipe must not keep us here).
            exited_at = exited_at or time.monotonic()
            if time.monotonic() - exited_at > 2.0:
                return None, False


def stream_warnings(stream: EventStream, stderr_text: str, warnings: list[str]) -> None:
    warnings.extend(stream.warnings)
    for rejection in stream.permission_rejections:
        warnings.append(f"permission auto-rejected: {rejection}")
    if "auto-rejecting" in stderr_text and not stream.permission_rejections:
        warnings.append("permission auto-rejected (see opencode stderr)")
    if stream.bad_lines:
        warnings.append(f"{stream.bad_lines} non-JSON line(s) on opencode stdout")


def agent_result(
    request: AgentRequest, returncode: int | None, stream: EventStream, warnings: list[str]
) -> AgentResult:
    return AgentResult(
        final_text=stream.final_text,
        exit_code=returncode,
        tokens=dict(stream.tokens) if stream.measured else None,
        token_measurement="measured" if stream.measured else "missing",
        cost_usd=stream.cost if stream.measured else None,
        turns=stream.turns,
        tool_calls=stream.tool_calls,
        transcript_written=request.transcript.is_file() and stream.bytes_written > 0,
        akm={k: list(v) for k, v in stream.akm.items()},
        warnings=warnings,
    )


def over_budget(
    result: AgentResult, budget: str, idle: float, elapsed: float, limits: Limits, stream: EventStream
) -> None:
    """Mark the budget hit, tagged ``hung`` (no agent event for a while) or ``confused``."""
    result.budget = budget
    if budget == "wall":
        hung_after = min(HUNG_AFTER_S, 0.5 * limits.wall_s)
        result.budget_tag = "hung" if idle >= hung_after else "confused"
        result.warnings.append(
            f"wall budget of {limits.wall_s:g}s reached after {elapsed:.1f}s (no agent event for {idle:.1f}s)"
        )
        return
    result.budget_tag = "confused"
    if budget == "tokens":
        result.warnings.append(
            f"token budget of {limits.tokens} exceeded: {stream.tokens['total']} tokens after {stream.turns} turn(s)"
        )
    else:
        result.warnings.append(f"turn budget of {limits.turns} reached with the agent still calling tools")


def failure(stream: EventStream, returncode: int | None, stderr_text: str) -> str | None:
    """Why the run failed on opencode's or the provider's side, or None."""
    if stream.errors and (stream.errors_after_last_step or returncode not in (0, None)):
        err = stream.errors[-1]
        status = f" (HTTP {err['statusCode']})" if err.get("statusCode") else ""
        name = f"{err['name']}: " if err.get("name") else ""
        return f"provider error: {name}{err['message']}{status}"
    if returncode not in (0, None):
        return (
            f"opencode exited with status {returncode} without an error event; "
            f"stderr: {stderr_text[-500:].strip() or '(empty)'}"
        )
    return None
