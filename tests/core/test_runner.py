from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from pytest_akmbench.agents import AgentRequest, AgentResult, NopAgent, OracleAgent
from pytest_akmbench.agents.opencode.transcript import read_transcript
from pytest_akmbench.cell import akm
from pytest_akmbench.cell.context import Cell, RunContext
from pytest_akmbench.cell.runner import run_cell
from pytest_akmbench.corpus.tasks import Task, load_corpus, load_lenient
from pytest_akmbench.system.procs import ProcessTracker, become_subreaper
from tests.support import real_akm
from tests.support.corpus import standard_corpus, write_stash, write_task


def tracker() -> ProcessTracker:
    """A tracker with a marker no other test run on this machine shares."""
    return ProcessTracker(f"test-runner/{uuid.uuid4().hex}")


def alive_with(marker: str) -> list[str]:
    """Command lines of live processes containing ``marker`` (read from ps, not from our code)."""
    out = subprocess.run(["ps", "-eo", "stat=,args="], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if marker in line and not line.lstrip().startswith("Z")]


class EnvSpy:
    """An agent that records what it was given and writes nothing."""

    name = "spy"
    version = "1"

    def __init__(self) -> None:
        self.request: AgentRequest | None = None

    def start(self, session: object) -> None: ...

    def stop(self) -> None: ...

    def run(self, request: AgentRequest) -> AgentResult:
        self.request = request
        akm = subprocess.run(["akm", "search", "x"], env=dict(request.env), capture_output=True, text=True)
        return AgentResult(final_text=f"akm exit {akm.returncode}", exit_code=0)


@pytest.fixture
def corpus(tmp_path: Path) -> dict[str, Task]:
    tasks_root, stashes = standard_corpus(tmp_path)
    write_task(tasks_root, "alpha/broken", verify=None)
    write_task(tasks_root, "alpha/slow-verify", verify="sleep 30\n")
    write_task(tasks_root, "alpha/exits-127", verify="exit 127\n")
    write_task(tasks_root, "alpha/overlay", extra={"stash_overlay": "overlay"})
    (tasks_root / "alpha" / "overlay" / "overlay" / "knowledge").mkdir(parents=True)
    (tasks_root / "alpha" / "overlay" / "overlay" / "knowledge" / "extra.md").write_text("extra\n")
    tasks = load_corpus(tasks_root, stashes).by_id()
    # Gone after loading (a corpus without it does not load): the cell's own check still holds.
    (tasks_root / "alpha" / "broken" / "verify.sh").unlink()
    return tasks


def context(tmp_path: Path, agent: object, **kw: object) -> RunContext:
    defaults = dict(
        run_id="test-run",
        tmp_root=tmp_path / "runs",
        stashes_root=tmp_path / "corpus" / "stashes",
        agent=agent,
        model=None,
        budget_tokens=1000,
        budget_wall_ms=20000,
        budget_turns=None,
        verify_timeout_s=30.0,
    )
    defaults.update(kw)
    return RunContext(**defaults)  # type: ignore[arg-type]


class TestOutcomes:
    """The verifier decides pass/fail; only harness faults are harness_error."""

    @pytest.mark.parametrize("task_id", ["alpha/script-task", "alpha/pytest-task", "beta/regex-task"])
    def test_oracle_passes_every_verifier_kind(self, tmp_path: Path, corpus: dict[str, Task], task_id: str) -> None:
        """The oracle's solution passes script, pytest and regex verifiers."""
        sample = run_cell(Cell(corpus[task_id], "noakm", 1), context(tmp_path, OracleAgent()), tracker())
        assert sample["outcome"] == "pass", sample
        assert sample["verifier"]["exit_code"] == 0

    @pytest.mark.parametrize("task_id", ["alpha/script-task", "alpha/pytest-task", "beta/regex-task"])
    def test_nop_fails_every_verifier_kind(self, tmp_path: Path, corpus: dict[str, Task], task_id: str) -> None:
        """An untouched workspace fails, with a reason."""
        sample = run_cell(Cell(corpus[task_id], "akm", 2), context(tmp_path, NopAgent()), tracker())
        assert sample["outcome"] == "fail"
        assert sample["reason"]
        assert sample["seed"] == 2 and sample["arm"] == "akm"

    def test_pytest_failure_reason_is_the_assertion(self, tmp_path: Path, corpus: dict[str, Task]) -> None:
        """A pytest verifier's failure reason quotes the failing assertion."""
        sample = run_cell(Cell(corpus["alpha/pytest-task"], "noakm", 1), context(tmp_path, NopAgent()), tracker())
        assert sample["reason"].startswith(("E ", "FAILED "))

    def test_missing_verify_script_is_harness_error(self, tmp_path: Path, corpus: dict[str, Task]) -> None:
        """No verify.sh means the harness cannot judge: harness_error with a reason."""
        sample = run_cell(Cell(corpus["alpha/broken"], "noakm", 1), context(tmp_path, OracleAgent()), tracker())
        assert sample["outcome"] == "harness_error"
        assert "verify.sh not found" in sample["reason"]

    def test_script_exit_127_is_a_failure(self, tmp_path: Path, corpus: dict[str, Task]) -> None:
        """Unlike the reference, a script's own exit 127 is a fail, not a harness error."""
        sample = run_cell(Cell(corpus["alpha/exits-127"], "noakm", 1), context(tmp_path, OracleAgent()), tracker())
        assert sample["outcome"] == "fail"

    def test_verifier_timeout_is_a_failure(self, tmp_path: Path, corpus: dict[str, Task]) -> None:
        """A verifier that hangs is stopped at its timeout and counts as fail."""
        started = time.monotonic()
        sample = run_cell(
            Cell(corpus["alpha/slow-verify"], "noakm", 1),
            context(tmp_path, OracleAgent(), verify_timeout_s=1.0),
            tracker(),
        )
        assert time.monotonic() - started < 10
        assert sample["outcome"] == "fail"
        assert sample["reason"] == "verifier timed out"

    def test_oracle_without_solution_is_harness_error(self, tmp_path: Path) -> None:
        """The oracle needs solution/solve.sh; without it the cell is a harness error."""
        write_stash(tmp_path / "corpus" / "stashes")
        write_task(tmp_path / "corpus" / "tasks", "a/nosolve", solve=None)
        task = load_corpus(tmp_path / "corpus" / "tasks", tmp_path / "corpus" / "stashes").tasks[0]
        sample = run_cell(Cell(task, "noakm", 1), context(tmp_path, OracleAgent()), tracker())
        assert sample["outcome"] == "harness_error"
        assert "solution/solve.sh" in sample["reason"]

    def test_wall_budget_of_the_task_is_honoured(self, tmp_path: Path) -> None:
        """A solution running past the task's own wallMs is budget_exceeded, hung."""
        write_stash(tmp_path / "corpus" / "stashes")
        write_task(
            tmp_path / "corpus" / "tasks", "a/slow", solve="sleep 60\n", extra={"budget": {"tokens": 10, "wallMs": 500}}
        )
        task = load_corpus(tmp_path / "corpus" / "tasks", tmp_path / "corpus" / "stashes").tasks[0]
        started = time.monotonic()
        sample = run_cell(Cell(task, "noakm", 1), context(tmp_path, OracleAgent()), tracker())
        assert time.monotonic() - started < 8
        assert (sample["outcome"], sample["budget"], sample["budget_tag"]) == ("budget_exceeded", "wall", "hung")
        assert sample["fingerprint"]["budget"]["wall_ms"] == 500


class TestIsolation:
    """Arms differ only in what they intend to; nothing leaks between cells or to the user."""

    def test_control_arm_sees_no_akm(
        self, tmp_path: Path, corpus: dict[str, Task], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """noakm gets no stash, no AKM_* variable and an akm on PATH that refuses to run."""
        monkeypatch.setenv("AKM_STASH_DIR", "/users/own/stash")
        spy = EnvSpy()
        sample = run_cell(Cell(corpus["alpha/script-task"], "noakm", 1), context(tmp_path, spy), tracker())
        assert spy.request is not None
        assert not [k for k in spy.request.env if k.startswith("AKM_")]
        assert spy.request.stash_dir is None
        assert sample["final_text_tail"] == "akm exit 127"

    def test_control_arm_path_drops_a_user_akm(
        self, tmp_path: Path, corpus: dict[str, Task], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A directory on the user's PATH holding akm is left out for noakm, with a warning."""
        tools = tmp_path / "tools"
        tools.mkdir()
        (tools / "akm").write_text("#!/bin/sh\necho real akm\n")
        (tools / "akm").chmod(0o755)
        monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
        spy = EnvSpy()
        sample = run_cell(Cell(corpus["alpha/script-task"], "noakm", 1), context(tmp_path, spy), tracker())
        assert spy.request is not None and str(tools) not in spy.request.env["PATH"].split(os.pathsep)
        assert sample["final_text_tail"] == "akm exit 127"
        assert sample["warnings"] == [f"PATH entry {tools} holds an akm executable; dropped for the noakm arm"]

    @pytest.mark.parametrize("arm", ["noakm", "akm"])
    def test_the_cells_path_has_no_relative_entry(
        self, tmp_path: Path, corpus: dict[str, Task], monkeypatch: pytest.MonkeyPatch, arm: str
    ) -> None:
        """A relative PATH entry of the user's would be looked up from a cell's working directory,
        where the agent writes: the cell's PATH keeps only absolute entries."""
        monkeypatch.setenv("PATH", f".{os.pathsep}bin{os.pathsep}{os.pathsep}{os.environ['PATH']}")
        spy = EnvSpy()
        run_cell(Cell(corpus["alpha/script-task"], arm, 1), context(tmp_path, spy), tracker())
        assert spy.request is not None
        entries = spy.request.env["PATH"].split(os.pathsep)
        assert entries and all(os.path.isabs(e) for e in entries), entries

    def test_akm_arm_gets_a_private_stash_with_overlay(self, tmp_path: Path, corpus: dict[str, Task]) -> None:
        """The akm arm's stash is a copy (plus overlay) inside the run dir, in AKM_STASH_DIR."""
        spy = EnvSpy()
        seen: dict[str, object] = {}

        def run(request: AgentRequest) -> AgentResult:
            stash = Path(request.env["AKM_STASH_DIR"])
            seen["files"] = sorted(str(p.relative_to(stash)) for p in stash.rglob("*") if p.is_file())
            seen["inside"] = stash.parent == request.run_dir
            return AgentResult()

        spy.run = run  # type: ignore[method-assign]
        run_cell(Cell(corpus["alpha/overlay"], "akm", 1), context(tmp_path, spy), tracker())
        assert seen["inside"] is True
        assert seen["files"] == ["MANIFEST.json", "knowledge/extra.md", "skills/howto/SKILL.md"]

    def test_private_home_and_cleanup(self, tmp_path: Path, corpus: dict[str, Task]) -> None:
        """HOME and XDG dirs are private to the run dir, which is gone after the cell."""
        spy = EnvSpy()
        run_cell(Cell(corpus["alpha/script-task"], "akm", 1), context(tmp_path, spy), tracker())
        req = spy.request
        assert req is not None
        for key in ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "TMPDIR"):
            assert Path(req.env[key]).is_relative_to(req.run_dir)
        assert req.workspace.parent == req.run_dir
        assert not req.run_dir.exists()
        assert os.path.commonpath([req.run_dir, tmp_path / "runs"]) == str(tmp_path / "runs")

    def test_workspace_is_a_copy(self, tmp_path: Path, corpus: dict[str, Task]) -> None:
        """The oracle writes out.txt into the copy (the verifier finds it there: pass); the
        corpus's workspace stays untouched."""
        workspace = corpus["alpha/script-task"].workspace
        before = sorted(p.name for p in workspace.iterdir())
        sample = run_cell(Cell(corpus["alpha/script-task"], "noakm", 1), context(tmp_path, OracleAgent()), tracker())
        assert sample["outcome"] == "pass", sample
        assert sorted(p.name for p in workspace.iterdir()) == before == ["README.md"]

    def test_verifier_sees_no_akm_variable(
        self, tmp_path: Path, corpus: dict[str, Task], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The akm arm's agent gets AKM_STASH_DIR, the verifier gets no AKM_* at all (it judges the
        workspace, never the stash): a verify.sh that fails on any AKM_ variable passes."""
        monkeypatch.setenv("AKM_CONFIG_DIR", "/users/own/akm")
        write_task(
            tmp_path / "corpus" / "tasks",
            "alpha/env-check",
            verify='if env | grep "^AKM_"; then exit 1; fi\ngrep -qx hello out.txt\n',
        )
        # Leniently: the fixture's alpha/broken lost its verify.sh after loading.
        loaded, _ = load_lenient(tmp_path / "corpus" / "tasks", tmp_path / "corpus" / "stashes")
        task = loaded.by_id()["alpha/env-check"]
        seen: list[str] = []

        class Solver(EnvSpy):
            def run(self, request: AgentRequest) -> AgentResult:
                seen.extend(k for k in request.env if k.startswith("AKM_"))
                (request.workspace / "out.txt").write_text("hello\n")
                return AgentResult(exit_code=0)

        sample = run_cell(Cell(task, "akm", 1), context(tmp_path, Solver()), tracker())
        assert "AKM_STASH_DIR" in seen
        assert sample["outcome"] == "pass", sample["reason"]


class TestNoSurvivors:
    """Every process a cell started is gone when the cell ends."""

    def test_background_children_are_killed(self, tmp_path: Path) -> None:
        """Detached sleeps started by a solution (nohup, setsid, &) do not outlive the cell."""
        become_subreaper()
        tag = f"{os.getpid()}{int(time.time() * 1000) % 100000}"
        pids = tmp_path / "pids"
        solve = (
            f"nohup sleep 6{tag}1 >/dev/null 2>&1 & echo $! >> {pids}\n"
            f"setsid sleep 6{tag}2 >/dev/null 2>&1 & echo $! >> {pids}\n"
            f"(sleep 6{tag}3 & echo $! >> {pids})\n"
            "echo hello > out.txt\n"
        )
        write_stash(tmp_path / "corpus" / "stashes")
        write_task(tmp_path / "corpus" / "tasks", "a/spawner", solve=solve)
        task = load_corpus(tmp_path / "corpus" / "tasks", tmp_path / "corpus" / "stashes").tasks[0]
        sample = run_cell(Cell(task, "noakm", 1), context(tmp_path, OracleAgent()), tracker())
        assert sample["outcome"] == "pass"
        assert len(pids.read_text().split()) == 3  # all three were really started
        assert alive_with(f"sleep 6{tag}") == []

    def test_a_command_that_lingers_after_its_result_is_stopped_once_done(self, tmp_path: Path) -> None:
        """``run(done=...)``: a command that prints its result and then lingers (akm 0.7's reflect,
        for two minutes) ends as a success when its output says it is done; none of it is left.
        Without ``done`` it would run into the timeout, reported as timed out with no exit code."""
        tag = f"{os.getpid()}{int(time.time() * 1000) % 100000}"
        script = f'echo "{{\\"ok\\": "; sleep 0.5; echo "true}}"; exec sleep 7{tag}'
        procs = tracker()
        code, out, timed_out = procs.run(
            ["bash", "-c", script], cwd=tmp_path, env=dict(os.environ), timeout_s=60,
            done=lambda text: text.strip().endswith("}") and json.loads(text) == {"ok": True},
        )  # fmt: skip
        assert (code, json.loads(out), timed_out) == (0, {"ok": True}, False)
        assert alive_with(f"sleep 7{tag}") == []

    def test_a_command_that_exits_before_it_is_done_keeps_its_exit_code(self, tmp_path: Path) -> None:
        procs = tracker()
        code, out, timed_out = procs.run(
            ["bash", "-c", "echo half; exit 3"], cwd=tmp_path, env=dict(os.environ), timeout_s=60,
            done=lambda text: "whole" in text,
        )  # fmt: skip
        assert (code, out, timed_out) == (3, "half\n", False)

    @pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "timer-thread"])
    def test_a_command_deaf_to_sigterm_is_killed_after_the_grace(
        self, tmp_path: Path, pidfd: bool, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The timeout holds with or without a pidfd (an old kernel has none): SIGTERM at the
        timeout, SIGKILL after the grace, the output so far kept, nothing left running."""
        if not pidfd:
            monkeypatch.delattr(os, "pidfd_open")
        tag = f"{os.getpid()}{int(time.time() * 1000) % 100000}"
        procs = ProcessTracker(f"t-{tag}", grace_s=0.3)
        started = time.monotonic()
        code, out, timed_out = procs.run(
            ["bash", "-c", f"trap '' TERM; echo started; sleep 8{tag}; echo never"], cwd=tmp_path,
            env=dict(os.environ), timeout_s=0.5,
        )  # fmt: skip
        assert (code, out, timed_out) == (None, "started\n", True)
        assert time.monotonic() - started < 5
        assert alive_with(f"sleep 8{tag}") == []

    def test_a_quick_command_is_not_timed_out(self, tmp_path: Path) -> None:
        code, out, timed_out = tracker().run(
            ["bash", "-c", "echo hi; exit 4"], cwd=tmp_path, env=dict(os.environ), timeout_s=30
        )
        assert (code, out, timed_out) == (4, "hi\n", False)


class TestRealAkm:
    """The akm arm's treatment with real akm: indexed at the cell's own path, live, or an error."""

    @pytest.fixture(params=real_akm.versions())
    def info(self, request: pytest.FixtureRequest) -> akm.AkmInfo:
        return real_akm.get(request.param)

    def test_each_cell_searches_an_index_akm_uses(self, tmp_path: Path, info: akm.AkmInfo) -> None:
        """An akm cell's agent, searching as the prompt says, gets the asset; the control arm finds no akm."""
        stashes = tmp_path / "corpus" / "stashes"
        write_stash(
            stashes,
            assets={
                "knowledge/lower-case.md": "---\ndescription: Greeting style\n"
                "tags: [greeting, style]\n---\nlower case\n"
            },
        )
        write_task(tmp_path / "corpus" / "tasks", "alpha/t")
        task = load_corpus(tmp_path / "corpus" / "tasks", stashes).tasks[0]
        outputs: list[tuple[int, str]] = []

        class Searcher(EnvSpy):
            def run(self, request: AgentRequest) -> AgentResult:
                code, out, _ = request.procs.run(
                    ["akm", "search", "greeting style"], cwd=request.workspace, env=request.env, timeout_s=60
                )
                outputs.append((code, out))
                return AgentResult()

        ctx = context(tmp_path, Searcher(), akm=info)
        akm_sample = run_cell(Cell(task, "akm", 1), ctx, tracker())
        noakm_sample = run_cell(Cell(task, "noakm", 1), ctx, tracker())
        assert outputs[0][0] == 0 and akm.search_refs(outputs[0][1]) == [
            akm.format_ref("knowledge:lower-case", info.line)
        ]
        assert outputs[1][0] == 127
        setup = akm_sample["akm_setup"]
        assert setup["version"] == info.version and setup["index"]["entries"] == 2
        assert setup["index"]["search_mode"] == "keyword" and setup["index"]["ms"] >= 0
        assert akm_sample["trajectory"]["akm_events"] is True and noakm_sample["akm_setup"] is None
        assert akm_sample["fingerprint"]["akm"] == {"version": info.version, "sha256": info.sha256}
        assert "akm" not in noakm_sample["fingerprint"]

    def test_failing_index_is_a_harness_error(self, tmp_path: Path, info: akm.AkmInfo) -> None:
        """If akm cannot index the stash, the cell says so instead of running the agent without it."""
        stashes = tmp_path / "corpus" / "stashes"
        write_stash(stashes)
        write_task(tmp_path / "corpus" / "tasks", "alpha/t")
        task = load_corpus(tmp_path / "corpus" / "tasks", stashes).tasks[0]
        (stashes / "st" / "skills" / "howto" / "SKILL.md").unlink()
        spy = EnvSpy()
        sample = run_cell(Cell(task, "akm", 1), context(tmp_path, spy, akm=info), tracker())
        assert sample["outcome"] == "harness_error" and "akm index found no asset" in sample["reason"]
        assert spy.request is None  # the agent never ran: no tokens spent on a dead treatment

    def test_broken_akm_during_the_cell_is_a_harness_error(self, tmp_path: Path, info: akm.AkmInfo) -> None:
        """Every akm call failing as only a broken akm fails (its stash gone: exit 78) is a harness
        error with that reason, even though the verifier would have passed."""
        stashes = tmp_path / "corpus" / "stashes"
        write_stash(stashes)
        write_task(tmp_path / "corpus" / "tasks", "alpha/t")
        task = load_corpus(tmp_path / "corpus" / "tasks", stashes).tasks[0]

        class Breaker(OracleAgent):
            read_transcript = staticmethod(read_transcript)  # it writes opencode's events

            def run(self, request: AgentRequest) -> AgentResult:
                assert request.stash_dir is not None
                shutil.rmtree(request.stash_dir)
                request.transcript.write_text(
                    json.dumps(
                        {
                            "type": "tool_use",
                            "timestamp": 1,
                            "part": {
                                "type": "tool",
                                "tool": "bash",
                                "state": {
                                    "status": "completed",
                                    "input": {"command": "akm search howto"},
                                    "output": "",
                                    "metadata": {"exit": 78},
                                    "time": {"start": 1, "end": 2},
                                },
                            },
                        }
                    )
                    + "\n"
                )
                result = super().run(request)
                result.transcript_written = True
                return result

        sample = run_cell(Cell(task, "akm", 1), context(tmp_path, Breaker(), akm=info), tracker())
        assert sample["outcome"] == "harness_error"
        assert sample["reason"].startswith("akm never answered") and "exit 78" in sample["reason"]
