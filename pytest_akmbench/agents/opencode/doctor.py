"""What ``doctor`` checks of opencode: its binary and rg are there, and the model answers the
run's preflight request."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..doctor_lines import Check, binary_line, model_line
from ..preflight import check_provider
from .binaries import locate_opencode, locate_rg, read_version


def tools(options: Mapping[str, Any]) -> list[Check]:
    """opencode's version and path, and rg's path; each raises BenchError when missing."""
    return [
        binary_line("opencode", locate_opencode, read_version, options),
        ("rg", lambda: str(locate_rg())),
    ]


def model_check(model: str | None, options: Mapping[str, Any]) -> tuple[str, str]:
    """The run's preflight: one minimal request through the provider entry the cells get."""
    return model_line(model, options, check_provider, agent="opencode")
