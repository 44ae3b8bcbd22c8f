"""Making sure no process of a cell outlives it: this process as a child subreaper, and the
sweep that kills every orphan re-parented onto it and every process carrying a cell's marker
(the agent's page in docs/, "Processes"). Linux only: it reads /proc and uses prctl."""

from __future__ import annotations

import ctypes
import os
import signal
import time
from collections.abc import Collection, Sequence

from .proctable import all_pids, has_marker, proc_info, read_proc, stat_fields

# Inherited by everything a cell starts. Its name and value avoid the letters "akm": the
# control arm's agent can read its environment and must find no hint of the tool.
MARKER = "BENCH_CELL_MARK"
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_PDEATHSIG = 1
_SUBREAPER: list[int] = []  # pids of processes made subreaper (fork-safe: compared to getpid)


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


def foreign_children() -> set[int] | None:
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
            kids.update(int(k) for k in read_proc(f"/proc/{me}/task/{tid}/children", 1 << 20).split())
    except OSError:
        return None
    my_sid = os.getsid(0)
    return {k for k in kids if (info := proc_info(k)) is not None and info.sid != my_sid}


def reap_dead_orphans(keep: Collection[int] = ()) -> None:
    """Reap children re-parented onto us from another session that died on their own
    (``foreign_children`` skips zombies), e.g. a sandbox's inner bwrap: the outer one exits
    first, whether stopped or done. ``keep``: pids whose owner waits for them itself."""
    me = os.getpid()
    if me not in _SUBREAPER:
        return
    my_sid = os.getsid(0)
    try:
        kids = {
            int(k)
            for tid in os.listdir(f"/proc/{me}/task")
            for k in read_proc(f"/proc/{me}/task/{tid}/children", 1 << 20).split()
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
        reap(dead)
        if not dead or time.monotonic() > deadline:
            break
        time.sleep(0.01)


def signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def reap(pids: set[int]) -> None:
    # Collect the zombies of orphans re-parented onto us; only those, so that children
    # owned by someone else in this process (xdist's workers) are left to their owner.
    for pid in list(pids):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            pids.discard(pid)


def reap_orphan_zombies(protected: set[int], my_sid: int) -> int:
    """Reap zombies re-parented onto us from another session (grandchildren whose parent died
    in the same sweep were not ours when we looked, so ``reap(adopted)`` misses them)."""
    me = os.getpid()
    reaped = 0
    for pid in all_pids():
        if pid in protected:
            continue
        try:
            raw = read_proc(f"/proc/{pid}/stat").decode("utf-8", "replace")
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
        for pid in all_pids():
            if pid in protected:
                continue
            info = proc_info(pid)
            if info is None:
                continue
            orphan = orphans and info.ppid == me and info.sid != my_sid
            if orphan or (info.start >= since and has_marker(pid, token, exact=exact)):
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
                signal_group(target, signal.SIGKILL)
            killed += 1
        time.sleep(0.05)
        reap(adopted)
    deadline = time.monotonic() + 1.0
    while adopted and time.monotonic() < deadline:
        time.sleep(0.02)
        reap(adopted)
    if orphans and killed:
        time.sleep(0.05)
        reap_orphan_zombies(protected, my_sid)
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
    for pid in all_pids():
        info = proc_info(pid)
        if info is not None and info.pid != os.getpid() and has_marker(pid, token, exact=False):
            groups.add(info.pgid)
    for pgid in groups:
        signal_group(pgid, sig)
    return len(groups)
