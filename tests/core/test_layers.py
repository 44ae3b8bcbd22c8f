from __future__ import annotations

import subprocess
import sys

import pytest

CORE = [
    "agents", "cli", "compare", "config", "corpus", "doctor", "errors", "events", "gates", "lifecycle",
    "lift", "metrics", "opencode", "procs", "prompts", "providers", "report", "resume", "runner", "scripted",
    "significance", "stats", "store", "summary", "trajectory", "validate", "verifiers", "claims", "integrity",
    "interrupts", "preflight", "scrub", "akm", "shell", "sandbox", "snoop",
]


@pytest.mark.parametrize("module", CORE)
def test_core_module_does_not_import_pytest(module: str) -> None:
    """The CLI and the core run without pytest: importing them must not pull it in."""
    code = f"import sys, pytest_akmbench.{module}; print('pytest' in sys.modules or '_pytest' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
