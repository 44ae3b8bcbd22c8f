"""What ``doctor`` checks of Claude Code: its binary, when it is installed or named. It is the
second agent: a machine that runs only opencode needs none, so its absence fails nothing. The
model check is opencode's (agents/opencode/doctor.py: the same one-token request through the
same providers entry); whether the entry is Anthropic's is checked when a run starts."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .binaries import installed, locate_claude, read_version


def tools(options: Mapping[str, Any]) -> list[tuple[str, Callable[[], str]]]:
    """Claude Code's version and path (raising BenchError when it is broken), or nothing when it
    is neither installed nor named by AKMBENCH_CLAUDE."""
    rootdir = Path(str(options.get("rootdir") or Path.cwd()))
    named = os.environ.get("AKMBENCH_CLAUDE") or installed(rootdir / ".tools").exists() or shutil.which("claude")
    if not named:
        return []
    return [("claude", lambda: f"{read_version(locate_claude(options))} at {locate_claude(options)}")]
