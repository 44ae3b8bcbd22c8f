"""Tests for tests/support/mutmut_run.py, the wrapper that keeps mutation runs alive when the tests
adopt orphans (docs/testing.md, "Mutation testing"). Real processes, in a child Python that is a
child subreaper like mutmut's main process, so the orphans it adopts are its own children."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

WRAPPER = Path(__file__).resolve().parents[1] / "support" / "mutmut_run.py"

PRELUDE = f"""
import importlib.util, json, os, subprocess, sys, time
from pytest_akmbench.system.reaper import become_subreaper
spec = importlib.util.spec_from_file_location("mutmut_run", {str(WRAPPER)!r})
run = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run)
assert become_subreaper()

def orphan(seconds):
    # a shell that starts a sleep in the background and exits: the sleep is re-parented to us
    out = subprocess.run(["bash", "-c", f"sleep {{seconds}} >/dev/null 2>&1 & echo $!"], capture_output=True, text=True)
    return int(out.stdout)

def ended(pid):
    # the orphan has exited and waits to be reaped by us (a zombie): it is the first pid a wait sees
    deadline = time.monotonic() + 30
    while open(f"/proc/{{pid}}/stat").read().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.01)
"""


def run_child(body: str) -> dict[str, object]:
    script = PRELUDE + textwrap.dedent(body)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    result: dict[str, object] = json.loads(out.stdout.splitlines()[-1])
    return result


def test_an_orphan_reaped_by_the_wait_does_not_stop_it() -> None:
    """mutmut's wait reaps any child and looks it up among its mutants: an adopted orphan that ends
    first made it raise KeyError and stop the run. The wrapped wait skips it and returns the mutant."""
    result = run_child(
        """
        running = {}

        def wait(self, timeout=None):  # what mutmut's ForkRunner.wait_for_result does with the pid
            pid, status = os.wait()
            return running.pop(pid), os.waitstatus_to_exitcode(status)

        stray = orphan(0.1)
        ended(stray)
        worker = subprocess.Popen(["bash", "-c", "sleep 1; exit 3"])
        running[worker.pid] = "mutant_7"
        print(json.dumps({"result": run.skip_strangers(wait)(None), "left": sorted(running), "stray": stray}))
        """
    )
    assert result["result"] == ["mutant_7", 3]
    assert result["left"] == []


def test_unwrapped_wait_stops_on_the_orphan() -> None:
    """The same sequence without the wrapper raises KeyError (what stopped the run), so the test
    above shows the wrapper's doing, not a lucky order of exits."""
    result = run_child(
        """
        running = {}

        def wait(self, timeout=None):
            pid, status = os.wait()
            return running.pop(pid)

        ended(orphan(0.1))
        worker = subprocess.Popen(["sleep", "1"])
        running[worker.pid] = "mutant_7"
        try:
            wait(None)
            print(json.dumps({"raised": False}))
        except KeyError:
            worker.wait()
            print(json.dumps({"raised": True}))
        """
    )
    assert result["raised"] is True


def test_sweep_kills_adopted_orphans_and_spares_the_workers() -> None:
    """A sleeping orphan never reaches a CPU limit and outlived the run: the sweep kills a child that
    is not a worker once it has seen it in two passes, and never a worker."""
    result = run_child(
        """
        stray = orphan(30)
        worker = subprocess.Popen(["sleep", "30"])
        first = run.sweep(os.getpid(), {worker.pid}, set())
        alive_after_first = os.waitpid(stray, os.WNOHANG) == (0, 0)
        run.sweep(os.getpid(), {worker.pid}, first)
        _, status = os.waitpid(stray, 0)
        worker_alive = worker.poll() is None
        worker.kill(); worker.wait()
        print(json.dumps({
            "suspects": sorted(first), "stray": stray, "alive_after_first": alive_after_first,
            "stray_signal": -os.waitstatus_to_exitcode(status), "worker_alive": worker_alive,
        }))
        """
    )
    assert result["suspects"] == [result["stray"]]
    assert result["alive_after_first"] is True
    assert result["stray_signal"] == 9
    assert result["worker_alive"] is True
