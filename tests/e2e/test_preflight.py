"""The preflight before the first cell, through pytest with the real opencode binary.

A model that cannot be reached, or refuses the key, stops the run with one line before any
cell runs or anything is stored; one that answers runs the cells through the same provider
entry. A cell that ends in a harness error keeps opencode's own log and names it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_akmbench.scripted.server import ScriptedModel
from tests.support import opencode, real_akm
from tests.support.bwrap import require_bwrap
from tests.support.http import answering, free_port

ROOT = Path(__file__).resolve().parents[2]
OPENCODE = opencode.binary()
TASK = "tidectl/drain-cell"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An ini naming the shipped corpus in place, and a store, report and run dirs of its own."""
    (tmp_path / "pytest.ini").write_text(
        f"[pytest]\nbench_corpus = {ROOT / 'corpus' / 'tasks'}\nbench_stashes = {ROOT / 'corpus' / 'stashes'}\n"
        f"bench_tmp = {tmp_path / 'cells'}\nbench_store = {tmp_path / 'store'}\nbench_report = {tmp_path / 'report'}\n"
        f"bench_opencode = {OPENCODE}\n"
    )
    return tmp_path


def providers(project: Path, base_url: str) -> Path:
    path = project / "providers.json"
    entry = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "Local",
        "options": {"baseURL": base_url, "apiKey": "{env:PREFLIGHT_TEST_KEY}"},
        "models": {"m": {"name": "M", "tool_call": True, "limit": {"context": 100000, "output": 4096}}},
    }
    path.write_text(json.dumps({"schemaVersion": 1, "providers": {"local": entry}}))
    return path


def bench(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--bench-seeds", "1", "--bench-arms", "noakm"]
        + ["--bench-tasks", TASK, *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=240,
        env={**_env(), "PREFLIGHT_TEST_KEY": "the-key-42"},
    )


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith(("BENCH_", "PYTEST_ADDOPTS"))}


def nothing_ran(project: Path, out: str) -> None:
    assert not (project / "store").exists() and not (project / "report").exists(), out
    assert "collected" not in out and "passed" not in out and "failed" not in out, out


def test_an_unreachable_model_stops_the_run_before_the_first_cell(project: Path) -> None:
    path = providers(project, f"http://127.0.0.1:{free_port()}/v1")
    proc = bench(project, "--bench-model", "local/m", "--bench-providers", str(path))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4, out
    errors = [line for line in out.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1 and "preflight: model 'local/m' at http://127.0.0.1:" in errors[0], out
    assert "is unreachable" in errors[0] and f"options.baseURL in providers.local in {path}" in errors[0]
    nothing_ran(project, out)


def test_a_refused_key_stops_the_run_naming_the_variable(project: Path) -> None:
    with answering(401) as (url, seen):
        # Under xdist too: the controller checks once, before any worker starts.
        proc = bench(project, "--bench-model", "local/m", "--bench-providers", str(providers(project, url)), "-n", "2")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4, out
    assert "refused the credentials (HTTP 401: Incorrect API key provided); check PREFLIGHT_TEST_KEY" in out
    assert "the-key-42" not in out
    assert len(seen) == 1 and json.loads(seen[0]["body"])["max_tokens"] == 1  # one minimal request, no cell
    nothing_ran(project, out)


def test_a_cloud_model_without_providers_stops_at_once(project: Path, tmp_path: Path) -> None:
    """The issue's run: 16 cells erred for 104 s with "Unexpected server error"; now one line."""
    env_home = tmp_path / "xdg"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--bench-model", "openai/gpt-4o"]
        + ["--bench-arms", "noakm", "--bench-tasks", TASK],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        env={**_env(), "XDG_CONFIG_HOME": str(env_home)},
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4, out
    assert "ERROR: preflight: model 'openai/gpt-4o': no providers entry for 'openai'" in out
    nothing_ran(project, out)


def test_a_model_that_answers_runs_the_cells_through_the_same_entry(project: Path) -> None:
    """The preflight's request and every cell's go to the same provider entry (the scripted
    server behind a providers file): the run starts, says so, and the cell runs opencode."""
    with ScriptedModel() as server:
        url = server.register("preflight", "idle")
        proc = bench(project, "--bench-model", "local/m", "--bench-providers", str(providers(project, url)), "-v")
        totals = server.totals("preflight")
    out = proc.stdout + proc.stderr
    assert f"akmbench: preflight: local/m at {url}: answers; opencode starts and reaches the model inside " in out, out
    assert "akmbench: agent opencode " in out and " started, model local/m (" in out
    report = json.loads((project / "report" / "report.json").read_text())
    (run,) = report["runs"]
    assert run["outcome"] == "fail", run  # the idle policy solves nothing, but opencode ran
    assert totals["title_requests"] >= 1 and totals["requests"] >= 1  # the preflight's, then opencode's
    assert f"  cell {TASK} noakm-s1: fail, " in out and "[1 done, 0 running, 0 left]" in out  # the -v status line


def test_a_harness_error_keeps_opencodes_log(project: Path) -> None:
    """A provider failing every request: the cell is an ERROR whose reason names opencode's own
    log, kept beside the transcript after the run dir is gone."""
    proc = bench(project, "--bench-model", "scripted/error", "--bench-budget-wall-ms", "60000")
    out = proc.stdout + proc.stderr
    report = json.loads((project / "report" / "report.json").read_text())
    (run,) = report["runs"]
    assert run["outcome"] == "harness_error", out
    reason = run["reason"]
    assert "opencode's log: " in reason, reason
    log = Path(reason.split("opencode's log: ", 1)[1].strip())
    assert log.is_file() and log.parent.is_relative_to(project / "store") and (log.stat().st_mode & 0o077) == 0
    assert "==> " in log.read_text()
    assert not any((project / "cells").rglob("cell-*")), "the run dir itself is gone"


def test_the_preflight_looks_from_inside_a_cells_sandbox(project: Path) -> None:
    """With the sandbox, the preflight also starts opencode and reaches the model from inside a
    sandbox made as a cell's, and says so."""
    require_bwrap()
    with ScriptedModel() as server:
        url = server.register("preflight", "idle")
        proc = bench(project, "--bench-model", "local/m", "--bench-providers", str(providers(project, url)))
    out = proc.stdout + proc.stderr
    assert (
        f"akmbench: preflight: local/m at {url}: answers; opencode starts and reaches the model inside the cell "
        "sandbox (isolated network) (" in out
    ), out


def test_an_akm_whose_runtime_the_sandbox_does_not_show_stops_the_run(project: Path, tmp_path: Path) -> None:
    """A launcher that execs bun from a place the cell's sandbox does not expose indexes fine
    outside and fails in every cell: the preflight indexes inside the sandbox and stops the run
    with one line, before any cell or store."""
    require_bwrap()
    real = real_akm.get()
    bun = ROOT / ".tools" / "node_modules" / "@oven" / "bun-linux-x64" / "bin" / "bun"
    launcher = tmp_path / "launcher" / "akm"
    launcher.parent.mkdir()
    launcher.write_text(f'#!/bin/sh\nexec "{bun}" "{real.path.parent / "akm.js"}" "$@"\n')
    launcher.chmod(0o755)
    assert subprocess.run([str(launcher), "--version"], capture_output=True, text=True).stdout.strip() == real.version
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--bench-seeds", "1", "--bench-tasks", TASK]
        + ["--bench-model", "scripted/oracle", "--bench-akm", str(launcher)],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=240,
        env=_env(),
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4, out
    (line,) = [ln for ln in out.splitlines() if "preflight: akm" in ln]
    assert f"preflight: akm {real.version} at {launcher} cannot index stash 'tidectl' inside the cell sandbox" in line
    assert "expose what it runs with --bench-sandbox-ro" in line and "Traceback" not in out
    assert not (project / "store").exists() and not (project / "report").exists() and "collected" not in out
