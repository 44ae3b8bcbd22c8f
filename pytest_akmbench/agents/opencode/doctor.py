"""What ``doctor`` checks of opencode: its binary and rg are there, and the model answers the
run's preflight request."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from ...errors import BenchError
from ..model import choose_model
from ..preflight import check_provider
from .binaries import locate_opencode, locate_rg, read_version


def tools(options: Mapping[str, Any]) -> list[tuple[str, Callable[[], str]]]:
    """opencode's version and path, and rg's path; each raises BenchError when missing."""
    return [
        ("opencode", lambda: f"{read_version(locate_opencode(options))} at {locate_opencode(options)}"),
        ("rg", lambda: str(locate_rg())),
    ]


def model_check(model: str | None, options: Mapping[str, Any]) -> tuple[str, str]:
    """The run's preflight: one minimal request through the provider entry the cells get (the
    line names the URL as written, so no value of a variable is printed)."""
    try:
        choice = choose_model(model, options)
    except BenchError as err:
        # A model someone asked for must work; with none chosen anywhere it is only a warning.
        asked = bool(
            model
            or os.environ.get("BENCH_OPENCODE_MODEL")
            or options.get("config_default_model")
            or options.get("providers")
            or options.get("opencode_config")
            or os.environ.get("BENCH_OPENCODE_CONFIG")
        )
        return ("FAIL" if asked else "WARN"), str(err)
    try:
        return "PASS", check_provider(choice, os.environ)
    except BenchError as err:
        return "FAIL", str(err)
