"""What ``doctor`` checks of Codex: its binary, where one is installed. Only ``--bench-agent
codex`` needs it, so a machine without it is not failed for it; the model line is opencode's (the
same providers file), and a Codex run's own preflight sends its request in Codex's protocol
(:mod:`preflight`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from ...errors import BenchError
from .binaries import locate_codex, read_version


def tools(options: Mapping[str, Any]) -> list[tuple[str, Callable[[], str]]]:
    """Codex's version and path; nothing when none is installed and none was named."""
    named = bool(options.get("codex") or os.environ.get("AKMBENCH_CODEX"))
    try:
        locate_codex(options)
    except BenchError:
        if not named:
            return []
    return [("codex", lambda: f"{read_version(locate_codex(options))} at {locate_codex(options)}")]
