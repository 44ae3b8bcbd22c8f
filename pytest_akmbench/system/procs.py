"""Start processes for a cell and make sure none of them outlives it.

opencode starts every tool command with setsid(), so killing the agent's process group
leaves those commands running. Three mechanisms together close that gap (docs/opencode.md, "Processes"):

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

import ctypes
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

# Inherited by everything a cell starts. Its name and value avoid the letters "akm": the
# control arm's agent can read its environment and must find no hint of the tool.
MARKER = "BENCH_CELL_MARK"
_PR_SET_CHILD_SUBREAPER = 36


_SUBREAPER: list[int] = []  # pids of processes made subreaper (fork-safe: compared to getpid)
_PR_SET_PDEATHSIG = 1


def become_subreaper() -> bool:
    """Make orphaned descendants re-parent to this process; False where unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        ok: bool = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False
    if ok:
        _SUBREAPER.append(os.getpid())
    return ok


def die_with_parent(sig: int = signal.SIGTERM) -> bool:
    """Have the kernel send ``sig`` to this process when its parent dies.

    An xdist worker asks for it: if the controller is killed outright (SIGKILL, OOM), the
    worker is interrupted like on Ctrl-C and its cell's processes die with the cell, instead
    of running on with nobody left to reap them.
    """
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        ok: bool = libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False
    if ok and os.getppid() != parent:  # the parent died before the request took effect
        os.kill(os.getpid(), sig)
    return ok


def _foreign_children() -> set[int] | None:
    """Our children in another session (orphans re-parented onto us), or None if unknown.

    While we are a subreaper every surviving descendant of a cell has an ancestor among our
    children, so "no child in another session" proves there is nothing left to sweep, at
    the cost of a few small reads instead of a scan of every process on the machine.
    """
    me = os.getpid()
    if me not in _SUBREAPER:
        return None
    kids: set[int] = set()
    try:
        for tid in os.listdir(f"/proc/{me}/task"):
            kids.update(int(k) for k in _read(f"/proc/{me}/task/{tid}/children", 1 << 20).split())
    except OSError:
        return None
    my_sid = os.getsid(0)
    return {k for k in kids if (info := _proc_info(k)) is not None and info.sid != my_sid}


def reap_dead_orphans(keep: Collection[int] = ()) -> None:
    """Reap children re-parented onto us from another session that died on their own
    (``_foreign_children`` skips zombies), e.g. a sandbox's inner bwrap: the outer one exits
    first, whether stopped or done. ``keep``: pids whose owner waits for them itself."""
    me = os.getpid()
    if me not in _SUBREAPER:
        return
    my_sid = os.getsid(0)
    try:
        kids = {
            int(k)
            for tid in os.listdir(f"/proc/{me}/task")
            for k in _read(f"/proc/{me}/task/{tid}/children", 1 << 20).split()
        }
    except OSError:
        return
    dead = set()
    for pid in kids - set(keep):
        fields = stat_fields(pid)
        if fields is None:
            continue
        if fields[0] == "Z" and int(fields[3]) != my_sid:
            dead.add(pid)
    # A PID namespace's init stays unreapable until the kernel has killed the rest of its
    # namespace: moments, so wait for it here rather than leave a zombie.
    deadline = time.monotonic() + 2.0
    while dead:
        _reap(dead)
        if not dead or time.monotonic() > deadline:
            break
        time.sleep(0.01)


@dataclass(frozen=True, slots=True)
class _ProcInfo:
    pid: int
    ppid: int
    pgid: int
    sid: int
    start: int  # clock ticks after boot


def _read(path: str, limit: int = 4096) -> bytes:
    # os.read rather than Path.read_bytes: a sweep reads every process's files, and the
    # lighter call makes it about three times faster.
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while limit > 0:
            chunk = os.read(fd, min(limit, 65536))
            if not chunk:
                break
            chunks.append(chunk)
            limit -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _proc_info(pid: int) -> _ProcInfo | None:
    fields = stat_fields(pid)
    if fields is None or fields[0] == "Z":
        return None
    return _ProcInfo(pid=pid, ppid=int(fields[1]), pgid=int(fields[2]), sid=int(fields[3]), start=int(fields[19]))


def _ticks_now() -> int:
    """Now, in the clock ticks after boot that /proc/<pid>/stat uses for a start time."""
    with open("/proc/uptime") as fh:
        return int(float(fh.read().split()[0]) * os.sysconf("SC_CLK_TCK"))


def _all_pids() -> Iterator[int]:
    for name in os.listdir("/proc"):
        if name.isdigit():
            yield int(name)


def _has_marker(pid: int, token: bytes, *, exact: bool) -> bool:
    try:
        values = _read(f"/proc/{pid}/environ", 1 << 20).split(b"\0")
    except OSError:
        return False
    return token in values if exact else any(v.startswith(token) for v in values)


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _reap(pids: set[int]) -> None:
    # Collect the zombies of orphans re-parented onto us; only those, so that children
    # owned by someone else in this process (xdist's workers) are left to their owner.
    for pid in list(pids):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            pids.discard(pid)


def _reap_orphan_zombies(protected: set[int], my_sid: int) -> int:
    """Reap zombies re-parented onto us from another session (grandchildren whose parent died
    in the same sweep were not ours when we looked, so ``_reap(adopted)`` misses them)."""
    me = os.getpid()
    reaped = 0
    for pid in _all_pids():
        if pid in protected:
            continue
        try:
            raw = _read(f"/proc/{pid}/stat").decode("utf-8", "replace")
        except OSError:
            continue
        fields = raw[raw.rfind(")") + 2 :].split()
        if fields[0] != "Z" or int(fields[1]) != me or int(fields[3]) == my_sid:
            continue
        try:
            if os.waitpid(pid, os.WNOHANG)[0]:
                reaped += 1
        except ChildProcessError:
            pass
    return reaped


def sweep(
    marker_prefix: str, *, orphans: bool = True, exact: bool = False, since: int = 0, keep: Sequence[int] = ()
) -> int:
    """Kill every process whose ``MARKER`` starts with ``marker_prefix`` (equals it, with
    ``exact``), and (with ``orphans``) every process re-parented onto us from another session.

    ``since`` (clock ticks after boot) skips the environment check of processes started
    earlier, which cannot be the caller's: reading every process's environment is the slow
    part. Returns how many process groups or processes were signalled. ``keep`` lists pids
    never to touch.
    """
    me = os.getpid()
    my_sid = os.getsid(0)
    token = f"{MARKER}={marker_prefix}".encode()
    protected = {me, *keep}
    adopted: set[int] = set()
    killed = 0
    for _ in range(10):
        victims: set[int] = set()
        for pid in _all_pids():
            if pid in protected:
                continue
            info = _proc_info(pid)
            if info is None:
                continue
            orphan = orphans and info.ppid == me and info.sid != my_sid
            if orphan or (info.start >= since and _has_marker(pid, token, exact=exact)):
                if info.ppid == me:
                    adopted.add(pid)
                victims.add(info.pgid if info.pgid not in protected and info.pgid != os.getpgid(0) else -pid)
        if not victims:
            break
        for target in victims:
            if target < 0:
                try:
                    os.kill(-target, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            else:
                _signal_group(target, signal.SIGKILL)
            killed += 1
        time.sleep(0.05)
        _reap(adopted)
    deadline = time.monotonic() + 1.0
    while adopted and time.monotonic() < deadline:
        time.sleep(0.02)
        _reap(adopted)
    if orphans and killed:
        time.sleep(0.05)
        _reap_orphan_zombies(protected, my_sid)
    return killed


def reap_orphans() -> int:
    """Kill every process re-parented onto us from another session (and its group), now.

    The controller of an xdist run calls it when a worker crashes: the worker's cell processes
    become its orphans, and nothing else of ours lives in another session.
    """
    return sweep("", orphans=True, since=1 << 62)


def signal_marked(marker_prefix: str, sig: int) -> int:
    """Send ``sig`` to the process group of every process whose marker starts with the prefix."""
    token = f"{MARKER}={marker_prefix}".encode()
    groups = set()
    for pid in _all_pids():
        info = _proc_info(pid)
        if info is not None and info.pid != os.getpid() and _has_marker(pid, token, exact=False):
            groups.add(info.pgid)
    for pgid in groups:
        _signal_group(pgid, sig)
    return len(groups)


class ProcessTracker:
    """Spawns a cell's processes in new sessions and kills all of them on ``kill_all``.

    The pytest layer creates one per cell in a fixture and registers ``kill_all`` as the
    finalizer right away, so it runs on pass, fail, budget, exception and interrupt.
    """

    def __init__(self, marker_value: str, *, grace_s: float = 3.0) -> None:
        self.marker_value = marker_value
        self.grace_s = grace_s
        self._procs: list[subprocess.Popen[bytes]] = []
        self._since = max(0, _ticks_now() - 1)
        self._dirty = False  # spawned anything since the last kill_all?
        # Set by a sandbox while the agent runs (sandbox.Sandbox.applied): rewrites each argv.
        self.wrap: Callable[[list[str], Path, Mapping[str, str]], list[str]] | None = None

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
    ) -> tuple[int | None, str, bool]:
        """Run to completion with a timeout; returns (exit code or None, output tail, timed_out).

        Output (stdout and stderr merged) goes to an unnamed file rather than a pipe, so a
        background child that inherited it cannot keep us waiting after the command exits.
        Only the last ``output_limit`` bytes are kept.
        """
        with tempfile.TemporaryFile() as out:
            proc = self.spawn(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
            # A blocking wait returns the moment the command exits; Popen.wait(timeout) polls
            # with growing sleeps and made every short command (a verify.sh) ~7 ms slower.
            expired = threading.Event()
            finished = threading.Event()
            timer = threading.Thread(target=self._expire, args=(proc, timeout_s, expired, finished), daemon=True)
            timer.start()
            proc.wait()
            finished.set()
            timer.join()
            timed_out = expired.is_set()
            self.stop(proc)  # background children of a finished command die with it
            size = out.seek(0, os.SEEK_END)
            out.seek(max(0, size - output_limit))
            text = out.read().decode("utf-8", "replace")
        return (None if timed_out else proc.returncode), text, timed_out

    def _expire(
        self, proc: subprocess.Popen[bytes], timeout_s: float, expired: threading.Event, finished: threading.Event
    ) -> None:
        """Timer of ``run``: at the timeout SIGTERM the group, after the grace SIGKILL it."""
        if finished.wait(timeout_s):
            return
        expired.set()
        _signal_group(proc.pid, signal.SIGTERM)
        if not finished.wait(self.grace_s):
            _signal_group(proc.pid, signal.SIGKILL)

    def stop(self, proc: subprocess.Popen[bytes]) -> None:
        """SIGTERM the process's group, wait the grace period, then SIGKILL it.

        The group is signalled by id only while its leader is alive and unreaped: once reaped,
        the id can be reused (pid_max is often 32768) by another cell's process, which must
        not be hit. Members left behind after that are killed only if they carry our marker.
        """
        if proc.poll() is None:
            _signal_group(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=self.grace_s)
            except subprocess.TimeoutExpired:
                _signal_group(proc.pid, signal.SIGKILL)
                try:
                    proc.wait(timeout=self.grace_s)
                except subprocess.TimeoutExpired:
                    pass
        try:
            os.killpg(proc.pid, 0)
        except (ProcessLookupError, PermissionError):
            return  # the group is empty: nothing of it is left to kill
        token = f"{MARKER}={self.marker_value}".encode()
        for pid in _all_pids():
            info = _proc_info(pid)
            if (
                info is not None
                and info.pgid == proc.pid
                and info.start >= self._since
                and _has_marker(pid, token, exact=True)
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
        if _foreign_children() != set():
            # Exact: cell "...::akm-s1" must not sweep the processes of "...::akm-s10" next door.
            sweep(self.marker_value, exact=True, since=self._since)
        reap_dead_orphans(keep={p.pid for p in self._procs})
        self._dirty = False
        for proc in self._procs:
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
        self._procs.clear()


def stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state, ppid, pgrp, session,
    ...), or None when the process is gone. The name may contain spaces and parentheses, so
    the fields resume after the last ``)``."""
    try:
        raw = _read(f"/proc/{pid}/stat").decode("utf-8", "replace")
    except OSError:
        return None
    return raw[raw.rfind(")") + 2 :].split()


def is_executable(path: Path) -> bool:
    """A regular file this user may execute."""
    return path.is_file() and os.access(path, os.X_OK)
