"""Run dirs, the PID file and the liveness lock of a bench run; ``kill`` and ``clean``.

Every run owns ``<tmp root>/<run id>/``. Each process of the run (the controller and every
xdist worker) holds a shared ``flock`` on its ``.alive`` file for as long as it lives, and the
controller writes its PID to ``bench.pid`` beside it. So there is one PID file per run and
two benches never overwrite each other's, a run is live exactly while someone holds the lock
(a crash releases it), and ``clean`` never removes a live run's dirs.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import IO

from . import procs

_HOLD: list[IO[bytes]] = []  # lock files kept open for the life of the process


def default_tmp_root() -> Path:
    # Agents see paths under this root (their cwd, the prompt's workspace); the name must not
    # mention akm, or the control arm would be told about a tool it does not have.
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "bench-cells"


def claim_run(tmp_root: Path, run_id: str, *, controller: bool, project: Path | None = None) -> Path:
    """Create the run dir, hold its liveness lock; the controller also writes bench.pid and
    ``project`` (the pytest rootdir), so ``kill`` can tell this project's benches from others'."""
    run_dir = tmp_root / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    alive = open(run_dir / ".alive", "ab")  # noqa: SIM115 - held until the process exits
    fcntl.flock(alive, fcntl.LOCK_SH)
    _HOLD.append(alive)
    if controller:
        if project is not None:
            (run_dir / "project").write_text(str(project.resolve()))
        (run_dir / "bench.pid").write_text(str(os.getpid()))
    else:
        (run_dir / f"worker.{os.getpid()}").touch()  # so the controller can pass an interrupt on
    return run_dir


def mark_interrupted(run_dir: Path) -> None:
    """Tell every process of the run that it was interrupted: no further cell starts."""
    try:
        (run_dir / "interrupted").touch()
    except OSError:
        pass


def is_interrupted(run_dir: Path) -> bool:
    return (run_dir / "interrupted").exists()


def signal_workers(run_dir: Path, sig: int) -> None:
    """Send ``sig`` to the run's xdist workers: the live children of this process that
    registered in the run dir (never a recycled pid of someone else)."""
    me = os.getpid()
    for entry in run_dir.glob("worker.*"):
        try:
            pid = int(entry.suffix[1:])
        except ValueError:
            continue
        fields = procs.stat_fields(pid)
        if fields is not None and int(fields[1]) == me:
            try:
                os.kill(pid, sig)
            except OSError:
                pass


def run_project(run_dir: Path) -> Path | None:
    """The project (pytest rootdir) a run recorded, or None for a run that recorded none."""
    try:
        return Path((run_dir / "project").read_text().strip())
    except OSError:
        return None


def _in_project(run_dir: Path, project: Path) -> bool:
    recorded = run_project(run_dir)
    return recorded is not None and (project == recorded or recorded in project.parents)


def release_run(run_dir: Path) -> None:
    """Drop this process's liveness lock and, if it wrote it, the PID file."""
    if not run_dir.is_dir():
        return
    pid_file = run_dir / "bench.pid"
    try:
        if pid_file.read_text().strip() == str(os.getpid()):
            pid_file.unlink()
    except OSError:
        pass
    (run_dir / f"worker.{os.getpid()}").unlink(missing_ok=True)
    for fh in list(_HOLD):
        if Path(fh.name).parent == run_dir:
            fh.close()
            _HOLD.remove(fh)
    # A finished run leaves nothing behind unless a cell dir was kept (--bench-keep-runs).
    if not is_live(run_dir) and all(
        p.name in (".alive", "kill-requested", "project", "interrupted") or p.name.startswith("worker.")
        for p in run_dir.iterdir()
    ):
        shutil.rmtree(run_dir, ignore_errors=True)


def is_live(run_dir: Path) -> bool:
    alive = run_dir / ".alive"
    if not alive.exists():
        return False
    with open(alive, "ab") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fh, fcntl.LOCK_UN)
    return False


def live_runs(tmp_root: Path) -> list[Path]:
    if not tmp_root.is_dir():
        return []
    return sorted(d for d in tmp_root.iterdir() if d.is_dir() and is_live(d))


def _children(pid: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = procs.stat_fields(int(name))
            if fields is not None and int(fields[1]) == pid:
                found.append(int(name))
    return found


def kill(tmp_root: Path, *, project: Path | None = None, everything: bool = False) -> int:
    """SIGTERM the live benches of ``project`` (a directory inside a bench's rootdir), their
    workers and cells; SIGKILL on a second call. Benches of other projects share the default tmp
    root: they are named, and stopped only with ``everything``."""
    runs = live_runs(tmp_root)
    if not everything:
        here = (project or Path.cwd()).resolve()
        others = [r for r in runs if not _in_project(r, here)]
        runs = [r for r in runs if _in_project(r, here)]
        if others:
            names = ", ".join(f"{r.name} in {run_project(r) or 'an unknown project'}" for r in others)
            noun = "bench of another project" if len(others) == 1 else "benches of other projects"
            print(f"left alone: {len(others)} {noun} ({names}); pass --all to stop them too")
        if not runs:
            print(f"no bench of this project running ({here})" if others else "no bench running")
            return 0
    elif not runs:
        print("no bench running")
        return 0
    for run_dir in runs:
        try:
            pid = int((run_dir / "bench.pid").read_text().strip())
        except (OSError, ValueError):
            pid = None
        escalate = (run_dir / "kill-requested").exists()
        sig = signal.SIGKILL if escalate else signal.SIGTERM
        (run_dir / "kill-requested").write_text(str(time.time()))
        targets = [pid, *_children(pid)] if pid else []
        for target in targets:
            try:
                os.kill(target, sig)
            except ProcessLookupError:
                pass
            except PermissionError as err:
                print(f"akmbench kill: failed to signal PID {target}: {err}", file=sys.stderr)
                return 1
        groups = procs.signal_marked(run_dir.name + "/", sig)
        name = "SIGKILL" if escalate else "SIGTERM"
        print(f"sent {name} to bench run {run_dir.name} (pid {pid}) and {groups} process groups of its cells")
        if not escalate:
            print("run `python -m pytest_akmbench kill` again to escalate to SIGKILL if it does not exit")
    return 0


def clean(tmp_root: Path, *, older_than_h: float = 6.0) -> int:
    """Remove run dirs older than the threshold whose run is not live. The store is elsewhere."""
    if not tmp_root.is_dir():
        print(f"nothing to clean under {tmp_root}")
        return 0
    cutoff = time.time() - older_than_h * 3600
    removed = kept = 0
    for entry in sorted(tmp_root.iterdir()):
        if not entry.is_dir():
            continue
        if is_live(entry):
            kept += 1
            continue
        if entry.stat().st_mtime > cutoff:
            continue
        try:
            shutil.rmtree(entry)
        except OSError as err:
            print(f"akmbench clean: failed to remove {entry}: {err}", file=sys.stderr)
            return 1
        removed += 1
    print(f"removed {removed} stale run dirs under {tmp_root}; {kept} live runs left alone")
    return 0
