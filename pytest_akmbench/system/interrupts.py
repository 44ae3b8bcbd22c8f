"""Ctrl-C and SIGTERM for every process of a bench run.

* SIGTERM behaves like Ctrl-C, so finalizers kill the cells; a second signal force-exits at
  once, after SIGKILL to every process of the run.
* The controller passes an interrupt on to its xdist workers and marks the run interrupted,
  so no worker starts another cell after a Ctrl-C sent to the controller alone (before, the
  terminal counted fewer cells than the store and report held). A terminal Ctrl-C reaches a
  worker twice (from the terminal, and from the controller): a worker takes a second signal
  within a couple of seconds as the same interrupt.
* Between appending a sample and reporting it, an interrupt waits (:meth:`Interrupts.hold`
  and :meth:`Interrupts.release`): a sample in the store is always one the session counted.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import lifecycle, procs

_SAME_INTERRUPT_S = 2.0


class Interrupts:
    def __init__(self, run_id: str, run_dir: Path, *, controller: bool) -> None:
        self.run_id = run_id
        self.run_dir = run_dir
        self.controller = controller
        self._hits: list[float] = []
        self._held = False
        self._pending: int | None = None
        self._previous: dict[int, Any] = {}
        self.also: list[Callable[[], None]] = []  # the controller's other ways to reach workers (remote ones)

    def install(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                self._previous[sig] = signal.signal(sig, self._handler)
            except ValueError:  # not the main thread (e.g. an embedding runner)
                pass

    def restore(self) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous.clear()

    def hold(self) -> None:
        """From now on an interrupt waits for :meth:`release`."""
        self._held = True

    def release(self) -> None:
        """End a :meth:`hold`; an interrupt that arrived meanwhile takes effect now."""
        self._held = False
        if self._pending is not None:
            signum, self._pending = self._pending, None
            raise KeyboardInterrupt(f"signal {signum}")

    def drop(self) -> bool:
        """End a :meth:`hold` without raising; whether an interrupt arrived meanwhile."""
        self._held = False
        pending, self._pending = self._pending, None
        return pending is not None

    def _handler(self, signum: int, frame: Any) -> None:
        now = time.monotonic()
        if self._hits and not self.controller and now - self._hits[0] < _SAME_INTERRUPT_S:
            return
        self._hits.append(now)
        if len(self._hits) > 1:
            if self.controller:
                lifecycle.signal_workers(self.run_dir, signal.SIGKILL)
            procs.signal_marked(self.run_id + "/", signal.SIGKILL)
            os._exit(128 + signum)
        if self.controller:
            lifecycle.mark_interrupted(self.run_dir)
            lifecycle.signal_workers(self.run_dir, signal.SIGINT)
            for tell in self.also:
                tell()
        if self._held:
            self._pending = signum
            return
        raise KeyboardInterrupt(f"signal {signum}")
