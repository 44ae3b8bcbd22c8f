"""End-to-end tests of the opencode adapter with the REAL opencode binary and the scripted model.

Each test costs about 10 s of CPU (opencode's start-up); run them serially. They skip only
when the opencode binary is absent (install: see README / .ci/run).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

from pytest_akmbench.agents import AgentRequest, Limits, SessionInfo
from pytest_akmbench.agents.opencode import adapter as opencode_adapter
from pytest_akmbench.agents.opencode.adapter import OpencodeAgent
from pytest_akmbench.cell import akm
from pytest_akmbench.cell.prompts import build_prompt
from pytest_akmbench.corpus.tasks import Task
from pytest_akmbench.scripted.server import usage_for_turn
from pytest_akmbench.system.procs import ProcessTracker, become_subreaper
from tests.support import gates, opencode, real_akm
from tests.support.waiting import settle, wait_until

ROOT = Path(__file__).resolve().parents[2]

OPENCODE = opencode.binary()


@pytest.fixture(scope="module", autouse=True)
def subreaper() -> None:
    assert become_subreaper(), "prctl(PR_SET_CHILD_SUBREAPER) failed"


_agents: dict[str, OpencodeAgent] = {}


@pytest.fixture(scope="module")
def agent_for():
    def get(policy: str) -> OpencodeAgent:
        if policy not in _agents:
            agent = OpencodeAgent()
            agent.start(
                SessionInfo(
                    model=f"scripted/{policy}",
                    arms=("noakm", "akm"),
                    tasks=(),
                    options={"opencode": str(OPENCODE), "rootdir": ROOT},
                )
            )
            _agents[policy] = agent
        return _agents[policy]

    yield get
    for agent in _agents.values():
        agent.stop()
    _agents.clear()


def make_task(tmp_path: Path, solve: str, *, verify: str = 'test "$(cat out.txt)" = hi\n') -> Task:
    tdir = tmp_path / "task"
    (tdir / "workspace").mkdir(parents=True)
    (tdir / "solution").mkdir()
    (tdir / "workspace" / "README.md").write_text("Write the word hi into out.txt.\n")
    (tdir / "solution" / "solve.sh").write_text("#!/usr/bin/env bash\nset -eu\n" + solve)
    (tdir / "verify.sh").write_text("#!/usr/bin/env bash\nset -eu\n" + verify)
    stash = tmp_path / "stash" / "skills" / "hello-file"
    stash.mkdir(parents=True)
    (stash / "SKILL.md").write_text(
        "---\nname: hello-file\ndescription: Write a greeting file\n"
        "tags: [greeting, hello, file]\n---\nTo greet, write hi into out.txt.\n"
    )
    return Task(
        id="demo/hello-file",
        title="Write a greeting file",
        domain="demo",
        difficulty="easy",
        stash="demo",
        verifier="script",
        task_dir=tdir,
        yaml_text="",
        gold_ref="skill:hello-file",
        akm_keywords="greeting hello file",
    )


def make_request(
    tmp_path: Path,
    task: Task,
    arm: str,
    procs: ProcessTracker,
    *,
    wall_s: float = 90,
    tokens: int | None = None,
    turns: int | None = None,
    extra_env: dict | None = None,
    path: str = "/usr/local/bin:/usr/bin:/bin",
) -> AgentRequest:
    run_dir = tmp_path / "cell"
    workspace = run_dir / "workspace"
    shutil.copytree(task.workspace, workspace)
    home = run_dir / "home"
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local/state"),
        "PATH": path,
        "LANG": "C.UTF-8",
        **(extra_env or {}),
    }
    stash_dir = None
    info = None
    if arm == "akm":  # what the runner gives the akm arm: real akm on PATH, its stash indexed in place
        info = real_akm.get()
        stash_dir = run_dir / "stash"
        shutil.copytree(tmp_path / "stash", stash_dir)
        env = akm.cell_env(info, stash_dir, env)
        akm.write_config(info, env)
        (run_dir / "bin").mkdir()
        (run_dir / "bin" / "akm").symlink_to(info.path)
        env["PATH"] = f"{run_dir / 'bin'}:{path}"
        assert procs.run([str(info.path), "index"], cwd=stash_dir, env=env, timeout_s=120)[0] == 0
    prompt, version = build_prompt(task, arm, workspace, info)
    return AgentRequest(
        task=task,
        arm=arm,
        seed=1,
        workspace=workspace,
        run_dir=run_dir,
        env=env,
        prompt=prompt,
        prompt_version=version,
        limits=Limits(wall_s=wall_s, tokens=tokens, turns=turns),
        transcript=run_dir / "transcript.jsonl",
        procs=procs,
        stash_dir=stash_dir,
        akm_line=info.line if info else None,
    )


@pytest.fixture
def procs():
    tracker = ProcessTracker(f"e2e-{uuid.uuid4().hex[:8]}")
    yield tracker
    tracker.kill_all()


def verify(request: AgentRequest) -> int:
    return subprocess.run(
        ["bash", str(request.task.task_dir / "verify.sh")], cwd=request.workspace, capture_output=True
    ).returncode


def expected_tokens(turns: int) -> dict[str, int]:
    inp = sum(usage_for_turn(t)["prompt_tokens"] for t in range(turns))
    out = sum(usage_for_turn(t)["completion_tokens"] for t in range(turns))
    return {"input": inp, "output": out, "reasoning": 0, "cache_read": 0, "cache_write": 0, "total": inp + out}


def alive_with(marker: str, *, zombies: bool = False) -> list[str]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if zombies and state == "Z":
            ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid == os.getpid():
                found.append(f"{pid} zombie child")
        elif not zombies and marker in args and state != "Z":
            found.append(f"{pid} {args}")
    return found


def test_oracle_akm_arm_passes_with_exact_tokens(tmp_path, procs, agent_for):
    task = make_task(tmp_path, "echo hi > out.txt\necho 'wrote out.txt'\n")
    request = make_request(tmp_path, task, "akm", procs)
    agent = agent_for("oracle")
    result = agent.run(request)
    assert result.error is None, result
    assert result.budget is None
    assert verify(request) == 0
    # search, show, solution, feedback, final answer
    assert result.turns == 5 and result.tool_calls == 4
    assert result.token_measurement == "measured"
    assert result.tokens == expected_tokens(5)
    served = agent.scripted_totals[str(request.run_dir)]
    assert {k: served[k] for k in result.tokens} == result.tokens
    assert served["requests"] == 5 and served["title_requests"] == 0
    assert result.final_text == "wrote out.txt"
    gold = akm.format_ref("skill:hello-file", request.akm_line or "")
    assert result.akm == {
        "searches": [{"query": "greeting"}],  # the words, as akm-bench sends them: akm searches the first
        "shows": [gold],
        "feedback": [{"ref": gold, "polarity": "positive"}],
    }
    assert result.transcript_written
    lines = request.transcript.read_text().splitlines()
    assert sum('"type":"step_finish"' in line for line in lines) == 5
    info = real_akm.get()
    argv = akm.log_argv(info)
    if argv is None:
        events = akm.parse_events_file(akm.events_file(request.env))
    else:
        events = akm.parse_log(procs.run(argv, cwd=request.run_dir, env=request.env, timeout_s=60)[1]) or []
    assert [e["kind"] for e in events] == ["search", "show", "feedback"]
    assert events[0]["results"] == [gold] and events[2]["signal"] == "positive"
    config = request.run_dir / "opencode" / "opencode.json"
    assert config.stat().st_mode & 0o777 == 0o600
    assert not (request.workspace / "opencode.json").exists()


def test_idle_cell_fails_verifier_with_exact_tokens(tmp_path, procs, agent_for):
    task = make_task(tmp_path, "echo hi > out.txt\n")
    request = make_request(tmp_path, task, "noakm", procs)
    agent = agent_for("idle")
    result = agent.run(request)
    assert result.error is None and result.budget is None, result
    assert verify(request) != 0
    assert result.turns == 1 and result.tool_calls == 0
    assert result.tokens == expected_tokens(1)
    served = agent.scripted_totals[str(request.run_dir)]
    assert {k: served[k] for k in result.tokens} == result.tokens
    assert result.final_text.startswith("I have looked at the task")
    assert request.transcript.stat().st_size > 0


def test_hang_hits_wall_budget_as_hung(tmp_path, procs, agent_for):
    task = make_task(tmp_path, "echo hi > out.txt\n")
    request = make_request(tmp_path, task, "noakm", procs, wall_s=15)
    started = time.monotonic()
    result = agent_for("hang").run(request)
    elapsed = time.monotonic() - started
    assert result.budget == "wall" and result.budget_tag == "hung", result
    assert elapsed < 15 + 10
    assert result.token_measurement == "missing" and result.tokens is None


def test_loop_hits_token_budget_promptly_as_confused(tmp_path, procs, agent_for):
    task = make_task(tmp_path, "echo hi > out.txt\n")
    request = make_request(tmp_path, task, "noakm", procs, wall_s=120, tokens=4000)
    started = time.monotonic()
    agent = agent_for("loop")
    result = agent.run(request)
    assert result.budget == "tokens" and result.budget_tag == "confused", result
    assert time.monotonic() - started < 60
    # 1020 + 1030 + 1040 + 1050 = 4140 > 4000: stopped right after the 4th step
    assert result.turns == 4
    assert result.tokens == expected_tokens(4)
    served = agent.scripted_totals[str(request.run_dir)]
    assert served["requests"] == 4  # the forwarder held the 5th once the 4th step's tokens showed


def test_loop_hits_turn_budget(tmp_path, procs, agent_for):
    task = make_task(tmp_path, "echo hi > out.txt\n")
    request = make_request(tmp_path, task, "noakm", procs, wall_s=120, turns=3)
    agent = agent_for("loop")
    result = agent.run(request)
    assert result.budget == "turns" and result.budget_tag == "confused", result
    assert result.turns == 3 and result.tokens == expected_tokens(3)
    # The forwarder held the 4th step's request: it never reached the model.
    assert agent.scripted_totals[str(request.run_dir)]["requests"] == 3


def test_http_500_becomes_provider_error(tmp_path, procs, agent_for):
    task = make_task(tmp_path, "echo hi > out.txt\n")
    request = make_request(tmp_path, task, "noakm", procs, wall_s=60)
    agent = agent_for("error")
    result = agent.run(request)
    assert result.budget is None
    assert result.error is not None and result.error.startswith("provider error:"), result
    assert "scripted provider failure: the model is unavailable" in result.error
    assert agent.scripted_totals[str(request.run_dir)]["errors"] >= 2  # opencode retried


def test_no_process_of_the_cell_survives_kill_all(tmp_path, procs, agent_for):
    tag = f"6{uuid.uuid4().int % 10**8:08d}"
    solve = (
        f"nohup sleep 600.{tag}1 >/dev/null 2>&1 &\n"
        f"setsid sleep 600.{tag}2 >/dev/null 2>&1 </dev/null &\n"
        f"(env -i setsid sleep 600.{tag}3 >/dev/null 2>&1 </dev/null &)\n"
        f"(setsid bash -c 'sleep 600.{tag}4 & sleep 600.{tag}5' >/dev/null 2>&1 </dev/null &)\n"
        "echo hi > out.txt\n"
        f"sleep 600.{tag}6\n"  # the tool call itself never ends: the wall budget has to fire
    )
    task = make_task(tmp_path, solve)
    # No wall budget to race: under load opencode may take longer to start than any short budget
    # allows. The agent runs in a thread; kill_all (what a cell's end, a budget or Ctrl-C calls)
    # comes once the last tool command is running, i.e. every background process was started.
    request = make_request(tmp_path, task, "noakm", procs, wall_s=600)
    results: list[object] = []
    runner = threading.Thread(target=lambda: results.append(agent_for("oracle").run(request)), daemon=True)
    runner.start()

    def last_command_runs() -> bool:
        assert runner.is_alive() or any(f"sleep 600.{tag}6" in p for p in alive_with(f"600.{tag}")), (
            f"the agent ended before its last command ran: {results}"
        )
        return any(f"sleep 600.{tag}6" in p for p in alive_with(f"600.{tag}"))

    wait_until(last_command_runs, "the tool commands started", timeout=180, every=0.2)
    before = alive_with(f"600.{tag}")
    procs.kill_all()
    runner.join(timeout=60)
    assert not runner.is_alive(), "the agent did not return once its processes were killed"
    settle(lambda: not alive_with(f"600.{tag}"), within=3)
    assert alive_with(f"600.{tag}") == [], f"survivors (were {before})"
    assert alive_with(request.run_dir.name + "/opencode") == []
    assert alive_with("-", zombies=True) == [], "kill_all must reap the orphans it killed"


def test_control_arm_is_clean(tmp_path, procs, agent_for):
    solve = "env | sort > env.txt\n(command -v akm || echo NO_AKM) > which.txt\necho hi > out.txt\n"
    task = make_task(tmp_path, solve)
    user_akm = real_akm.get().path.parent  # a user's akm install on PATH
    request = make_request(
        tmp_path,
        task,
        "noakm",
        procs,
        path=f"{user_akm}:/usr/local/bin:/usr/bin:/bin",
        extra_env={"AKM_STASH_DIR": str(tmp_path / "stash"), "AKM_CONFIG_DIR": "/nowhere"},
    )
    # the run dir is under pytest's tmp root; only the template text is ours to keep clean
    assert "akm" not in request.prompt.replace(str(request.workspace), "<ws>").lower()
    result = agent_for("oracle").run(request)
    assert result.error is None and result.budget is None, result
    env = (request.workspace / "env.txt").read_text()
    assert "AKM_" not in env
    assert (request.workspace / "which.txt").read_text().strip() == "NO_AKM"
    assert str(user_akm) not in env
    assert any("holds an akm executable" in w for w in result.warnings)
    assert "OPENCODE_DISABLE_PROJECT_CONFIG=1" in env
    assert f"HOME={request.run_dir / 'home'}" in env
    assert result.akm == {"searches": [], "shows": [], "feedback": []}
    assert result.tool_calls == 1 and verify(request) == 0


def test_the_forwarder_counts_the_turns_the_run_records(tmp_path, procs, agent_for, monkeypatch):
    """A turn at the forwarder is a step of opencode's run (a title request is none): the gate's
    count of a finished run is its turns."""
    seen = gates.capture(monkeypatch, opencode_adapter)
    task = make_task(tmp_path, "echo hi > out.txt\necho 'wrote out.txt'\n")
    request = make_request(tmp_path, task, "akm", procs)
    agent = agent_for("oracle")
    result = agent.run(request)
    assert result.error is None and result.budget is None and result.turns == 5, result
    seen.counted(result.turns, agent.scripted_totals[str(request.run_dir)]["requests"])
