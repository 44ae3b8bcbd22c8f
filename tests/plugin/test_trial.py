"""One trial path (cell/trial.py) through the real plugin: a store that cannot be claimed or
cannot take a sample stops a utility, evolve or remote run in one line, and nothing the store
held before is lost."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support import real_akm
from tests.support.corpus import write_stash, write_task
from tests.support.remote import bench_argv, copy_project, make_project, records

INI = (
    "[pytest]\nbench_corpus = corpus/tasks\nbench_stashes = corpus/stashes\n"
    "bench_store = store\nbench_report = out\nbench_tmp = cells\n"
)

# Solves every task; with a ``break-store`` file beside it, its run turns the store's lock file
# (or the one the file names) into a directory, so the append of the sample it makes fails.
AGENT = """
from pathlib import Path
from pytest_akmbench.agents import AgentResult

HERE = Path(__file__).parent

class Breaker:
    name, version, uses_akm = "breaker", "1", False
    def start(self, session): pass
    def stop(self): pass
    def run(self, request):
        with open(HERE / "agent-runs.log", "a") as log:
            log.write(f"{request.task.id} {request.arm} {request.seed}\\n")
        order = HERE / "break-store"
        lock = Path(order.read_text() or HERE / "store" / "samples.lock") if order.exists() else None
        if lock is not None and not lock.is_dir():
            lock.unlink(missing_ok=True)
            lock.mkdir()
        (request.workspace / "out.txt").write_text("hello\\n")
        return AgentResult(final_text="the answer is 42", token_measurement="unsupported")

def pytest_akmbench_agents():
    return [Breaker()]
"""


@pytest.fixture
def bench(pytester: pytest.Pytester) -> pytest.Pytester:
    """One domain with a train and an eval task (an evolve run needs both), the breaking agent."""
    tasks = pytester.path / "corpus" / "tasks"
    write_stash(pytester.path / "corpus" / "stashes")
    write_task(tasks, "alpha/train-task", extra={"slice": "train"})
    write_task(tasks, "alpha/eval-task", extra={"slice": "eval"})
    pytester.makeini(INI)
    pytester.makeconftest(AGENT)
    return pytester


def runs(base: Path) -> list[str]:
    log = base / "agent-runs.log"
    return log.read_text().splitlines() if log.exists() else []


def store_text(base: Path) -> str:
    return (base / "store" / "samples.jsonl").read_text()


def block_claims(store: Path) -> None:
    """A file where the claims directory goes: every claim fails with an OSError."""
    store.mkdir(exist_ok=True)
    claims = store / "claims"
    if claims.is_dir():
        claims.rmdir()
    claims.write_text("")


def cannot_claim(store: Path) -> tuple[str, str]:
    """How the cell fails, and the line the run stops with, when its claim fails."""
    line = f"akmbench: {store}: cannot claim a cell (File exists)"
    return line, line


def cannot_append(store: Path) -> tuple[str, str]:
    """How the cell fails, and the line the run stops with, when its sample cannot be appended."""
    why = f"{store / 'samples.jsonl'}: cannot append sample (Is a directory)"
    return f"the sample could not be stored: {why}", f"akmbench: {why}"


def stopped(out: str, lines: tuple[str, str]) -> None:
    """The cell fails in one line (a harness error), and the run stops in one line."""
    failed, stop = lines
    # A cell item words its harness errors for the reader (plugin/nodes.py); evolve's items do not.
    assert f"harness error (not the agent's fault): {failed}" in out or f"harness_error: {failed}" in out, out
    assert f"Interrupted: {stop}" in out, out  # "! Interrupted: …", xdist's "! xdist.dsession.Interrupted: …"
    assert "Traceback" not in out, out


UTILITY = ["corpus", "-p", "no:randomly", "--bench-agent", "breaker", "--bench-arms", "noakm"]


class TestUtility:
    def test_a_cell_that_cannot_be_claimed_stops_the_run(self, bench: pytest.Pytester) -> None:
        bench.runpytest(*UTILITY, "--bench-seeds", "1").assert_outcomes(passed=2)
        before = store_text(bench.path)
        block_claims(bench.path / "store")
        result = bench.runpytest(*UTILITY, "--bench-seeds", "2")
        out = result.stdout.str()
        stopped(out, cannot_claim(bench.path / "store"))
        assert result.ret == pytest.ExitCode.INTERRUPTED, out
        assert len(runs(bench.path)) == 2  # no agent ran for the cell it could not claim
        assert store_text(bench.path) == before

    def test_a_sample_the_store_refuses_stops_the_run(self, bench: pytest.Pytester) -> None:
        bench.runpytest(*UTILITY, "--bench-seeds", "1").assert_outcomes(passed=2)
        before = store_text(bench.path)
        (bench.path / "break-store").write_text("")
        result = bench.runpytest(*UTILITY, "--bench-seeds", "2")
        out = result.stdout.str()
        lock = bench.path / "store" / "samples.lock"
        stopped(out, cannot_append(bench.path / "store"))
        assert len(runs(bench.path)) == 3  # the run stopped after the cell that could not be stored
        assert store_text(bench.path) == before
        lock.rmdir()  # the store mended: the same command runs exactly the missing cells
        (bench.path / "break-store").unlink()
        bench.runpytest(*UTILITY, "--bench-seeds", "2").assert_outcomes(passed=4)
        assert len(runs(bench.path)) == 5
        assert store_text(bench.path).startswith(before)


def evolve_args() -> list[str]:
    found = real_akm.found()
    if not found:
        pytest.skip(real_akm.MISSING)
    info = next(iter(found.values()))
    # The control and synthetic cells depend on no proposal step; the control's akm arm needs akm.
    return [
        "corpus",
        "-p",
        "no:randomly",
        "--bench-agent",
        "breaker",
        "--bench-track",
        "evolve",
        "--bench-evolve-llm",
        "scripted/lesson",
        "--bench-akm",
        str(info.path),
        "-k",
        "control or synthetic",
    ]


class TestEvolve:
    """Evolve's cells ran their own copy of the trial, which handled neither error (a traceback)."""

    def test_a_cell_that_cannot_be_claimed_stops_the_run(self, bench: pytest.Pytester) -> None:
        args = evolve_args()
        bench.runpytest(*args, "--bench-seeds", "1").assert_outcomes(passed=2)
        before = store_text(bench.path)
        block_claims(bench.path / "store")
        result = bench.runpytest(*args, "--bench-seeds", "2")
        out = result.stdout.str()
        stopped(out, cannot_claim(bench.path / "store"))
        result.assert_outcomes(failed=1)
        assert len(runs(bench.path)) == 2
        assert store_text(bench.path) == before

    def test_a_sample_the_store_refuses_stops_the_run(self, bench: pytest.Pytester) -> None:
        args = evolve_args()
        bench.runpytest(*args, "--bench-seeds", "1").assert_outcomes(passed=2)
        before = store_text(bench.path)
        (bench.path / "break-store").write_text("")
        result = bench.runpytest(*args, "--bench-seeds", "2")
        out = result.stdout.str()
        stopped(out, cannot_append(bench.path / "store"))
        result.assert_outcomes(passed=1, failed=1)  # control-s1 from the store, then control-s2
        assert len(runs(bench.path)) == 3
        assert store_text(bench.path) == before


def remote_run(ctl: Path, far: Path) -> tuple[int, str]:
    argv = bench_argv("--tx", f"popen//chdir={far}")
    argv[argv.index("sleeper")] = "breaker"
    proc = subprocess.run(argv, cwd=ctl, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    return proc.returncode, proc.stdout + proc.stderr


def remote_project(tmp_path: Path, breaks: Path | None = None) -> tuple[Path, Path]:
    """A controller's project and a worker's copy of it, with the breaking agent."""
    ctl = make_project(tmp_path / "ctl")
    (ctl / "conftest.py").write_text(AGENT)
    if breaks is not None:
        (ctl / "break-store").write_text(str(breaks))
    return ctl, copy_project(ctl, tmp_path / "far")


class TestRemote:
    """The controller claims and appends for a remote worker (plugin/remote.py)."""

    def test_a_cell_the_controller_cannot_claim_stops_the_run(self, tmp_path: Path) -> None:
        ctl, far = remote_project(tmp_path)
        block_claims(ctl / "store")
        code, out = remote_run(ctl, far)
        assert code == pytest.ExitCode.INTERRUPTED, out
        stopped(out, cannot_claim(ctl / "store"))
        assert runs(far) == []  # no cell ran on the worker
        assert records(ctl) == []

    def test_a_sample_the_controller_cannot_store_stops_the_run(self, tmp_path: Path) -> None:
        """The worker's cell passes (its report carries the sample); the controller cannot append
        it, and refuses the next claim with the store's error: the run stops there."""
        ctl, far = remote_project(tmp_path, breaks=tmp_path / "ctl" / "store" / "samples.lock")
        code, out = remote_run(ctl, far)
        assert code == pytest.ExitCode.INTERRUPTED, out
        stop = cannot_append(ctl / "store")[1]
        stopped(out, (stop, stop))  # the next cell fails with the store's error
        # The worker may claim its next cell before the first one's report reaches the controller.
        ran = len(runs(far))
        assert ran in (1, 2) and records(ctl) == []
        report: dict[str, Any] = json.loads((ctl / "report" / "report.json").read_text())
        assert report["complete"] is False
        assert [r["outcome"] for r in report["runs"]] == ["pass"] * ran  # in the report, not in the store
