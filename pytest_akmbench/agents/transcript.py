"""What an agent's transcript says, in terms no agent owns: its tool calls as :class:`ToolEvent`
and the other times it records as :class:`Moment`.

Each agent reads its own transcript format (``Agent.read_transcript``, in the agent's own
package); the trajectory, the workflow trace, akm's evidence and the
shell reader (``cell/``) see only these events, so a new agent gets them by writing a reader
(docs/architecture.md, "Where to add"). The JSON-lines helpers here serve any reader of a
JSON-lines transcript: streamed line by line with a per-line cap, never read whole.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

ToolKind = Literal["run-shell", "read", "write", "edit", "other"]
LINE_CAP = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ToolEvent:
    """One tool call of the agent. ``tool`` is the agent's own name for the tool, kept as the
    record's ``tool`` of a workspace write; everything else is judged by ``kind``."""

    kind: ToolKind
    tool: str | None
    command: str | None = None  # run-shell: the command line as the agent gave it
    path: str | None = None  # read, write, edit: the file as the agent named it
    output: str = ""
    start_ms: int | None = None  # epoch ms
    end_ms: int | None = None
    finished: bool = False  # the tool ran to its end (not refused, not cut off)
    exit: int | None = None  # a shell command's exit status, when the agent reports one

    @property
    def ok(self) -> bool:
        """The call finished and, when it has an exit status, exited 0."""
        return self.finished and self.exit in (None, 0)


@dataclass(frozen=True, slots=True)
class Moment:
    """A time the transcript records (a step, a message, a tool call's event): the earliest
    anchors the ``time_to_*`` figures when the agent's start is unknown."""

    t_ms: int


TranscriptItem = ToolEvent | Moment
# An agent's transcript reader: the items of the file, in the order the agent wrote them. It may
# raise OSError (the file cannot be read); anything malformed in it is skipped, never raised.
TranscriptReader = Callable[[Path], Iterable[TranscriptItem]]


def no_transcript(path: Path) -> Iterator[TranscriptItem]:
    """The reader of an agent that writes no transcript: nothing was seen."""
    return iter(())


def iter_json_lines(path: Path, cap: int = LINE_CAP) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSON-lines file, streamed; lines longer than ``cap`` are skipped."""
    with open(path, "rb") as fh:
        while True:
            line = fh.readline(cap + 1)
            if not line:
                return
            if len(line) > cap and not line.endswith(b"\n"):
                while (rest := fh.readline(cap)) and not rest.endswith(b"\n"):
                    pass  # drain an over-long line without holding it
                continue
            try:
                obj = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue
            if isinstance(obj, dict):
                yield obj


def json_int(value: Any) -> int | None:
    """A JSON number as an int (not a boolean), or None."""
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def json_dict(value: Any) -> dict[str, Any]:
    """A JSON value that should be an object; anything else reads as an empty one."""
    return value if isinstance(value, dict) else {}


def json_str(value: Any) -> str | None:
    """A JSON string, or None."""
    return value if isinstance(value, str) else None
