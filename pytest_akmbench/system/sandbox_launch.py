"""How a sandbox's first process (system/sandbox_init.py) is started: its code from a sealed
memfd, and the lifeline that ends it with the harness (docs/architecture.md, "Isolation")."""

from __future__ import annotations

import fcntl
import functools
import os
import sys
from pathlib import Path

from . import sandbox_init


@functools.cache
def lifeline() -> int:
    """The read end of this process's lifeline: its write end stays open, unshared, for as long
    as this process lives, so a sandbox holding the read end sees EOF only when we are gone."""
    read_end, _write_end = os.pipe()
    return read_end


@functools.cache
def init_source() -> int:
    """A file descriptor holding sandbox_init's code, read by the sandbox's first process: the
    code is not on every sandboxed process's command line (ps, a test's process matching)."""
    fd = os.memfd_create("akmbench-sandbox-init", os.MFD_ALLOW_SEALING | os.MFD_CLOEXEC)
    os.write(fd, Path(sandbox_init.__file__).read_bytes())
    # Sealed: no process that inherits it (root in the next sandbox before its switch) may run
    # anything but this code.
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
    return fd


def init_argv() -> list[str]:
    fd = init_source()
    return [sys.executable, "-I", "-S", "-c", f"import os;exec(os.pread({fd},1<<20,0))"]
