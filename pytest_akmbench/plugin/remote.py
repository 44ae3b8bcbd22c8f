"""Remote xdist workers (``--tx ssh=…``, ``--tx socket=…``, ``--tx popen//chdir=…``).

A worker in another directory or on another host cannot reach the controller's store, so for
such a worker the controller does what a local ``-n`` worker does itself (README, "Beyond one
machine"): it takes the trial's claim before the cell runs, and appends the sample (with the
transcript files the worker sends along) when the first report carrying it arrives, one
fsync'd record per cell. Local ``-n`` workers keep claiming and appending themselves: they hold
the claim from the store check to the append in one process, and a controller crash then loses
nothing a worker finished.

The two sides talk over one execnet channel per remote worker, made by the controller and sent
in ``workerinput``: the worker's hello (its corpus and fixture hashes, agent and akm versions,
refused with one line naming the gateway on a mismatch), a claim before each cell, and from the
controller an interrupt (``kill`` and Ctrl-C reach remote cells through it).
"""

from __future__ import annotations

import base64
import os
import queue
import shutil
import signal
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..cell.trial import Ended, Held, StorePlace, append, cannot_claim
from ..corpus.hashes import fixtures_stamp, task_corpus_hash
from ..errors import StoreError
from ..records import CellKey, Sample
from ..run.resume import StoredSamples
from ..system import lifecycle, procs
from ..tracks.track import REMOTE
from . import internals
from .caps import PLUGIN as CAPS_PLUGIN
from .caps import SpendCaps
from .state import register

if TYPE_CHECKING:
    from .state import BenchState

CHANNEL = "akmbench_channel"
EXPECT = "akmbench_expect"
FILES_KEY = pytest.StashKey[dict[str, str]]()
STAGING = "outbox"  # a remote worker's transcripts, under its own run dir, until sent


def is_remote(spec: Any) -> bool:
    """A worker xdist starts elsewhere: not a plain local popen (execnet's own distinction)."""
    return not getattr(spec, "popen", False) or bool(getattr(spec, "chdir", None))


def expectations(state: BenchState) -> dict[str, Any]:
    """What every worker's corpus and tools must match: the values a report stamps."""
    return {
        "taskCorpusHash": task_corpus_hash(state.tasks),
        "fixtureContentHash": fixtures_stamp(state.tasks, state.settings.stashes_root)[1],
        "agent": f"{state.agent.name} {state.agent.version}",
        "akm": state.akm.version if state.akm is not None else None,
        # What else a sample's fingerprint holds: a worker with another run config's budgets
        # or model would store samples the controller's report never counts.
        "settings": _settings(state),
    }


def _settings(state: BenchState) -> str:
    s = state.settings
    parts = [
        f"model {state.model}",
        f"budgets {s.budget_tokens} tokens/{s.budget_wall_ms} ms/{s.budget_turns} turns",
        f"verify timeout {s.verify_timeout:g} s",
        f"sandbox {state.sandbox}",
    ]
    return ", ".join(parts)


def mismatch(expected: dict[str, Any], found: dict[str, Any], where: str) -> str | None:
    """The one line refusing a worker whose corpus, fixtures or tools differ, else None."""
    fixes = {
        "taskCorpusHash": "its corpus tasks differ from the controller's; copy the same corpus there",
        "fixtureContentHash": "its fixture stashes differ from the controller's; copy the same stashes there",
        "agent": "its agent version differs from the controller's; install the same one there",
        "akm": "its akm version differs from the controller's; install the same one there",
        "settings": "its run settings differ from the controller's; give it the same run config and options",
    }
    for key, fix in fixes.items():
        there, here = found.get(key), expected.get(key)
        if there != here:
            if key.endswith("Hash"):
                there, here = str(there)[:12], str(here)[:12]
            return f"akmbench: worker {where}: {fix} ({key} {there} there, {here} here)"
    return None


class RemoteHub:
    """The controller's side: hello, claims and appends for every remote worker."""

    def __init__(self, state: BenchState) -> None:
        self.state = state
        self.expect: dict[str, Any] | None = None
        self.channels: dict[str, Any] = {}
        self.refused: dict[str, str] = {}
        self.claims: dict[str, tuple[str, Held]] = {}  # node id -> (worker, claim)
        self.appended: set[str] = set()
        self.lock = threading.Lock()
        self.error: str | None = None
        self._initial: Any = None
        self.session: pytest.Session | None = None
        self._restore: Callable[[], None] | None = None
        self.caps: SpendCaps | None = None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session
        caps = session.config.pluginmanager.get_plugin(CAPS_PLUGIN)
        self.caps = caps if isinstance(caps, SpendCaps) else None

    def _capped(self) -> str | None:
        """The spend cap's skip reason once this run reached it: a remote worker cannot read the
        store, so the controller checks for it, as a local worker does itself (plugin/caps.py)."""
        if self.caps is None:
            return None
        with self.lock:
            index = self.state.stored()
            index.refresh()
            return self.caps.reason(index.of_run(self.state.run_id))

    def pytest_xdist_setupnodes(self, config: pytest.Config, specs: list[Any]) -> None:
        if not any(is_remote(s) for s in specs):
            return
        # xdist rewrites a path argument for a remote worker against an rsync root (a copy it
        # would make itself), and refuses one outside every root. A bench's project is copied to
        # each host beforehand, so a relative path means the same there: pass the args as given.
        self._restore = internals.keep_remote_args()

    def pytest_configure_node(self, node: Any) -> None:
        spec = node.gateway.spec
        if not is_remote(spec):
            return
        if self.expect is None:
            self.expect = expectations(self.state)
            # The store as the run found it: a trial done there is reported, never claimed.
            load = StoredSamples.after_now if self.state.settings.fresh else StoredSamples.load
            self._initial = load(self.state.store_dir)
        wid = node.workerinput["workerid"]
        channel = node.gateway.newchannel()
        self.channels[wid] = channel
        # xdist prefixes every spec with its execution model; the user typed what follows it.
        where = f"{wid} ({str(spec).removeprefix('execmodel=main_thread_only//')})"
        channel.setcallback(lambda msg: self._receive(wid, where, channel, msg))
        node.workerinput[CHANNEL] = channel
        node.workerinput[EXPECT] = self.expect

    def _receive(self, wid: str, where: str, channel: Any, msg: Any) -> None:
        kind, body = msg
        if kind == "hello":
            assert self.expect is not None
            host = f"{where} on {body['host']}:{body['cwd']}"
            line = mismatch(self.expect, body["found"], host)
            if line is not None:
                self.refused[wid] = line
            channel.send(("refuse", line) if line else ("ok", None))
        elif kind == "claim":
            # A claim may wait minutes for another bench: never in execnet's receiver thread.
            threading.Thread(target=self._claim, args=(wid, channel, body), daemon=True).start()

    def _claim(self, wid: str, channel: Any, body: dict[str, Any]) -> None:
        try:
            reply = self._answer(wid, body)
        except (OSError, StoreError) as err:  # the store's index or the cap could not be read
            reply = ("error", cannot_claim(self.state.store_dir, err))
        channel.send(reply)

    def _answer(self, wid: str, body: dict[str, Any]) -> tuple[str, Any]:
        """A remote cell's claim, taken here as a local cell takes its own (cell/trial.py)."""
        state = self.state
        trial = (body["task"], body["arm"], body["seed"])
        if lifecycle.is_interrupted(state.run_dir):
            return "stop", None
        if self.error is not None:
            # A sample the store refused: every further cell would spend its agent run for nothing.
            return "error", self.error
        record = self._initial.done(trial, body["fp"])
        if record is not None:
            return "stored", record
        capped = self._capped()
        if capped is not None:
            return "capped", capped  # the worker skips the cell with this reason
        owner = f"run {state.run_id} (pid {os.getpid()}, worker {wid})"
        held = StorePlace(state.store_dir, state.stored(), owner, lock=self.lock).claim(trial, body["fp"])
        if isinstance(held, Ended):
            if held.error is not None:
                return "error", held.error
            return "claimed", {"record": held.record, "by": held.claimed_by}
        with self.lock:
            self.claims[body["nodeid"]] = (wid, held)
        return "go", None

    def pytest_testnodeready(self, node: Any) -> None:
        line = self.refused.get(node.workerinput["workerid"])
        if line is not None:
            pytest.exit(line, returncode=pytest.ExitCode.USAGE_ERROR)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Store a remote cell's fresh sample: before the session counts it, once per cell."""
        sample = getattr(report, "akmbench_sample", None)
        node = getattr(report, "node", None)
        if sample is None or sample.get("from_store") or node is None or not is_remote(node.gateway.spec):
            return
        if report.nodeid in self.appended:
            return
        self.appended.add(report.nodeid)
        state = self.state
        if state.interrupts is not None:
            state.interrupts.hold()  # released once the cell has reported: see InterruptHooks
        files = {rel: base64.b64decode(data) for rel, data in (getattr(report, "akmbench_files", None) or {}).items()}
        try:
            error = append(state.store_dir, sample, files)
        finally:
            self._release(report.nodeid)
        if error is not None:
            self.error = f"akmbench: {error}"
            if self.session is not None:
                self.session.shouldstop = self.error

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        self._release(nodeid)  # a cell that ended without a sample (interrupted) frees its trial

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        wid = node.workerinput["workerid"]
        with self.lock:
            lost = [n for n, (w, _) in self.claims.items() if w == wid]
        for nodeid in lost:
            self._release(nodeid)
        self.channels.pop(wid, None)

    def _release(self, nodeid: str) -> None:
        with self.lock:
            held = self.claims.pop(nodeid, None)
        if held is not None:
            held[1].release()

    def interrupt(self) -> None:
        """Pass an interrupt of the controller on to every remote worker."""
        for channel in list(self.channels.values()):
            try:
                channel.send(("interrupt", None))
            except Exception:  # a worker already gone needs no interrupt
                pass

    def pytest_sessionfinish(self) -> None:
        if self._restore is not None:
            self._restore()
            self._restore = None


class RemoteWorker:
    """A remote worker's side: its hello, a claim through the controller before each cell,
    and the transcript files of each cell staged in its own run dir until they are sent."""

    def __init__(self, state: BenchState, channel: Any, expect: dict[str, Any]) -> None:
        self.state = state
        self.channel = channel
        self.expect = expect
        self.replies: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.refused: str | None = None
        channel.setcallback(self._receive)

    @property
    def staging(self) -> Path:
        return self.state.run_dir / f"{STAGING}-{os.getpid()}"

    def _receive(self, msg: tuple[str, Any]) -> None:
        if msg[0] == "interrupt":
            lifecycle.mark_interrupted(self.state.run_dir)
            os.kill(os.getpid(), signal.SIGINT)
        else:
            self.replies.put(msg)

    def hello(self) -> None:
        """Before the first cell: the controller compares this host's corpus and tools with its own."""
        found = expectations(self.state)
        self.channel.send(("hello", {"found": found, "host": socket.gethostname(), "cwd": os.getcwd()}))
        kind, line = self.replies.get()
        if kind == "refuse":
            self.refused = line

    def place(self, nodeid: str) -> ThroughController:
        """Where this worker's cell ``nodeid`` is claimed and its sample kept: the controller."""
        if self.refused is not None:
            pytest.exit(self.refused, returncode=pytest.ExitCode.USAGE_ERROR)
        return ThroughController(self, nodeid)

    def outbox(self) -> dict[str, str]:
        """The files the cell left in the staging dir (store-relative paths), removed from it."""
        root = self.staging
        files = {}
        for path in sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else ():
            files[path.relative_to(root).as_posix()] = base64.b64encode(path.read_bytes()).decode("ascii")
        shutil.rmtree(root, ignore_errors=True)
        return files

    def finish(self) -> None:
        """This worker's own sweep: the staging dir, and any orphan of its cells on this host."""
        shutil.rmtree(self.staging, ignore_errors=True)
        procs.reap_orphans()


class ThroughController:
    """A remote cell's place (cell/trial.py): the controller claims the trial and appends the
    sample, which travels with the cell's reports, its transcripts with the first one."""

    def __init__(self, worker: RemoteWorker, nodeid: str) -> None:
        self.worker = worker
        self.nodeid = nodeid

    def claim(self, key: CellKey, fp: str, legacy: CellKey | None = None) -> Held | Ended:
        # legacy is evolve's older arm; evolve is not run by remote workers (tracks/track.py)
        body = {"task": key[0], "arm": key[1], "seed": key[2], "fp": fp, "nodeid": self.nodeid}
        self.worker.channel.send(("claim", body))
        kind, reply = self.worker.replies.get()
        if kind == "go":
            return self  # the controller holds the claim until the sample reaches it
        if kind == "claimed":
            return Ended(record=reply["record"], claimed_by=reply["by"])
        if kind == "stored":
            return Ended(record=reply)
        if kind == "capped":
            return Ended(skip=reply)
        return Ended(error=reply) if kind == "error" else Ended(interrupted=True)

    def release(self) -> None:
        """The controller releases the claim once the sample (or the cell's end) reaches it."""

    def append(self, sample: Sample) -> str | None:
        return None


def setup(config: pytest.Config, state: BenchState, controller: bool) -> None:
    """The controller's hub (with xdist), or a remote worker's side and its hello."""
    if controller:
        if config.pluginmanager.hasplugin("xdist"):
            hub = RemoteHub(state)
            register(config, state, hub, "akmbench-remote")
            if state.interrupts is not None:
                state.interrupts.also.append(hub.interrupt)
        return
    workerinput = getattr(config, "workerinput", {})
    if CHANNEL in workerinput:
        state.remote = RemoteWorker(state, workerinput[CHANNEL], workerinput[EXPECT])
        state.remote.hello()


def placed_by_tx(config: pytest.Config, state: BenchState) -> bool:
    """Whether ``--tx`` (without ``-n``) placed the workers. Then a run config's ``parallel`` does
    not replace them, and a run without ``--dist`` steals, as ``--parallel`` does: cells take
    uneven time (xdist would otherwise run everything in the controller)."""
    txs = getattr(config.option, "tx", None) or []
    if not txs or getattr(config.option, "numprocesses", None):
        return False
    specs = {t: t.split("*", 1)[1] if "*" in t else t for t in txs}  # "4*ssh=…" is four of "ssh=…"
    remote = [t for t, spec in specs.items() if "chdir=" in spec or not spec.startswith("popen")]
    # The evolve steps and cells, and soundness checks, write their own store entries where
    # they run (docs/tracks.md): the track says whether it can run remotely (tracks/track.py).
    refusal = state.track.refusal(REMOTE)
    if remote and refusal:
        raise pytest.UsageError(refusal.format(tx=remote[0]))
    if config.option.dist == "no" and not getattr(config.option, "distload", False):
        config.option.dist = "worksteal"
    return True
