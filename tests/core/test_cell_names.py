"""Cells whose names are prefixes of each other (``…::akm-s1`` and ``…::akm-s10``) stay apart:
the cleanup of one never reaches the processes of the other (docs/architecture.md, "Isolation")."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path

from pytest_akmbench.system.procs import MARKER, ProcessTracker, become_subreaper
from tests.support.waiting import wait_until


def alive_with(text: str) -> list[str]:
    """Command lines of live processes containing ``text`` (read from ps, not from our code)."""
    out = subprocess.run(["ps", "-eo", "stat=,args="], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if text in line and not line.lstrip().startswith("Z")]


def test_the_cleanup_of_s1_spares_s10(tmp_path: Path) -> None:
    """Cell s1 leaves a detached process behind, so its cleanup sweeps by marker; cell s10 of the
    same task runs meanwhile (on another worker: not a child of s1's process). Only s1's goes."""
    become_subreaper()
    run = f"run-{uuid.uuid4().hex[:8]}/corpus/tasks/a/t/task.yaml::akm"
    tag = f"{os.getpid()}{int(time.time() * 1000) % 100000}"
    # s10's process: marked like a cell's, in our session, as another worker's cell would be.
    neighbour = subprocess.Popen(["sleep", f"9{tag}0"], env={**os.environ, MARKER: f"{run}-s10"})
    try:
        s1 = ProcessTracker(f"{run}-s1")
        s1.spawn(["bash", "-c", f"setsid sleep 9{tag}1 >/dev/null 2>&1 & exit 0"], cwd=tmp_path, env=dict(os.environ))
        wait_until(lambda: alive_with(f"sleep 9{tag}1"), "s1's detached process runs", timeout=10)
        s1.kill_all()
        wait_until(lambda: not alive_with(f"sleep 9{tag}1"), "s1's detached process is gone", timeout=10)
        assert neighbour.poll() is None, "the cleanup of s1 killed a process of s10"
    finally:
        neighbour.kill()
        neighbour.wait()
