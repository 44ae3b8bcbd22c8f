"""Workflow compliance end to end: the shipped workflow-compliance domain through pytest, the real
opencode binary, the scripted model and real akm. ``scripted/shortcut`` solves the tasks without
akm: the tasks still pass, every check fails, and the report says so. ``scripted/oracle``, which
looks the convention up, then edits, then records positive feedback (every check passes), runs
on each akm version in the same bench as the akm arm's oracle cells:
tests/akm/test_akm_arm.py::TestShippedCorpus::test_oracle_on_akm_cells."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.akm.test_akm_arm import bench
from tests.support import opencode as oc
from tests.support import real_akm

ROOT = real_akm.ROOT


def run_policy(policy: str, version: str, tmp_path: Path) -> tuple[dict[str, Any], str, list[dict[str, Any]]]:
    info = real_akm.get(version)
    proc = bench(
        ROOT,
        "corpus",
        "-k",
        "workflow-compliance",
        "--bench-model",
        f"scripted/{policy}",
        "--bench-akm",
        str(info.path),
        "--bench-opencode",
        str(oc.binary()),
        "--bench-arms",
        "akm",
        "--bench-seeds",
        "1",
        "-n",
        "2",
        "--bench-tmp",
        str(tmp_path / "cells"),
        "--bench-store",
        str(tmp_path / "store"),
        "--bench-report",
        str(tmp_path / "report"),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "2 passed" in proc.stdout  # the tasks pass either way: compliance is a separate question
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    samples = [json.loads(x) for x in (tmp_path / "store" / "samples.jsonl").read_text().splitlines()]
    return report, (tmp_path / "report" / "summary.md").read_text(), samples


# shortcut never calls akm, so one akm version says all it can.
def test_compliance_follows_what_the_agent_did_without_akm(tmp_path: Path) -> None:
    report, summary, samples = run_policy("shortcut", real_akm.versions()[-1], tmp_path)
    wf = report["workflow"]
    assert wf["specs"] == ["akm-feedback-after-use", "akm-lookup-before-edit"]
    assert (wf["total_checks"], wf["applicable_checks"]) == (4, 4)
    for s in samples:
        assert s["workflow"]["trace_source"] == "transcript"
        assert {c["workflow_id"] for c in s["workflow"]["checks"]} == set(wf["specs"])
    pass_row = next(r for r in wf["cross_tab"] if r["task_outcome"] == "pass")
    section = summary.split("## Workflow compliance", 1)[1].split("\n## ", 1)[0]
    assert wf["fail_rate"] == 1.0 and wf["strict_pass_rate"] == 0.0 and wf["violation_count"] == 12
    assert pass_row == {"task_outcome": "pass", "pass": 0, "partial": 0, "fail": 2, "total": 2}
    codes = {v["code"]: v["count"] for v in wf["top_violations"]}
    assert codes == {"missing_required_event": 8, "irrelevant_asset_loaded": 4}
    assert wf["by_workflow"]["akm-lookup-before-edit"]["pass_rate"] == 0.0
    assert "### Violation evidence" in section and "workflow-compliance/drain-hold" in section
    assert "| pass           | 0         | 0            | 2         | 2       |" in section
