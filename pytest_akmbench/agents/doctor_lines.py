"""The lines ``doctor`` gives of any agent (cli/doctor.py prints them): its binary's version and
path, and its model's preflight (agents/preflight.py). An agent that a machine may lack (every one
but opencode) is not failed for it: it has no lines when it is absent, and its model failing only
warns unless ``doctor --agent`` asked for it."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..errors import BenchError
from .locate import Binary
from .preflight import doctor_model
from .providers import ModelChoice

Check = tuple[str, Callable[[], str]]  # a doctor line's name and what gives its detail (or raises BenchError)


def binary_line(
    name: str,
    locate: Callable[[Mapping[str, Any]], Path],
    read_version: Callable[[Path], str],
    options: Mapping[str, Any],
) -> Check:
    """The binary's line: "<version> at <path>", raising BenchError when it is missing or broken."""
    return name, lambda: f"{read_version(locate(options))} at {locate(options)}"


def optional_binary_lines(
    binary: Binary, read_version: Callable[[Path], str], options: Mapping[str, Any]
) -> list[Check]:
    """The binary line of an agent a machine may lack: none when it is neither named (its option
    or its variable) nor found; when it is named, its line says what is wrong with it."""
    named = bool(options.get(binary.option) or os.environ.get(binary.variable))
    try:
        binary.locate(options)
    except BenchError:
        if not named:
            return []
    return [binary_line(binary.name, binary.locate, read_version, options)]


def model_line(
    model: str | None,
    options: Mapping[str, Any],
    check: Callable[[ModelChoice, Mapping[str, str]], str],
    *,
    agent: str,
    needed: bool = True,
) -> tuple[str, str]:
    """The run's preflight ``check`` of the model an ``agent`` run would choose; when the agent is
    not ``needed``, a failure only warns unless ``doctor --agent`` named it: a run of another agent
    does not need it."""
    status, line = doctor_model(model, options, check, agent=agent, env=os.environ)
    if status == "FAIL" and not needed and options.get("doctor_agent") != agent:
        return "WARN", f"{line} (only a {agent} run needs it)"
    return status, line
