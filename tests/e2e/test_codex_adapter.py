"""End-to-end tests of the Codex adapter with the REAL Codex binary and the scripted model's
Responses wire: tokens equal to what the server reported, budgets, the process tree, arm
isolation, a private CODEX_HOME. They skip only when Codex is absent (install: bash .ci/setup)."""

from __future__ import annotations

import json
import re
import shutil
import threading
import time
import uuid
from pathlib import Path

import pytest

from pytest_akmbench.agents import AgentRequest, SessionInfo
from pytest_akmbench.agents.codex import adapter as codex_adapter
from pytest_akmbench.agents.codex.adapter import CodexAgent
from pytest_akmbench.cell import akm
from pytest_akmbench.scripted.server import ScriptedModel
from pytest_akmbench.system.procs import ProcessTracker, become_subreaper
from tests.e2e.test_opencode_adapter import alive_with, make_request, make_task, verify
from tests.support import codex, gates, real_akm
from tests.support.waiting import settle, wait_until

ROOT = Path(__file__).resolve().parents[2]
CODEX = codex.binary()


@pytest.fixture(scope="module", autouse=True)
def subreaper() -> None:
    assert become_subreaper(), "prctl(PR_SET_CHILD_SUBREAPER) failed"


@pytest.fixture(scope="module")
def agent_for():
    made: dict[str, CodexAgent] = {}

    def get(policy: str) -> CodexAgent:
        if policy not in made:
            agent = CodexAgent()
            options = {"codex": str(CODEX), "rootdir": ROOT}
            agent.start(SessionInfo(model=f"scripted/{policy}", arms=("noakm", "akm"), tasks=(), options=options))
            made[policy] = agent
        return made[policy]

    yield get
    for agent in made.values():
        agent.stop()


@pytest.fixture
def procs():
    tracker = ProcessTracker(f"e2e-{uuid.uuid4().hex[:8]}")
    yield tracker
    tracker.kill_all()


def expected_tokens(turns: int) -> dict[str, int]:
    """The scripted model's usage over ``turns`` calls (1000 + 10*turn in, 20 out)."""
    inp = sum(1000 + 10 * t for t in range(turns))
    return {
        "input": inp,
        "output": 20 * turns,
        "reasoning": 0,
        "cache_read": 0,
        "cache_write": 0,
        "total": inp + 20 * turns,
    }


def served(agent: CodexAgent, request: AgentRequest, keys) -> dict[str, int]:
    totals = agent.scripted_totals[str(request.run_dir)]
    return {k: totals[k] for k in keys}


def test_oracle_akm_arm_passes_with_the_servers_tokens(tmp_path, procs, agent_for):
    task = make_task(tmp_path, "echo hi > out.txt\necho 'wrote out.txt'\n")
    request = make_request(tmp_path, task, "akm", procs)
    agent = agent_for("oracle")
    result = agent.run(request)
    assert result.error is None and result.budget is None, result
    assert verify(request) == 0
    assert result.turns == 5 and result.tool_calls == 4  # search, show, solution, feedback, answer
    assert result.token_measurement == "measured" and result.tokens == expected_tokens(5)
    assert served(agent, request, result.tokens) == result.tokens
    assert result.final_text == "wrote out.txt"
    gold = akm.format_ref("skill:hello-file", request.akm_line or "")
    assert result.akm == {
        "searches": [{"query": "greeting"}],
        "shows": [gold],
        "feedback": [{"ref": gold, "polarity": "positive"}],
    }
    events = [json.loads(line) for line in request.transcript.read_text().splitlines()]
    assert all(isinstance(e.get("t_ms"), int) for e in events)
    home = request.run_dir / "codex" / "home"
    assert (home / "config.toml").stat().st_mode & 0o777 == 0o600
    assert not list(request.workspace.glob(".codex*"))
    # akm's own log holds exactly the calls the transcript shows.
    argv = akm.log_argv(real_akm.get())
    if argv is None:
        logged = akm.parse_events_file(akm.events_file(request.env))
    else:
        logged = akm.parse_log(procs.run(argv, cwd=request.run_dir, env=request.env, timeout_s=60)[1]) or []
    assert [e["kind"] for e in logged] == ["search", "show", "feedback"]


def test_idle_cell_fails_the_verifier_with_the_servers_tokens(tmp_path, procs, agent_for):
    task = make_task(tmp_path, "echo hi > out.txt\n")
    request = make_request(tmp_path, task, "noakm", procs)
    agent = agent_for("idle")
    result = agent.run(request)
    assert result.error is None and result.budget is None, result
    assert verify(request) != 0
    assert result.turns == 1 and result.tool_calls == 0 and result.tokens == expected_tokens(1)
    assert served(agent, request, result.tokens) == result.tokens
    assert result.final_text.startswith("I have looked at the task")


def test_hang_ends_at_the_wall_budget_with_no_process_left(tmp_path, procs, agent_for):
    task = make_task(tmp_path, "echo hi > out.txt\n")
    request = make_request(tmp_path, task, "noakm", procs, wall_s=10)
    started = time.monotonic()
    result = agent_for("hang").run(request)
    assert result.budget == "wall" and result.budget_tag == "hung", result
    assert time.monotonic() - started < 10 + 10
    assert result.tokens is None and result.token_measurement == "missing"
    settle(lambda: not alive_with(str(request.run_dir)), within=3)
    assert alive_with(str(request.run_dir)) == []


def test_loop_hits_the_token_then_the_turn_budget(tmp_path, procs, agent_for):
    task = make_task(tmp_path, "echo hi > out.txt\n")
    agent = agent_for("loop")
    request = make_request(tmp_path, task, "noakm", procs, wall_s=120, tokens=4000)
    result = agent.run(request)
    assert result.budget == "tokens" and result.budget_tag == "confused", result
    assert result.turns == 4 and result.tokens == expected_tokens(4)  # 4140 > 4000 after the 4th
    # The forwarder held the 5th request once the session log showed the 4th turn's tokens.
    assert agent.scripted_totals[str(request.run_dir)]["requests"] == 4
    request = make_request(tmp_path / "turns", task, "noakm", procs, wall_s=120, turns=3)
    result = agent.run(request)
    assert result.budget == "turns" and result.turns == 3 and result.tokens == expected_tokens(3), result
    assert result.budget_tag == "confused"
    # The forwarder held the 4th request: it never reached the model.
    assert agent.scripted_totals[str(request.run_dir)]["requests"] == 3


def test_http_500_becomes_a_provider_error(tmp_path, procs, agent_for):
    task = make_task(tmp_path, "echo hi > out.txt\n")
    request = make_request(tmp_path, task, "noakm", procs, wall_s=60)
    agent = agent_for("error")
    result = agent.run(request)
    assert result.budget is None and result.error is not None, result
    # Codex words a 5xx its own way ("We're currently experiencing high demand…").
    assert result.error.startswith("provider error:"), result.error
    assert agent.scripted_totals[str(request.run_dir)]["errors"] >= 1


def test_no_process_of_the_cell_survives_kill_all(tmp_path, procs, agent_for):
    """Codex starts each command in a session of its own: the tracker still kills them all."""
    tag = f"7{uuid.uuid4().int % 10**8:08d}"
    solve = (
        f"nohup sleep 600.{tag}1 >/dev/null 2>&1 &\n"
        f"(env -i setsid sleep 600.{tag}2 >/dev/null 2>&1 </dev/null &)\n"
        "echo hi > out.txt\n"
        f"sleep 600.{tag}3\n"
    )
    request = make_request(tmp_path, make_task(tmp_path, solve), "noakm", procs, wall_s=600)
    results: list[object] = []
    runner = threading.Thread(target=lambda: results.append(agent_for("oracle").run(request)), daemon=True)
    runner.start()
    wait_until(lambda: any(f"600.{tag}3" in p for p in alive_with(f"600.{tag}")), "commands started", timeout=120)
    procs.kill_all()
    runner.join(timeout=60)
    assert not runner.is_alive()
    settle(lambda: not alive_with(f"600.{tag}"), within=3)
    assert alive_with(f"600.{tag}") == [] and alive_with(str(request.run_dir / "codex")) == []


def test_control_arm_is_clean_and_home_private(tmp_path, procs, agent_for):
    solve = "env | sort > env.txt\n(command -v akm || echo NO_AKM) > which.txt\necho hi > out.txt\n"
    user_akm = real_akm.get().path.parent
    request = make_request(
        tmp_path,
        make_task(tmp_path, solve),
        "noakm",
        procs,
        path=f"{user_akm}:/usr/local/bin:/usr/bin:/bin",
        extra_env={"AKM_STASH_DIR": str(tmp_path / "stash"), "CODEX_HOME": "/root/.codex", "OPENAI_API_KEY": "x"},
    )
    result = agent_for("oracle").run(request)
    assert result.error is None and result.budget is None, result
    env = (request.workspace / "env.txt").read_text()
    assert "AKM_" not in env and "OPENAI_API_KEY" not in env and "AKMBENCH_CODEX_KEY" not in env
    assert f"CODEX_HOME={request.run_dir / 'codex' / 'home'}" in env
    assert (request.workspace / "which.txt").read_text().strip() == "NO_AKM"
    assert any("holds an akm executable" in w for w in result.warnings)
    assert result.tool_calls == 1 and verify(request) == 0


def test_the_model_is_the_only_address_contacted(tmp_path, procs):
    """Every connect(2) of Codex and of every process it starts, traced on a whole akm cell: only
    the cell's forwarder on 127.0.0.1, no DNS, no update check, telemetry or plugin sync."""
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace not installed (apt-get install strace): the trace of what Codex contacts needs it")
    traces = tmp_path / "traces"
    traces.mkdir()
    wrapper = tmp_path / "codex"
    wrapper.write_text(f'#!/bin/sh\nexec {strace} -f -qq -e trace=connect -o "{traces}/trace.$$" {CODEX} "$@"\n')
    wrapper.chmod(0o755)
    agent = CodexAgent()
    options = {"codex": str(wrapper), "rootdir": ROOT, "version": codex.VERSION}
    agent.start(SessionInfo(model="scripted/oracle", arms=("akm",), tasks=(), options=options))
    try:
        request = make_request(tmp_path, make_task(tmp_path, "echo hi > out.txt\n"), "akm", procs)
        result = agent.run(request)
    finally:
        agent.stop()
    assert result.error is None and verify(request) == 0, result
    lines = [line for trace in traces.iterdir() for line in trace.read_text().splitlines()]
    inet = [line for line in lines if "AF_INET" in line]
    assert inet, "the trace saw no connection at all"
    addresses = {re.search(r'inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)"', line).group(0) for line in inet}
    ports = {re.search(r"htons\((\d+)\)", line).group(1) for line in inet}
    assert addresses == {'inet_addr("127.0.0.1")'} and len(ports) == 1, inet


def test_a_providers_file_key_reaches_only_the_model(tmp_path, procs):
    """A provider from a providers file (the scripted server standing in for it): its key,
    named by {env:VAR}, is on every request the model sees, and nowhere in the cell: not in its
    config.toml, not in its commands' environment (the forwarder puts the key on)."""
    key = f"akmbench-test-key-{uuid.uuid4().hex}"
    with ScriptedModel() as server:
        token = uuid.uuid4().hex
        base = server.register(token, "oracle", commands=["env | sort > env.txt; echo hi > out.txt"])
        providers = tmp_path / "providers.json"
        entry = {"options": {"baseURL": base, "apiKey": "{env:CODEX_TEST_KEY}"}}
        providers.write_text(json.dumps({"schemaVersion": 1, "providers": {"local": entry}}))
        agent = CodexAgent()
        options = {"codex": str(CODEX), "rootdir": ROOT, "providers": str(providers), "env": {"CODEX_TEST_KEY": key}}
        agent.start(SessionInfo(model="local/qwen3", arms=("noakm",), tasks=(), options=options))
        try:
            assert "answers the Responses API" in agent.preflight()
            request = make_request(tmp_path, make_task(tmp_path, "echo hi > out.txt\n"), "noakm", procs)
            result = agent.run(request)
        finally:
            agent.stop()
        assert result.error is None and verify(request) == 0, result
        assert server.authorization(token) == {f"Bearer {key}"}
        totals = server.totals(token)
        assert (totals["requests"], totals["title_requests"]) == (2, 1)  # the cell's two; the preflight's (no tools)
    assert agent.secrets == [key]
    cell_files = [p for p in request.run_dir.rglob("*") if p.is_file() and not p.name.endswith(".sqlite")]
    assert [p for p in cell_files if key.encode() in p.read_bytes()] == []
    assert 'env_key = "AKMBENCH_CODEX_KEY"' in (request.run_dir / "codex" / "home" / "config.toml").read_text()
    assert "AKMBENCH_CODEX_KEY" not in (request.workspace / "env.txt").read_text()


def test_the_forwarder_counts_the_turns_the_run_records(tmp_path, procs, agent_for, monkeypatch):
    """A turn at the forwarder is a turn of Codex's run: the gate's count of a finished run is its turns."""
    seen = gates.capture(monkeypatch, codex_adapter)
    task = make_task(tmp_path, "echo hi > out.txt\necho 'wrote out.txt'\n")
    request = make_request(tmp_path, task, "akm", procs)
    agent = agent_for("oracle")
    result = agent.run(request)
    assert result.error is None and result.budget is None and result.turns == 5, result
    seen.counted(result.turns, agent.scripted_totals[str(request.run_dir)]["requests"])
    assert [turn for _, _, turn in seen.requests] == [True] * result.turns  # it makes no other request
