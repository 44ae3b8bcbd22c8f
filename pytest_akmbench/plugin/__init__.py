"""pytest wiring: options, settings, collection of cells, the cell fixtures, the report hooks.

Inert unless asked for: with no ``--bench-*`` option and no ``bench_corpus``/``bench_config``
ini key, the plugin collects nothing and writes nothing.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from ..cell import akm
from ..report import gates
from . import hooks
from ..system import lifecycle
from ..store import preflight
from ..system import procs
from ..system import sandbox
from ..agents.base import Agent, OracleAgent, SessionInfo, builtin_agents
from .cells import (  # noqa: F401 - fixtures and hooks of a cell, registered through this module
    InterruptHooks,
    bench_procs,
    bench_sample,
    pytest_report_teststatus,
    pytest_runtest_makereport,
)
from ..corpus.config import ARMS, Settings, check_matrix, clamp_parallel, load_baseline, load_run_config, resolve
from ..corpus.tasks import find_task_files, load_lenient, select_with_override
from ..errors import BenchError, ConfigError, CorpusError, StoreError
from ..system.interrupts import Interrupts
from .nodes import CELL_KEY, STORED_KEY, TaskFile, guard_notes
from ..store.scrub import Scrubber
from .selection import deselect_by_keyword
from .session import BenchSession
from .state import STATE_KEY, BenchState
from .xdist_hooks import XdistHooks

# (setting name, metavar, help); each becomes --bench-NAME and ini key bench_NAME.
_OPTIONS: list[tuple[str, str, str]] = [
    ("config", "FILE", "Run config (JSON, schema v1) naming tasks, arms, seeds, budgets, model"),
    ("corpus", "DIR", "Tasks root of the corpus (default: corpus/tasks)"),
    ("stashes", "DIR", "Directory of stash fixtures (default: corpus/stashes)"),
    ("tasks", "SEL", "Task selector: all, train, eval, a domain, a task id, or ids a/b,c/d"),
    ("arms", "LIST", f"Comma-separated arms out of {', '.join(ARMS)} (default: noakm,akm)"),
    ("seeds", "N", "Trials per task and arm, numbered 1..N (default: 3)"),
    ("agent", "NAME", "Agent adapter: opencode (default), oracle, nop or one a plugin registers"),
    ("model", "MODEL", "Model as provider/model, e.g. scripted/oracle"),
    ("providers", "FILE", "Providers file for opencode"),
    ("budget-tokens", "N", "Token budget per cell: caps every task's own; used where a task declares none "
                           "(default: 30000)"),
    ("budget-wall-ms", "MS", "Wall-clock budget per cell: caps every task's own; used where a task declares "
                             "none (default: 120000)"),
    ("budget-turns", "N", "Model turns allowed per cell (default: unlimited)"),
    ("verify-timeout", "SECONDS", "Timeout of one verifier run (default: 120)"),
    ("floor", "N", "Valid samples a cell needs to count as covered in the report (default: 3)"),
    ("store", "DIR", "Sample store directory (default: .akmbench/store)"),
    ("report", "DIR", "Where report.json and summary.md go (default: .akmbench/report)"),
    ("tmp", "DIR", "Root of the per-cell run dirs (default: ~/.cache/bench-cells)"),
    ("akm", "PATH", "The akm executable given to the akm arm"),
    ("baseline", "FILE", "Baseline pass rates {task_id: rate}: adds the vs-base column to the summary"),
    ("opencode", "PATH", "The opencode executable"),
    ("sandbox", "MODE", "Sandbox of each cell's agent: auto (bwrap when it works, else none with a warning; "
                        "the default), bwrap, or none"),
]
_FLAGS = [
    ("force-parallel", "Allow --parallel above 4 without a warning"),
    ("keep-runs", "Keep each cell's run dir after it ends, for debugging"),
    ("fresh", "Run every selected cell again even if the store has its sample (still appends)"),
    ("soundness", "Check the corpus instead of running an agent: one item per task proving that the "
                  "untouched workspace fails, the solution passes and the verifier repeats itself"),
]

def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("akmbench", "agent benchmark cells (pytest-akmbench)")
    for name, metavar, help_text in _OPTIONS:
        dest = "bench_" + name.replace("-", "_")
        group.addoption(f"--bench-{name}", dest=dest, metavar=metavar, default=None, help=help_text)
        parser.addini(dest, help_text, default=None)
    for name, help_text in _FLAGS:
        dest = "bench_" + name.replace("-", "_")
        group.addoption(f"--bench-{name}", dest=dest, action="store_true", default=None, help=help_text)
        parser.addini(dest, help_text, default=None)
    group.addoption("--bench-gate", dest="bench_gate", action="append", default=None, metavar="EXPR",
                    help="Gate deciding the exit status, e.g. akm.pass_rate>=0.6, lift.low>0, "
                    "no-regression:BASE/report.json (repeatable)")
    parser.addini("bench_gate", "Gates deciding the exit status, one per line", type="linelist", default=[])
    group.addoption("--bench-sandbox-ro", dest="bench_sandbox_ro", action="append", default=None, metavar="PATH",
                    help="A file or directory the sandboxed agent may also read (repeatable)")
    parser.addini("bench_sandbox_ro", "Files or directories the sandboxed agent may also read, one per line",
                  type="linelist", default=[])
    group.addoption("--parallel", dest="bench_parallel", metavar="N", default=None,
                    help="Run cells in N processes (pytest-xdist -n, clamped to 1..8)")
    parser.addini("bench_parallel", "Default for --parallel", default=None)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hooks)


def pytest_akmbench_agents() -> list[Agent]:
    agents: list[Agent] = builtin_agents()
    try:
        from ..agents.opencode import adapter as opencode
    except ImportError:
        return agents
    return [*opencode.agents(), *agents]


def _raw(config: pytest.Config, name: str) -> tuple[Any, Any]:
    dest = "bench_" + name
    cli = config.getoption(dest, None)
    ini = config.getini(dest)
    return cli, (ini if ini not in (None, "", []) else None)


def _setup(config: pytest.Config) -> BenchState | None:
    names = [n.replace("-", "_") for n, _, _ in _OPTIONS] + [n.replace("-", "_") for n, _ in _FLAGS]
    names += ["parallel", "sandbox_ro"]
    raw = {n: _raw(config, n) for n in names}
    gate_cli, gate_ini = _raw(config, "gate")
    explicit = any(cli is not None for cli, _ in raw.values()) or gate_cli is not None
    if not explicit and raw["corpus"][1] is None and raw["config"][1] is None:
        return None
    rootdir = config.rootpath
    cwd = config.invocation_params.dir
    cfg_raw, cfg_ini = raw.pop("config")
    run_config = None
    if cfg_raw or cfg_ini:
        run_config = load_run_config(Path(cwd if cfg_raw else rootdir) / (cfg_raw or cfg_ini))
    corpus_cli, corpus_ini = raw.pop("corpus")
    stash_cli, stash_ini = raw.pop("stashes")
    tasks_root = Path(cwd) / corpus_cli if corpus_cli else rootdir / (corpus_ini or "corpus/tasks")
    stashes_root = Path(cwd) / stash_cli if stash_cli else rootdir / (stash_ini or "corpus/stashes")
    tasks_root = tasks_root.resolve()
    if not explicit and not _args_reach(config, Path(cwd), tasks_root):
        return None  # e.g. plain `pytest` running the project's own tests beside an ini corpus
    settings = resolve(
        rootdir=rootdir, cwd=Path(cwd), config=run_config,
        cli={k: v[0] for k, v in raw.items()}, ini={k: v[1] for k, v in raw.items()},
        tasks_root=tasks_root, stashes_root=stashes_root.resolve(),
    )
    gate_list = tuple(gate_cli or gate_ini or ())
    for gate in gate_list:
        try:
            gates.parse(gate)
        except ValueError as err:
            raise ConfigError(str(err), usage=True) from None
    state = _load(dataclasses.replace(settings, gates=gate_list), explicit)
    if settings.baseline is not None:
        state.baseline = load_baseline(settings.baseline)
    return state


def _args_reach(config: pytest.Config, cwd: Path, tasks_root: Path) -> bool:
    """Whether a collection argument is the tasks root, inside it, or one of its parents."""
    for arg in config.args:
        path = (cwd / arg.split("::")[0]).resolve()
        if path == tasks_root or path in tasks_root.parents or tasks_root in path.parents:
            return True
    return False


def _load(settings: Settings, explicit: bool) -> BenchState:
    """Load every task leniently: a bad task.yaml becomes that file's collection error."""
    corpus, errors = load_lenient(settings.tasks_root, settings.stashes_root)
    chosen, slice_label = select_with_override(corpus, settings.tasks, settings.tasks_override)
    if not chosen and not errors:
        raise CorpusError(f"{settings.tasks_root}: the selection matched no task")
    check_matrix(len(chosen), len(settings.arms), settings.seeds)
    return BenchState(
        settings=settings, corpus=corpus, tasks=chosen, slice=slice_label,
        selected={t.yaml_path: t for t in chosen}, errors=errors,
        task_dirs={p.parent for p in find_task_files(settings.tasks_root)}, explicit=explicit,
    )


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> Iterator[None]:
    if not (config.option.help or config.option.version):
        try:
            state = _setup(config)
        except BenchError as err:
            raise pytest.UsageError(str(err)) from None
        if state is not None:
            config.stash[STATE_KEY] = state
            if state.explicit and config.args_source != pytest.Config.ArgsSource.ARGS:
                # `pytest --bench-config x.json` means the corpus, not the project's testpaths.
                config.args = [str(state.settings.tasks_root)]
            if not hasattr(config, "workerinput"):
                _refuse_conflicts(config, state)
                _apply_parallel(config, state)
    return (yield)


def _refuse_conflicts(config: pytest.Config, state: BenchState) -> None:
    if state.settings.fresh and config.getoption("lf", None):
        raise pytest.UsageError(
            "--bench-fresh with --lf re-runs only the failed trials, and the newer samples would replace "
            "them: pass rates biased upwards; drop --lf, or sample more with --bench-seeds"
        )


def _preflight(config: pytest.Config, state: BenchState, *, outputs: bool) -> None:
    """Every place the run writes to takes writes, before any cell spends a token: the tmp
    root first, the store, report dir and step summary once the agent has started (a bad
    providers file is then reported without a store left behind)."""
    try:
        if not outputs:
            preflight.writable_dir(state.tmp_root, "--bench-tmp", probe=preflight.TMP_PROBE)
        elif not (config.option.collectonly or state.settings.soundness):
            preflight.store(state.store_dir)
            preflight.writable_dir(state.report_dir, "--bench-report", probe=preflight.REPORT_PROBE)
            preflight.step_summary(os.environ)
    except BenchError as err:
        raise pytest.UsageError(str(err)) from None


def _apply_parallel(config: pytest.Config, state: BenchState) -> None:
    wanted = state.settings.parallel
    if wanted is None or getattr(config.option, "numprocesses", None) is not None:
        return
    if not config.pluginmanager.hasplugin("xdist"):
        raise pytest.UsageError("--parallel needs pytest-xdist; pip install pytest-xdist")
    n, warning = clamp_parallel(wanted, state.settings.force_parallel)
    if warning:
        config.issue_config_time_warning(pytest.PytestConfigWarning(warning), stacklevel=2)
    if n > 1:
        config.option.numprocesses = n
        if config.option.dist == "no":
            # Cells take uneven time; stealing keeps every worker busy to the end.
            config.option.dist = "worksteal"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "cell(task, arm, seed, domain, slice): a benchmark cell; select with -m \"cell(arm='akm')\""
    )
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return
    workerinput = getattr(config, "workerinput", None)
    state.run_id = workerinput["akmbench_run_id"] if workerinput else time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + f"-{os.getpid()}"
    state.agent = OracleAgent() if state.settings.soundness else _find_agent(config, state.settings.agent)
    state.model = state.settings.model
    procs.become_subreaper()
    if workerinput is None:
        _preflight(config, state, outputs=False)
    try:
        lifecycle.claim_run(state.tmp_root, state.run_id, controller=workerinput is None, project=config.rootpath)
    except OSError as err:
        raise pytest.UsageError(f"{state.tmp_root}: cannot create the run dir ({err.strerror or err}); "
                                "fix it or pass --bench-tmp DIR") from None
    state.interrupts = Interrupts(state.run_id, state.run_dir, controller=workerinput is None)
    state.interrupts.install()
    config.pluginmanager.register(InterruptHooks(state.interrupts), "akmbench-interrupts")
    if workerinput is not None:
        procs.die_with_parent()
    try:
        mode, fallback = sandbox.choose(state.settings.sandbox)
        state.settings = dataclasses.replace(state.settings, sandbox=mode)
        if fallback and workerinput is None:
            state.warnings.append(fallback)
            config.issue_config_time_warning(pytest.PytestConfigWarning(fallback), stacklevel=2)
        if not state.settings.soundness:
            state.agent.start(SessionInfo(model=state.model, arms=state.settings.arms, tasks=tuple(state.tasks),
                                          options=_agent_options(state)))
    except BenchError as err:
        raise pytest.UsageError(str(err)) from None
    state.started = not state.settings.soundness
    try:
        state.akm = _find_akm(state)
    except BenchError as err:
        raise pytest.UsageError(str(err)) from None
    if state.akm is not None and state.akm.warning and workerinput is None:
        state.warnings.append(state.akm.warning)
    if workerinput is None:
        _preflight(config, state, outputs=True)
    # What no stored or reported text may hold: the values behind the providers file's {env:VAR}.
    state.scrub = Scrubber(getattr(state.agent, "secrets", None) or ())
    # An adapter that resolves the model itself (opencode: CLI, env, config, providers file)
    # says which; the same value is stamped into every sample and fingerprint.
    state.model = getattr(state.agent, "model", None) or state.settings.model
    if workerinput is None:
        config.pluginmanager.register(BenchSession(state, config), "akmbench-session")
        if config.pluginmanager.hasplugin("xdist"):
            config.pluginmanager.register(XdistHooks(state), "akmbench-xdist")


def _find_akm(state: BenchState) -> akm.AkmInfo | None:
    """The akm the akm arm gets, probed once per process. An agent needs it on that arm unless
    it says it never calls akm (``uses_akm = False``: oracle, nop); such an agent still gets
    one when it is there."""
    if "akm" not in state.settings.arms:
        return None
    needed = not state.settings.soundness and getattr(state.agent, "uses_akm", True)
    explicit = state.settings.akm
    if not needed and explicit is None and shutil.which("akm") is None:
        return None
    return akm.detect(akm.locate(explicit))


def _find_agent(config: pytest.Config, name: str) -> Agent:
    found: dict[str, Agent] = {}
    for batch in reversed(config.hook.pytest_akmbench_agents()):
        for agent in batch or ():
            found[agent.name] = agent
    if name not in found:
        raise pytest.UsageError(f"--bench-agent: unknown agent {name!r}; available: {', '.join(sorted(found))}")
    return found[name]


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(STATE_KEY, None)
    if state is None or not state.run_id:
        return
    if state.started:
        state.agent.stop()
    if state.interrupts is not None:
        state.interrupts.restore()
    if not hasattr(config, "workerinput"):
        # A crashed worker's cells leave marked processes behind: nothing of this run survives
        # it. Only the controller may do this, once every worker is gone: a worker finishing
        # early would otherwise kill the cells its siblings are still running.
        procs.sweep(state.run_id + "/", orphans=False)
    lifecycle.release_run(state.tmp_root / state.run_id)
    for name in ("akmbench-session", "akmbench-xdist", "akmbench-interrupts"):
        plugin = config.pluginmanager.get_plugin(name)
        if plugin is not None:
            config.pluginmanager.unregister(plugin)


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return None
    s = state.settings
    return [
        f"akmbench: corpus {s.tasks_root} ({len(state.tasks)} tasks selected, slice {state.slice})",
        f"akmbench: arms {','.join(s.arms)} x seeds 1..{s.seeds}, agent {state.agent.name}"
        + (f", model {state.model}" if state.model else "") + f", sandbox {s.sandbox}, run {state.run_id}",
        *([f"akmbench: akm {state.akm.version} at {state.akm.path} (keyword search)"] if state.akm else []),
        *guard_notes(config),
    ]


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return None
    if collection_path == state.settings.stashes_root or state.settings.stashes_root in collection_path.parents:
        return True
    if collection_path.parent in state.task_dirs and collection_path.name != "task.yaml":
        return True  # workspaces, tests and solutions are the task's, never the session's items
    return None


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    state = parent.config.stash.get(STATE_KEY, None)
    if state is None or file_path.name != "task.yaml":
        return None
    if file_path in state.selected or file_path in state.errors:
        return TaskFile.from_parent(parent, path=file_path)
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if STATE_KEY in config.stash:
        deselect_by_keyword(config, items)


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Iterator[Any]:
    result = yield
    state = session.config.stash.get(STATE_KEY, None)
    if state is not None and not session.config.option.collectonly:
        # Resume: a trial the store already holds under this fingerprint is not run again.
        try:
            stored = state.stored()
        except StoreError as err:
            raise pytest.UsageError(str(err)) from None
        for item in session.items:
            if CELL_KEY in item.stash:
                cell = item.stash[CELL_KEY]
                record = stored.done((cell.task.id, cell.arm, cell.seed), state.fingerprint_hash(cell))
                if record is not None:
                    item.stash[STORED_KEY] = record
    return result


def _agent_options(state: BenchState) -> dict[str, Any]:
    s = state.settings
    cfg = s.config
    return {
        "rootdir": str(s.rootdir),
        "opencode": s.opencode and str(s.opencode),
        "akm": s.akm and str(s.akm),
        "providers": s.providers and str(s.providers),
        "config_providers": cfg.get("providers") if cfg else None,
        "config_providers_ref": cfg.get("providersRef") if cfg else None,
        "config_default_model": cfg.get("defaultModel") if cfg else None,
        "config_path": str(cfg.path) if cfg else None,
    }


