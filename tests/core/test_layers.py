from __future__ import annotations

import subprocess
import sys

import pytest

CORE = [
    "agents", "agents.base", "agents.opencode.adapter", "agents.opencode.events", "agents.opencode.providers",
    "agents.opencode.scripted", "agents.opencode.snoop", "cell.akm", "cell.prompts", "cell.runner", "cell.shell",
    "cell.trajectory", "cell.validate", "cell.verifiers", "cli.doctor", "cli.main", "corpus.config", "corpus.tasks",
    "errors", "report.compare", "report.envelope", "report.gates", "report.lift", "report.markdown", "report.metrics",
    "report.resume", "report.significance", "report.stats", "store.claims", "store.integrity", "store.preflight",
    "store.samples", "store.scrub", "system.interrupts", "system.lifecycle", "system.procs", "system.sandbox",
]


@pytest.mark.parametrize("module", CORE)
def test_core_module_does_not_import_pytest(module: str) -> None:
    """The CLI and the core run without pytest: importing them must not pull it in."""
    code = f"import sys, pytest_akmbench.{module}; print('pytest' in sys.modules or '_pytest' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
