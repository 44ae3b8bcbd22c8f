"""A run-level spend cap on real opencode cells (scripted model) under -n 2: the cells in flight
finish, no new one starts, the tokens counted are opencode's own, nothing is left running."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support import opencode
from tests.support.procs import processes_under

ROOT = Path(__file__).resolve().parents[2]
OPENCODE = opencode.binary()
TASKS = "tidectl/drain-cell,tidectl/freeze-crew,tidectl/cell-maintenance"


def test_token_cap_with_two_workers(tmp_path: Path) -> None:
    """A 1-token cap: each worker's first cell starts (nothing is spent yet) and runs to its end;
    every later cell is skipped. The cap's spend is the tokens opencode reported."""
    shutil.copytree(ROOT / "corpus", tmp_path / "corpus")
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nbench_corpus = corpus/tasks\nbench_stashes = corpus/stashes\n"
        f"bench_tmp = {tmp_path / 'cells'}\nbench_store = {tmp_path / 'store'}\nbench_report = {tmp_path / 'report'}\n"
        f"bench_opencode = {OPENCODE}\nbench_budget_run_tokens = 1\n"
    )
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--bench-seeds", "1", "--bench-arms", "noakm"]
    argv += ["--bench-model", "scripted/oracle", "--bench-tasks", TASKS, "-n", "2", "-rs"]
    proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    ran = report["runs"]
    # Each worker may start one cell before it sees any sample; a cell that started finished.
    assert 1 <= len(ran) <= 2 and all(r["outcome"] == "pass" for r in ran), out
    spent = sum(r["tokens"]["total"] for r in ran)
    assert spent > 1 and all(r["token_measurement"] == "measured" for r in ran)
    cap = report["spend"]["cap"]
    assert cap == {"kind": "tokens", "limit": 1, "spent": spent, "reached": True, "not_run": 3 - len(ran)}
    line = f"stopped: spend cap 1 tokens reached ({spent} tokens spent by this run); {3 - len(ran)} cells not run"
    assert report["complete"] is False and report["warnings"][0] == line and line in out
    assert "not run: spend cap 1 tokens reached" in out and "ini bench_budget_run_tokens" in out
    # opencode prices a model with no cost at $0: a reported figure, shown as such.
    assert report["spend"]["run"]["cost_usd"] == 0.0 and report["spend"]["run"]["runs_with_cost"] == len(ran)
    assert processes_under(tmp_path / "cells") == []
