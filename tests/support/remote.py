"""Projects for remote-worker runs on one machine: a controller's dir, copies of it elsewhere
(what ``--tx popen//chdir=…`` and ``--tx socket=…//chdir=…`` point at), and execnet's own
socket server started in one of them."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.agents import SLEEPER
from tests.support.bench import samples
from tests.support.corpus import standard_corpus
from tests.support.waiting import settle

SLEEP_AGENT = SLEEPER  # the sleeping agent of tests/support/agents.py


def make_project(base: Path, delays: dict[str, float] | None = None) -> Path:
    """The standard corpus, the sleeping agent, and a store, report and tmp root of its own
    (relative in pytest.ini, so a copy of the project has its own too)."""
    base.mkdir(parents=True, exist_ok=True)
    standard_corpus(base)
    (base / "conftest.py").write_text(SLEEP_AGENT)
    (base / "pytest.ini").write_text(
        "[pytest]\nbench_corpus = corpus/tasks\nbench_stashes = corpus/stashes\n"
        "bench_store = store\nbench_report = report\nbench_tmp = cells\n"
    )
    (base / "delays.json").write_text(json.dumps(delays or {"*": 0}))
    return base


def copy_project(source: Path, target: Path) -> Path:
    """What a user puts on a worker host: the project as it is, without its outputs."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("store", "report", "cells", "agent.log"))
    return target


def bench_argv(*extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pytest",
        "corpus",
        "-p",
        "no:cacheprovider",
        "-v",
        "--bench-agent",
        "sleeper",
        "--bench-seeds",
        "1",
        *extra,
    ]


def agent_log(base: Path) -> list[list[str]]:
    path = base / "agent.log"
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


def records(base: Path) -> list[dict[str, Any]]:
    return samples(base / "store")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class SocketServer:
    """execnet's socket server (``python -m execnet.script.socketserver``) in ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.log = directory.parent / f"socketserver-{self.port}.log"
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-u", "-m", "execnet.script.socketserver", f"127.0.0.1:{self.port}"],
                cwd=directory,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        settle(lambda: self.proc.poll() is not None or self.accepting(), within=20)
        if self.proc.poll() is None and self.accepting():
            return
        self.stop()
        raise RuntimeError(f"execnet's socket server did not start: {self.log.read_text()}")

    def accepting(self) -> bool:
        return "Entering Accept loop" in self.log.read_text()

    @property
    def tx(self) -> str:
        return f"socket=127.0.0.1:{self.port}//chdir={self.directory}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
