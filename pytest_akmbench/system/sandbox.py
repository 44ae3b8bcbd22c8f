"""The per-cell sandbox: an agent, every command it starts, and afterwards its verifier, see
only their cell (docs/architecture.md, "Isolation").

Without it a cell's agent runs as the user and can read anything the user can: the task's
solution and verifier, the stash fixtures (so the control arm could read the akm arm's
knowledge), other cells' run dirs, the store and the user's home. With it the agent runs
under bubblewrap (``bwrap``), a small, widely packaged tool built for exactly this (Flatpak's
sandbox), so no namespace code of our own decides what is safe. A cell sees:

* the system read-only: ``/usr``, ``/bin``, ``/sbin``, ``/lib*`` and ``/etc``, except every
  file or directory under ``/etc`` that other users may not read (shadow, ssh host keys,
  private TLS keys, ...), which is masked;
* fresh ``/proc`` (a PID namespace of its own: no other process is visible, so
  ``/proc/<pid>/root`` leads nowhere) with ``/proc/sys`` read-only, minimal ``/dev``, private
  ``/tmp``;
* its run dir read-write, at the same absolute path as outside (workspace, private HOME, XDG
  dirs and tmp, the agent's config dir, the akm arm's stash copy and index: akm's index records
  the stash path, so no path may change);
* read-only: the Python running the harness (``sys.prefix`` and ``sys.base_prefix``), the
  tools the agent adapter exposes (its package, ripgrep), on the akm arm the akm
  executable's directory (or package root) and its interpreter, and ``--bench-sandbox-ro``
  paths;
* a network namespace of its own with loopback only; its one way out is the model forwarder
  (:mod:`forwarder`), relayed to 127.0.0.1:MODEL_PORT inside, unless ``--bench-network host``.

Nothing else: no corpus, no store, no other run dir, no user home, no loopback service of the
host. Every capability is dropped; when the bench runs as root, the sandbox's first process
(:mod:`sandbox_init`) switches to an unprivileged uid, to which the run dir is handed. The
verifier runs after the agent has ended in a sandbox of its own (:func:`for_verifier`).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .forwarder import Forwarder, TurnGate
from .procs import reap_dead_orphans
from .sandbox_launch import init_argv, init_source, lifeline
from .sandbox_paths import python_paths, system_args, tool_paths, within

MODES = ("auto", "bwrap", "none")
INSTALL_HINT = "install bubblewrap (apt-get install bubblewrap) or set AKMBENCH_BWRAP to its path"
# The unprivileged uid and gid a cell runs as when the bench runs as root ("nobody").
SANDBOX_UID = SANDBOX_GID = 65534
# Where the model forwarder is reached inside a cell's network namespace.
MODEL_PORT = 4780
RELAY_DIR = Path("/run/akmbench")  # where the forwarder's socket is bound inside the sandbox
NETWORKS = ("isolated", "host")
# A fresh /proc for the PID namespace, with what writes to the host's kernel read-only.
_PROC = (
    "--proc",
    "/proc",
    "--ro-bind",
    "/proc/sys",
    "/proc/sys",
    "--ro-bind-try",
    "/proc/sysrq-trigger",
    "/proc/sysrq-trigger",
)


def parse_mode(text: str) -> str:
    mode = str(text).strip().lower()
    if mode not in MODES:
        raise ValueError(f"expected one of {', '.join(MODES)}, got {text!r}")
    return mode


def parse_network(text: str) -> str:
    network = str(text).strip().lower()
    if network not in NETWORKS:
        raise ValueError(f"expected one of {', '.join(NETWORKS)}, got {text!r}")
    return network


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
        argv = Sandbox("bwrap", run_dir, binary=binary, owned=[run_dir]).wrap(
            ["/bin/sh", "-c", "cd / && test -d /proc/1"], run_dir, {}
        )
        try:
            # Its own session: bwrap's inner process outlives the outer one for a moment and may
            # land on us (a subreaper) as a zombie, which procs reaps only outside our session.
            proc = subprocess.run(
                argv,
                capture_output=True,
                timeout=30,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                pass_fds=Sandbox("bwrap").keep_fds,
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


@dataclass
class Sandbox:
    """What one sandboxed process tree may see; :meth:`wrap` turns a command into its sandboxed form.

    ``mode`` ``none`` wraps nothing. ``run_dir`` (when given) and ``rw`` are bound read-write,
    ``ro`` read-only, each at its own absolute path (and its resolved path, where a symlink
    leads elsewhere); ``mounts`` bind a source at another path. ``network`` is ``isolated`` (a
    namespace with loopback only; :meth:`route_model` adds the one way out) or ``host``.
    ``owned`` are handed to the sandbox's unprivileged uid before each start when the bench
    runs as root (docs/architecture.md, "Isolation").
    """

    mode: str
    run_dir: Path | None = None
    ro: list[Path] = field(default_factory=list)
    binary: str | None = None
    rw: list[Path] = field(default_factory=list)
    mounts: list[tuple[Path, Path, bool]] = field(default_factory=list)
    network: str = "isolated"
    owned: list[Path] = field(default_factory=list)
    route: Forwarder | None = None  # the model's forwarder on a Unix socket, relayed to 127.0.0.1:MODEL_PORT

    def expose(self, *paths: Path | str) -> None:
        """Let the cell read these files or directories (missing ones are skipped)."""
        for raw in paths:
            path = Path(raw)
            if path not in self.ro:
                self.ro.append(path)

    def expose_tools(self, *executables: Path | str) -> None:
        """Let the cell run these executables (see :func:`tool_paths`)."""
        if self.mode == "none":  # nothing is mounted, so nothing reads the list (as for_cell)
            return
        for exe in executables:
            self.expose(*tool_paths(Path(exe)))

    @property
    def keep_fds(self) -> tuple[int, ...]:
        """The file descriptors a process started with :meth:`wrap`'s argv must inherit: the
        sandbox init's code and, as root, the lifeline."""
        if self.mode == "none":
            return ()
        return (init_source(), lifeline()) if os.geteuid() == 0 else (init_source(),)

    @property
    def isolated(self) -> bool:
        """Whether the processes get a network namespace of their own."""
        return self.mode != "none" and self.network == "isolated"

    def route_model(
        self, upstream: str, swaps: Mapping[str, str] | None = None, turns: TurnGate | None = None
    ) -> tuple[Forwarder, str]:
        """Open the way to the model at ``upstream``: (the forwarder, the origin the agent uses).

        Isolated: a Unix socket in a fresh directory of the host's /tmp, bound into the sandbox
        at RELAY_DIR and relayed to 127.0.0.1:MODEL_PORT inside it. Otherwise the forwarder
        listens on the host's loopback. Close the forwarder when the agent has ended.
        """
        if not self.isolated:
            fwd = Forwarder(upstream, swaps, turns=turns)
            return fwd, fwd.origin()
        # In the host's /tmp, not beside the run dir: a Unix socket's path holds at most 107 bytes.
        sock_dir = Path(tempfile.mkdtemp(prefix="akmbench-net-", dir="/tmp" if os.access("/tmp", os.W_OK) else None))
        sock_dir.chmod(0o755)
        self.route = Forwarder(upstream, swaps, unix_path=sock_dir / "model.sock", turns=turns)
        return self.route, self.route.origin(MODEL_PORT)

    @property
    def relay(self) -> Path | None:
        """The forwarder's socket while it is open: processes started after it closed (akm's log
        read after the agent) get no way out at all."""
        route = self.route
        return route.unix_path if route is not None and not route.closed and self.isolated else None

    def visible(self, path: Path) -> bool:
        """Whether ``path`` exists inside the sandbox (``none``: always)."""
        if self.mode == "none":
            return True
        # Not /tmp: the cell gets a fresh one, the host's is not there.
        roots = [*system_args()[1], *self._writable(), *self.ro, *(dest for _, dest, _ in self.mounts)]
        every = [*roots, *(r.resolve() for r in roots)]
        return within(path, every) or within(path.resolve(), every)

    def wrap(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> list[str]:
        """``argv`` to run instead: bwrap around the command, or the command itself."""
        if self.mode == "none":
            return list(argv)
        system, _ = system_args()
        drop = os.geteuid() == 0
        if drop:
            self._hand_over()
        # --as-pid-1: the first process is the namespace's init, so bwrap waits for it and leaves
        # no orphan behind; when it ends, or bwrap or the harness dies (--die-with-parent; after
        # the uid switch, the lifeline), the kernel kills everything else in the namespace,
        # setsid'd or not.
        args = [
            self.binary or bwrap_binary() or "bwrap",
            "--die-with-parent",
            "--unshare-pid",
            "--as-pid-1",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
        ]
        if self.isolated:
            args.append("--unshare-net")
        if drop:
            # Only what sandbox_init needs to switch to the unprivileged uid; the switch clears both.
            args += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        init: list[str] = []
        if drop:
            init += ["--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID), "--lifeline", str(lifeline())]
            init += ["--chdir", str(cwd)]
        if self.relay is not None:
            init += ["--relay", str(MODEL_PORT), str(RELAY_DIR / self.relay.name)]
        if init:
            self.expose(*python_paths())  # sandbox_init runs on the harness's Python
        args += [*system, *_PROC, "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp"]
        args += self._binds()
        if not drop:  # as root the run dir is the sandbox uid's: sandbox_init enters it after the switch
            args += ["--chdir", str(cwd)]
        path_env = self._path_with_python(env.get("PATH", ""))
        if path_env is not None:
            args += ["--setenv", "PATH", path_env]
        if init:
            return [*args, "--", *init_argv(), *init, "--", *argv]
        return [*args, "--", *argv]

    def _writable(self) -> list[Path]:
        return ([self.run_dir] if self.run_dir is not None else []) + list(self.rw)

    def _binds(self) -> list[str]:
        """The bind arguments: read-only paths, then read-write ones, parents before children."""
        binds: dict[Path, tuple[str, Path]] = {}
        for path in self.ro:
            real = path.resolve()
            if not real.exists():
                continue  # a path exists exactly when what it resolves to does
            for p in (path, real):
                if not self._in_system(p):
                    binds.setdefault(p, ("--ro-bind", real))
        if self.relay is not None:
            binds[RELAY_DIR] = ("--ro-bind", self.relay.parent)
        for path in self._writable():
            real = path.resolve()
            binds[path] = binds[real] = ("--bind", real)
        for source, dest, writable in self.mounts:
            binds[dest] = ("--bind" if writable else "--ro-bind", source.resolve())
        args: list[str] = []
        covered = [*system_args()[1], *binds]
        # Directories bwrap would make on its own are 0700: the unprivileged uid could not pass.
        parents = {a for dest in binds for a in dest.parents if not within(a, covered)}
        for parent in sorted(parents, key=lambda q: (len(q.parts), str(q))):
            if parent != Path("/"):
                args += ["--perms", "0755", "--dir", str(parent)]
        # Parents before children, so a read-write run dir inside a read-only path stays writable.
        for dest in sorted(binds, key=lambda q: (len(q.parts), str(q))):
            kind, source = binds[dest]
            args += [kind, str(source), str(dest)]
        return args

    def _hand_over(self) -> None:
        """Give the sandbox's uid what it must write: the run dir the harness made as root."""
        # lstat and lchown only, and os.walk never enters a linked directory: a link the agent left
        # changes owner itself, never what it points to.
        for root in self.owned:
            names = [str(root)]
            for dirpath, dirnames, filenames in os.walk(root):
                names += [os.path.join(dirpath, n) for n in (*dirnames, *filenames)]
            for name in names:
                try:
                    if os.lstat(name).st_uid != SANDBOX_UID:
                        os.chown(name, SANDBOX_UID, SANDBOX_GID, follow_symlinks=False)
                except OSError:
                    pass

    def _in_system(self, path: Path) -> bool:
        roots = system_args()[1]
        return within(path, [r for r in roots if r != Path("/etc")])

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
        previous = procs.wrap, procs.pass_fds
        procs.wrap = self.wrap
        procs.pass_fds = (*procs.pass_fds, *self.keep_fds)
        try:
            yield
        finally:
            procs.wrap, procs.pass_fds = previous


def for_cell(
    mode: str, run_dir: Path, *, akm: Path | None = None, extra: Sequence[Path] = (), network: str = "isolated"
) -> Sandbox:
    """The sandbox of one cell's agent: its run dir, the harness's Python, akm (akm arm), ``extra``."""
    box = Sandbox(mode, run_dir, network=network, owned=[run_dir])
    if mode == "none":
        return box
    box.expose(*python_paths())
    if akm is not None:
        box.expose_tools(akm)
    box.expose(*extra)
    return box


def for_verifier(
    mode: str,
    *,
    rw: Sequence[Path],
    ro: Sequence[Path],
    mounts: Sequence[tuple[Path, Path, bool]] = (),
    owned: Sequence[Path] = (),
) -> Sandbox:
    """The sandbox of a verifier: the harness's Python and the task's fresh verifier copy
    read-only, the agent's workspace (and its home and tmp) read-write, no network at all."""
    box = Sandbox(mode, rw=list(rw), mounts=list(mounts), owned=list(owned), network="isolated")
    if mode == "none":
        return box
    box.expose(*python_paths(), *ro)
    return box


def open_route(
    box: Sandbox | None, upstream: str, swaps: Mapping[str, str], turns: TurnGate | None = None
) -> tuple[Forwarder, str]:
    """The model's forwarder for a cell with or without a sandbox: (forwarder, origin); ``turns``
    is the cell's turn budget, enforced at the forwarder."""
    if box is None:
        fwd = Forwarder(upstream, swaps, turns=turns)
        return fwd, fwd.origin()
    return box.route_model(upstream, swaps, turns)
