"""A second agent is a folder under agents/ and nothing else: a toy agent with a transcript format
of its own (tab-separated lines, not opencode's JSON events) is found by the registry, and its
cells get the same trajectory, akm evidence and workflow trace as an opencode transcript of the
same run."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pytest_akmbench.agents as agents_package
from pytest_akmbench.agents.base import Agent
from pytest_akmbench.agents.opencode.transcript import read_transcript as read_opencode
from pytest_akmbench.agents.registry import builtin_agents
from pytest_akmbench.agents.transcript import ToolEvent
from pytest_akmbench.cell import akm
from pytest_akmbench.cell.context import Cell
from pytest_akmbench.cell.runner import run_cell
from pytest_akmbench.cell.trajectory import analyse_cell
from pytest_akmbench.cell.workflow_trace import build_trace
from pytest_akmbench.corpus.tasks import load_corpus
from tests.core.test_runner import context, tracker
from tests.core.test_trajectory import DATA, RECORDED, TASK, recorded_log
from tests.support import real_akm
from tests.support.corpus import write_stash, write_task

INIT = '"""The toy agent: runs a plan of shell commands and logs each as one tab-separated line."""\n'

TRANSCRIPT = '''"""The toy's transcript: start, end, verb, done, exit ("-" unknown), argument, output (JSON)."""

from __future__ import annotations

import json

from ..transcript import ToolEvent

KINDS = {"run": "run-shell", "save": "write", "change": "edit", "look": "read"}


def line(tool: ToolEvent) -> str:
    verb = next((v for v, k in KINDS.items() if k == tool.kind), "other")
    arg = tool.command if tool.kind == "run-shell" else tool.path
    exit = "-" if tool.exit is None else str(tool.exit)
    fields = [tool.start_ms, tool.end_ms, verb, int(tool.finished), exit, json.dumps(arg), json.dumps(tool.output)]
    return "\\t".join(str(f) for f in fields) + "\\n"


def read_transcript(path):
    with open(path, encoding="utf-8") as fh:
        for text in fh:
            start, end, verb, done, exit, arg, output = text.rstrip("\\n").split("\\t")
            kind = KINDS.get(verb, "other")
            yield ToolEvent(
                kind=kind,
                tool=verb,
                command=json.loads(arg) if kind == "run-shell" else None,
                path=None if kind == "run-shell" else json.loads(arg),
                output=json.loads(output),
                start_ms=None if start == "None" else int(start),
                end_ms=None if end == "None" else int(end),
                finished=done == "1",
                exit=None if exit == "-" else int(exit),
            )
'''

ADAPTER = '''"""The toy agent's adapter."""

from __future__ import annotations

import time

from ..base import Agent, AgentResult
from ..transcript import ToolEvent
from .transcript import line, read_transcript


class ToyAgent(Agent):
    name, version, uses_akm = "toy", "1", True

    def __init__(self):
        self.plan = []

    def run(self, request):
        with open(request.transcript, "w", encoding="utf-8") as log:
            for command in self.plan:
                start = time.time_ns() // 1_000_000
                code, out, _ = request.procs.run(
                    ["bash", "-c", command], cwd=request.workspace, env=request.env, timeout_s=60
                )
                end = time.time_ns() // 1_000_000
                log.write(line(ToolEvent("run-shell", "run", command, None, out, start, end, True, code)))
        return AgentResult(exit_code=0, token_measurement="unsupported", transcript_written=True)

    def read_transcript(self, path):
        return read_transcript(path)


def agents():
    return [ToyAgent()]
'''


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Agent]:
    """The toy agent, registered by putting its folder beside agents/opencode/ (on the agents
    package's path: the source tree stays untouched)."""
    folder = tmp_path / "agents" / "toy"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(INIT)
    (folder / "transcript.py").write_text(TRANSCRIPT)
    (folder / "adapter.py").write_text(ADAPTER)
    monkeypatch.setattr(agents_package, "__path__", [*agents_package.__path__, str(folder.parent)])
    importlib.invalidate_caches()
    try:
        found = {a.name: a for a in builtin_agents()}
        yield found["toy"]
    finally:
        for name in [m for m in sys.modules if m.startswith("pytest_akmbench.agents.toy")]:
            del sys.modules[name]
        if hasattr(agents_package, "toy"):
            delattr(agents_package, "toy")  # the import bound it on the package


def test_the_registry_finds_an_agent_by_its_folder(toy: Agent) -> None:
    names = [a.name for a in builtin_agents()]
    assert names[-2:] == ["nop", "oracle"] and {"opencode", "toy"} <= set(names)
    assert type(toy).__module__ == "pytest_akmbench.agents.toy.adapter"  # itself, not a wrapper


def retold(toy: Agent, opencode: Path, target: Path) -> Path:
    """The run of an opencode transcript, told in the toy's own format."""
    line = sys.modules["pytest_akmbench.agents.toy.transcript"].line
    target.write_text("".join(line(item) for item in read_opencode(opencode) if isinstance(item, ToolEvent)))
    return target


def without_tool_names(value: Any) -> Any:
    """A trajectory less the agents' own names of their tools (``bash`` for opencode, ``run``
    for the toy), which a workspace write records."""
    if isinstance(value, dict):
        return {k: without_tool_names(v) for k, v in value.items() if k != "tool"}
    if isinstance(value, list):
        return [without_tool_names(v) for v in value]
    return value


@pytest.mark.parametrize("version", RECORDED)
@pytest.mark.parametrize("name", ["oracle", "wrong-asset"])
def test_a_recorded_run_told_by_the_toy_analyses_the_same(toy: Agent, tmp_path: Path, name: str, version: str) -> None:
    """Real opencode runs against real akm, their transcripts retold in the toy's format: the
    trajectory (akm's log cross-checked against the calls) and the workflow trace are the same."""
    stem = DATA / f"{name}-akm-{version}"
    if not Path(f"{stem}.jsonl").is_file():
        pytest.skip(f"no recorded {stem.name}")
    events, started = recorded_log(stem, version)
    original = Path(f"{stem}.jsonl")
    told = retold(toy, original, tmp_path / "toy.log")
    assert not told.read_text().startswith("{")  # not opencode's events

    def analysed(path: Path, reader: Any) -> dict[str, Any]:
        return analyse_cell(TASK, path, akm.since(events, started), None, reader=reader, agent_started_ms=started)

    theirs, ours = analysed(original, read_opencode), analysed(told, toy.read_transcript)
    assert ours["source"] == "transcript" and ours["search_count"] >= 1 and ours["unconfirmed_events"] == 0
    assert without_tool_names(ours) == without_tool_names(theirs)
    assert build_trace(told, 0, toy.read_transcript) == build_trace(original, 0, read_opencode)
    # Read with the other agent's reader, the toy's transcript says nothing: no guessing.
    assert analysed(told, read_opencode)["search_count"] == 0


@pytest.mark.parametrize("version", real_akm.versions())
def test_a_toy_cell_on_the_akm_arm(toy: Agent, tmp_path: Path, version: str) -> None:
    """A cell of the toy agent with the real akm: its own transcript, read by its own reader,
    gives the trajectory, with akm's log confirmed by its calls."""
    info = real_akm.get(version)
    stashes = tmp_path / "corpus" / "stashes"
    write_stash(stashes, assets={"knowledge/lower-case.md": "---\ndescription: Greeting style\n---\nlower case\n"})
    write_task(tmp_path / "corpus" / "tasks", "alpha/t")
    task = load_corpus(tmp_path / "corpus" / "tasks", stashes).tasks[0]
    ref = akm.format_ref("knowledge:lower-case", info.line)
    toy.plan = ["akm search 'greeting style'", f"akm show {ref}", "echo hello > out.txt"]  # type: ignore[attr-defined]
    sample = run_cell(Cell(task, "akm", 1), context(tmp_path, toy, akm=info), tracker())
    traj = sample["trajectory"]
    assert sample["agent"] == {"name": "toy", "version": "1"}
    assert traj["source"] == "transcript" and traj["akm_events"] is True, traj
    assert (traj["search_count"], traj["show_count"], traj["unconfirmed_events"]) == (1, 1, 0), traj
    assert traj["assets_loaded"] == [ref] and traj["workspace_writes"] == 1 and traj["akm_calls"] == 2
    assert [a["kind"] for a in traj["actions"]] == ["search", "show", "write"]


def test_a_hook_agent_that_does_not_derive_from_agent_declares_what_it_has() -> None:
    """A conftest's duck-typed agent is wrapped once: what it sets is read (after start too),
    what it lacks is the base's default."""
    from pytest_akmbench.agents.base import AgentResult, SessionInfo, as_agent

    class Bare:
        name, version = "bare", "1"

        def start(self, session: object) -> None:
            self.version, self.model, self.warnings = "2", "local/m", ["slow disk"]

        def run(self, request: object) -> AgentResult:
            return AgentResult(final_text="done")

        def stop(self) -> None: ...

    class Declaring(Bare):
        uses_akm, secrets = False, ["sk-not-a-real-key-123"]

        def preflight(self) -> str:
            return "answers"

        def read_transcript(self, path: Path) -> Iterator[ToolEvent]:
            yield ToolEvent("read", "peek", path="README.md", finished=True)

    bare, declaring = as_agent(Bare()), as_agent(Declaring())
    assert (bare.uses_akm, bare.model, bare.secrets, bare.preflight()) == (True, None, (), None)
    assert list(bare.read_transcript(Path("t"))) == []
    bare.start(SessionInfo(model=None, arms=("akm",), tasks=()))
    assert (bare.version, bare.model, list(bare.warnings)) == ("2", "local/m", ["slow disk"])
    assert bare.run(None).final_text == "done"  # type: ignore[arg-type]
    assert (declaring.uses_akm, list(declaring.secrets), declaring.preflight()) == (
        False,
        ["sk-not-a-real-key-123"],
        "answers",
    )
    assert [e.path for e in declaring.read_transcript(Path("t"))] == ["README.md"]
    assert as_agent(declaring) is declaring and as_agent(Bare()).name == "bare"
