"""Checks before the first cell: every place a run writes to must take writes.

A cell costs an agent run (minutes, real money); finding out at its end that the store is
read-only, the disk full or the report directory a file would throw that away, and finding
out after the last cell would lose the report. Each check raises a one-line ConfigError
naming the path, the option that set it and the fix.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ..errors import ConfigError
from .samples import LOCK_FILE, STORE_FILE, TRANSCRIPTS_DIR

# Written and removed again, to prove there is room: a sample line with its transcript, a
# report, a cell's workspace copy.
STORE_PROBE = 256 * 1024
REPORT_PROBE = 64 * 1024
TMP_PROBE = 1024 * 1024


def _fail(path: Path, option: str, why: str) -> ConfigError:
    return ConfigError(f"{path}: {why}; fix it or pass {option} DIR", usage=True)


def writable_dir(path: Path, option: str, *, probe: int, private: bool = False) -> None:
    """Create ``path`` if needed and prove a ``probe``-byte file can be written in it."""
    try:
        path.mkdir(mode=0o700 if private else 0o777, parents=True, exist_ok=True)
    except FileExistsError:
        raise _fail(path, option, "exists and is not a directory") from None
    except OSError as err:
        raise _fail(path, option, f"cannot create the directory ({err.strerror or err})") from None
    if not path.is_dir():
        raise _fail(path, option, "exists and is not a directory")
    try:
        fd, name = tempfile.mkstemp(dir=path, prefix=".akmbench-probe-")
    except OSError as err:
        raise _fail(path, option, f"cannot write here ({err.strerror or err})") from None
    try:
        block = b"\0" * min(probe, 65536)
        left = probe
        while left > 0:
            left -= os.write(fd, block[:left])
        os.fsync(fd)
    except OSError as err:
        raise _fail(path, option, f"cannot write here ({err.strerror or err})") from None
    finally:
        os.close(fd)
        try:
            os.unlink(name)
        except OSError:
            pass


def store(directory: Path, option: str = "--bench-store") -> None:
    """The store directory takes writes, and what it already holds is what a store holds."""
    writable_dir(directory, option, probe=STORE_PROBE, private=True)
    for name, want_dir in ((STORE_FILE, False), (LOCK_FILE, False), (TRANSCRIPTS_DIR, True)):
        path = directory / name
        try:
            mode = path.stat().st_mode
        except FileNotFoundError:
            continue
        except OSError as err:
            raise _fail(directory, option, f"cannot read {name} ({err.strerror or err})") from None
        if want_dir != stat.S_ISDIR(mode) or (not want_dir and not stat.S_ISREG(mode)):
            kind = "a directory" if want_dir else "a regular file"
            raise _fail(directory, option, f"{name} is not {kind}; move it away")
        if not want_dir:
            try:
                os.close(os.open(path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC))
            except OSError as err:
                raise _fail(directory, option, f"cannot open {name} for appending ({err.strerror or err})") from None


def step_summary(env: Mapping[str, str]) -> None:
    """``$GITHUB_STEP_SUMMARY``, when set, must be a file the summary can be appended to."""
    target = env.get("GITHUB_STEP_SUMMARY")
    if not target:
        return
    try:
        with open(target, "a", encoding="utf-8"):
            pass
    except OSError as err:
        raise ConfigError(
            f"{target}: GITHUB_STEP_SUMMARY cannot be appended to ({err.strerror or err}); "
            "fix the path or unset GITHUB_STEP_SUMMARY",
            usage=True,
        ) from None
