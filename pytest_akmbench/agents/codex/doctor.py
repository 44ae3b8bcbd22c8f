"""What ``doctor`` checks of Codex: its binary, and that the model answers the run's preflight
request (the same providers file and request as opencode's: agents/opencode/doctor.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..opencode import doctor as opencode_doctor
from .binaries import locate_codex, read_version


def tools(options: Mapping[str, Any]) -> list[tuple[str, Callable[[], str]]]:
    """Codex's version and path; raises BenchError when it is missing."""
    return [("codex", lambda: f"{read_version(locate_codex(options))} at {locate_codex(options)}")]


def model_check(model: str | None, options: Mapping[str, Any]) -> tuple[str, str]:
    """The run's preflight: one minimal request through the provider entry the cells get."""
    return opencode_doctor.model_check(model, options)
