"""Fault injection: kill, starve and race a real bench run, then check what a user relies on.

Every scenario runs a real ``pytest`` bench in a subprocess (real store file, real processes,
real xdist workers) and asserts the same things afterwards:

* no sample is lost that a cell finished (every cell the terminal showed as done is stored);
* no trial is stored twice;
* no process of the run is left;
* a failure is one line, not a traceback;
* running the same command again runs exactly the missing cells.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.support.agents import FAULT
from tests.support.bench import samples
from tests.support.corpus import standard_corpus
from tests.support.procs import processes_under
from tests.support.waiting import settle, wait_until

ROOT = Path(__file__).resolve().parents[2]

CELLS = {(t, a, 1) for t in ("alpha/pytest-task", "alpha/script-task", "beta/regex-task") for a in ("noakm", "akm")}


class Project:
    """A project dir with the standard corpus, the fault agent and its own store/report/tmp."""

    def __init__(self, base: Path) -> None:
        self.base = base
        standard_corpus(base)
        (base / "conftest.py").write_text(FAULT)
        (base / "pytest.ini").write_text(
            "[pytest]\nbench_corpus = corpus/tasks\nbench_stashes = corpus/stashes\n"
            f"bench_tmp = {base / 'cells'}\nbench_store = {base / 'store'}\n"
        )
        self.delays({"*": 0})

    def delays(self, delays: dict[str, float]) -> None:
        (self.base / "delays.json").write_text(json.dumps(delays))

    def argv(self, *extra: str, report: str = "report") -> list[str]:
        return [
            sys.executable,
            "-m",
            "pytest",
            "corpus",
            "-p",
            "no:cacheprovider",
            "-v",
            "--bench-agent",
            "fault",
            "--bench-seeds",
            "1",
            "--bench-report",
            str(self.base / report),
            *extra,
        ]

    def start(
        self, *extra: str, report: str = "report", prefix: tuple[str, ...] = (), **kw: Any
    ) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [*prefix, *self.argv(*extra, report=report)],
            cwd=self.base,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            **kw,
        )

    def run(self, *extra: str, report: str = "report", timeout: float = 120, **kw: Any) -> tuple[int, str]:
        proc = self.start(*extra, report=report, **kw)
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out

    def records(self, store: str = "store") -> list[dict[str, Any]]:
        return samples(self.base / store, torn_ok=True)

    def stored_cells(self) -> list[tuple[str, str, int]]:
        return [(r["task_id"], r["arm"], r["seed"]) for r in self.records() if r["outcome"] == "pass"]

    def agent_runs(self, event: str = "start") -> list[tuple[str, str, int]]:
        log = self.base / "agent.log"
        lines = log.read_text().splitlines() if log.exists() else []
        return [(p[2], p[3], int(p[4])) for p in (line.split() for line in lines) if p[1] == event]

    def wait_for(self, what: Any, timeout: float = 60) -> None:
        wait_until(what, f"{what}", timeout=timeout)

    def leftovers(self) -> list[str]:
        """Live processes started for this project's cells (their HOME lies under its tmp root)."""
        return processes_under(self.base / "cells")

    def no_leftovers(self, within: float = 10) -> None:
        settle(lambda: not self.leftovers(), within=within)
        assert self.leftovers() == []

    def check_store(self) -> None:
        """No trial stored twice."""
        counts = Counter(
            (r["task_id"], r["arm"], r["seed"], r["fingerprint_hash"]) for r in self.records() if r["outcome"] == "pass"
        )
        assert [k for k, n in counts.items() if n > 1] == []

    def resume_runs_exactly_the_missing(self) -> None:
        """The same command again runs exactly the cells without a sample, and the store is whole."""
        missing = CELLS - set(self.stored_cells())
        before = len(self.agent_runs())
        self.delays({"*": 0})
        code, out = self.run(report="resumed")
        assert code == 0, out
        assert sorted(self.agent_runs()[before:]) == sorted(missing)
        assert sorted(self.stored_cells()) == sorted(CELLS)
        self.check_store()
        report = json.loads((self.base / "resumed" / "report.json").read_text())
        assert report["complete"] is True and len(report["runs"]) == len(CELLS)


def passed_in(out: str) -> set[tuple[str, str, int]]:
    """Cells the terminal showed as passed (-v lines, xdist's or serial)."""
    found = set()
    for m in re.finditer(r"PASSED (?:\(from store\) )?corpus/tasks/(\S+)/task\.yaml::(\w+)-s(\d+)", out):
        found.add((m.group(1), m.group(2), int(m.group(3))))
    for m in re.finditer(r"corpus/tasks/(\S+)/task\.yaml::(\w+)-s(\d+) PASSED", out):
        found.add((m.group(1), m.group(2), int(m.group(3))))
    return found


def one_line_error(out: str) -> None:
    assert "Traceback" not in out and "INTERNALERROR" not in out, out


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path)


def can_unshare() -> bool:
    if not shutil.which("unshare"):
        return False
    return subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode == 0


def ns_prefix(script: str) -> tuple[str, ...]:
    """Run the bench inside a private mount namespace prepared by ``script``."""
    return ("unshare", "-rm", "sh", "-c", script + ' && exec "$@"', "sh")


class TestKilled:
    """SIGKILL of the controller or of a worker."""

    def test_sigkill_controller(self, project: Project) -> None:
        """Workers die with the controller, and so do their cells (one of them in the middle of a
        minute-long agent run); finished samples stay; resume completes."""
        project.delays({"alpha/pytest-task": 60, "*": 0.4})
        proc = project.start("-n", "2")
        project.wait_for(lambda: len(project.records()) >= 3)
        proc.kill()
        out, _ = proc.communicate(timeout=30)
        project.no_leftovers()
        assert passed_in(out) <= set(project.stored_cells())
        project.check_store()
        project.resume_runs_exactly_the_missing()

    def test_sigkill_worker(self, project: Project) -> None:
        """Item 4: a killed worker's cell processes are reaped within seconds, during the run."""
        # Only the victim's cell lasts a minute: the script task's other cell need not hold the
        # run up for a minute after the kill (it did, 60 s of the suite).
        project.delays({"alpha/script-task/noakm": 60, "*": 0.3})
        proc = project.start("-n", "2", "-k", "script-task or regex-task")
        victim = project.base / "pids" / "alpha_script-task-noakm-1"
        project.wait_for(lambda: victim.is_file() and len(victim.read_text().split()) == 2)
        worker, child = (int(x) for x in victim.read_text().split())
        os.kill(worker, signal.SIGKILL)
        killed_at = time.monotonic()
        while (
            os.path.exists(f"/proc/{child}") and "Z" not in Path(f"/proc/{child}/stat").read_text().split(")")[-1][:3]
        ):
            assert time.monotonic() - killed_at < 10, "the crashed worker's agent child is still running"
            time.sleep(0.1)
        assert proc.poll() is None  # reaped during the run, not at its end
        out, _ = proc.communicate(timeout=120)
        assert "crashed while running" in out
        project.no_leftovers()
        assert passed_in(out) <= set(project.stored_cells())
        project.check_store()
        project.resume_runs_exactly_the_missing()


class TestInterrupted:
    """Item 6: Ctrl-C sent to the controller alone."""

    def test_controller_only_sigint(self, project: Project) -> None:
        """No cell starts after the interrupt, and terminal, store and report agree on what ran."""
        project.delays({"*": 0.8})
        proc = project.start("-n", "2")
        project.wait_for(lambda: len(project.records()) >= 2)
        interrupted_at = time.time()
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
        starts = [
            float(line.split()[0])
            for line in (project.base / "agent.log").read_text().splitlines()
            if line.split()[1] == "start"
        ]
        # Slack for the controller to take the signal on a loaded machine; a worker that went
        # on would start its next cell right away and keep starting them.
        assert max(starts) < interrupted_at + 1.5, out
        assert len(starts) < len(CELLS), out
        report = json.loads((project.base / "report" / "report.json").read_text())
        assert report["complete"] is False
        assert (
            passed_in(out)
            == set(project.stored_cells())
            == {(r["task_id"], r["arm"], r["seed"]) for r in report["runs"]}
        ), out
        assert not any(w.startswith("report mismatch") for w in report["warnings"]), (report["warnings"], out)
        project.no_leftovers()
        project.resume_runs_exactly_the_missing()


class TestStorage:
    """Read-only store, full disk, torn lines."""

    def test_read_only_store(self, project: Project) -> None:
        """Item 8: one line before any cell runs; no agent spends anything."""
        store = project.base / "store"
        store.mkdir()
        if os.geteuid() != 0:
            store.chmod(0o555)
            prefix: tuple[str, ...] = ()
        elif can_unshare():
            prefix = ns_prefix(f"mount --bind {store} {store} && mount -o remount,ro,bind {store} {store}")
        else:
            pytest.skip("root without mount namespaces: cannot make a read-only directory")
        proc = project.start(prefix=prefix)
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == pytest.ExitCode.USAGE_ERROR, out
        errors = [line for line in out.splitlines() if line.startswith("ERROR:")]
        assert len(errors) == 1 and str(store) in errors[0] and "--bench-store" in errors[0], out
        one_line_error(out)
        assert project.agent_runs() == []

    def test_full_disk_before_the_run(self, project: Project) -> None:
        """Item 8: a store on a full disk is refused before the first cell."""
        if not can_unshare():
            pytest.skip("no mount namespaces here for a small tmpfs")
        store = project.base / "store"
        store.mkdir()
        proc = project.start(prefix=ns_prefix(f"mount -t tmpfs -o size=64k tmpfs {store}"))
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == pytest.ExitCode.USAGE_ERROR, out
        assert "No space left on device" in out and "--bench-store" in out
        one_line_error(out)
        assert project.agent_runs() == []

    def test_disk_fills_during_the_run(self, project: Project) -> None:
        """Item 8: the first failed append stops the run in one line; the sample that could not be
        stored is still in the report, which says so; the rerun runs exactly the missing cells."""
        store = project.base / "store"
        store.mkdir()
        (project.base / "fill-with").write_text(str(store / "filler"))
        if can_unshare():
            prefix: tuple[str, ...] = ns_prefix(f"mount -t tmpfs -o size=1m tmpfs {store}")
            kw: dict[str, Any] = {}
            reason = "No space left on device"
        else:  # no tmpfs: a file-size limit makes the append fail the same way
            import resource

            def limit() -> None:
                resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))

            prefix, kw, reason = (), {"preexec_fn": limit}, "File too large"
        proc = project.start(prefix=prefix, **kw)
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
        assert re.search(rf"Interrupted: akmbench: \S+samples.jsonl: cannot append sample \({reason}\)", out), out
        one_line_error(out)
        assert len(project.agent_runs()) == 1  # the run stopped at the first failed append
        report = json.loads((project.base / "report" / "report.json").read_text())
        assert report["complete"] is False and len(report["runs"]) == 1
        assert any("samples this run produced are not in the store" in w for w in report["warnings"])
        (store / "filler").unlink(missing_ok=True)
        project.no_leftovers()
        project.resume_runs_exactly_the_missing()

    def test_torn_lines(self, project: Project) -> None:
        """A writer killed mid-record leaves a torn line: skipped with a warning, terminated by the
        next append, no sample lost; a killed writer's torn line in the middle changes nothing."""
        code, out = project.run("-k", "alpha")
        assert code == 0, out
        store = project.base / "store" / "samples.jsonl"
        with store.open("a") as fh:
            fh.write('{"schema": 1, "task_id": "beta/regex-task", "arm": "akm", "seed": 1, "outc')
        code, out = project.run(report="second")
        assert code == 0, out
        lines = store.read_text().splitlines()
        assert lines[4].endswith('"outc') and json.loads(lines[5])  # terminated, the next record whole
        report = json.loads((project.base / "second" / "report.json").read_text())
        assert any("samples.jsonl:5: skipped unreadable record" in w for w in report["warnings"])
        assert sorted(project.stored_cells()) == sorted(CELLS)
        project.check_store()
        project.resume_runs_exactly_the_missing()


class TestTwoBenches:
    """Item 3: two benches on one store run every cell once between them."""

    def test_same_command_twice_at_once(self, project: Project) -> None:
        project.delays({"*": 0.5})
        first = project.start(report="first")
        second = project.start(report="second")
        out1, _ = first.communicate(timeout=120)
        out2, _ = second.communicate(timeout=120)
        assert first.returncode == second.returncode == 0, out1 + out2
        assert len(project.agent_runs()) == len(CELLS)  # not 12: each trial ran once
        assert len(project.records()) == len(CELLS)
        project.check_store()
        reports = [json.loads((project.base / r / "report.json").read_text()) for r in ("first", "second")]
        for report in reports:
            assert report["complete"] is True and len(report["runs"]) == len(CELLS)
            assert not any(w.startswith("report mismatch") for w in report["warnings"])
        # Each bench labels as from_store exactly the cells the other one ran.
        ran = [sum(not r["from_store"] for r in report["runs"]) for report in reports]
        assert sum(ran) == len(CELLS)
        shared = [w for r in reports for w in r["warnings"] if "run meanwhile by another bench" in w]
        assert shared
        project.no_leftovers()
