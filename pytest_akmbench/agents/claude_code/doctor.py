"""What ``doctor`` checks of Claude Code: its binary, when it is installed or named. It is the
second agent: a machine that runs only opencode needs none, so its absence fails nothing. The
model line is a Claude Code run's own preflight: an entry it can speak to, one Messages request
(agents/preflight.py)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..preflight import check_provider, doctor_model
from ..providers import ModelChoice
from .binaries import installed, locate_claude, read_version
from .provider import check_anthropic


def tools(options: Mapping[str, Any]) -> list[tuple[str, Callable[[], str]]]:
    """Claude Code's version and path (raising BenchError when it is broken), or nothing when it
    is neither installed nor named by AKMBENCH_CLAUDE."""
    rootdir = Path(str(options.get("rootdir") or Path.cwd()))
    named = os.environ.get("AKMBENCH_CLAUDE") or installed(rootdir / ".tools").exists() or shutil.which("claude")
    if not named:
        return []
    return [("claude", lambda: f"{read_version(locate_claude(options))} at {locate_claude(options)}")]


def model_check(model: str | None, options: Mapping[str, Any]) -> tuple[str, str] | None:
    """The run's preflight (an entry it can speak to, one Messages request) of the model a claude-code run
    would choose; nothing when it is not installed. Unless ``doctor --agent claude-code`` asked, a failure only warns: a run of
    another agent does not need it."""
    if not tools(options):
        return None
    status, line = doctor_model(model, options, _check, agent="claude-code", env=os.environ)
    if status == "FAIL" and options.get("doctor_agent") != "claude-code":
        return "WARN", f"{line} (only a claude-code run needs it)"
    return status, line


def _check(choice: ModelChoice, env: Mapping[str, str]) -> str:
    check_anthropic(choice)
    return check_provider(choice, env)
