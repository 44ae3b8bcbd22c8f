"""The real Claude Code binary driven by the scripted model over Anthropic Messages, one cell at a
time through the adapter: budgets, the process-tree kill, tokens against what the server
reported, and the one address it contacts (docs/claude-code.md).

Each cell is a few CPU-seconds of Claude Code; they skip when it is absent or bwrap cannot run
here (a skip fails CI).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_akmbench.agents import AgentRequest, Limits, SessionInfo
from pytest_akmbench.agents.claude_code import adapter as claude_adapter
from pytest_akmbench.agents.claude_code.adapter import ClaudeCodeAgent
from pytest_akmbench.cell.prompts import build_prompt
from pytest_akmbench.corpus.tasks import Task
from pytest_akmbench.errors import ConfigError
from pytest_akmbench.scripted.server import ScriptedModel
from pytest_akmbench.system import sandbox
from pytest_akmbench.system.procs import MARKER, ProcessTracker, become_subreaper
from tests.support import claude_code, gates
from tests.support.bwrap import require_bwrap
from tests.support.waiting import settle

ROOT = Path(__file__).resolve().parents[2]
CLAUDE = claude_code.binary()


@pytest.fixture(scope="module")
def agent_for() -> Iterator:  # type: ignore[type-arg]
    agents: dict[str, ClaudeCodeAgent] = {}
    assert become_subreaper()

    def get(policy: str) -> ClaudeCodeAgent:
        if policy not in agents:
            agents[policy] = ClaudeCodeAgent()
            agents[policy].start(
                SessionInfo(model=f"scripted/{policy}", arms=("noakm",), tasks=(), options={"rootdir": ROOT})
            )
        return agents[policy]

    yield get
    for agent in agents.values():
        agent.stop()


def cell(tmp_path: Path, solve: str, procs: ProcessTracker, box: str | None = "bwrap", **limits: float) -> AgentRequest:
    tdir = tmp_path / "task"
    (tdir / "workspace").mkdir(parents=True)
    (tdir / "solution").mkdir()
    (tdir / "workspace" / "README.md").write_text("Write the word hi into out.txt.\n")
    (tdir / "solution" / "solve.sh").write_text("#!/usr/bin/env bash\nset -eu\n" + solve)
    task = Task(
        id="demo/hi",
        title="Hi",
        domain="demo",
        difficulty="easy",
        stash="demo",
        verifier="script",
        task_dir=tdir,
        yaml_text="",
    )
    run_dir = tmp_path / "cell-1"
    shutil.copytree(tdir / "workspace", run_dir / "workspace")
    env = {"HOME": str(run_dir / "home"), "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
    prompt, version = build_prompt(task, "noakm", run_dir / "workspace")
    return AgentRequest(
        task=task,
        arm="noakm",
        seed=1,
        workspace=run_dir / "workspace",
        run_dir=run_dir,
        env=env,
        prompt=prompt,
        prompt_version=version,
        limits=Limits(**limits),  # type: ignore[arg-type]
        transcript=run_dir / "transcript.jsonl",
        procs=procs,
        sandbox=sandbox.for_cell("bwrap", run_dir) if box else None,
    )


def run(agent: ClaudeCodeAgent, request: AgentRequest):  # type: ignore[no-untyped-def]
    try:
        if request.sandbox is None:
            return agent.run(request)
        with request.sandbox.applied(request.procs):
            return agent.run(request)
    finally:
        request.procs.kill_all()


def marked(marker_value: str) -> set[int]:
    """Pids of the live processes carrying this cell's marker."""
    token = f"{MARKER}={marker_value}".encode()
    found = set()
    for name in os.listdir("/proc"):
        try:
            if name.isdigit() and token in Path(f"/proc/{name}/environ").read_bytes().split(b"\0"):
                found.add(int(name))
        except OSError:
            pass
    return found


def sleeping(tag: str) -> list[str]:
    out = subprocess.run(["ps", "-eo", "stat=,args="], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if f"600.{tag}" in line and not line.lstrip().startswith("Z")]


@pytest.fixture
def bwrap() -> None:
    require_bwrap()


@pytest.mark.usefixtures("bwrap")
def test_oracle_tokens_are_what_the_server_reported(tmp_path: Path, agent_for) -> None:  # type: ignore[no-untyped-def]
    """In the sandbox, through the forwarder: the cell passes its script, and its tokens are the
    server's own totals for it, key by key."""
    procs = ProcessTracker(f"e2e-claude-{uuid.uuid4().hex[:8]}")
    request = cell(tmp_path, "echo hi > out.txt\necho wrote hi\n", procs, wall_s=120)
    agent = agent_for("oracle")
    result = run(agent, request)
    assert result.error is None and result.budget is None, result
    assert (request.workspace / "out.txt").read_text() == "hi\n"
    assert result.final_text == "wrote hi" and result.token_measurement == "measured"
    served = agent.scripted_totals[str(request.run_dir)]
    assert result.tokens == {
        k: served[k] for k in ("input", "output", "reasoning", "cache_read", "cache_write", "total")
    }
    assert result.turns == served["requests"] == 2 and served["title_requests"] == 0
    assert result.tool_calls == 1 and result.cost_usd == 0.0
    assert marked(procs.marker_value) == set()


@pytest.mark.usefixtures("bwrap")
def test_the_forwarder_counts_the_turns_the_run_records(tmp_path: Path, agent_for, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A turn at the forwarder is a request of Claude Code's run (one assistant message): the
    gate's count of a finished run is its turns."""
    seen = gates.capture(monkeypatch, claude_adapter)
    procs = ProcessTracker(f"e2e-claude-{uuid.uuid4().hex[:8]}")
    request = cell(tmp_path, "echo hi > out.txt\necho wrote hi\n", procs, wall_s=120)
    agent = agent_for("oracle")
    result = run(agent, request)
    assert result.error is None and result.budget is None and result.turns == 2, result
    seen.counted(result.turns, agent.scripted_totals[str(request.run_dir)]["requests"])
    assert [turn for _, _, turn in seen.requests] == [True] * result.turns  # it makes no other request


@pytest.mark.usefixtures("bwrap")
def test_a_hung_model_ends_at_the_wall_with_no_process_left(tmp_path: Path, agent_for) -> None:  # type: ignore[no-untyped-def]
    procs = ProcessTracker(f"e2e-claude-{uuid.uuid4().hex[:8]}")
    request = cell(tmp_path, "echo hi > out.txt\n", procs, wall_s=8)
    started = time.monotonic()
    result = run(agent_for("hang"), request)
    assert result.budget == "wall" and result.budget_tag == "hung" and result.error is None, result
    assert time.monotonic() - started < 8 + 10
    assert result.tokens is None and result.token_measurement == "missing"
    assert marked(procs.marker_value) == set()


@pytest.mark.usefixtures("bwrap")
def test_a_failing_model_is_a_provider_error(tmp_path: Path, agent_for) -> None:  # type: ignore[no-untyped-def]
    procs = ProcessTracker(f"e2e-claude-{uuid.uuid4().hex[:8]}")
    result = run(agent_for("error"), cell(tmp_path, "true\n", procs, wall_s=60))
    assert result.budget is None and result.error is not None, result
    assert result.error.startswith("provider error: API Error: 500 scripted provider failure"), result.error


@pytest.mark.usefixtures("bwrap")
def test_token_and_turn_budgets(tmp_path: Path, agent_for) -> None:  # type: ignore[no-untyped-def]
    """A model that never stops calling tools: the token budget stops it after the request that
    crossed it (1000 + 1010 + 1020 + 1030 > 4000), Claude Code's own --max-turns at the turn budget."""
    procs = ProcessTracker(f"e2e-claude-{uuid.uuid4().hex[:8]}")
    request = cell(tmp_path / "tokens", "true\n", procs, wall_s=120, tokens=4000)
    result = run(agent_for("loop"), request)
    assert result.budget == "tokens" and result.budget_tag == "confused", result
    assert result.turns == 4 and result.tokens is not None and result.tokens["input"] == 4060
    # The forwarder held the 5th request once the stream showed the 4th message's tokens.
    assert agent_for("loop").scripted_totals[str(request.run_dir)]["requests"] == 4
    procs = ProcessTracker(f"e2e-claude-{uuid.uuid4().hex[:8]}")
    request = cell(tmp_path / "turns", "true\n", procs, wall_s=120, turns=3)
    result = run(agent_for("loop"), request)
    assert result.budget == "turns" and result.turns == 3 and result.token_measurement == "measured", result
    assert result.budget_tag == "confused"
    # No 4th request reached the model (the forwarder would hold it).
    assert agent_for("loop").scripted_totals[str(request.run_dir)]["requests"] == 3


@pytest.mark.usefixtures("bwrap")
def test_process_tree_kill(tmp_path: Path, agent_for) -> None:  # type: ignore[no-untyped-def]
    """Claude Code starts each Bash command in a session of its own: background and setsid'd
    commands of a cell still die with it."""
    tag = f"7{uuid.uuid4().int % 10**8:08d}"
    solve = (
        f"nohup sleep 600.{tag}1 >/dev/null 2>&1 &\n"
        f"setsid sleep 600.{tag}2 >/dev/null 2>&1 </dev/null &\n"
        "echo hi > out.txt\n"
        f"sleep 600.{tag}3\n"
    )
    procs = ProcessTracker(f"e2e-claude-{tag}")
    request = cell(tmp_path, solve, procs, wall_s=300)
    results = []
    agent = threading.Thread(target=lambda: results.append(run(agent_for("oracle"), request)))
    agent.start()
    settle(lambda: len(sleeping(tag)) >= 3, within=120)
    assert len(marked(procs.marker_value)) >= 4, "bwrap, claude and the tool commands carry the cell's marker"
    procs.kill_all()
    agent.join(timeout=30)
    assert not agent.is_alive() and results
    assert (request.workspace / "out.txt").read_text() == "hi\n"
    settle(lambda: not sleeping(tag), within=5)
    assert sleeping(tag) == [] and marked(procs.marker_value) == set()


def test_it_contacts_no_address_but_the_models(tmp_path: Path, agent_for) -> None:  # type: ignore[no-untyped-def]
    """Unsandboxed (the host's network in reach), every connect() of Claude Code and of every
    process it starts, traced by strace, goes to the cell's forwarder on 127.0.0.1, and no name is
    looked up."""
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace not installed (apt-get install strace)")
    log = tmp_path / "connect.log"
    wrapper = tmp_path / "claude"
    wrapper.write_text(
        f'#!/bin/sh\nprintf %s "$ANTHROPIC_BASE_URL" > {tmp_path}/base\n'
        f'exec {strace} -f -qq -e trace=connect -o {log} {CLAUDE} "$@"\n'
    )
    wrapper.chmod(0o755)
    agent = agent_for("oracle")
    procs = ProcessTracker(f"e2e-claude-{uuid.uuid4().hex[:8]}")
    request = cell(tmp_path, "echo hi > out.txt\n", procs, box=None, wall_s=120)
    real, agent.binary = agent.binary, wrapper
    try:
        result = run(agent, request)
    finally:
        agent.binary = real
    assert result.error is None and (request.workspace / "out.txt").is_file(), result
    port = (tmp_path / "base").read_text().split(":")[2].split("/")[0]
    inet = [line for line in log.read_text().splitlines() if "AF_INET" in line]
    assert inet, "strace saw the model's connection"
    assert all(re.search(rf'sin6?_port=htons\({port}\), sin_addr=inet_addr\("127\.0\.0\.1"\)', x) for x in inet), inet


def _providers(path: Path, base_url: str, key: str) -> Path:
    entry = {"npm": "@ai-sdk/anthropic", "options": {"baseURL": base_url, "apiKey": key}}
    path.write_text(json.dumps({"schemaVersion": 1, "providers": {"claude": entry}}))
    return path


@pytest.mark.usefixtures("bwrap")
def test_a_providers_entry_reaches_its_model_with_the_key_only_on_the_way_out(tmp_path: Path) -> None:
    """An Anthropic entry of a providers file whose base URL's path and key come from the
    environment, served by the scripted server: the preflight's request and the cell's carry the
    key, and the cell (its environment, printed by a tool, and its transcript) holds only a
    placeholder. A literal key in the file is refused before anything runs."""
    secret, token = f"test-key-{uuid.uuid4().hex}", uuid.uuid4().hex
    with ScriptedModel() as server:
        server.register(token, "oracle", commands=["env | sort", "echo hi > out.txt"])
        providers = _providers(tmp_path / "p.json", f"{server.root}/c/{{env:CELL_TOKEN}}/v1", "{env:CLAUDE_TEST_KEY}")
        options = {
            "rootdir": ROOT,
            "providers": str(providers),
            "env": {"CLAUDE_TEST_KEY": secret, "CELL_TOKEN": token},
        }
        agent = ClaudeCodeAgent()
        agent.start(SessionInfo(model="claude/m", arms=("noakm",), tasks=(), options=options))
        try:
            assert secret in agent.secrets
            assert "answers" in agent.preflight()
            procs = ProcessTracker(f"e2e-claude-{uuid.uuid4().hex[:8]}")
            result = run(agent, cell(tmp_path, "true\n", procs, wall_s=120))
        finally:
            agent.stop()
        assert result.error is None and server.authorization(token) == {secret}, result
    transcript = (tmp_path / "cell-1" / "transcript.jsonl").read_text()
    assert secret not in transcript and "ANTHROPIC_API_KEY=akmbench-placeholder-claude_test_key-" in transcript
    with pytest.raises(ConfigError, match="literal"):
        literal = _providers(tmp_path / "q.json", "http://127.0.0.1:9/v1", "sk-ant-" + "x" * 40)
        ClaudeCodeAgent().start(SessionInfo(model="claude/m", arms=(), tasks=(), options={"providers": str(literal)}))
