"""Whole bench runs through pytest with the real opencode binary and the scripted model.

Each cell costs about 10 s of CPU; these run serially.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import opencode, real_akm
from tests.support.procs import processes_under
from tests.support.waiting import settle, wait_until

ROOT = Path(__file__).resolve().parents[2]

OPENCODE = opencode.binary()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with a copy of the shipped corpus, its own store, report and run dirs."""
    shutil.copytree(ROOT / "corpus", tmp_path / "corpus")
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nbench_corpus = corpus/tasks\nbench_stashes = corpus/stashes\n"
        f"bench_tmp = {tmp_path / 'cells'}\nbench_store = {tmp_path / 'store'}\nbench_report = {tmp_path / 'report'}\n"
        f"bench_opencode = {OPENCODE}\n" + (f"bench_akm = {real_akm.get().path}\n" if real_akm.found() else "")
    )
    return tmp_path


def bench(project: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--bench-seeds", "1", *args],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_for_agents(root: Path, count: int, timeout_s: float = 60) -> None:
    wait_until(
        lambda: sum("opencode" in p and " run " in p for p in processes_under(root)) >= count,
        f"{count} opencode processes run under {root}",
        timeout=timeout_s,
        every=0.2,
    )


class TestInterrupts:
    """Ctrl-C, SIGTERM and `kill` stop a run with cells in flight and leave nothing behind."""

    @pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
    def test_signal_with_two_cells_in_flight(self, project: Path, sig: int) -> None:
        """Both signals end a -n 2 run promptly, with zero survivors and an incomplete report."""
        proc = bench(
            project,
            "--bench-model",
            "scripted/hang",
            "--bench-arms",
            "noakm",
            "-n",
            "2",
            "--bench-tasks",
            "tidectl/drain-cell,tidectl/shift-weight",
            "--bench-budget-wall-ms",
            "600000",
        )
        wait_for_agents(project / "cells", 2)
        started = time.monotonic()
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=60)
        assert time.monotonic() - started < 30, out
        assert processes_under(project / "cells") == [], out
        report = json.loads((project / "report" / "report.json").read_text())
        assert report["complete"] is False

    def test_second_ctrl_c_force_exits(self, project: Path) -> None:
        """A second Ctrl-C exits at once and still leaves no process of the run behind."""
        proc = bench(
            project,
            "--bench-model",
            "scripted/hang",
            "--bench-arms",
            "noakm",
            "-n",
            "2",
            "--bench-tasks",
            "tidectl/drain-cell,tidectl/shift-weight",
            "--bench-budget-wall-ms",
            "600000",
        )
        wait_for_agents(project / "cells", 2)
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
        assert time.monotonic() - started < 15, out
        settle(lambda: not processes_under(project / "cells"), within=10)  # the workers finish dying on their own
        assert processes_under(project / "cells") == [], out

    def test_kill_command(self, project: Path) -> None:
        """`python -m pytest_akmbench kill` from another process stops the bench and its cells."""
        proc = bench(
            project,
            "--bench-model",
            "scripted/hang",
            "--bench-arms",
            "noakm",
            "--bench-tasks",
            "tidectl/drain-cell",
            "--bench-budget-wall-ms",
            "600000",
        )
        wait_for_agents(project / "cells", 1)
        killer = subprocess.run(
            [sys.executable, "-m", "pytest_akmbench", "kill", "--tmp", str(project / "cells")],
            capture_output=True,
            text=True,
            timeout=30,
            cwd=project,
        )
        assert killer.returncode == 0 and "sent SIGTERM" in killer.stdout
        out, _ = proc.communicate(timeout=60)
        assert processes_under(project / "cells") == [], out
        assert json.loads((project / "report" / "report.json").read_text())["complete"] is False


class TestUsageErrors:
    """Provider mistakes are one-line errors before any cell runs."""

    @pytest.mark.parametrize(
        "providers, model, message",
        [
            (
                {"schemaVersion": 1, "providers": {"local": {"options": {"apiKey": "sk-abcdefghijklmnopqrstuvwxyz"}}}},
                "local/m",
                "must be an env-ref",
            ),
            ({"schemaVersion": 1, "providers": {}}, "nowhere/m", "uses provider 'nowhere'"),
            (None, "local/m", "not found"),
        ],
    )
    def test_providers_errors(self, project: Path, providers: object, model: str, message: str) -> None:
        """A literal key, an unknown provider prefix, a missing file: exit 4, one line, no traceback."""
        path = project / "providers.json"
        if providers is not None:
            path.write_text(json.dumps(providers))
        proc = bench(project, "corpus", "--bench-model", model, "--bench-providers", str(path), "--bench-arms", "noakm")
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 4, out
        errors = [line for line in out.splitlines() if line.startswith("ERROR:")]
        assert len(errors) == 1 and message in errors[0] and str(path) in errors[0], out
        assert "Traceback" not in out and "sk-abcdefghijklmnopqrstuvwxyz" not in out
        assert not (project / "store").exists()


def test_local_workers_take_the_controllers_probes(project: Path) -> None:
    """Under -n 2 only the controller runs ``opencode --version`` and akm's probe: its local workers
    are given what it found (each probe is about a CPU-second of the workers' start-up)."""
    info = real_akm.get()
    wrappers = {}
    for name, real in (("opencode", OPENCODE), ("akm", info.path)):
        log = project / f"{name}.calls"
        wrapper = project / "bin" / name
        wrapper.parent.mkdir(exist_ok=True)
        wrapper.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {real} "$@"\n')
        wrapper.chmod(0o755)
        wrappers[name] = (wrapper, log)
    proc = bench(
        project,
        *("--bench-model", "scripted/oracle", "--bench-tasks", "tidectl/drain-cell", "-n", "2"),
        *("--bench-opencode", str(wrappers["opencode"][0]), "--bench-akm", str(wrappers["akm"][0])),
        *("-k", "no-cell-is-named-so"),  # the workers start, configure and collect; no cell runs
        # The wrappers log beside themselves and exec binaries a cell's sandbox does not show: the
        # preflight from inside a cell (an opencode --version of its own) would refuse them.
        *("--bench-sandbox", "none"),
    )
    out, _ = proc.communicate(timeout=180)
    assert proc.returncode == pytest.ExitCode.NO_TESTS_COLLECTED and "2 workers" in out, out
    for name, (_, log) in wrappers.items():
        calls = log.read_text().splitlines()
        assert calls.count("--version") == 1, (name, calls)
