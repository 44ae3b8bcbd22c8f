"""What ``doctor`` checks of Codex: its binary, where one is installed. Only ``--bench-agent
codex`` needs it, so a machine without it is not failed for it; the model line sends a Codex run's
own preflight request, in Codex's protocol (:mod:`preflight`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..doctor_lines import Check, model_line, optional_binary_lines
from .binaries import CODEX, read_version
from .preflight import check_responses


def tools(options: Mapping[str, Any]) -> list[Check]:
    """Codex's version and path; nothing when none is installed and none was named."""
    return optional_binary_lines(CODEX, read_version, options)


def model_check(model: str | None, options: Mapping[str, Any]) -> tuple[str, str] | None:
    """The run's preflight (one Responses request) of the model a codex run
    would choose; nothing when it is not installed. Unless ``doctor --agent codex`` asked, a failure only warns: a run of
    another agent does not need it."""
    return model_line(model, options, check_responses, agent="codex", needed=False) if tools(options) else None
