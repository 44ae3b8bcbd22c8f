"""What `bash .ci/main` shows, on one task (issue 14): the soundness run's results land in the
report of the run after it, and the shipped quick config through real opencode with the scripted
model reads as a dry run, not as a comparison, with the tokens the scripted server reported."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from pytest_akmbench.scripted.server import usage_for_turn
from tests.e2e.test_plugin_opencode import ROOT, project  # noqa: F401 - the fixture
from tests.support import real_akm
from tests.support.procs import processes_under

TASK = "logline/redact-ctx"


def _pytest(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_main_job_on_one_task(project: Path) -> None:  # noqa: F811
    shutil.copytree(ROOT / "configs", project / "configs")
    sound = _pytest(project, "corpus", "--bench-soundness", "--bench-tasks", TASK)
    assert sound.returncode == 0, sound.stdout
    assert "corpus sound: 1 of 1 checked tasks (nop fails, solution passes, verifier repeatable" in sound.stdout
    arms = "noakm,akm" if real_akm.found() else "noakm"
    run = _pytest(
        project,
        *("--bench-config", "configs/quick.json", "--bench-model", "scripted/oracle"),
        *("--bench-tasks", TASK, "--bench-seeds", "1", "--bench-arms", arms),
    )
    assert run.returncode == 0, run.stdout
    env = json.loads((project / "report" / "report.json").read_text())
    cells = len(arms.split(","))
    assert env["verdict"].startswith(
        f"dry run with the scripted model scripted/oracle: {cells} of {cells} valid cells pass"
    )
    gold = ", akm finds each gold asset (by words 1)" if real_akm.found() else ""
    assert env["verdict"].endswith(
        f"; corpus sound: 1 of 1 checked tasks (nop fails, solution passes, verifier repeatable{gold})"
    )
    assert "no significant difference" not in (project / "report" / "summary.md").read_text()
    assert env["soundness"]["by_task"][0]["checks"]["solution_passes"] is True
    assert env["provenance"]["opencode_version"] and (env["provenance"]["akm_version"] is not None) == bool(
        real_akm.found()
    )
    html = (project / "report" / "report.html").read_text()
    assert 'id="soundness-table"' in html
    assert f"html: {project / 'report' / 'report.html'}" in run.stdout
    # The cells' tokens are what the scripted server reported (its usage_for_turn(n) is 1000 + 10n
    # prompt and 20 completion tokens; the oracle takes 2 turns on the control arm, 5 on the akm
    # arm), measured by the config's two workers, and no process of a cell is left.
    runs = {r["arm"]: r for r in env["runs"]}
    assert runs["noakm"]["outcome"] == "pass" and runs["noakm"]["tokens"]["total"] == turns(2)
    if real_akm.found():
        assert runs["akm"]["outcome"] == "pass" and runs["akm"]["tokens"]["total"] == turns(5)
        transcript = project / "store" / runs["akm"]["transcript"]
        assert '"type":"step_finish"' in transcript.read_text().replace(" ", "")
    assert env["token_measurement"]["coverage"] == 1.0
    assert processes_under(project / "cells") == []


def turns(n: int) -> int:
    return sum(usage_for_turn(t)["total_tokens"] for t in range(n))
