"""What ``doctor`` checks of Claude Code: its binary, when it is installed or named. It is the
second agent: a machine that runs only opencode needs none, so its absence fails nothing. The
model line is a Claude Code run's own preflight: an entry it can speak to, one Messages request
(agents/preflight.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..doctor_lines import Check, model_line, optional_binary_lines
from ..preflight import check_provider
from ..providers import ModelChoice
from .binaries import CLAUDE, read_version
from .provider import check_anthropic


def tools(options: Mapping[str, Any]) -> list[Check]:
    """Claude Code's version and path (raising BenchError when it is broken), or nothing when it
    is neither installed nor named (``--claude``, AKMBENCH_CLAUDE)."""
    return optional_binary_lines(CLAUDE, read_version, options)


def model_check(model: str | None, options: Mapping[str, Any]) -> tuple[str, str] | None:
    """The run's preflight (an entry it can speak to, one Messages request) of the model a claude-code run
    would choose; nothing when it is not installed. Unless ``doctor --agent claude-code`` asked, a failure only warns: a run of
    another agent does not need it."""
    return model_line(model, options, _check, agent="claude-code", needed=False) if tools(options) else None


def _check(choice: ModelChoice, env: Mapping[str, str]) -> str:
    check_anthropic(choice)
    return check_provider(choice, env)
