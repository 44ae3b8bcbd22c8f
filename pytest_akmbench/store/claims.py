"""One run owns a trial at a time: a claim per trial in the store directory.

Two benches sharing a store (two shells, two CI jobs on one runner) used to run every cell
twice. Now a process about to run a trial takes an exclusive ``flock`` on
``<store>/claims/<hash of the trial>.lock`` and holds it until the sample is appended. A
second bench reaching the same trial waits for the claim, then finds the first bench's
sample in the store and reports it instead of running the trial again; if the first bench
stored none (interrupted, or a harness error), the second runs it. Each process holds at
most one claim, and only while it runs that cell, so two benches can never wait on each
other. Waiting rather than skipping keeps both benches' reports complete.

A released claim's file is unlinked while still locked, so the claims directory is empty
when nothing runs; a waiter that wakes up on an unlinked file simply claims again.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from pathlib import Path

from .jsonl import open_making_parent

CLAIMS_DIR = "claims"


class Claim:
    """An exclusive claim on one trial of a store; ``acquire`` blocks while another holds it."""

    def __init__(self, store_dir: Path, trial: str, owner: str) -> None:
        digest = hashlib.sha256(trial.encode("utf-8")).hexdigest()[:32]
        self.path = Path(store_dir) / CLAIMS_DIR / f"{digest}.lock"
        self.owner = owner
        self._fd = -1

    def acquire(self) -> str | None:
        """Take the claim. Returns who held it if this had to wait for them, else None."""
        waited_for: str | None = None
        while True:
            fd = open_making_parent(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC)
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    waited_for = waited_for or os.pread(fd, 512, 0).decode("utf-8", "replace").strip() or "another run"
                    fcntl.flock(fd, fcntl.LOCK_EX)
                try:
                    same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
                except FileNotFoundError:
                    same = False
            except BaseException:
                os.close(fd)
                raise
            if same:
                break
            os.close(fd)  # the holder released (and unlinked) it while we waited: claim anew
        os.ftruncate(fd, 0)
        os.pwrite(fd, self.owner.encode("utf-8"), 0)
        self._fd = fd
        return waited_for

    def release(self) -> None:
        if self._fd < 0:
            return
        try:
            os.unlink(self.path)
        except OSError:
            pass
        os.close(self._fd)  # closing drops the lock
        self._fd = -1
