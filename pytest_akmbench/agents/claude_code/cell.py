"""What one Claude Code run came to (its result line, exit and stderr read as the cell's
``AgentResult``) and the preflight's checks before the first cell (docs/claude-code.md)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...store.scrub import Scrubber
from ...system.untrusted import read_inside
from ..base import AgentRequest, AgentResult
from ..boundary import with_inside
from ..preflight import check_provider
from ..providers import ModelChoice
from .events import ClaudeStream
from .provider import Endpoint

MAX_TURNS = "error_max_turns"  # the result's subtype when --max-turns stopped the run


def outcome(
    request: AgentRequest,
    returncode: int | None,
    stream: ClaudeStream,
    stderr_path: Path,
    scrub: Scrubber,
    warnings: list[str],
) -> AgentResult:
    """The cell's result from the stream; ``error`` only when Claude Code or the provider failed."""
    warnings.extend(stream.warnings)
    if stream.bad_lines:
        warnings.append(f"{stream.bad_lines} non-JSON line(s) on claude's stdout")
    counted = stream.measured or bool(stream.messages)
    result = AgentResult(
        final_text=stream.final_text,
        exit_code=returncode,
        tokens=dict(stream.tokens) if counted else None,
        token_measurement="measured" if counted else "missing",
        cost_usd=stream.cost,
        turns=stream.turns,
        tool_calls=stream.tool_calls,
        transcript_written=request.transcript.is_file() and stream.bytes_written > 0,
        akm={k: list(v) for k, v in stream.akm.items()},
        warnings=warnings,
    )
    end = stream.result
    if end is not None and end.get("subtype") == MAX_TURNS:
        result.budget, result.budget_tag = "turns", "confused"
        warnings.append(f"turn budget of {request.limits.turns} reached with the agent still calling tools")
    elif end is not None and end.get("is_error") is True:
        text = str(end.get("result") or end.get("subtype") or "")
        result.error = f"provider error: {scrub.text(text)[:500]}"
    elif end is None and returncode not in (0, None):
        tail = scrub.text(
            (read_inside(stderr_path, request.run_dir, limit=8192, tail=True) or b"").decode("utf-8", "replace")
        )
        result.error = (
            f"claude exited with status {returncode} without a result; stderr: {tail[-500:].strip() or '(empty)'}"
        )
    elif end is None:
        warnings.append("claude reported no result: tokens counted from its messages")
    return result


def preflight_line(
    choice: ModelChoice,
    env: Mapping[str, str],
    point: Endpoint,
    swaps: Mapping[str, str],
    binary: Path,
    options: Mapping[str, Any],
) -> str:
    """One request to the model with the cells' credentials, then Claude Code's start and the way
    to the model from inside a cell's sandbox (agents/boundary.py)."""
    line = check_provider(choice, env)
    return with_inside(line, options, [binary], lambda: (point.upstream, point.cell_path), swaps, "claude")
