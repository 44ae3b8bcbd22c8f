"""Verifiers (docs/corpus.md, "Verifiers"): decide whether the agent solved the task.

Each returns a ``Verdict``. ``error`` is set only when the harness or the environment is at
fault (bash or pytest missing, verify.sh absent); a failing or hanging check is a plain
failure. Unlike the reference, an exit status of 127 from a script is a failure like any
other: only our own checks decide that the runtime is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..corpus.tasks import Task
from ..system.procs import ProcessTracker
from ..system.sandbox import Sandbox
from .pytest_verifier import verify_pytest
from .verdict import TAIL_CHARS, Verdict, fresh, run, verifier_box

# The verifier's names the runner, the checks and the tests reach here.
__all__ = ["TAIL_CHARS", "Verdict", "verifier_env", "verify"]


def verify(
    task: Task,
    *,
    workspace: Path,
    final_text: str,
    scratch: Path,
    env: Mapping[str, str],
    procs: ProcessTracker,
    timeout_s: float,
    sandbox: str = "none",
    writable: Sequence[Path] = (),
) -> Verdict:
    """Run ``task``'s verifier against ``workspace`` (after the agent has finished).

    ``scratch`` is a fresh directory outside the run dir, made by the harness after the agent
    ended (so nothing the agent planted is in it): the verifier's private copy of the task goes
    to a new ``scratch/task-*`` (read-only to the verifier; the agent's workspace is mounted as
    its ``workspace/``, the task's layout), what the verifier writes for us to ``scratch/out-*``.
    The verifier gets a fresh HOME (and TMPDIR) of its own in ``scratch``. With ``sandbox``
    ``bwrap`` it runs in a sandbox of its own: the workspace, its HOME and ``writable``
    read-write, the copy and the bench's Python read-only, no network, nothing else
    (docs/architecture.md, "Isolation").
    """
    if task.verifier == "regex":
        return _regex(task, final_text, fresh(scratch, "out-"), procs, timeout_s)
    if task.verifier not in ("script", "pytest"):
        return Verdict(False, None, "", error=f"unknown verifier kind {task.verifier!r}")
    missing = _missing(task)
    if missing is not None:
        return Verdict(False, None, "", error=missing)
    if workspace.is_symlink() or not workspace.is_dir():
        # The agent swapped its workspace for a link (the verifier's sandbox would mount the
        # link's target) or removed it: nothing of its work is there to check.
        why = f"the workspace was replaced by a link or removed: {workspace}"
        return Verdict(False, None, why, tamper=why if workspace.is_symlink() else None)
    copy = _copy_task(task, fresh(scratch, "task-"))
    # A HOME of its own, not the agent's: nothing the agent left there (a user-site .pth, a
    # tool's config) may reach a program the verifier runs.
    home = fresh(scratch, "home-")
    env = {**env, **_home_env(home), "PYTHONNOUSERSITE": "1"}
    writable = [*writable, home]
    if task.verifier == "pytest":
        return verify_pytest(
            task, copy, workspace, sandbox=sandbox, writable=writable, env=env, procs=procs, timeout_s=timeout_s
        )
    with verifier_box(sandbox, copy, workspace, writable, procs, output=False) as (box, _):
        return _script(copy, workspace, env, procs, timeout_s, box)


def _missing(task: Task) -> str | None:
    if task.verifier == "script" and not (task.task_dir / "verify.sh").is_file():
        return f"verify.sh not found at {task.task_dir / 'verify.sh'}"
    if task.verifier == "pytest":
        if not (task.task_dir / "tests").is_dir():
            return f"pytest verifier needs a tests/ directory at {task.task_dir / 'tests'}"
        try:
            import pytest  # noqa: F401  (only to tell a missing runtime from a failing check)
        except ImportError:
            return "pytest is not installed in the bench's Python"
    return None


def _copy_task(task: Task, copy: Path) -> Path:
    """The task's own files a verifier may use, without what would solve it: no ``solution/``,
    no stash overlay, no starting workspace (the agent's takes its place, at the mount point or
    link verdict.verifier_box makes). Links are followed, as shutil.copytree does; each file
    keeps its mode and times, readable by all (the sandbox's unprivileged uid reads it), each
    directory 0755."""
    overlay = os.path.realpath(task.task_dir / task.stash_overlay) if task.stash_overlay else None
    _copy_dir(str(task.task_dir), str(copy), {"solution", "workspace"}, overlay)
    return copy


def _copy_dir(source: str, target: str, skipped: set[str], overlay: str | None) -> None:
    # One scandir per directory and a chmod as each entry is made: the verifier's copy is made
    # once per cell (benchmarks/README.md, "Where an item's time goes").
    try:
        os.mkdir(target)
    except FileExistsError:  # the copy's root, made by verdict.fresh
        pass
    os.chmod(target, 0o755)
    with os.scandir(source) as entries:
        for entry in entries:
            name = entry.name
            if name in skipped or name in ("__pycache__", ".pytest_cache"):
                continue
            if overlay is not None and os.path.realpath(entry.path) == overlay:
                continue
            dest = os.path.join(target, name)
            if entry.is_dir():
                _copy_dir(entry.path, dest, set(), overlay)
            elif entry.is_file():
                st = entry.stat()
                shutil.copyfile(entry.path, dest)
                os.chmod(dest, stat.S_IMODE(st.st_mode) | 0o444)
                os.utime(dest, ns=(st.st_atime_ns, st.st_mtime_ns))


# The match runs in a child process: Python's re cannot be interrupted, and a pattern that
# backtracks catastrophically ((a+)+$ over a long run of a's) would otherwise hold the cell, and
# its wall budget, forever. Exit 0: match, 1: no match, 2: the pattern does not compile (a
# corpus fault, which must not count as the agent's failure; tasks.py checks it on load).
_REGEX_CHILD = """
import json, re, sys
with open(sys.argv[1], encoding="utf-8") as fh:
    pattern, text = json.load(fh)
try:
    found = re.search(pattern, text)
except re.error as err:
    print(f"invalid pattern: {err}")
    sys.exit(2)
sys.exit(0 if found else 1)
"""


def _regex(task: Task, final_text: str, out: Path, procs: ProcessTracker, timeout_s: float) -> Verdict:
    # Nothing of the agent's runs here (its final text is data), so no sandbox is needed; the
    # payload goes to a directory the harness just made, which no planted link can redirect.
    pattern = task.expected_match or ""
    payload = out / "regex.json"
    payload.write_text(json.dumps([pattern, final_text]), encoding="utf-8")
    argv = [sys.executable, "-I", "-S", "-c", _REGEX_CHILD, str(payload)]
    verdict = run(procs, argv, out, {"PATH": os.defpath}, timeout_s)
    if verdict.timed_out or verdict.error:
        return verdict
    if verdict.exit_code == 0:
        return Verdict(True, 0, f"regex match: {pattern}")
    if verdict.exit_code == 1:
        return Verdict(False, 1, f"regex did not match: {pattern}")
    return Verdict(
        False,
        None,
        verdict.output,
        error=f"regex verifier crashed (exit {verdict.exit_code}): {verdict.output.strip()[-300:]}",
    )


def _script(
    copy: Path, workspace: Path, env: Mapping[str, str], procs: ProcessTracker, timeout_s: float, box: Sandbox
) -> Verdict:
    # bash from the verifier's PATH, which the harness built: nothing of the run dir is on it.
    bash = _which_bash(env.get("PATH"))
    if bash is None:
        return Verdict(False, None, "", error="bash not found on PATH; install bash to run script verifiers")
    box.expose_tools(bash)
    return run(procs, [bash, str(copy / "verify.sh")], workspace, env, timeout_s)


# The verifier's PATH is the same string cell after cell: bash is looked up once for it, and
# asked again only if that file is no longer executable (benchmarks/README.md, "Per item, fourth
# pass"). Every entry is outside the run dir (verifier_env), so no cell can change the answer.
_BASH: dict[str | None, str] = {}


def _which_bash(path: str | None) -> str | None:
    found = _BASH.get(path)
    if found is None or not os.access(found, os.X_OK):
        found = shutil.which("bash", path=path)
        if found is not None:
            _BASH[path] = found
    return found


def _home_env(home: Path) -> dict[str, str]:
    return {
        "HOME": str(home),
        "TMPDIR": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
    }


def verifier_env(base: Mapping[str, str], run_dir: Path | None = None) -> dict[str, str]:
    """The verifier's environment: the agent's, minus anything that points at a stash, and with
    no PATH entry inside the run dir (where the agent could have planted a ``bash``) and no
    relative one: the verifier's shell would look it up from its working directory, the agent's
    workspace, so a ``grep`` planted there would be the one a script runs."""
    env = {k: v for k, v in base.items() if not k.startswith("AKM_")}
    if run_dir is not None and "PATH" in env:
        # Compared as strings: the same test as ``Path.resolve().is_relative_to``, without a path
        # object and a caught ValueError per entry (benchmarks/README.md, "Where the overhead goes").
        root = os.path.realpath(run_dir)
        inside = root if root.endswith("/") else root + "/"
        kept = [
            e
            for e in env["PATH"].split(os.pathsep)
            if e.startswith("/") and (real := _real(e)) != root and not real.startswith(inside)
        ]
        env["PATH"] = os.pathsep.join(kept)
    return env


# entry -> (its real path, the (device, inode) that path named when resolved)
_REAL: dict[str, tuple[str, tuple[int, int]]] = {}


def _real(entry: str) -> str:
    """``os.path.realpath(entry)`` without walking every component each cell: the answer is
    kept while the entry and its kept real path still name the same directory (a directory has
    one path), so a link moved or a directory renamed since is resolved anew. An entry that does
    not exist is resolved every time."""
    ident = _ident(entry)
    if ident is None:
        return os.path.realpath(entry)
    known = _REAL.get(entry)
    if known is not None and known[1] == ident and _ident(known[0]) == ident:
        return known[0]
    real = os.path.realpath(entry)
    _REAL[entry] = (real, ident)
    return real


def _ident(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino
