"""What ``doctor`` checks of Claude Code: its binary, and that the model answers the run's
preflight request with the credentials the cells get."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from ...errors import BenchError
from ..opencode.model import choose_model
from ..opencode.preflight import check_provider
from .binaries import locate_claude, read_version
from .provider import check_anthropic


def tools(options: Mapping[str, Any]) -> list[tuple[str, Callable[[], str]]]:
    """Claude Code's version and path; raises BenchError when it is missing."""
    return [("claude", lambda: f"{read_version(locate_claude(options))} at {locate_claude(options)}")]


def model_check(model: str | None, options: Mapping[str, Any]) -> tuple[str, str]:
    """The run's preflight request (the line names the URL as written, never a value)."""
    try:
        choice = choose_model(model, options)
        check_anthropic(choice)
    except BenchError as err:
        asked = bool(model or options.get("providers") or options.get("config_default_model"))
        return ("FAIL" if asked else "WARN"), str(err)
    try:
        return "PASS", check_provider(choice, os.environ)
    except BenchError as err:
        return "FAIL", str(err)
