"""What a sandboxed process sees of the machine: the read-only system (with what other users
may not read masked), the harness's Python, and the files a tool needs to run (docs/architecture.md,
"Isolation")."""

from __future__ import annotations

import functools
import os
import shutil
import stat
import sys
from collections.abc import Iterable
from pathlib import Path

_SYSTEM = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc")
# Where /etc symlinks may point for name resolution (systemd-resolved, NetworkManager).
_RUN_TARGETS = ("resolv.conf", "hosts", "nsswitch.conf")


@functools.cache
def system_args() -> tuple[tuple[str, ...], tuple[Path, ...]]:
    """bwrap arguments for the read-only system and the roots they make visible."""
    args: list[str] = []
    roots: list[Path] = []
    for name in _SYSTEM:
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
            roots.append(path)
    args += _etc_masks(Path("/etc"))
    for name in _RUN_TARGETS:
        link = Path("/etc") / name
        target = link.resolve() if link.is_symlink() else None
        if target is not None and target.is_file() and target.is_relative_to("/run"):
            args += ["--ro-bind", str(target), str(target)]
    return tuple(args), tuple(roots)


def _etc_masks(etc: Path) -> list[str]:
    """Hide what other users may not read: an empty file or dir is mounted over each."""
    args: list[str] = []
    for dirpath, dirnames, filenames in os.walk(etc):
        for name in list(dirnames):
            full = os.path.join(dirpath, name)
            try:
                mode = os.lstat(full).st_mode
            except OSError:
                continue
            if stat.S_ISDIR(mode) and not mode & stat.S_IROTH:
                args += ["--tmpfs", full]
                dirnames.remove(name)
        for name in filenames:
            full = os.path.join(dirpath, name)
            try:
                mode = os.lstat(full).st_mode
            except OSError:
                continue
            if stat.S_ISREG(mode) and not mode & stat.S_IROTH:
                args += ["--ro-bind", "/dev/null", full]
    return args


def within(path: Path, roots: Iterable[Path]) -> bool:
    """``any(path.is_relative_to(r) for r in roots)`` for absolute paths, compared as strings:
    a cell's start asks it hundreds of times, and ``is_relative_to`` builds a path each time
    (benchmarks/README.md, "Where a cell's time goes")."""
    s = str(path)
    for root in roots:
        r = str(root)
        if s == r or s.startswith(r if r.endswith("/") else r + "/"):
            return True
    return False


def python_paths() -> list[Path]:
    """The prefixes of the Python running the harness (venv and base install)."""
    found: list[Path] = []
    for raw in (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix):
        path = Path(raw)
        for p in (path, path.resolve()):
            if p not in found:
                found.append(p)
    return found


def tool_paths(executable: Path) -> list[Path]:
    """What running ``executable`` needs to see.

    Inside ``node_modules``: its package root (an npm install). A script: its directory
    (a self-contained tool dir such as ``bun`` + bundle + launcher) and the interpreter of its
    ``#!`` line with that interpreter's install prefix. A binary: the file itself. The user's
    home and its parents are never exposed whole.
    """
    path = executable.resolve()
    interp = _shebang(path)
    parts = path.parts
    if "node_modules" in parts:
        i = len(parts) - 1 - parts[::-1].index("node_modules")
        depth = i + 3 if i + 1 < len(parts) and parts[i + 1].startswith("@") else i + 2
        wanted = [(Path(*parts[:depth]), path)]
    else:
        wanted = [(path.parent if interp is not None else path, path)]
    if interp is not None:
        found = interp.resolve()
        prefix = found.parent.parent
        # An interpreter is usually <prefix>/bin/<name>; its prefix holds its libraries.
        wanted.append((prefix if found.parent.name == "bin" and (prefix / "lib").is_dir() else found, found))
    home = Path.home().resolve()
    return [fallback if home.is_relative_to(want) else want for want, fallback in wanted]


def _shebang(path: Path) -> Path | None:
    """The interpreter named by a script's ``#!`` line (``env NAME`` looked up on PATH)."""
    try:
        with open(path, "rb") as fh:
            first = fh.readline(256)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", "replace").split()
    if not words:
        return None
    if Path(words[0]).name == "env":
        names = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        found = shutil.which(names[0]) if names else None
        return Path(found) if found else None
    return Path(words[0])
