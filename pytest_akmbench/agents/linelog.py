"""What every agent's live parser keeps the same way: the lines it is fed appended to the
transcript up to a cap (whole lines only; past the cap it stops writing, keeps parsing and
records a warning), never keeping the transcript in memory; when the last line came, so the
watch can tell a hung agent from a busy one (agents/watching.py); and the akm calls found in the
agent's shell commands.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any, Protocol

TRANSCRIPT_CAP = 16 * 1024 * 1024
TOKEN_KEYS = ("input", "output", "reasoning", "cache_read", "cache_write", "total")


class AkmCall(Protocol):
    """One akm invocation of a shell command (cell/akm_calls.py ``Call``)."""

    @property
    def verb(self) -> str: ...

    @property
    def query(self) -> str | None: ...

    @property
    def ref(self) -> str | None: ...

    @property
    def polarity(self) -> str | None: ...


def empty_akm_usage() -> dict[str, list[Any]]:
    return {"searches": [], "shows": [], "feedback": []}


def note_akm(akm: dict[str, list[Any]], found: Iterable[AkmCall]) -> None:
    """Add a command's akm calls to a run's akm usage: searches, shows and feedback."""
    for call in found:
        if call.verb == "search":
            akm["searches"].append({"query": call.query})
        elif call.verb == "show" and call.ref:
            akm["shows"].append(call.ref)
        elif call.verb == "feedback" and call.ref:
            akm["feedback"].append({"ref": call.ref, "polarity": call.polarity})


class LineLog:
    """The transcript and the clock of a live parser; its ``feed`` holds ``_lock`` while it
    writes a line and parses it (one feeding thread, any number of readers)."""

    def __init__(self, transcript: Path | None, cap: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._cap = cap
        self._file: IO[bytes] | None = None
        if transcript is not None:
            transcript.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(transcript, "wb")  # noqa: SIM115 - closed in close()
        self.bytes_written = 0
        self.truncated = False
        self.started_at = clock()
        self.last_event_at: float | None = None
        self.warnings: list[str] = []

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def _write(self, raw: bytes) -> None:
        if self._file is None or self.truncated or not raw:
            return
        if self.bytes_written + len(raw) > self._cap:
            self.truncated = True
            self.warnings.append(f"transcript truncated at {self._cap} bytes")
            return
        self._file.write(raw)
        self._file.flush()
        self.bytes_written += len(raw)

    def idle_for(self, now: float | None = None) -> float:
        """Seconds since the last line (or since the stream was created)."""
        now = self._clock() if now is None else now
        with self._lock:
            last = self.last_event_at if self.last_event_at is not None else self.started_at
        return max(0.0, now - last)
