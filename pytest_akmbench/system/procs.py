"""Start processes for a cell and make sure none of them outlives it.

An agent may start every tool command with setsid(), so killing the agent's process group
leaves those commands running. Three mechanisms together close that gap (the agent's page in docs/, "Processes"):

1. this process becomes a child subreaper, so orphans of the agent are re-parented to us
   instead of init, and every process we spawn starts in its own session;
2. each spawn carries a marker variable in its environment, inherited by every descendant
   that does not scrub its environment, so a sweep can find them wherever they were
   re-parented (a crashed xdist worker's orphans land on the controller);
3. after SIGTERM, a grace period and SIGKILL to each tracked group, the sweep kills the
   process group of every process that is our orphan or carries the marker, repeating
   until nothing new turns up.

Linux only: it reads /proc and uses prctl.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO

from .proctable import all_pids, has_marker, proc_info, stat_fields, ticks_now
from .reaper import (
    MARKER,
    become_subreaper,
    die_with_parent,
    foreign_children,
    reap_dead_orphans,
    reap_orphans,
    signal_group,
    signal_marked,
    sweep,
)

# The process API of a cell in one place: the pytest layer and the tools reach it as procs.*.
__all__ = [
    "MARKER",
    "ProcessTracker",
    "become_subreaper",
    "die_with_parent",
    "is_executable",
    "reap_dead_orphans",
    "reap_orphans",
    "signal_marked",
    "stat_fields",
    "sweep",
]


DONE_POLL_S = 0.2  # how often ``run`` asks ``done`` about a running command's output


class ProcessTracker:
    """Spawns a cell's processes in new sessions and kills all of them on ``kill_all``.

    The pytest layer creates one per cell in a fixture and registers ``kill_all`` as the
    finalizer right away, so it runs on pass, fail, budget, exception and interrupt.
    """

    def __init__(self, marker_value: str, *, grace_s: float = 3.0) -> None:
        self.marker_value = marker_value
        self.grace_s = grace_s
        self._procs: list[subprocess.Popen[bytes]] = []
        self._since = max(0, ticks_now() - 1)
        self._dirty = False  # spawned anything since the last kill_all?
        # Set by a sandbox while the agent runs (sandbox.Sandbox.applied): rewrites each argv.
        self.wrap: Callable[[list[str], Path, Mapping[str, str]], list[str]] | None = None
        # File descriptors every spawn keeps open (the sandbox's lifeline, sandbox.py).
        self.pass_fds: tuple[int, ...] = ()

    def env_with_marker(self, env: Mapping[str, str]) -> dict[str, str]:
        return {**env, MARKER: self.marker_value}

    def spawn(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        stdin: int | IO[bytes] | None = subprocess.DEVNULL,
        stdout: int | IO[bytes] | None = subprocess.PIPE,
        stderr: int | IO[bytes] | None = subprocess.STDOUT,
    ) -> subprocess.Popen[bytes]:
        """Start ``argv`` in a new session, marked, and remember it for ``kill_all``."""
        self._dirty = True
        proc = subprocess.Popen(
            list(argv) if self.wrap is None else self.wrap(list(argv), cwd, env),
            cwd=cwd,
            env=self.env_with_marker(env),
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
            pass_fds=self.pass_fds,
        )
        self._procs.append(proc)
        return proc

    def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        timeout_s: float,
        output_limit: int = 64 * 1024,
        done: Callable[[str], bool] | None = None,
    ) -> tuple[int | None, str, bool]:
        """Run to completion with a timeout; returns (exit code or None, output tail, timed_out).

        Output (stdout and stderr merged) goes to an unnamed file rather than a pipe, so a
        background child that inherited it cannot keep us waiting after the command exits.
        Only the last ``output_limit`` bytes are kept. ``done``, when given, is asked about the
        output so far while the command runs: once it says the command's work is complete (a
        command that lingers after printing its result), the command is stopped and its exit
        code counts as 0.
        """
        with tempfile.TemporaryFile() as out:
            proc = self.spawn(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
            if done is None:
                completed, timed_out = False, self._wait_bounded(proc, timeout_s)
            else:
                completed, timed_out = self._wait_watching(proc, out, done, timeout_s)
            self.stop(proc)  # background children of a finished command die with it
            size = out.seek(0, os.SEEK_END)
            out.seek(max(0, size - output_limit))
            text = out.read().decode("utf-8", "replace")
        return (0 if completed else None if timed_out else proc.returncode), text, timed_out

    def _wait_bounded(self, proc: subprocess.Popen[bytes], timeout_s: float) -> bool:
        """Wait for ``proc``; at ``timeout_s`` SIGTERM its group, after the grace SIGKILL it.
        True when the timeout struck. A blocking wait on the process's pidfd returns the moment
        it exits, with no timer thread per command (benchmarks/README.md, "Where an item's time
        goes"); Popen.wait(timeout) would poll with growing sleeps instead."""
        try:
            pidfd = os.pidfd_open(proc.pid)
        except (AttributeError, OSError):  # no pidfd (an old kernel): the timer thread
            return self._wait_watching(proc, None, None, timeout_s)[1]
        try:
            expired = not _exited(pidfd, timeout_s)
            if expired:
                signal_group(proc.pid, signal.SIGTERM)
                if not _exited(pidfd, self.grace_s):
                    signal_group(proc.pid, signal.SIGKILL)
            proc.wait()
        finally:
            os.close(pidfd)
        return expired

    def _wait_watching(
        self, proc: subprocess.Popen[bytes], out: IO[bytes] | None, done: Callable[[str], bool] | None, timeout_s: float
    ) -> tuple[bool, bool]:
        """Wait for ``proc`` under a timer thread, asking ``done`` about its output meanwhile;
        returns (``done`` said complete, the timeout struck)."""
        expired = threading.Event()
        finished = threading.Event()
        timer = threading.Thread(target=self._expire, args=(proc, timeout_s, expired, finished), daemon=True)
        timer.start()
        completed = out is not None and done is not None and _wait_until_done(proc, out, done, expired)
        if completed:
            self.stop(proc)
        proc.wait()
        finished.set()
        timer.join()
        return completed, expired.is_set()

    def _expire(
        self, proc: subprocess.Popen[bytes], timeout_s: float, expired: threading.Event, finished: threading.Event
    ) -> None:
        """Timer of ``run``: at the timeout SIGTERM the group, after the grace SIGKILL it."""
        # A wait past threading.TIMEOUT_MAX raises OverflowError in this thread, and the command
        # would then run unbounded; budgets are bounded far below it (corpus/values.py), but an
        # adapter of a plugin may pass any number.
        if finished.wait(min(timeout_s, threading.TIMEOUT_MAX)):
            return
        expired.set()
        signal_group(proc.pid, signal.SIGTERM)
        if not finished.wait(self.grace_s):
            signal_group(proc.pid, signal.SIGKILL)

    def stop(self, proc: subprocess.Popen[bytes]) -> None:
        """SIGTERM the process's group, wait the grace period, then SIGKILL it.

        The group is signalled by id only while its leader is alive and unreaped: once reaped,
        the id can be reused (pid_max is often 32768) by another cell's process, which must
        not be hit. Members left behind after that are killed only if they carry our marker.
        """
        if proc.poll() is None:
            signal_group(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=self.grace_s)
            except subprocess.TimeoutExpired:
                signal_group(proc.pid, signal.SIGKILL)
                try:
                    proc.wait(timeout=self.grace_s)
                except subprocess.TimeoutExpired:
                    pass
        try:
            os.killpg(proc.pid, 0)
        except (ProcessLookupError, PermissionError):
            return  # the group is empty: nothing of it is left to kill
        token = f"{MARKER}={self.marker_value}".encode()
        for pid in all_pids():
            info = proc_info(pid)
            if (
                info is not None
                and info.pgid == proc.pid
                and info.start >= self._since
                and has_marker(pid, token, exact=True)
            ):
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

    def kill_all(self) -> None:
        """Stop every tracked process, then sweep the orphans and marked stragglers.

        A no-op when nothing was spawned since the last call: everything of ours was already
        dead then, and only a spawn can bring new processes of this cell into being.
        """
        if not self._dirty:
            return
        for proc in self._procs:
            self.stop(proc)
        if foreign_children() != set():
            # Exact: cell "...::akm-s1" must not sweep the processes of "...::akm-s10" next door.
            sweep(self.marker_value, exact=True, since=self._since)
        reap_dead_orphans(keep={p.pid for p in self._procs})
        self._dirty = False
        for proc in self._procs:
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
        self._procs.clear()


def _wait_until_done(
    proc: subprocess.Popen[bytes], out: IO[bytes], done: Callable[[str], bool], expired: threading.Event
) -> bool:
    """Wait for ``proc`` to exit or its output to satisfy ``done`` (then True). The output is
    read with ``pread``: the file offset is shared with the child, which is still writing."""
    seen = -1
    while not expired.is_set():
        try:
            proc.wait(timeout=DONE_POLL_S)
            return False
        except subprocess.TimeoutExpired:
            pass
        size = os.fstat(out.fileno()).st_size
        if size != seen:
            seen = size
            if done(os.pread(out.fileno(), size, 0).decode("utf-8", "replace")):
                return True
    return False


def _exited(pidfd: int, timeout_s: float) -> bool:
    """Whether the process behind ``pidfd`` exits within ``timeout_s`` (poll's bound is an int of ms)."""
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    return bool(poller.poll(min(max(timeout_s, 0.0) * 1000, 2**31 - 1)))


def is_executable(path: Path) -> bool:
    """A regular file this user may execute."""
    return path.is_file() and os.access(path, os.X_OK)
