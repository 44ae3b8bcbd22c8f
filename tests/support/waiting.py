"""Waiting for a condition with a deadline, and interrupting a run once it holds.

Every wait in the tests goes through ``wait_until``: it fails naming what it waited for (with the
run's output when the run ended first) instead of sleeping a fixed time against a short limit.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from typing import Any


def wait_until(
    cond: Callable[[], Any],
    what: str,
    *,
    timeout: float = 60,
    proc: subprocess.Popen[Any] | None = None,
    every: float = 0.05,
) -> None:
    """Poll ``cond`` until it is true; fail after ``timeout`` seconds, or as soon as ``proc`` ends."""
    deadline = time.monotonic() + timeout
    while not cond():
        if proc is not None and proc.poll() is not None:
            if cond():  # it came true as the run ended
                return
            raise AssertionError(f"the run ended (exit {proc.returncode}) before {what}:\n{output(proc)}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting until {what}")
        time.sleep(every)


def settle(cond: Callable[[], Any], *, within: float) -> None:
    """Poll until ``cond`` is true or ``within`` seconds pass, without failing (the caller asserts)."""
    deadline = time.monotonic() + within
    while not cond() and time.monotonic() < deadline:
        time.sleep(0.1)


def interrupt_when(
    proc: subprocess.Popen[Any],
    cond: Callable[[], Any],
    what: str,
    *,
    timeout: float = 60,
    sig: int = signal.SIGINT,
) -> str:
    """Once ``cond`` holds, send ``sig`` to ``proc`` and wait for it to end: its output."""
    wait_until(cond, what, timeout=timeout, proc=proc)
    proc.send_signal(sig)
    return output(proc, timeout=60)


def output(proc: subprocess.Popen[Any], timeout: float = 60) -> str:
    """What ``proc`` wrote (stdout, stderr merged by the caller), once it has ended."""
    out, _ = proc.communicate(timeout=timeout)
    return out.decode(errors="replace") if isinstance(out, bytes) else (out or "")
