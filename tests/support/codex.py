"""Where the tests find the Codex binary.

A test needing Codex skips for exactly one reason: no Codex is installed at all (none under
``.tools/`` where ``.ci/setup`` puts it, none named by ``AKMBENCH_CODEX``, none on PATH); under
AKMBENCH_FAIL_ON_SKIP=1 that skip fails the run, as opencode's does. Any other failure to locate
it is an error of the tests that need it, never a skip.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from pytest_akmbench.agents.codex.binaries import CODEX_VERSION, local_binary, locate_codex

ROOT = Path(__file__).resolve().parents[2]
VERSION = CODEX_VERSION  # the pinned version install-tools puts in .tools/
MISSING = "codex binary not installed (none in .tools/, AKMBENCH_CODEX or on PATH); run bash .ci/setup"


def installed() -> bool:
    """Whether any Codex is at hand, judged without the plugin's own lookup."""
    return local_binary(ROOT).exists() or bool(os.environ.get("AKMBENCH_CODEX")) or shutil.which("codex") is not None


def binary() -> Path:
    """The binary the plugin would use; at module level, skips the module only when none is installed."""
    if not installed():
        pytest.skip(MISSING, allow_module_level=True)
    return locate_codex({"rootdir": str(ROOT)})
