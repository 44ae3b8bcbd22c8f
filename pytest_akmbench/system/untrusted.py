"""Reading files an agent could have replaced: its run dir after it ran, a verifier's output.

The harness reads some files from places a sandboxed process could write (an agent's stderr
log, akm's event log, pytest's report). Read naively, a planted symbolic link would make the
harness, which may run as root, copy any host file into a sample or the store. So each read
here takes only a regular file that is not a link, whose real path stays under the directory
the caller trusts it to be in, and at most ``limit`` bytes of it. The writers are dead by then
(the cell's processes are killed first), so what is checked is what is read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def read_inside(path: Path, root: Path, *, limit: int, tail: bool = False) -> bytes | None:
    """The first (``tail``: last) ``limit`` bytes of ``path``, or None unless it is a regular
    file, not a link, inside ``root``."""
    try:
        parent = path.parent.resolve(strict=True)
        if not parent.is_relative_to(root.resolve(strict=True)):
            return None
        fd = os.open(parent / path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, RuntimeError):
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        if tail and info.st_size > limit:
            os.lseek(fd, info.st_size - limit, os.SEEK_SET)
        chunks: list[bytes] = []
        left = limit
        while left > 0:
            data = os.read(fd, min(left, 1 << 20))
            if not data:
                break
            chunks.append(data)
            left -= len(data)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)
