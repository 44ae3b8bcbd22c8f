"""The one atomic file writer: a report file, a track's record, appears whole or not at all.

The file is filled under a temporary name beside it, fsync'd, made readable by all (a report
is read by the next CI step, which may run as another user) and renamed over the target.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

FILE_MODE = 0o644


def write(path: Path, fill: Callable[[IO[str]], object]) -> None:
    """Write ``path`` whole or not at all: ``fill`` writes the text into an open file."""
    # fill streams its chunks into the file: a 100k-run envelope never exists as one string.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fill(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, FILE_MODE)  # mkstemp makes it 0600
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text(path: Path, text: str) -> None:
    """``write`` of a text held whole."""
    write(path, lambda fh: fh.write(text))
