"""Remote xdist workers on one machine: ``--tx popen//chdir=<copy>`` and ``--tx socket=…``
against execnet's socket server in another directory (README, "Beyond one machine").

A local run of the same cells is the reference: the remote run's store and report must hold
the same cells with the same outcomes, the worker's directory no store, and every cell must
really have run there (the agent logs where it ran).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.procs import processes_under
from tests.support.remote import (
    SocketServer,
    agent_log,
    bench_argv,
    copy_project,
    make_project,
    records,
)
from tests.support.waiting import settle, wait_until

CELLS = {(t, a, 1) for t in ("alpha/pytest-task", "alpha/script-task", "beta/regex-task") for a in ("noakm", "akm")}


def run(base: Path, *extra: str, timeout: float = 180) -> tuple[int, str]:
    proc = subprocess.run(
        bench_argv(*extra), cwd=base, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )
    return proc.returncode, proc.stdout + proc.stderr


def outcomes(base: Path) -> set[tuple[str, str, int, str]]:
    return {(r["task_id"], r["arm"], r["seed"], r["outcome"]) for r in records(base)}


def report(base: Path) -> dict[str, Any]:
    return json.loads((base / "report" / "report.json").read_text())


def report_cells(base: Path) -> set[tuple[str, str, int, str, bool]]:
    return {(r["task_id"], r["arm"], r["seed"], r["outcome"], r["from_store"]) for r in report(base)["runs"]}


def ran_in(base: Path) -> list[tuple[str, str, int]]:
    return [(p[1], p[2], int(p[3])) for p in agent_log(base) if p[0] == "start"]


def no_leftovers(*bases: Path, within: float = 10) -> None:
    settle(lambda: not any(processes_under(b / "cells") for b in bases), within=within)
    assert [p for b in bases for p in processes_under(b / "cells")] == []


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reference: the same project run locally with -n 2."""
    base = make_project(tmp_path_factory.mktemp("local") / "proj")
    code, out = run(base, "-n", "2")
    assert code == 0, out
    return base


@pytest.fixture
def server_dir(tmp_path: Path) -> Iterator[tuple[Path, Path, SocketServer]]:
    ctl = make_project(tmp_path / "ctl")
    far = copy_project(ctl, tmp_path / "far")
    server = None
    for _ in range(3):  # a free port can be taken between choosing and binding it
        try:
            server = SocketServer(far)
            break
        except RuntimeError:
            continue
    assert server is not None
    yield ctl, far, server
    server.stop()


def assert_like_local(ctl: Path, far: Path, local: Path) -> None:
    assert outcomes(ctl) == outcomes(local)
    assert len(records(ctl)) == len(CELLS)  # one record per cell, none twice
    assert report_cells(ctl) == report_cells(local)
    mine, theirs = report(ctl), report(local)
    assert mine["complete"] is True and mine["warnings"] == theirs["warnings"]
    for key in ("taskCorpusHash", "fixtureContentHash", "selectedTaskIds"):
        assert mine["corpus"][key] == theirs["corpus"][key]
    # Every cell ran in the worker's directory, none in the controller's.
    assert sorted(ran_in(far)) == sorted(CELLS) and ran_in(ctl) == []
    assert not (far / "store").exists() and not (far / "report").exists()
    # Each sample's transcript reached the controller's store, written where the worker wrote it.
    for record in records(ctl):
        transcript = json.loads((ctl / "store" / record["transcript"]).read_text())
        assert transcript["host_dir"] == str(far)
    no_leftovers(ctl, far)


def test_popen_chdir_run_equals_a_local_run(tmp_path: Path, local: Path) -> None:
    ctl = make_project(tmp_path / "ctl")
    far = copy_project(ctl, tmp_path / "far")
    code, out = run(ctl, "--tx", f"2*popen//chdir={far}", "--dist", "worksteal")
    assert code == 0, out
    assert_like_local(ctl, far, local)
    # The same command again: every cell comes from the controller's store, none runs again.
    code, out = run(ctl, "--tx", f"2*popen//chdir={far}", "--dist", "worksteal")
    assert code == 0, out
    assert len(ran_in(far)) == len(CELLS) and len(records(ctl)) == len(CELLS)
    assert all(r["from_store"] for r in report(ctl)["runs"])
    assert out.count("PASSED (from store)") == len(CELLS)


def test_socket_worker_run_equals_a_local_run(server_dir: tuple[Path, Path, SocketServer], local: Path) -> None:
    ctl, far, server = server_dir
    code, out = run(ctl, "--tx", server.tx, "--dist", "worksteal")
    assert code == 0, out
    assert_like_local(ctl, far, local)


def test_a_worker_with_another_corpus_is_refused(tmp_path: Path) -> None:
    ctl = make_project(tmp_path / "ctl")
    far = copy_project(ctl, tmp_path / "far")
    task = far / "corpus" / "tasks" / "beta" / "regex-task" / "task.yaml"
    task.write_text(task.read_text() + "# edited on the worker\n")
    code, out = run(ctl, "--tx", f"popen//chdir={far}")
    assert code == pytest.ExitCode.USAGE_ERROR, out
    assert "Traceback" not in out and "INTERNALERROR" not in out, out
    refusals = [line for line in out.splitlines() if "its corpus tasks differ from the controller's" in line]
    assert len(refusals) == 1, out
    assert f"worker gw0 (popen//chdir={far})" in refusals[0] and "copy the same corpus there" in refusals[0]
    assert ran_in(far) == [] and records(ctl) == [] and not (far / "store").exists()


def test_a_worker_with_other_stashes_is_refused(tmp_path: Path) -> None:
    ctl = make_project(tmp_path / "ctl")
    far = copy_project(ctl, tmp_path / "far")
    (far / "corpus" / "stashes" / "st" / "skills" / "howto" / "SKILL.md").write_text("changed\n")
    code, out = run(ctl, "--tx", f"popen//chdir={far}")
    assert code == pytest.ExitCode.USAGE_ERROR, out
    assert "its fixture stashes differ from the controller's" in out and "Traceback" not in out, out
    assert ran_in(far) == [] and records(ctl) == []


def test_a_worker_with_other_budgets_is_refused(tmp_path: Path) -> None:
    """Its samples would carry another fingerprint, which the controller's report never counts."""
    ctl = make_project(tmp_path / "ctl")
    far = copy_project(ctl, tmp_path / "far")
    (far / "pytest.ini").write_text((far / "pytest.ini").read_text() + "bench_budget_wall_ms = 5000\n")
    code, out = run(ctl, "--tx", f"popen//chdir={far}")
    assert code == pytest.ExitCode.USAGE_ERROR, out
    refusal = next(line for line in out.splitlines() if "its run settings differ" in line)
    assert "5000 ms" in refusal and "Traceback" not in out, out
    assert ran_in(far) == [] and records(ctl) == []


def test_two_benches_with_remote_workers_share_a_store(tmp_path: Path) -> None:
    """Claims hold through the controller: two benches on one store run each trial once."""
    ctl = make_project(tmp_path / "ctl", delays={"*": 0.5})
    first, second = copy_project(ctl, tmp_path / "far1"), copy_project(ctl, tmp_path / "far2")
    procs = [
        subprocess.Popen(
            bench_argv("--tx", f"popen//chdir={far}", "--bench-report", str(tmp_path / name)),
            cwd=ctl,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for far, name in ((first, "report1"), (second, "report2"))
    ]
    outs = [p.communicate(timeout=180)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert sorted(ran_in(first) + ran_in(second)) == sorted(CELLS)  # each trial ran once
    assert len(records(ctl)) == len(CELLS)
    reports = [json.loads((tmp_path / n / "report.json").read_text()) for n in ("report1", "report2")]
    for rep in reports:
        assert rep["complete"] is True and len(rep["runs"]) == len(CELLS)
    assert sum(not r["from_store"] for rep in reports for r in rep["runs"]) == len(CELLS)
    no_leftovers(ctl, first, second)


def test_kill_on_the_controller_stops_a_socket_workers_cell(server_dir: tuple[Path, Path, SocketServer]) -> None:
    """The socket worker is no child of the controller: ``kill`` reaches its cell through it."""
    ctl, far, server = server_dir
    (far / "delays.json").write_text(json.dumps({"*": 120}))
    proc = subprocess.Popen(
        bench_argv("--tx", server.tx), cwd=ctl, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        wait_until(lambda: ran_in(far) and processes_under(far / "cells"), "the first cell started", proc=proc)
        started = time.monotonic()
        kill = subprocess.run(
            [sys.executable, "-m", "pytest_akmbench", "kill", "--tmp", str(ctl / "cells")],
            cwd=ctl,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert kill.returncode == 0 and "sent SIGTERM" in kill.stdout, kill.stdout + kill.stderr
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    assert time.monotonic() - started < 30  # not the 120 s the cell would have slept
    no_leftovers(far)
    assert len(ran_in(far)) == 1 and records(ctl) == []  # no further cell started


def test_a_lost_remote_worker_costs_only_its_cell(tmp_path: Path) -> None:
    """A remote worker killed mid-cell: the others finish the rest, its trial's claim is freed,
    nothing is stored twice, and the same command again runs exactly the lost cell."""
    ctl = make_project(tmp_path / "ctl", delays={"alpha/script-task|akm|1": 120, "*": 0.3})
    far = copy_project(ctl, tmp_path / "far")
    proc = subprocess.Popen(
        bench_argv("--tx", f"2*popen//chdir={far}"),
        cwd=ctl,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        slow = ["alpha/script-task", "akm", "1"]
        wait_until(lambda: [p for p in agent_log(far) if p[1:4] == slow], "the slow cell started", proc=proc)
        worker = int(next(p for p in agent_log(far) if p[1:4] == ["alpha/script-task", "akm", "1"])[5])
        os.kill(worker, signal.SIGKILL)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "crashed while running" in out, out
    lost = ("alpha/script-task", "akm", 1)
    stored = [(r["task_id"], r["arm"], r["seed"]) for r in records(ctl)]
    assert sorted(stored) == sorted(CELLS - {lost})  # every other cell once, on the surviving worker
    assert not list((ctl / "store" / "claims").glob("*.lock"))  # the lost cell's claim was freed
    no_leftovers(ctl, far)
    (far / "delays.json").write_text(json.dumps({"*": 0}))
    before = len(ran_in(far))
    code, out = run(ctl, "--tx", f"2*popen//chdir={far}")
    assert code == 0, out
    assert ran_in(far)[before:] == [lost]
    assert sorted((r["task_id"], r["arm"], r["seed"]) for r in records(ctl)) == sorted(CELLS)
    assert report(ctl)["complete"] is True


def test_soundness_with_remote_workers_is_refused(tmp_path: Path) -> None:
    ctl = make_project(tmp_path / "ctl")
    code, out = run(ctl, "--bench-soundness", "--tx", f"2*popen//chdir={tmp_path}")
    assert code == pytest.ExitCode.USAGE_ERROR
    assert f"--bench-soundness runs on this machine: drop --tx 2*popen//chdir={tmp_path}" in out
    assert "Traceback" not in out


def test_evolve_with_remote_workers_is_refused(tmp_path: Path) -> None:
    """Evolve steps write the evolving stash and their samples where they run: not remotely."""
    ctl = make_project(tmp_path / "ctl")
    code, out = run(ctl, "--bench-track", "evolve", "--tx", f"2*popen//chdir={tmp_path}")
    assert code == pytest.ExitCode.USAGE_ERROR
    assert f"the evolve track runs on this machine's workers: drop --tx 2*popen//chdir={tmp_path} (use -n)" in out
    assert "Traceback" not in out
    assert not (tmp_path / "ctl" / ".akmbench").exists() or not any(
        (tmp_path / "ctl" / ".akmbench").rglob("samples.jsonl")
    )


def test_which_gateways_are_remote() -> None:
    import execnet

    from pytest_akmbench.plugin.remote import is_remote

    assert not is_remote(execnet.XSpec("popen"))
    assert not is_remote(execnet.XSpec("popen//python=python3"))
    assert is_remote(execnet.XSpec("popen//chdir=/srv/bench"))
    assert is_remote(execnet.XSpec("ssh=user@hostA//python=python3//chdir=/srv/bench"))
    assert is_remote(execnet.XSpec("socket=127.0.0.1:8888"))


def test_a_mismatch_names_the_first_difference_and_its_fix() -> None:
    from pytest_akmbench.plugin.remote import mismatch

    here = {"taskCorpusHash": "a" * 64, "fixtureContentHash": "b" * 64, "agent": "opencode 1.18.33", "akm": "0.9.0"}
    assert mismatch(here, dict(here), "gw0") is None
    line = mismatch(here, {**here, "akm": "0.7.0", "agent": "opencode 1.0"}, "gw3 (ssh=h) on h:/srv")
    assert line == (
        "akmbench: worker gw3 (ssh=h) on h:/srv: its agent version differs from the controller's; "
        "install the same one there (agent opencode 1.0 there, opencode 1.18.33 here)"
    )
    line = mismatch(here, {**here, "fixtureContentHash": "c" * 64}, "gw0")
    assert line is not None and f"(fixtureContentHash {'c' * 12} there, {'b' * 12} here)" in line


def test_a_worker_python_without_the_packages_stops_the_run_in_one_line(tmp_path: Path) -> None:
    """A worker's Python that cannot import pytest (a bare venv, as an ssh host's python3 may be):
    before, xdist restarted the worker without end (147 times in 120 s over ssh), a traceback each
    time; now the run stops before any worker starts, with one line saying what to install."""
    ctl = make_project(tmp_path / "ctl")
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    python = venv / "bin" / "python"
    code, out = run(ctl, "--tx", f"popen//python={python}", "--dist", "worksteal", timeout=60)
    assert code == pytest.ExitCode.USAGE_ERROR, out
    errors = [line for line in out.splitlines() if "lacks" in line]
    assert len(errors) == 1, out
    assert errors[0].startswith(f"ERROR: akmbench: worker gw0 (popen//python={python}): its Python {python} lacks ")
    assert "cannot import pytest, xdist" in errors[0] and f"`{python} -m pip install pytest-akmbench " in errors[0]
    assert "replacing crashed worker" not in out and "Traceback" not in out and "node down" not in out, out
    assert records(ctl) == [] and ran_in(ctl) == []


def test_a_worker_that_crashes_while_starting_is_not_started_again(tmp_path: Path) -> None:
    """A worker whose pytest refuses to start (here an option its pytest does not know, as an
    older pytest-akmbench there would) stops the run at its first crash, naming the error."""
    ctl = make_project(tmp_path / "ctl")
    python = f"env PYTEST_ADDOPTS=--no-such-option {sys.executable}"
    code, out = run(ctl, "--tx", f"popen//python={python}", "--dist", "worksteal", timeout=60)
    assert code == pytest.ExitCode.USAGE_ERROR, out
    (line,) = [line for line in out.splitlines() if "crashed while starting" in line]
    assert f"worker gw0 (popen//python={python}) crashed while starting: " in line
    assert "error: unrecognized arguments: --no-such-option" in line
    assert out.count("node down") <= 1 and "replacing crashed worker" not in out, out
    assert records(ctl) == []
