"""A second agent is a folder under agents/ and nothing else: a toy agent with a transcript format
of its own (tab-separated lines, not opencode's JSON events) is found by the registry, and its
cells get the same trajectory, akm evidence and workflow trace as an opencode transcript of the
same run."""

from __future__ import annotations

import importlib
import json
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
from pytest_akmbench.plugin import options
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

SETTINGS = '''"""The toy agent's own settings: an option with its ini and run-config twins."""

from ...corpus.settings_table import Setting

SETTINGS = (
    Setting("toy_speed", "How fast the toy types", "N", int, 1, "toySpeed", {"type": "integer"}, owner="toy"),
)
'''

ADAPTER = '''"""The toy agent's adapter."""

from __future__ import annotations

import time

from ..base import Agent, AgentResult, Tool
from ..transcript import ToolEvent
from .transcript import line, read_transcript


class ToyAgent(Agent):
    name, version, uses_akm = "toy", "1", True

    def __init__(self):
        self.plan = []
        self.options = {}

    def start(self, session):
        self.options = dict(session.options)

    def install(self):
        return [Tool("toy", "toy-linux-x64", "1.2.3", "node_modules/toy-linux-x64/bin/toy", lambda p: p.read_text().strip())]

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
    (folder / "settings.py").write_text(SETTINGS)
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


def test_an_agent_folder_declares_its_settings(toy: Agent, tmp_path: Path) -> None:
    """The toy's row: its option and ini key, its run-config field and schema, resolved into
    the agent's settings and handed to the agent in its start options, the plugin naming none."""
    from pytest_akmbench.agents.base import SessionInfo
    from pytest_akmbench.agents.settings import table
    from pytest_akmbench.corpus import config, config_fields
    from tests.core.test_config_table import _Recorder

    rows = table()
    assert rows.by_name["toy_speed"].owner == "toy"
    recorder = _Recorder()
    options.add_options(recorder)  # type: ignore[arg-type]
    assert ("--bench-toy-speed",) in [names for names, _ in recorder.options]
    assert "bench_toy_speed" in [name for name, _, _ in recorder.inis]
    assert config_fields.schema(rows)["properties"]["toySpeed"] == {"type": "integer"}
    path = tmp_path / "run.json"
    path.write_text('{"schemaVersion": 1, "agent": "toy", "toySpeed": 3}')
    with pytest.raises(config.ConfigError, match="unknown field 'toySpeed'"):
        config.load_run_config(path)  # the bench's rows alone do not know it
    cfg = config.load_run_config(path, rows)
    kw: dict[str, Any] = {"rootdir": tmp_path, "cwd": tmp_path, "tasks_root": tmp_path, "stashes_root": tmp_path}
    assert config.resolve(cli={}, ini={}, config=cfg, table=rows, **kw).agent_settings["toy_speed"] == 3
    settings = config.resolve(cli={}, ini={"toy_speed": "5"}, config=None, table=rows, **kw)
    assert (settings.agent_settings, settings.origins["toy_speed"]) == ({"toy_speed": 5}, "ini bench_toy_speed")
    settings = config.resolve(cli={"toy_speed": "7"}, ini={}, config=cfg, table=rows, **kw)
    given = config.agent_options(settings, "toy", rows)
    assert given["toy_speed"] == 7 and "opencode" not in given  # its own, not another agent's
    toy.start(SessionInfo(model=None, arms=("akm",), tasks=(), options=given))
    assert toy.options["toy_speed"] == 7  # type: ignore[attr-defined]


def test_install_tools_installs_each_agents_pin(toy: Agent, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_akmbench.cli import tools

    pins = {tool.name: tool for agent in builtin_agents() for tool in agent.install()}
    assert pins["opencode"].package == "opencode-linux-x64" and pins["toy"].version == "1.2.3"
    installed: list[str] = []

    def npm(where: Path, spec: str) -> None:  # npm stands in: the tarball's binary, reporting its version
        installed.append(spec)
        binary = where / pins["toy"].binary
        binary.parent.mkdir(parents=True)
        binary.write_text("1.2.3\n")
        binary.chmod(0o755)

    monkeypatch.setattr(tools, "npm_install", npm)
    assert tools.install_pinned(tmp_path, pins["toy"]) == tmp_path / "node_modules/toy-linux-x64/bin/toy"
    assert tools.install_pinned(tmp_path, pins["toy"]) == tmp_path / "node_modules/toy-linux-x64/bin/toy"
    assert installed == ["toy-linux-x64@1.2.3"]  # once: the second finds it there


def test_validate_checks_the_providers_for_the_configs_agent(toy: Agent, tmp_path: Path) -> None:
    """A run config of another agent: the providers file's rules (a literal key refused, a bad
    entry named), and no opencode source accepted as its own."""
    from pytest_akmbench.cli.validate import config_problems
    from pytest_akmbench.corpus.tasks import Corpus

    corpus = Corpus(tmp_path, tmp_path, ())
    path = tmp_path / "run.json"
    good = {"local": {"options": {"baseURL": "http://127.0.0.1:1/v1", "apiKey": "{env:LOCAL_KEY}"}}}
    for providers, error in [
        (good, None),
        ({"local": "x"}, "providers.local: must be an object"),
        ({"local": {"options": {"apiKey": "plain"}}}, "apiKey: must be an env-ref"),
    ]:
        path.write_text(json.dumps({"schemaVersion": 1, "agent": "toy", "providers": providers}))
        errors = [e for e in config_problems(path, corpus)[0] if "matched no task" not in e]
        assert (error is None and errors == []) or (error is not None and error in errors[0]), errors
    path.write_text(json.dumps({"schemaVersion": 1, "agent": "toy", "providersRef": "missing.json"}))
    errors = config_problems(path, corpus)[0]
    assert "providers file (providersRef in" in errors[0] and "opencode" not in errors[0]


def test_doctor_takes_an_agent_by_its_folders_name(toy: Agent, capsys: pytest.CaptureFixture[str]) -> None:
    """`doctor --agent NAME` checks that agent only, an unknown name is one line naming the
    built-in ones, and each agent's own options are doctor's flags (from its rows)."""
    from pytest_akmbench.cli.main import build_parser, main

    flags = {
        s for a in build_parser()._subparsers._group_actions[0].choices["doctor"]._actions for s in a.option_strings
    }  # type: ignore[union-attr]
    assert {"--opencode", "--opencode-config", "--toy-speed", "--agent"} <= flags
    assert main(["doctor", "--agent", "nosuch"]) == 2
    assert (
        "--agent nosuch: no such built-in agent; built-in agents: claude-code, codex, opencode, toy, nop, oracle"
        in capsys.readouterr().err
    )
    main(["doctor", "--agent", "toy"])
    assert "opencode" not in capsys.readouterr().out
