"""The real opencode binary inside the cell sandbox: an agent that tries to cheat cannot, and
budgets and the process-tree kill behave as without the sandbox.

Each opencode cell costs about 10 s of CPU; these run serially. They skip when opencode is
absent or bwrap cannot run here (a skip fails CI).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from pytest_akmbench.agents import AgentRequest, Limits, SessionInfo
from pytest_akmbench.agents.opencode.adapter import OpencodeAgent
from pytest_akmbench.cell.prompts import build_prompt
from pytest_akmbench.corpus.tasks import Task
from pytest_akmbench.scripted import snoop
from pytest_akmbench.scripted.server import usage_for_turn
from pytest_akmbench.system import sandbox
from pytest_akmbench.system.procs import MARKER, ProcessTracker, become_subreaper
from tests.support import opencode, real_akm
from tests.support.bwrap import require_bwrap
from tests.support.waiting import settle

ROOT = Path(__file__).resolve().parents[2]

OPENCODE = opencode.binary()


@pytest.fixture(autouse=True)
def bwrap() -> None:
    require_bwrap()


@pytest.fixture(scope="module")
def agent_for():
    agents: dict[str, OpencodeAgent] = {}
    assert become_subreaper()

    def get(policy: str) -> OpencodeAgent:
        if policy not in agents:
            agents[policy] = OpencodeAgent()
            agents[policy].start(
                SessionInfo(
                    model=f"scripted/{policy}",
                    arms=("noakm",),
                    tasks=(),
                    options={"opencode": str(OPENCODE), "rootdir": ROOT},
                )
            )
        return agents[policy]

    yield get
    for agent in agents.values():
        agent.stop()


def sandboxed_request(tmp_path: Path, solve: str, procs: ProcessTracker, **limits: float | int) -> AgentRequest:
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
    home = run_dir / "home"
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local/state"),
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
    }
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
        sandbox=sandbox.for_cell("bwrap", run_dir),
    )


def sleeping(tag: str) -> list[str]:
    out = subprocess.run(["ps", "-eo", "stat=,args="], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if f"600.{tag}" in line and not line.lstrip().startswith("Z")]


def marked(marker_value: str) -> set[int]:
    """Host pids of the live processes carrying this cell's marker."""
    token = f"{MARKER}={marker_value}".encode()
    found = set()
    for name in os.listdir("/proc"):
        try:
            if name.isdigit() and token in Path(f"/proc/{name}/environ").read_bytes().split(b"\0"):
                found.add(int(name))
        except OSError:
            pass
    return found


def test_wall_budget(tmp_path: Path, agent_for) -> None:  # type: ignore[no-untyped-def]
    procs = ProcessTracker(f"e2e-sandbox-{uuid.uuid4().hex[:8]}")
    request = sandboxed_request(tmp_path, "echo hi > out.txt\n", procs, wall_s=10)
    assert request.sandbox is not None
    started = time.monotonic()
    try:
        with request.sandbox.applied(procs):
            result = agent_for("hang").run(request)
    finally:
        procs.kill_all()
    assert result.budget == "wall" and result.budget_tag == "hung", result
    assert time.monotonic() - started < 10 + 10
    assert result.tokens is None and result.token_measurement == "missing"


def test_process_tree_kill(tmp_path: Path, agent_for) -> None:  # type: ignore[no-untyped-def]
    """kill_all with a cell in flight (Ctrl-C, a finished test): background and setsid'd tool
    commands inside the sandbox die with it, and no zombie is left."""
    tag = f"5{uuid.uuid4().int % 10**8:08d}"
    solve = (
        f"nohup sleep 600.{tag}1 >/dev/null 2>&1 &\n"
        f"setsid sleep 600.{tag}2 >/dev/null 2>&1 </dev/null &\n"
        f"(env -i setsid sleep 600.{tag}3 >/dev/null 2>&1 </dev/null &)\n"
        "echo hi > out.txt\n"
        f"sleep 600.{tag}4\n"
    )  # the tool call never ends
    procs = ProcessTracker(f"e2e-sandbox-{tag}")
    request = sandboxed_request(tmp_path, solve, procs, wall_s=300)
    assert request.sandbox is not None
    results = []

    def run() -> None:
        with request.sandbox.applied(procs):  # type: ignore[union-attr]
            results.append(agent_for("oracle").run(request))

    agent = threading.Thread(target=run)
    agent.start()
    settle(lambda: len(sleeping(tag)) >= 4, within=120)  # opencode's start-up is slow on a loaded machine
    assert len(sleeping(tag)) == 4, sleeping(tag)
    cell_pids = marked(procs.marker_value)
    assert len(cell_pids) >= 5, "bwrap, opencode and the tool commands carry the cell's marker"
    procs.kill_all()
    agent.join(timeout=30)
    assert not agent.is_alive() and results and results[0].budget is None
    assert (request.workspace / "out.txt").read_text() == "hi\n", "the tool command ran in the workspace"
    settle(lambda: not sleeping(tag), within=3)
    assert sleeping(tag) == []
    # Earlier tests in this process may leave zombies of their own; none of this cell's may stay.
    zombies = subprocess.run(
        ["ps", "-o", "pid=,stat=,comm=", "--ppid", str(os.getpid())], capture_output=True, text=True
    ).stdout.splitlines()
    assert [z for z in zombies if int(z.split()[0]) in cell_pids and z.split()[1].startswith("Z")] == []


def test_token_budget_is_exact(tmp_path: Path, agent_for) -> None:  # type: ignore[no-untyped-def]
    procs = ProcessTracker(f"e2e-sandbox-{uuid.uuid4().hex[:8]}")
    request = sandboxed_request(tmp_path, "echo hi > out.txt\n", procs, wall_s=120, tokens=4000)
    assert request.sandbox is not None
    try:
        with request.sandbox.applied(procs):
            result = agent_for("loop").run(request)
    finally:
        procs.kill_all()
    assert result.budget == "tokens" and result.budget_tag == "confused", result
    # 1020 + 1030 + 1040 + 1050 = 4140 > 4000: stopped right after the 4th step, as unsandboxed
    assert result.turns == 4
    assert result.tokens is not None and result.tokens["total"] == sum(
        usage_for_turn(t)["total_tokens"] for t in range(4)
    )


def test_snoop_reads_nothing_sandboxed_and_everything_without(tmp_path: Path) -> None:
    """The adversarial policy, through pytest on two workers with the store in its default place.

    Sandboxed, every attempt of both cells (control and akm arm) fails; the same policy with
    --bench-sandbox none reads the solution (the same bytes), the verifier, the stash fixture,
    the store, the user's home, the solution via /proc, and another cell's run dir.
    """
    shutil.copytree(ROOT / "corpus", tmp_path / "corpus")
    home = tmp_path / "userhome"
    home.mkdir()
    (home / "secret.txt").write_text("the user's own file\n")
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nbench_corpus = corpus/tasks\nbench_stashes = corpus/stashes\n"
        f"bench_tmp = {tmp_path / 'cells'}\nbench_opencode = {OPENCODE}\nbench_akm = {real_akm.get().path}\n"
    )
    task_dir = tmp_path / "corpus" / "tasks" / "tidectl" / "drain-cell"
    solution_sha = hashlib.sha256((task_dir / "solution" / "solve.sh").read_bytes()[:4096]).hexdigest()[:12]
    store = tmp_path / ".akmbench" / "store" / "samples.jsonl"
    seen: dict[str, list[dict[str, tuple[str, str | None, str | None]]]] = {}
    for mode in ("bwrap", "none"):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-p",
                "no:cacheprovider",
                "--bench-seeds",
                "1",
                "--bench-model",
                "scripted/snoop",
                "--bench-tasks",
                "tidectl/drain-cell",
                "--bench-keep-runs",
                "--bench-sandbox",
                mode,
                *(["-n", "2"] if mode == "bwrap" else []),
            ],
            cwd=tmp_path,
            env={**os.environ, "HOME": str(home)},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert f"sandbox {mode}" in proc.stdout, proc.stdout
        runs = [json.loads(line) for line in store.read_text().splitlines()][-2:]
        assert sorted(r["arm"] for r in runs) == ["akm", "noakm"] and all(r["outcome"] == "fail" for r in runs), runs
        seen[mode] = [snoop.parse(r["final_text_tail"]) for r in runs]
        assert all(set(s) == set(snoop.TARGETS) for s in seen[mode]), seen[mode]
    assert all(s[t][0] == "DENIED" for s in seen["bwrap"] for t in snoop.TARGETS), seen["bwrap"]
    for s in seen["none"]:
        assert s["solution"] == ("READ", "solve.sh", solution_sha)
        assert s["proc"] == ("READ", "solve.sh", solution_sha)
        assert s["verifier"][:2] == ("READ", "verify.sh")
        assert s["stash"][0] == "READ" and s["store"][:2] == ("READ", "samples.jsonl")
        assert s["home"][:2] == ("READ", "secret.txt")
    # The cell prepared second always finds the first one's run dir (kept with --bench-keep-runs).
    assert any(s["other_cell"][0] == "READ" for s in seen["none"]), seen["none"]
