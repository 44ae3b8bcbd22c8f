"""Hooks that exist only on the controller of a pytest-xdist run."""

from __future__ import annotations

import queue
import time
from typing import TYPE_CHECKING, Any

import pytest

from ...system import procs
from .. import internals
from ..remote import is_remote
from ..startup import PROBES, probes

if TYPE_CHECKING:
    from ..state import BenchState

DRAIN_S = 15.0  # how long an interrupted controller waits for its workers' last reports
PROBE_S = 30.0  # how long the controller waits for a worker's Python to say what it can import
# Run by execnet in the worker's interpreter before xdist starts pytest there: execnet needs no
# package on that side, so this works where `import _pytest` would crash the worker.
_PACKAGES = """
import importlib.util, sys
names = ("pytest", "xdist", "pytest_akmbench")
channel.send((sys.executable, [n for n in names if importlib.util.find_spec(n) is None]))
"""
_PIP_NAMES = {"pytest": "pytest", "xdist": "pytest-xdist", "pytest_akmbench": "pytest-akmbench"}


def lacking(node: Any) -> str | None:
    """The one line stopping the run when the worker's Python cannot import the packages a
    worker runs (README, "Beyond one machine"), else None; None too when it cannot be asked."""
    spec = node.gateway.spec
    try:
        channel = node.gateway.remote_exec(_PACKAGES)
        executable, missing = channel.receive(timeout=PROBE_S)
    except Exception:  # an interpreter too old for the probe: xdist's own start says what is wrong
        return None
    if not missing:
        return None
    where = str(spec).removeprefix("execmodel=main_thread_only//")
    python = getattr(spec, "python", None) or executable
    need = " ".join(dict.fromkeys(_PIP_NAMES[m] for m in ["pytest_akmbench", *missing]))
    what = "pytest-akmbench" if "pytest_akmbench" in missing else "what pytest-akmbench needs"
    return (
        f"akmbench: worker {node.gateway.id} ({where}): its Python {executable} lacks {what} "
        f"(cannot import {', '.join(missing)}); install it there with that Python (`{python} -m pip install "
        f"{need}`, or your checkout of pytest-akmbench), or name a Python that has it in python="
    )


class XdistHooks:
    """Hand the run id (and a local worker the controller's probes) to every worker, learn the
    selected cells, reap a crashed worker's cells at once, and hear every report the workers send
    after an interrupt."""

    def __init__(self, state: BenchState) -> None:
        self.state = state
        self.nodes: set[Any] = set()
        self.started: set[str] = set()  # the workers that became ready, by gateway id

    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_setupnodes(self, config: pytest.Config, specs: Any) -> None:
        """xdist says its workers' status when it starts them and again once they have collected;
        off a terminal under -q both are "bringing up nodes...", printed twice. Say a line once."""
        if config.get_verbosity() < 0:
            internals.status_once(config)

    def pytest_configure_node(self, node: Any) -> None:
        spec = node.gateway.spec
        if is_remote(spec) or getattr(spec, "python", None):
            line = lacking(node)
            if line is not None:
                # Before xdist starts the worker: one that crashes on `import _pytest` is started
                # again and again (unlimited for --tx without -n), each with a traceback. Raised
                # in the session's start, a usage error is pytest's one `ERROR:` line, exit 4.
                raise pytest.UsageError(line)
        node.workerinput["akmbench_run_id"] = self.state.run_id
        if not is_remote(spec):
            node.workerinput[PROBES] = probes(self.state)

    def pytest_testnodeready(self, node: Any) -> None:
        self.nodes.add(node)
        self.started.add(node.gateway.id)

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        # Under xdist the controller collects nothing; the workers' item ids say which
        # cells were selected, so the report can tell a finished run from an interrupted one.
        session = node.config.pluginmanager.get_plugin("akmbench-session")
        if session is not None:
            session.add_node_ids(ids)
        progress = node.config.pluginmanager.get_plugin("akmbench-progress")
        if progress is not None:  # every worker collects the whole selection
            progress.set_total(len(ids))

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        if error is not None and node.gateway.id not in self.started:
            # A worker that crashed while starting crashes alike when xdist starts its
            # replacement (without -n, forever): stop at the first, saying why.
            lines = [line.strip() for line in str(error).splitlines() if line.strip()]
            # The error itself, not the traceback's last frame or pytest's "rootdir:" tail.
            last = [line for line in lines if "error" in line.lower()][-1:] or lines[-1:] or ["no error text"]
            where = str(node.gateway.spec).removeprefix("execmodel=main_thread_only//")
            pytest.exit(
                f"akmbench: worker {node.gateway.id} ({where}) crashed while starting: {last[0]}; each worker "
                "needs what a local run needs (pytest-akmbench, pytest-xdist, the same project there)",
                returncode=pytest.ExitCode.USAGE_ERROR,
            )
        self.nodes.discard(node)
        # A crashed worker's cell processes are re-parented onto the controller (a subreaper):
        # kill them now, not at session end, or its agent goes on spending for minutes. Live
        # workers' cells are their own workers' children, never ours.
        if error is not None:
            procs.reap_orphans()

    def pytest_handlecrashitem(self, crashitem: str, report: Any, sched: Any) -> None:
        procs.sweep(f"{self.state.run_id}/{crashitem}", exact=True)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """On Ctrl-C the controller leaves xdist's event loop at once, while its workers (which
        it interrupted too) may still report a cell that finished just then. Before xdist tears
        them down, log what they send until each has finished, so the terminal's counts equal
        the store's."""
        if exitstatus != pytest.ExitCode.INTERRUPTED:
            return
        events = internals.controller_events(session.config)
        if events is None:
            return
        waiting = set(self.nodes)
        deadline = time.monotonic() + DRAIN_S
        while waiting and time.monotonic() < deadline:
            try:
                name, kwargs = events.get(timeout=0.1)
            except queue.Empty:
                continue
            if name == "testreport":
                kwargs["rep"].node = kwargs["node"]  # as xdist sets it: a remote cell's sample is stored by it
                session.config.hook.pytest_runtest_logreport(report=kwargs["rep"])
            elif name in ("workerfinished", "errordown"):
                waiting.discard(kwargs.get("node"))
