"""An adaptive run through the real opencode binary, the scripted model and real akm."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.e2e.test_plugin_opencode import project  # noqa: F401 - the fixture
from tests.support import real_akm
from tests.support.procs import processes_under


def test_settled_after_the_floor_under_two_workers(project: Path) -> None:  # noqa: F811
    """Both arms solve the task in round 1: its outcome does not vary, so the run stops there;
    seeds 2 and 3 end NOT NEEDED (not failures), the exit status is 0 and the report says why."""
    real_akm.get()  # the akm arm runs real akm
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--bench-model",
            "scripted/oracle",
            "--bench-tasks",
            "tidectl/drain-cell",
            "--bench-until",
            "decisive",
            "--bench-floor",
            "1",
            "--bench-max-seeds",
            "3",
            "-n",
            "2",
            "-v",
        ],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "2 passed, 4 unneeded" in out and out.count("NOT NEEDED") == 4
    report = json.loads((project / "report" / "report.json").read_text())
    block = report["adaptive"]
    assert (block["stopping_reason"], block["looks"], block["cells_used"], block["cells_max"]) == ("settled", 1, 2, 6)
    assert {(r["arm"], r["seed"], r["outcome"]) for r in report["runs"]} == {("noakm", 1, "pass"), ("akm", 1, "pass")}
    assert report["complete"] is True
    assert processes_under(project / "cells") == []
