"""The per-cell filesystem sandbox: an agent, and every command it starts, sees only its cell.

Without it a cell's agent runs as the user and can read anything the user can: the task's
solution and verifier, the stash fixtures (so the control arm could read the akm arm's
knowledge), other cells' run dirs, the store and the user's home. With it the agent runs
under bubblewrap (``bwrap``), a small, widely packaged tool built for exactly this (Flatpak's
sandbox), so no namespace code of our own decides what is safe. A cell sees:

* the system read-only: ``/usr``, ``/bin``, ``/sbin``, ``/lib*`` and ``/etc``, except every
  file or directory under ``/etc`` that other users may not read (shadow, ssh host keys,
  private TLS keys, ...), which is masked;
* fresh ``/proc`` (a PID namespace of its own: no other process is visible, so
  ``/proc/<pid>/root`` leads nowhere), minimal ``/dev``, private ``/tmp``;
* its run dir read-write, at the same absolute path as outside (workspace, private HOME, XDG
  dirs and tmp, opencode's config dir, the akm arm's stash copy and index: akm's index records
  the stash path, so no path may change);
* read-only: the Python running the harness (``sys.prefix`` and ``sys.base_prefix``), the
  tools the agent adapter exposes (opencode's package, ripgrep), on the akm arm the akm
  executable's directory (or package root) and its interpreter, and ``--bench-sandbox-ro``
  paths.

Nothing else: no corpus, no store, no other run dir, no user home. The network is the host's
(the scripted model listens on 127.0.0.1, real providers need the internet). When running as
root every capability is dropped inside. Verifiers run outside, after the agent has ended.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .procs import reap_dead_orphans

MODES = ("auto", "bwrap", "none")
INSTALL_HINT = "install bubblewrap (apt-get install bubblewrap) or set AKMBENCH_BWRAP to its path"
_SYSTEM = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc")
# Where /etc symlinks may point for name resolution (systemd-resolved, NetworkManager).
_RUN_TARGETS = ("resolv.conf", "hosts", "nsswitch.conf")


def parse_mode(text: str) -> str:
    mode = str(text).strip().lower()
    if mode not in MODES:
        raise ValueError(f"expected one of {', '.join(MODES)}, got {text!r}")
    return mode


def bwrap_binary() -> str | None:
    """``$AKMBENCH_BWRAP`` (empty or missing file: none), else ``bwrap`` on PATH."""
    explicit = os.environ.get("AKMBENCH_BWRAP")
    if explicit is not None:
        return explicit if explicit and os.access(explicit, os.X_OK) else None
    return shutil.which("bwrap")


@functools.cache
def _probe(binary: str | None) -> str | None:
    if binary is None:
        if os.environ.get("AKMBENCH_BWRAP") is not None:
            return f"AKMBENCH_BWRAP={os.environ['AKMBENCH_BWRAP']!r} is not an executable"
        return f"bwrap not found; {INSTALL_HINT}"
    with tempfile.TemporaryDirectory(prefix="akmbench-probe-") as tmp:
        run_dir = Path(tmp)
        argv = Sandbox("bwrap", run_dir, binary=binary).wrap(["/bin/sh", "-c", "cd / && test -d /proc/1"], run_dir, {})
        try:
            # Its own session: bwrap's inner process outlives the outer one for a moment and may
            # land on us (a subreaper) as a zombie, which procs reaps only outside our session.
            proc = subprocess.run(
                argv, capture_output=True, timeout=30, stdin=subprocess.DEVNULL, start_new_session=True
            )
        except (OSError, subprocess.TimeoutExpired) as err:
            return f"{binary} does not run: {err}"
        finally:
            reap_dead_orphans()
    if proc.returncode != 0:
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"{binary} cannot build a sandbox here: {tail[-1] if tail else f'exit {proc.returncode}'}"
    return None


def probe() -> str | None:
    """None when bwrap builds a cell's sandbox on this machine, else why not (once per process)."""
    return _probe(bwrap_binary())


def choose(requested: str) -> tuple[str, str | None]:
    """The mode a run uses (``bwrap`` or ``none``) and, when ``auto`` falls back, the warning.

    ``bwrap`` asked for explicitly but not working is a usage error: the user wants isolation.
    """
    if requested == "none":
        return "none", None
    problem = probe()
    if problem is None:
        return "bwrap", None
    if requested == "bwrap":
        raise ConfigError(f"--bench-sandbox bwrap: {problem}", usage=True)
    return "none", (
        f"sandbox unavailable ({problem}): cells run UNSANDBOXED and their agents can read the corpus "
        "(solutions, verifier tests), the stash fixtures, other cells, the store and your home; "
        "pass --bench-sandbox none to run unsandboxed on purpose"
    )


def doctor_line() -> tuple[str, str]:
    """(status, detail) for ``doctor``: whether cells would run sandboxed here."""
    problem = probe()
    if problem is not None:
        return "WARN", f"{problem}; with --bench-sandbox auto (the default) cells run unsandboxed"
    binary = bwrap_binary()
    try:
        out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        out = "bwrap"
    return "PASS", f"{out} at {binary} works: cells run sandboxed"


# ---------------------------------------------------------------- what a cell sees


@functools.cache
def _system_args() -> tuple[tuple[str, ...], tuple[Path, ...]]:
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


@dataclass
class Sandbox:
    """What one cell may see; :meth:`wrap` turns a command into its sandboxed form.

    ``mode`` ``none`` wraps nothing. ``run_dir`` is bound read-write, ``ro`` read-only, both
    at their own absolute paths (and their resolved paths, where a symlink leads elsewhere).
    """

    mode: str
    run_dir: Path
    ro: list[Path] = field(default_factory=list)
    binary: str | None = None

    def expose(self, *paths: Path | str) -> None:
        """Let the cell read these files or directories (missing ones are skipped)."""
        for raw in paths:
            path = Path(raw)
            if path not in self.ro:
                self.ro.append(path)

    def expose_tools(self, *executables: Path | str) -> None:
        """Let the cell run these executables (see :func:`tool_paths`)."""
        for exe in executables:
            self.expose(*tool_paths(Path(exe)))

    def visible(self, path: Path) -> bool:
        """Whether ``path`` exists inside the sandbox (``none``: always)."""
        if self.mode == "none":
            return True
        # Not /tmp: the cell gets a fresh one, the host's is not there.
        roots = [*_system_args()[1], self.run_dir, *self.ro]
        resolved = path.resolve()
        return any(p.is_relative_to(r) or p.is_relative_to(r.resolve()) for r in roots for p in (path, resolved))

    def wrap(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> list[str]:
        """``argv`` to run instead: bwrap around the command, or the command itself."""
        if self.mode == "none":
            return list(argv)
        system, _ = _system_args()
        # --as-pid-1: the command itself is the namespace's init, so bwrap waits for it and leaves
        # no orphan behind; when it ends, or bwrap or the harness dies (--die-with-parent), the
        # kernel kills everything else in the namespace, setsid'd or not.
        args = [
            self.binary or bwrap_binary() or "bwrap",
            "--die-with-parent",
            "--unshare-pid",
            "--as-pid-1",
            "--unshare-ipc",
        ]
        if os.geteuid() == 0:
            args += ["--cap-drop", "ALL"]  # root keeps every capability in the sandbox otherwise
        args += [*system, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        binds: dict[Path, str] = {}
        for path in self.ro:
            for p in (path, path.resolve()):
                if p.exists() and not self._in_system(p):
                    binds.setdefault(p, "--ro-bind")
        for p in (self.run_dir, self.run_dir.resolve()):
            binds[p] = "--bind"
        # Parents before children, so a read-write run dir inside a read-only path stays writable.
        for p in sorted(binds, key=lambda q: (len(q.parts), str(q))):
            source = p.resolve()
            args += [binds[p], str(source), str(p)]
        args += ["--chdir", str(cwd)]
        path_env = self._path_with_python(env.get("PATH", ""))
        if path_env is not None:
            args += ["--setenv", "PATH", path_env]
        return [*args, "--", *argv]

    def _in_system(self, path: Path) -> bool:
        roots = _system_args()[1]
        return any(path.is_relative_to(r) for r in roots if r != Path("/etc"))

    def _path_with_python(self, path_env: str) -> str | None:
        """PATH with the harness's Python appended when no visible PATH entry has ``python3``."""
        for entry in (e for e in path_env.split(os.pathsep) if e):
            exe = Path(entry) / "python3"
            if os.access(exe, os.X_OK) and self.visible(Path(entry)) and self.visible(exe):
                return None
        here = str(Path(sys.executable).parent)
        return os.pathsep.join([e for e in path_env.split(os.pathsep) if e] + [here])

    @contextmanager
    def applied(self, procs: Any) -> Iterator[None]:
        """While active, every process ``procs`` (a ProcessTracker) spawns runs sandboxed."""
        if self.mode == "none":
            yield
            return
        previous = procs.wrap
        procs.wrap = self.wrap
        try:
            yield
        finally:
            procs.wrap = previous


def for_cell(mode: str, run_dir: Path, *, akm: Path | None = None, extra: Sequence[Path] = ()) -> Sandbox:
    """The sandbox of one cell: its run dir, the harness's Python, akm (akm arm), ``extra``."""
    box = Sandbox(mode, run_dir)
    if mode == "none":
        return box
    box.expose(*python_paths())
    if akm is not None:
        box.expose_tools(akm)
    box.expose(*extra)
    return box
