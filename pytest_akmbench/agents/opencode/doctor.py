"""What ``doctor`` checks of opencode: its binary and rg are there, and the model answers the
run's preflight request."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from ..preflight import check_provider, doctor_model
from .binaries import locate_opencode, locate_rg, read_version


def tools(options: Mapping[str, Any]) -> list[tuple[str, Callable[[], str]]]:
    """opencode's version and path, and rg's path; each raises BenchError when missing."""
    return [
        ("opencode", lambda: f"{read_version(locate_opencode(options))} at {locate_opencode(options)}"),
        ("rg", lambda: str(locate_rg())),
    ]


def model_check(model: str | None, options: Mapping[str, Any]) -> tuple[str, str]:
    """The run's preflight: one minimal request through the provider entry the cells get."""
    return doctor_model(model, options, check_provider, agent="opencode", env=os.environ)
