"""The hooks of an active bench run: settings, collection of cells, the cell fixtures, the reports.

Registered by the entry point (``plugin/__init__.py``) only when a run asks for a bench, so a
pytest run that does not use it never imports this module or anything below it.
"""

from __future__ import annotations

import gc
import os
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..agents.base import Agent, OracleAgent, as_agent
from ..agents.settings import table
from ..cell import checks
from ..corpus.config import Settings, agent_options, corpus_near, in_file, load_run_config, resolve
from ..corpus.tasks import has_task_files, load_lenient, select_with_override
from ..corpus.values import check_matrix, load_baseline
from ..errors import BenchError, ConfigError, CorpusError, StoreError
from ..report import gates
from ..store import preflight
from ..store.scrub import Scrubber
from ..system import lifecycle, procs, sandbox, sandbox_paths
from ..system.interrupts import Interrupts
from . import adaptive, caps, options, remote, shard, startup, wiring
from .cells import (  # noqa: F401 - fixtures and hooks of a cell, registered through this module
    InterruptHooks,
    bench_procs,
    bench_sample,
    pytest_report_teststatus,
    pytest_runtest_makereport,
)
from .nodes import CELL_KEY, STORED_KEY, TaskDir, TaskFile, guard_notes
from .progress import Progress
from .selection import deselect_by_keyword
from .state import STATE_KEY, BenchState, register
from .xdist import parallel, workers


def _setup(config: pytest.Config) -> BenchState | None:
    raw = {n: options.raw(config, n) for n in options.SETTINGS}
    explicit = any(cli is not None for cli, _ in raw.values())
    named = options.named_corpus(config) if raw["corpus"] == (None, None) else None
    if named is not None and not has_task_files(named / "tasks"):
        named = None  # a directory called corpus, but no corpus of tasks
    if not explicit and raw["corpus"][1] is None and raw["config"][1] is None and named is None:
        return None
    rootdir = config.rootpath
    cwd = config.invocation_params.dir
    cfg_raw, cfg_ini = raw.pop("config")
    run_config = None
    rows = table()
    if cfg_raw or cfg_ini:
        run_config = load_run_config(Path(cwd if cfg_raw else rootdir) / (cfg_raw or cfg_ini), rows)
    corpus_cli, corpus_ini = raw.pop("corpus")
    stash_cli, stash_ini = raw.pop("stashes")
    # Without a corpus on the command line or in the ini, a run config brings its project's own.
    near = corpus_near(run_config.path) if run_config is not None else None
    default = near or named or rootdir / "corpus"
    tasks_root = Path(cwd) / corpus_cli if corpus_cli else rootdir / corpus_ini if corpus_ini else default / "tasks"
    stashes_root = Path(cwd) / stash_cli if stash_cli else rootdir / stash_ini if stash_ini else default / "stashes"
    tasks_root = tasks_root.resolve()
    if not explicit and not _args_reach(config, Path(cwd), tasks_root):
        return None  # e.g. plain `pytest` running the project's own tests beside an ini corpus
    settings = resolve(
        rootdir=rootdir,
        cwd=Path(cwd),
        config=run_config,
        cli={k: v[0] for k, v in raw.items()},
        ini={k: v[1] for k, v in raw.items()},
        tasks_root=tasks_root,
        stashes_root=stashes_root.resolve(),
        table=rows,
    )
    for gate in settings.gates:
        try:
            gates.parse(gate)
        except ValueError as err:
            raise ConfigError(str(err), usage=True) from None
    state = _load(settings, explicit)
    wiring.setup(config, state)
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
    try:
        chosen, slice_label = select_with_override(corpus, settings.tasks, settings.tasks_override)
    except CorpusError as err:
        # A selection from a run config names the config, as validate does.
        if settings.config is None or settings.tasks_override is not None:
            raise
        raise CorpusError(in_file(settings.config.path, err)) from None
    if not chosen and not errors:
        if not corpus.tasks:
            raise CorpusError(
                f"{settings.tasks_root}: no <domain>/<task>/task.yaml under this tasks root; "
                "point --bench-corpus at one"
            )
        raise CorpusError(f"{settings.tasks_root}: the selection matched no task")
    check_matrix(len(chosen), len(settings.arms), settings.seeds)
    return BenchState(
        settings=settings,
        corpus=corpus,
        tasks=chosen,
        slice=slice_label,
        selected={t.yaml_path: t for t in chosen},
        errors=errors,
        task_dirs={t.task_dir for t in corpus.tasks} | {p.parent for p in errors},  # every task.yaml found
        explicit=explicit,
    )


def activate(config: pytest.Config) -> bool:
    """Set up the bench run the options ask for; False when they turn out to ask for none."""
    try:
        state = _setup(config)
    except BenchError as err:
        raise pytest.UsageError(str(err)) from None
    if state is None:
        return False
    config.stash[STATE_KEY] = state
    # Registered before pytest's own configure runs: the thaw of what pytest_collection froze comes
    # after pytest's end-of-session collections, and an in-process run (pytester) leaves nothing frozen.
    config.add_cleanup(gc.unfreeze)
    shard.activate(config, state)
    caps.install(config, state)
    if state.explicit and config.args_source != pytest.Config.ArgsSource.ARGS:
        # `pytest --bench-config x.json` means the corpus, not the project's testpaths.
        config.args = [str(state.settings.tasks_root)]
    if not hasattr(config, "workerinput"):
        parallel.refuse_conflicts(config, state)
        if not remote.placed_by_tx(config, state):
            parallel.apply(config, state)
    adaptive.activate(config, state)
    wiring.of(state).install(config, state)
    return True


def _preflight(config: pytest.Config, state: BenchState, *, outputs: bool) -> None:
    """Every place the run writes to takes writes, before any cell spends a token: the tmp
    root first, the store, report dir and step summary once the agent has started (a bad
    providers file is then reported without a store left behind)."""
    try:
        if not outputs:
            preflight.writable_dir(state.tmp_root, "--bench-tmp", probe=preflight.TMP_PROBE)
        elif state.track.runs_agent and not config.option.collectonly:
            preflight.store(state.store_dir)
            preflight.writable_dir(state.report_dir, "--bench-report", probe=preflight.REPORT_PROBE)
            preflight.step_summary(os.environ)
    except BenchError as err:
        raise pytest.UsageError(str(err)) from None


@pytest.hookimpl(trylast=True)  # after the terminal reporter, which prints the start-up lines
def pytest_configure(config: pytest.Config) -> None:
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return
    workerinput = getattr(config, "workerinput", None)
    controller = workerinput is None
    state.agent = _find_agent(config, state.settings.agent) if state.track.runs_agent else OracleAgent()
    state.model = state.settings.model
    if config.option.collectonly:
        return  # listing cells needs no agent, model, akm, sandbox or run dir: nothing but the package
    state.run_id = (
        workerinput["akmbench_run_id"]
        if workerinput
        # The random part keeps two sessions of one process in one second apart (pytest.main
        # twice, pytester): a shared id would report the first run's samples as this run's own.
        else time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + f"-{os.getpid()}-{secrets.token_hex(3)}"
    )
    procs.become_subreaper()
    if controller:
        _preflight(config, state, outputs=False)
    _claim_run(config, state, controller)
    try:
        _start(config, state, controller)
        if controller and state.track.runs_agent:
            startup.preflight(config, state)
        if controller:
            wiring.of(state).check(state)
    except BenchError as err:
        raise pytest.UsageError(str(err)) from None
    if controller:
        _preflight(config, state, outputs=True)
    # What no stored or reported text may hold: the values behind the providers file's {env:VAR}.
    state.scrub = Scrubber(state.agent.secrets)
    # An adapter that resolves the model itself (from its own config or providers file)
    # says which; the same value is stamped into every sample and fingerprint.
    state.model = state.agent.model or state.settings.model
    remote.setup(config, state, controller)
    if controller:
        register(config, state, wiring.of(state).session(state, config), "akmbench-session")
        register(config, state, Progress(config), "akmbench-progress")
        if config.pluginmanager.hasplugin("xdist"):
            register(config, state, workers.XdistHooks(state), "akmbench-xdist")


def _claim_run(config: pytest.Config, state: BenchState, controller: bool) -> None:
    try:
        lifecycle.claim_run(state.tmp_root, state.run_id, controller=controller, project=config.rootpath)
    except OSError as err:
        raise pytest.UsageError(
            f"{state.tmp_root}: cannot create the run dir ({err.strerror or err}); fix it or pass --bench-tmp DIR"
        ) from None
    state.interrupts = Interrupts(state.run_id, state.run_dir, controller=controller)
    state.interrupts.install()
    register(config, state, InterruptHooks(state.interrupts), "akmbench-interrupts")
    if not controller:
        procs.die_with_parent()


def _start(config: pytest.Config, state: BenchState, controller: bool) -> None:
    """The sandbox, the agent and akm, each slow step said with its time; the run's warnings."""
    mode, fallback = sandbox.choose(state.settings.sandbox)
    state.sandbox = mode  # the settings keep the mode asked for
    if fallback and controller:
        state.warnings.append(fallback)
        config.issue_config_time_warning(pytest.PytestConfigWarning(fallback), stacklevel=2)
    if state.track.runs_agent:
        startup.start_agent(config, state, _agent_options(state))
        state.started = True
    # An agent that says it never calls akm (oracle, nop) still gets one when it is there.
    needed = state.track.runs_agent and state.agent.uses_akm
    state.akm = startup.find_akm(config, state, needed)
    if state.akm is not None and state.akm.warning and controller:
        state.warnings.append(state.akm.warning)
    if controller:
        cfg = state.settings.config
        corpus = checks.run_warnings(state.corpus, state.tasks, state.track.arms(state))
        for line in [*(cfg.warnings() if cfg else []), *state.agent.warnings, *corpus]:
            state.warnings.append(line)
            config.issue_config_time_warning(pytest.PytestConfigWarning(line), stacklevel=2)


def _find_agent(config: pytest.Config, name: str) -> Agent:
    found: dict[str, Agent] = {}
    for batch in reversed(config.hook.pytest_akmbench_agents()):
        for agent in batch or ():
            found[agent.name] = agent
    if name not in found:
        raise pytest.UsageError(f"--bench-agent: unknown agent {name!r}; available: {', '.join(sorted(found))}")
    return as_agent(found[name])


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(STATE_KEY, None)
    if state is None or not state.run_id:
        return
    if state.started:
        state.agent.stop()
    if state.interrupts is not None:
        state.interrupts.restore()
    state.cleaner.close()  # the finished cells' dirs are gone before the run dir is released
    if not hasattr(config, "workerinput"):
        # A crashed worker's cells leave marked processes behind: nothing of this run survives
        # it. Only the controller may do this, once every worker is gone: a worker finishing
        # early would otherwise kill the cells its siblings are still running.
        procs.sweep(state.run_id + "/", orphans=False)
    elif state.remote is not None:
        state.remote.finish()
    lifecycle.release_run(state.tmp_root / state.run_id)
    for plugin in state.plugins.values():  # every plugin of this run went through register()
        if config.pluginmanager.is_registered(plugin):
            config.pluginmanager.unregister(plugin)


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return None
    s = state.settings
    return [
        f"akmbench: corpus {s.tasks_root} ({len(state.tasks)} tasks selected, slice {state.slice})",
        f"akmbench: arms {','.join(state.arms)} x seeds 1..{state.seeds}, agent {state.agent.name}"
        + (f", model {state.model}" if state.model else "")
        + (f", sandbox {state.sandbox}, run {state.run_id}" if state.run_id else " (listing only: nothing is started)"),
        *([f"akmbench: akm {state.akm.version} at {state.akm.path} (keyword search)"] if state.akm else []),
        *guard_notes(config),
    ]


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return None
    if sandbox_paths.within(collection_path, [state.settings.stashes_root]):  # asked of every entry: as strings
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


def pytest_collect_directory(path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """A task's directory is a ``TaskDir`` (it asks only about its task.yaml). A task.yaml that
    is a directory: its error is that path's collection error, as a bad task.yaml file's is,
    rather than a directory pytest walks into and finds nothing in."""
    state = parent.config.stash.get(STATE_KEY, None)
    if state is None:
        return None
    if path in state.task_dirs and not (path / "__init__.py").is_file():  # else pytest's Package
        return TaskDir.from_parent(parent, path=path)
    if path.name != "task.yaml" or path not in state.errors:
        return None
    return TaskFile.from_parent(parent, path=path)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if STATE_KEY in config.stash:
        deselect_by_keyword(config, items)


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Iterator[Any]:
    result = yield
    state = session.config.stash.get(STATE_KEY, None)
    if state is not None:
        # What collection built (the items, their marks, the corpus) lives until the session ends:
        # frozen, the cyclic collector skips it in the done-check's and the run's collections and in
        # the five pytest makes at its end (benchmarks/README.md, "Collection, third pass").
        # activate() registered the thaw, which runs after those.
        gc.freeze()
    if state is not None and not session.config.option.collectonly and state.remote is None:
        # Resume: a trial the store already holds under this fingerprint is not run again (a
        # remote worker hears of stored trials from the controller, cell by cell).
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
    """The agent's start options: the bench's settings an agent needs, and the agent's own
    (the rows its folder declares, docs/configuration.md), which the plugin does not name."""
    s = state.settings
    return {
        "rootdir": str(startup.tools_project(state)),
        "akm": s.akm and str(s.akm),
        # The preflight starts the agent inside a cell's sandbox too (the agent's boundary check).
        "sandbox": state.sandbox,
        "network": s.network,
        "sandbox_ro": [str(p) for p in s.sandbox_ro],
        "work_root": str(state.run_dir),
        **agent_options(s, state.agent.name, table()),
    }
