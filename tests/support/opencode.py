"""Where the tests find the opencode binary.

A test needing opencode skips for exactly one reason: no opencode is installed at all (none under
``.tools/`` where ``.ci/setup`` puts it, none named by ``AKMBENCH_OPENCODE``, none on PATH). Any
other failure to locate it (a bad ``AKMBENCH_OPENCODE``, a bug in the lookup) is an error of the
tests that need it, never a skip: CI refuses skips, and a skip would hide the bug.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from pytest_akmbench.agents.opencode.binaries import PLATFORM_PACKAGE, locate_opencode

ROOT = Path(__file__).resolve().parents[2]
LOCAL = ROOT / ".tools" / "node_modules" / PLATFORM_PACKAGE / "bin" / "opencode"
MISSING = "opencode binary not installed (none in .tools/, AKMBENCH_OPENCODE or on PATH); run bash .ci/setup"


def installed() -> bool:
    """Whether any opencode is at hand, judged without the plugin's own lookup."""
    return LOCAL.exists() or bool(os.environ.get("AKMBENCH_OPENCODE")) or shutil.which("opencode") is not None


def binary() -> Path:
    """The binary the plugin would use; at module level, skips the module only when none is installed."""
    if not installed():
        pytest.skip(MISSING, allow_module_level=True)
    return locate_opencode({"rootdir": str(ROOT)})
