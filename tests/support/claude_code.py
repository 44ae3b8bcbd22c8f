"""Where the tests find the Claude Code binary.

A test needing it skips for exactly one reason: no Claude Code is installed at all (none under
``.tools/`` where ``.ci/setup`` puts it, none named by ``AKMBENCH_CLAUDE``, none on PATH). Any
other failure to locate it is an error of the tests that need it, never a skip (CI refuses skips).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from pytest_akmbench.agents.claude_code.binaries import installed as installed_at
from pytest_akmbench.agents.claude_code.binaries import locate_claude

ROOT = Path(__file__).resolve().parents[2]
LOCAL = installed_at(ROOT / ".tools")
MISSING = "Claude Code not installed (none in .tools/, AKMBENCH_CLAUDE or on PATH); run bash .ci/setup"


def installed() -> bool:
    """Whether any Claude Code is at hand, judged without the plugin's own lookup."""
    return LOCAL.exists() or bool(os.environ.get("AKMBENCH_CLAUDE")) or shutil.which("claude") is not None


def binary() -> Path:
    """The binary the plugin would use; at module level, skips the module only when none is installed."""
    if not installed():
        pytest.skip(MISSING, allow_module_level=True)
    return locate_claude({"rootdir": str(ROOT)})
