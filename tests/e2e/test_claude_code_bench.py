"""Claude Code cells through pytest, as a user runs them (``--bench-agent claude-code``): the
shipped corpus under the oracle on both arms with real akm, each akm cell's trajectory accounting
for every event of akm's own log, and the snoop policy held by the sandbox (docs/claude-code.md).

Serial runs of a few cells each (a nested -n only adds workers' start-up under the suite's own
two); they skip when Claude Code, real akm or bwrap is absent (a skip fails CI).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_akmbench.cell import akm
from pytest_akmbench.corpus.tasks import load_corpus
from pytest_akmbench.scripted import snoop
from tests.support import claude_code, real_akm
from tests.support.bench import samples
from tests.support.bwrap import require_bwrap

ROOT = real_akm.ROOT
CLAUDE = claude_code.binary()
WORKFLOW = "workflow-compliance/drain-hold"


def bench(cwd: Path, *args: str, home: Path | None = None, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "AKMBENCH_CLAUDE"}  # the binary through its setting
    if home is not None:
        env["HOME"] = str(home)
    agent = ["--bench-agent", "claude-code", "--bench-claude", str(CLAUDE)]
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *agent, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def one_task_per_domain(offset: int) -> list[str]:
    """One task of each shipped domain, the ``offset``-th in name order, and the workflow task."""
    out = []
    for domain in sorted(p for p in (ROOT / "corpus" / "tasks").iterdir() if p.is_dir()):
        tasks = sorted(p.parent.name for p in domain.glob("*/task.yaml"))
        if domain.name != WORKFLOW.split("/")[0]:
            out.append(f"corpus/tasks/{domain.name}/{tasks[offset % len(tasks)]}/task.yaml")
    return [*out, f"corpus/tasks/{WORKFLOW}/task.yaml"]


@pytest.mark.parametrize("version", real_akm.versions())
def test_oracle_passes_both_arms_and_akms_log_is_the_trajectory(version: str, tmp_path: Path) -> None:
    """scripted/oracle on both arms of one task per domain (a different one per akm version) and
    a workflow task: every cell passes in the sandbox; on the akm arm akm's own log shows the
    search with the gold asset and the asset shown, and every logged event is one of the agent's
    calls as its transcript records them; the workflow checks read the transcript and pass."""
    require_bwrap()
    info = real_akm.get(version)
    picked = one_task_per_domain(real_akm.versions().index(version))
    args = [*picked, "--bench-model", "scripted/oracle", "--bench-akm", str(info.path), "--bench-seeds", "1"]
    args += ["--bench-sandbox", "bwrap", "--bench-arms", "akm,noakm", "--bench-tmp", str(tmp_path / "cells")]
    args += ["--bench-store", str(tmp_path / "store"), "--bench-report", str(tmp_path / "report")]
    proc = bench(ROOT, *args)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "claude starts and reaches the model inside the cell sandbox" in proc.stdout, proc.stdout[-3000:]
    tasks = load_corpus(ROOT / "corpus" / "tasks", ROOT / "corpus" / "stashes").by_id()
    got = samples(tmp_path / "store", missing_ok=False)
    assert len(got) == 2 * len(picked) and all(s["outcome"] == "pass" for s in got), [s["reason"] for s in got]
    for s in (s for s in got if s["arm"] == "akm"):
        t, gold = s["trajectory"], tasks[s["task_id"]].gold_ref
        assert t["akm_events"] is True and t["akm_answered"] is True, (s["task_id"], t["warnings"])
        assert t["unconfirmed_events"] == 0 and t["warnings"] == [], (s["task_id"], t["warnings"])
        assert t["searches_with_hits"] >= 1 and s["tokens"]["total"] > 0
        if gold:
            assert t["correct_asset_loaded"] is True and t["gold_ranks"][0] is not None, s["task_id"]
            assert all(akm.ref_key(r) is not None for r in t["assets_loaded"])
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    prov = report["provenance"]
    assert prov["agent"] == {"name": "claude-code", "version": "2.1.332"} and prov["akm_version"] == version
    assert report["trajectory"]["akm"]["unconfirmed_cells"] == []
    wf = report["workflow"]
    assert wf["strict_pass_rate"] == 1.0 and wf["violation_count"] == 0 and wf["applicable_checks"] == 2, wf
    assert all(s["workflow"]["trace_source"] == "transcript" for s in got if s["task_id"] == WORKFLOW)


def test_snoop_reads_nothing_sandboxed_and_everything_without(tmp_path: Path) -> None:
    """The adversarial policy on both arms: sandboxed, every attempt fails; with --bench-sandbox
    none the same policy reads the solution, the verifier, the stash, the store and the user's home."""
    require_bwrap()
    shutil.copytree(ROOT / "corpus", tmp_path / "corpus")
    home = tmp_path / "userhome"
    home.mkdir()
    (home / "secret.txt").write_text("the user's own file\n")
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nbench_corpus = corpus/tasks\nbench_stashes = corpus/stashes\n"
        f"bench_tmp = {tmp_path / 'cells'}\nbench_akm = {real_akm.get().path}\n"
    )
    solve = tmp_path / "corpus" / "tasks" / "tidectl" / "drain-cell" / "solution" / "solve.sh"
    solution_sha = hashlib.sha256(solve.read_bytes()[:4096]).hexdigest()[:12]
    store = tmp_path / ".akmbench" / "store" / "samples.jsonl"
    seen = {}
    for mode in ("bwrap", "none"):
        args = ["--bench-seeds", "1", "--bench-model", "scripted/snoop", "--bench-tasks", "tidectl/drain-cell"]
        proc = bench(tmp_path, *args, "--bench-keep-runs", "--bench-sandbox", mode, home=home, timeout=300)
        assert f"sandbox {mode}" in proc.stdout, proc.stdout
        runs = [json.loads(line) for line in store.read_text().splitlines()][-2:]
        assert sorted(r["arm"] for r in runs) == ["akm", "noakm"] and all(r["outcome"] == "fail" for r in runs), runs
        seen[mode] = [snoop.parse(r["final_text_tail"]) for r in runs]
        assert all(set(s) == set(snoop.TARGETS) for s in seen[mode]), seen[mode]
    assert all(s[t][0] == "DENIED" for s in seen["bwrap"] for t in snoop.TARGETS), seen["bwrap"]
    for s in seen["none"]:
        assert s["solution"] == ("READ", "solve.sh", solution_sha)
        assert s["verifier"][:2] == ("READ", "verify.sh") and s["stash"][0] == "READ"
        assert s["store"][:2] == ("READ", "samples.jsonl") and s["home"][:2] == ("READ", "secret.txt")
