"""Deleting a finished cell's directories on a thread of its own (benchmarks/README.md, "Where an
item's time goes").

A cell's run dir and its verifier's scratch are deleted after every process of the cell is gone
and its sample is made; nothing reads them again. Deleting them is file-system work (a rmdir and
an unlink per entry) that would otherwise sit between one cell and the next, so a run hands them
to this thread, which deletes them while the next cell's agent or verifier runs. The run waits for
it before it releases its run dir (``close``), so a finished run still leaves nothing behind.
"""

from __future__ import annotations

import queue
import shutil
import threading
from pathlib import Path


class Cleaner:
    """Deletes the directories given to ``remove``, in order, on one daemon thread."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[Path | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def remove(self, path: Path) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="akmbench-cleaner", daemon=True)
                self._thread.start()
        self._queue.put(path)

    def close(self) -> None:
        """Return once every directory given so far is deleted; a later ``remove`` starts anew."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join()

    def _work(self) -> None:
        while (path := self._queue.get()) is not None:
            self._delete(path)

    @staticmethod
    def _delete(path: Path) -> None:
        shutil.rmtree(path, ignore_errors=True)


def remove(path: Path, cleaner: Cleaner | None) -> None:
    """Delete ``path`` now, or hand it to ``cleaner``."""
    if cleaner is None:
        shutil.rmtree(path, ignore_errors=True)
    else:
        cleaner.remove(path)
