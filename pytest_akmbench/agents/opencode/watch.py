"""What one opencode run's end means: its warnings, its result and its failure. The run itself is
watched by agents/watching.py (the turn budget first at the forwarder, docs/opencode.md
"Budgets"); :class:`events.EventStream` says when a step ends over the turn budget."""

from __future__ import annotations

from ..base import AgentRequest, AgentResult
from .events import EventStream


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
