"""pytest wiring: options, settings, collection of cells, the cell fixtures, the report hooks.

Inert unless asked for: with no ``--bench-*`` option and no ``bench_corpus``/``bench_config``
ini key, the plugin collects nothing and writes nothing.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pytest

from . import gates, hooks, lifecycle, preflight, procs
from .agents import Agent, OracleAgent, SessionInfo, builtin_agents
from .config import ARMS, Settings, check_matrix, run_caps, clamp_parallel, load_baseline, load_run_config, resolve
from .corpus import Corpus, Task, find_task_files, load_lenient, select_with_override
from .claims import Claim
from .errors import BenchError, ConfigError, CorpusError, StoreError
from .nodes import CELL_KEY, CLAIMED_KEY, SAMPLE_KEY, STORED_KEY, TASK_KEY, TaskFile, guard_notes
from .resume import StoredSamples
from .runner import Cell, RunContext, cell_fingerprint, run_cell
from .store import SampleStore, fingerprint_hash
from .selection import deselect_by_keyword
from .session import BenchSession
from .validate import behaviour_problems

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
]
_FLAGS = [
    ("force-parallel", "Allow --parallel above 4 without a warning"),
    ("keep-runs", "Keep each cell's run dir after it ends, for debugging"),
    ("fresh", "Run every selected cell again even if the store has its sample (still appends)"),
    ("soundness", "Check the corpus instead of running an agent: one item per task proving that the "
                  "untouched workspace fails, the solution passes and the verifier repeats itself"),
]

STATE_KEY = pytest.StashKey["BenchState"]()


@dataclass
class BenchState:
    """Everything resolved for this run, shared by every hook in this process."""

    settings: Settings
    corpus: Corpus
    tasks: list[Task]
    slice: str
    selected: dict[Path, Task]
    errors: dict[Path, str]
    task_dirs: set[Path]
    explicit: bool
    run_id: str = ""
    agent: Agent = field(default=None)  # type: ignore[assignment]
    model: str | None = None
    warnings: list[str] = field(default_factory=list)
    started: bool = False
    baseline: dict[str, float] | None = None
    previous_signals: dict[int, Any] = field(default_factory=dict)
    _stored: StoredSamples | None = None
    _context: RunContext | None = None

    @property
    def report_dir(self) -> Path:
        return self.settings.report or self.settings.rootdir / ".akmbench" / "report"

    @property
    def store_dir(self) -> Path:
        return self.settings.store or self.settings.rootdir / ".akmbench" / "store"

    def stored(self) -> StoredSamples:
        """The store's samples, read once per process and refreshed before each cell runs
        (with --bench-fresh only what is appended after the start counts)."""
        if self._stored is None:
            load = StoredSamples.after_now if self.settings.fresh else StoredSamples.load
            self._stored = load(self.store_dir)
        return self._stored

    @property
    def run_dir(self) -> Path:
        return self.tmp_root / self.run_id

    def fingerprint_hash(self, cell: Cell) -> str:
        return fingerprint_hash(cell_fingerprint(cell, self.context()))

    @property
    def tmp_root(self) -> Path:
        return self.settings.tmp or lifecycle.default_tmp_root()

    def context(self) -> RunContext:
        if self._context is None:
            s = self.settings
            self._context = RunContext(
                run_id=self.run_id, tmp_root=self.tmp_root, stashes_root=s.stashes_root, agent=self.agent,
                model=self.model, budget_tokens=s.budget_tokens, budget_wall_ms=s.budget_wall_ms,
                budget_turns=s.budget_turns, verify_timeout_s=s.verify_timeout, keep_runs=s.keep_runs,
                akm=s.akm or (Path(found).resolve() if (found := shutil.which("akm")) else None),
                transcripts_dir=self.store_dir, **run_caps(s),
            )
        return self._context


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
    group.addoption("--parallel", dest="bench_parallel", metavar="N", default=None,
                    help="Run cells in N processes (pytest-xdist -n, clamped to 1..8)")
    parser.addini("bench_parallel", "Default for --parallel", default=None)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hooks)


def pytest_akmbench_agents() -> list[Agent]:
    agents: list[Agent] = builtin_agents()
    try:
        from . import opencode
    except ImportError:
        return agents
    return [*opencode.agents(), *agents]


def _raw(config: pytest.Config, name: str) -> tuple[Any, Any]:
    dest = "bench_" + name
    cli = config.getoption(dest, None)
    ini = config.getini(dest)
    return cli, (ini if ini not in (None, "", []) else None)


def _setup(config: pytest.Config) -> BenchState | None:
    names = [n.replace("-", "_") for n, _, _ in _OPTIONS] + [n.replace("-", "_") for n, _ in _FLAGS] + ["parallel"]
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
                _preflight(config, state)
                _apply_parallel(config, state)
    return (yield)


def _refuse_conflicts(config: pytest.Config, state: BenchState) -> None:
    if state.settings.fresh and config.getoption("lf", None):
        raise pytest.UsageError(
            "--bench-fresh with --lf re-runs only the failed trials, and the newer samples would replace "
            "them: pass rates biased upwards; drop --lf, or sample more with --bench-seeds"
        )


def _preflight(config: pytest.Config, state: BenchState) -> None:
    """Every place the run writes to takes writes, before any cell spends a token."""
    try:
        preflight.writable_dir(state.tmp_root, "--bench-tmp", probe=preflight.TMP_PROBE)
        if config.option.collectonly or state.settings.soundness:
            return
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
    try:
        lifecycle.claim_run(state.tmp_root, state.run_id, controller=workerinput is None, project=config.rootpath)
    except OSError as err:
        raise pytest.UsageError(f"{state.tmp_root}: cannot create the run dir ({err.strerror or err}); "
                                "fix it or pass --bench-tmp DIR") from None
    state.previous_signals = _install_signals(state.run_id, state.run_dir, controller=workerinput is None)
    try:
        if not state.settings.soundness:
            state.agent.start(SessionInfo(model=state.model, arms=state.settings.arms, tasks=tuple(state.tasks),
                                          options=_agent_options(state)))
    except BenchError as err:
        raise pytest.UsageError(str(err)) from None
    state.started = not state.settings.soundness
    # An adapter that resolves the model itself (opencode: CLI, env, config, providers file)
    # says which; the same value is stamped into every sample and fingerprint.
    state.model = getattr(state.agent, "model", None) or state.settings.model
    if workerinput is None:
        config.pluginmanager.register(BenchSession(state, config), "akmbench-session")
        if config.pluginmanager.hasplugin("xdist"):
            config.pluginmanager.register(_XdistHooks(state), "akmbench-xdist")


def _find_agent(config: pytest.Config, name: str) -> Agent:
    found: dict[str, Agent] = {}
    for batch in reversed(config.hook.pytest_akmbench_agents()):
        for agent in batch or ():
            found[agent.name] = agent
    if name not in found:
        raise pytest.UsageError(f"--bench-agent: unknown agent {name!r}; available: {', '.join(sorted(found))}")
    return found[name]


def _install_signals(run_id: str, run_dir: Path, *, controller: bool) -> dict[int, Any]:
    """SIGTERM behaves like Ctrl-C (so finalizers kill the cells); a second one of either
    force-exits at once, after SIGKILL to every process of this run.

    The controller passes the interrupt on to its xdist workers and marks the run interrupted,
    so a worker never starts another cell after a Ctrl-C sent to the controller alone (before,
    the terminal counted fewer cells than the store and report held). A terminal Ctrl-C reaches
    a worker twice (from the terminal and from the controller): a worker takes a second signal
    within a couple of seconds as the same interrupt.
    """
    hits: list[float] = []

    def handler(signum: int, frame: Any) -> None:
        now = time.monotonic()
        if hits and not controller and now - hits[0] < 2.0:
            return
        hits.append(now)
        if len(hits) > 1:
            if controller:
                lifecycle.signal_workers(run_dir, signal.SIGKILL)
            procs.signal_marked(run_id + "/", signal.SIGKILL)
            os._exit(128 + signum)
        if controller:
            lifecycle.mark_interrupted(run_dir)
            lifecycle.signal_workers(run_dir, signal.SIGINT)
        raise KeyboardInterrupt(f"signal {signum}")

    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[sig] = signal.signal(sig, handler)
        except ValueError:  # not the main thread (e.g. an embedding runner)
            pass
    return previous


class _XdistHooks:
    """Hooks that exist only with pytest-xdist: hand the run id to every worker."""

    def __init__(self, state: BenchState) -> None:
        self.state = state

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["akmbench_run_id"] = self.state.run_id

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        # Under xdist the controller collects nothing; the workers' item ids say which
        # cells were selected, so the report can tell a finished run from an interrupted one.
        session = node.config.pluginmanager.get_plugin("akmbench-session")
        if session is not None:
            session.add_node_ids(ids)

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        # A crashed worker's cell processes are re-parented onto the controller (a subreaper):
        # kill them now, not at session end, or its agent goes on spending for minutes. Live
        # workers' cells are their own workers' children, never ours.
        if error is not None:
            procs.reap_orphans()

    def pytest_handlecrashitem(self, crashitem: str, report: Any, sched: Any) -> None:
        procs.sweep(f"{self.state.run_id}/{crashitem}", exact=True)


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(STATE_KEY, None)
    if state is None or not state.run_id:
        return
    if state.started:
        state.agent.stop()
    for sig, previous in state.previous_signals.items():
        signal.signal(sig, previous)
    if not hasattr(config, "workerinput"):
        # A crashed worker's cells leave marked processes behind: nothing of this run survives
        # it. Only the controller may do this, once every worker is gone: a worker finishing
        # early would otherwise kill the cells its siblings are still running.
        procs.sweep(state.run_id + "/", orphans=False)
    lifecycle.release_run(state.tmp_root / state.run_id)
    for name in ("akmbench-session", "akmbench-xdist"):
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
        + (f", model {state.model}" if state.model else "") + f", run {state.run_id}",
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


@pytest.fixture
def bench_procs(request: pytest.FixtureRequest) -> procs.ProcessTracker:
    """The processes of this cell. Its finalizer kills every one of them and their orphans."""
    state: BenchState = request.config.stash[STATE_KEY]
    tracker = procs.ProcessTracker(f"{state.run_id}/{request.node.nodeid}")
    request.addfinalizer(tracker.kill_all)
    return tracker


@pytest.fixture
def bench_sample(request: pytest.FixtureRequest, bench_procs: procs.ProcessTracker) -> dict[str, Any]:
    """Run this cell (agent, then verifier) and return its sample; harness errors are ERRORs."""
    state: BenchState = request.config.stash[STATE_KEY]
    item = request.node
    unstored: str | None = None
    previous = item.stash.get(SAMPLE_KEY, None)
    stored = item.stash.get(STORED_KEY, None)
    if previous is not None:
        # A rerun plugin runs the item again: a trial is one sample, never a second chance.
        sample = previous
    elif stored is not None:
        sample = {**stored, "from_store": True}
    else:
        sample, unstored = _run_claimed(request, state, item.stash[CELL_KEY], bench_procs)
    item.stash[SAMPLE_KEY] = sample
    if unstored is not None:
        pytest.fail(f"harness_error: the sample could not be stored: {unstored}", pytrace=False)
    if sample["outcome"] == "harness_error":
        pytest.fail(f"harness_error: {sample['reason']}", pytrace=False)
    return sample


def _run_claimed(
    request: pytest.FixtureRequest, state: BenchState, cell: Cell, tracker: procs.ProcessTracker
) -> tuple[dict[str, Any], str | None]:
    """Run the cell under its claim; returns (sample, why it could not be stored)."""
    if lifecycle.is_interrupted(state.run_dir):
        pytest.exit("akmbench: the run was interrupted; no further cell starts", returncode=pytest.ExitCode.INTERRUPTED)
    item = request.node
    fp = state.fingerprint_hash(cell)
    claim = Claim(state.store_dir, f"{cell.task.id}\0{cell.arm}\0{cell.seed}\0{fp}",
                  owner=f"run {state.run_id} (pid {os.getpid()})")
    try:
        waited = claim.acquire()
    except OSError as err:
        request.session.shouldstop = f"akmbench: {state.store_dir}: cannot claim a cell ({err.strerror or err})"
        pytest.fail(f"harness_error: {request.session.shouldstop}", pytrace=False)
    try:
        index = state.stored()
        index.refresh()
        record = index.done((cell.task.id, cell.arm, cell.seed), fp)
        if record is not None:
            # Another bench on the same store ran this trial meanwhile: use its sample.
            item.stash[STORED_KEY] = record
            item.stash[CLAIMED_KEY] = waited or "another run"
            return {**record, "from_store": True}, None
        sample = run_cell(cell, state.context(), tracker)
        try:
            # Appended by the process that ran the cell, the moment it ends: a crash later
            # in the session cannot lose it.
            SampleStore(state.store_dir).append(sample)
        except StoreError as err:
            # Every further cell would spend its agent run for nothing: stop the run here.
            request.session.shouldstop = f"akmbench: {err}"
            return sample, str(err)
        return sample, None
    finally:
        claim.release()


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


def check_soundness(request: pytest.FixtureRequest, bench_procs: procs.ProcessTracker) -> None:
    """Pass when the task is sound: nop fails, the solution passes, the verifier repeats itself."""
    state: BenchState = request.config.stash[STATE_KEY]
    task = request.node.stash[TASK_KEY]
    work_root = state.tmp_root / state.run_id
    problems = behaviour_problems(task, work_root, bench_procs, timeout_s=state.settings.verify_timeout)
    if problems:
        pytest.fail(f"{task.id}: " + "; ".join(problems), pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
    report = yield
    if STORED_KEY in item.stash:
        report.akmbench_from_store = True
    if CLAIMED_KEY in item.stash and call.when == "teardown":
        report.akmbench_claimed = item.stash[CLAIMED_KEY]
    if call.when == "teardown" and SAMPLE_KEY in item.stash:
        report.akmbench_sample = item.stash[SAMPLE_KEY]
    return report


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    if getattr(report, "akmbench_from_store", False) and report.when == "call":
        if report.passed:
            return "passed", "p", ("PASSED (from store)", {"green": True})
        if report.failed:
            return "failed", "f", ("FAILED (from store)", {"red": True})
    return None
