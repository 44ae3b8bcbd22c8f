"""akm-bench's own corpus (tests/data/akm-bench, written by people outside this project) through
the plugin, as a user with that corpus would run it (issue 29): it loads unchanged and
``validate`` lists every problem it has; its shared ``base/`` layers reach every cell's
workspace; the akm arm runs it with real opencode, real akm 0.7.0 and 0.9.0 and the scripted
model, and the report carries the workflow block of its specs; soundness checks nop and the
verifier (it ships no solutions).

Each akm version runs three tasks, of different domains, so the two together run one task of
every domain; serial, as in tests/akm/test_akm_arm.py (a nested -n 2 under the suite's two
workers only adds start-up).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_akmbench.cell.rundir import copy_workspace
from pytest_akmbench.corpus.tasks import Task, load_lenient
from pytest_akmbench.corpus.workflows import load_specs_lenient
from tests.support import opencode as oc
from tests.support import real_akm

DATA = Path(__file__).resolve().parents[1] / "data" / "akm-bench"
SPECS = [
    "akm-correct-asset-use",
    "akm-feedback-after-use",
    "akm-lookup-before-edit",
    "akm-negative-feedback-on-failure",
    "akm-reflect-after-repeated-failure",
    "akm-workflow-followed",
]
# One task of each domain across the two versions; each one's verifier rejects its untouched
# workspace (soundness below), so a scripted oracle without a solution fails every cell.
RUN = {
    "0.7.0": ("az-cli/create-resource-group", "drillbit/backup-policy", "inkwell/add-healthcheck"),
    "0.9.0": (
        "docker-homelab/named-volume",
        "opencode/opencode-config-model",
        "workflow-compliance/repeated-fail-storage-lifecycle-a",
    ),
}
# Two tasks of each domain for soundness; these two pass their verifier untouched.
NOP_PASSES = ("az-cli/query-by-tag", "workflow-compliance/feedback-trap-az-tag-list")
SOUNDNESS = (
    "az-cli/create-resource-group",
    "docker-homelab/named-volume",
    "docker-homelab/restart-policy",
    "drillbit/backup-policy",
    "drillbit/canary-enable",
    "inkwell/add-healthcheck",
    "inkwell/set-rate-limit",
    "opencode/opencode-config-model",
    "opencode/tool-allowlist",
    "workflow-compliance/repeated-fail-storage-lifecycle-a",
    *NOP_PASSES,
)
NO_SOLUTION = "no solution/solve.sh: that the task can be solved is not checked (nop and the verifier were)"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of akm-bench's fixtures and configs: tests never edit tests/data in place."""
    for part in ("fixtures", "config"):
        shutil.copytree(DATA / part, tmp_path / part)
    return tmp_path


def tasks_root(project: Path) -> Path:
    return project / "fixtures" / "corpus" / "tasks"


def corpus_args(project: Path) -> list[str]:
    return ["--bench-corpus", str(tasks_root(project)), "--bench-stashes", str(project / "fixtures" / "stashes")]


def run(cwd: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def bench(project: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    out = ["--bench-tmp", str(project / "cells"), "--bench-store", str(project / "store")]
    out += ["--bench-report", str(project / "report")]
    return run(
        project, "-m", "pytest", "-p", "no:cacheprovider", "-q", *corpus_args(project), *out, *args, timeout=timeout
    )


def task_files(project: Path, ids: tuple[str, ...]) -> list[str]:
    return [str(tasks_root(project) / t / "task.yaml") for t in ids]


def mentions_akm(root: Path) -> set[Path]:
    """The files under ``root`` whose name or text has akm as a word, found by grep."""
    proc = subprocess.run(
        ["grep", "-rliE", "(^|[^a-z0-9])akm([^a-z0-9]|$)", str(root)], capture_output=True, text=True, check=False
    )
    named = {p for p in root.rglob("*") if p.is_file() and re.search(r"(^|[^a-z0-9])akm([^a-z0-9]|$)", p.name, re.I)}
    return {Path(line) for line in proc.stdout.splitlines()} | named


def test_validate_lists_every_problem(project: Path) -> None:
    """It loads: 45 tasks of 6 domains, its specs with akm-bench's weight names, its run configs.
    What validate lists is what the corpus is: each spec the spec reader refuses and each task
    naming one, no solution anywhere, and every workspace or shared-layer file that tells the
    agent about akm (found here by grep), each once."""
    configs = [str(project / "config" / n) for n in ("nano-quick.json", "full.json", "failing-tasks.json")]
    fixtures = project / "fixtures"
    where = ["--corpus", str(fixtures / "corpus" / "tasks"), "--stashes", str(fixtures / "stashes")]
    proc = run(project, "-m", "pytest_akmbench", "validate", *where, *configs)
    assert proc.returncode == 1, proc.stdout[-3000:]
    errors = [line[len("error: ") :] for line in proc.stdout.splitlines() if line.startswith("error: ")]
    root = tasks_root(project)
    specs, refused = load_specs_lenient(root.parent / "workflows")
    assert {s.id for s in specs} >= set(SPECS) - {"akm-feedback-after-use", "akm-negative-feedback-on-failure"}
    assert not any("scoring" in e for e in errors)  # akm-bench's weight names load
    naming = {p for p in root.glob("*/*/task.yaml") if {f.stem for f in refused} & set(_expected(p))}
    loaded = [p for p in root.glob("*/*/task.yaml") if p.parts[-3] != "_example" and p not in naming]
    no_solution = sorted(e.split(": ", 1)[0] for e in errors if ": solution: no solution/solve.sh" in e)
    assert no_solution == sorted(map(str, loaded))
    neutral = {
        Path(e.split(": ", 1)[0]) for e in errors if e.endswith("workspaces must be arm-neutral (the arm adds akm)")
    }
    assert neutral == set().union(
        *(mentions_akm(p) for p in [root.parent / "base", *(p.parent / "workspace" for p in loaded)])
    )
    assert root.parent / "base" / "workspace" / "AGENTS.md" in neutral
    assert {f"{p}: " + refused[p].split(": ", 1)[1] for p in refused} <= set(errors)
    assert {e.split(": ", 1)[0] for e in errors if "expected_workflows: no workflow spec" in e} == set(map(str, naming))
    assert len(errors) == len(no_solution) + len(neutral) + len(refused) + len(naming)
    assert f"{len(loaded)} tasks in 6 domains, 3 configs: " in proc.stdout


def _expected(task_yaml: Path) -> list[str]:
    return list(yaml.safe_load(task_yaml.read_text()).get("expected_workflows") or [])


def test_soundness_checks_nop_and_the_verifier(project: Path) -> None:
    """No task has a solution: soundness says so for each and still finds the verifiers that
    pass an untouched workspace (the answer already in it) and checks that each repeats itself."""
    proc = bench(project, *task_files(project, SOUNDNESS), "--bench-soundness")
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert f"{len(SOUNDNESS)} failed" in proc.stdout
    records = {
        r["task_id"]: r for r in map(json.loads, (project / "store" / "soundness.jsonl").read_text().splitlines())
    }
    assert sorted(records) == sorted(SOUNDNESS)
    for tid, rec in records.items():
        assert rec["checks"]["solution_passes"] is None and rec["checks"]["repeatable"] is True, tid
        assert rec["checks"]["nop_fails"] is (tid not in NOP_PASSES), tid
        assert rec["problems"][-1] == NO_SOLUTION, tid
    report = json.loads((project / "report" / "soundness" / "report.json").read_text())
    assert report["soundness"]["checked"] == len(SOUNDNESS) and report["soundness"]["sound"] == 0
    assert "arm neutrality" not in proc.stdout  # a soundness run runs no arm


def test_layers_reach_every_cell_and_the_control_arm_is_warned(project: Path) -> None:
    """Without opencode: the nop agent on both arms. Each kept cell's workspace is exactly its
    task's layers in akm-bench's order (base, domain, task); the run says the control arm is
    told about akm, in the terminal and in the report."""
    ids = ("drillbit/backup-policy", "inkwell/add-healthcheck", "workflow-compliance/repeated-fail-storage-lifecycle-a")
    proc = bench(
        project,
        str(tasks_root(project)),
        "--bench-tasks",
        ",".join(ids),
        "--bench-agent",
        "nop",
        "--bench-arms",
        "noakm",
        "--bench-seeds",
        "1",
        "--bench-keep-runs",
    )
    assert proc.returncode == 1 and "3 failed" in proc.stdout, proc.stdout[-3000:]
    tasks = load_lenient(tasks_root(project), project / "fixtures" / "stashes")[0].by_id()
    _workspaces_are_layered(project, [tasks[t] for t in ids])
    report = json.loads((project / "report" / "report.json").read_text())
    (line,) = [w for w in report["warnings"] if w.startswith("arm neutrality:")]
    assert "of 3 selected task(s) mentions akm" in line and "control arm is contaminated" in line
    assert "drillbit/backup-policy (base/workspace/AGENTS.md)" in line
    assert "inkwell/add-healthcheck (base/workspace/AGENTS.md, base/domains/inkwell/workspace/AGENTS.md)" in line
    assert line in proc.stdout + proc.stderr
    assert f"- {line}" in (project / "report" / "summary.md").read_text()


def _workspaces_are_layered(project: Path, tasks: list[Task]) -> None:
    """Every kept cell's workspace holds exactly one selected task's layered starting copy: base
    ``AGENTS.md`` where the domain has no layer of its own, the domain's where it has one, the
    domain's ``opencode.json`` in workflow-compliance, the task's own files on top."""
    expected: dict[str, dict[str, bytes]] = {}
    for task in tasks:
        copy_workspace(task, project / "expected" / task.id)
        expected[task.id] = _files(project / "expected" / task.id)
    got = [_files(ws) for ws in sorted((project / "cells").glob("*/cell-*/workspace"))]
    assert sorted(map(sorted, got)) == sorted(map(sorted, expected.values())) and len(got) == len(tasks)
    assert all(files in got for files in expected.values())
    base = tasks_root(project).parent / "base"
    by_id = dict(zip((t.id for t in tasks), expected.values()))
    if "drillbit/backup-policy" in by_id:
        assert by_id["drillbit/backup-policy"]["AGENTS.md"] == (base / "workspace" / "AGENTS.md").read_bytes()
    if "inkwell/add-healthcheck" in by_id:
        domain = base / "domains" / "inkwell" / "workspace" / "AGENTS.md"
        assert by_id["inkwell/add-healthcheck"]["AGENTS.md"] == domain.read_bytes()
    wc = [files for tid, files in by_id.items() if tid.startswith("workflow-compliance/")]
    for files in wc:
        assert (
            files["opencode.json"]
            == (base / "domains" / "workflow-compliance" / "workspace" / "opencode.json").read_bytes()
        )


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("version", list(RUN))
def test_akm_arm_with_real_opencode_and_akm(project: Path, version: str) -> None:
    """The akm arm as akm-bench runs it (scripted/oracle, which has no solution to apply, so
    each cell fails at its verifier after searching and showing with real akm): no harness
    error, layered workspaces, and the report's workflow block over akm-bench's six specs."""
    info = real_akm.get(version)
    opencode = oc.binary()
    ids = RUN[version]
    args = [*task_files(project, ids), "--bench-model", "scripted/oracle", "--bench-akm", str(info.path)]
    args += ["--bench-opencode", str(opencode), "--bench-arms", "akm", "--bench-seeds", "1", "--bench-keep-runs"]
    proc = bench(project, *args, timeout=600)
    assert proc.returncode == 1 and f"{len(ids)} failed" in proc.stdout, proc.stdout[-3000:]
    samples = [json.loads(line) for line in (project / "store" / "samples.jsonl").read_text().splitlines()]
    assert sorted(s["task_id"] for s in samples) == sorted(ids)
    for s in samples:
        assert s["outcome"] == "fail" and s["akm_setup"]["version"] == info.version, (s["task_id"], s["reason"])
        assert s["trajectory"]["akm_events"] is True, s["task_id"]
    tasks = load_lenient(tasks_root(project), project / "fixtures" / "stashes")[0].by_id()
    _workspaces_are_layered(project, [tasks[t] for t in ids])
    report = json.loads((project / "report" / "report.json").read_text())
    assert report["provenance"]["akm_version"] == info.version
    _workflow_block(report, samples, tasks, (project / "report" / "summary.md").read_text())
    assert not any(w.startswith("arm neutrality:") for w in report["warnings"])  # no control arm here


def _workflow_block(
    report: dict[str, Any], samples: list[dict[str, Any]], tasks: dict[str, Task], summary: str
) -> None:
    """The block counts the checks the samples hold, per akm-bench's own specs and their weights."""
    wf = report["workflow"]
    checks = [c for s in samples for c in (s.get("workflow") or {}).get("checks") or []]
    applicable = [c for c in checks if c["status"] != "not_applicable"]
    assert wf["total_checks"] == len(checks) and wf["applicable_checks"] == len(applicable) > 0
    for s in samples:  # each cell is checked by exactly the specs its task can have
        assert sorted(c["workflow_id"] for c in s["workflow"]["checks"]) == sorted(
            w.id for w in tasks[s["task_id"]].workflows
        )
    assert set(wf["by_workflow"]) <= set(SPECS) and set(wf["specs"]) <= set(SPECS)
    assert "## Workflow compliance" in summary
