"""A cell's run dir: the copies of the workspace and stash, the content hashes of a task, the
PATH of an arm without akm, and the akm arm's index and event log (docs/architecture.md).

The copy rule is the corpus's (docs/corpus.md, "Layout"): regular files and directories only.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import time
from pathlib import Path
from typing import Any

from ..corpus.tasks import Task
from ..system.procs import ProcessTracker, is_executable
from . import akm

# A workspace larger than this (apparent size, shared layers included) is named in a warning of
# the run and of validate: every cell copies it whole (docs/corpus.md, "Layout").
LARGE_WORKSPACE = 100 * 1024 * 1024
_CHUNK = 1024 * 1024  # hashing and sparse copies read a file this much at a time, never whole

# What a shell says for a command that does not exist: "not available in this arm" would
# itself tell the control arm that there is an akm to have.
_NO_AKM = '#!/bin/sh\necho "sh: 1: akm: not found" >&2\nexit 127\n'


def tree_hash(path: Path) -> str:
    """SHA-256 over a directory's regular files (relative path NUL bytes NUL), caches skipped."""
    h = hashlib.sha256()
    if not path.is_dir():
        return h.hexdigest()
    entries: list[str] = []
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = [d for d in dirnames if d not in ("__pycache__", ".pytest_cache")]
        entries.extend(os.path.relpath(os.path.join(dirpath, n), path) for n in filenames)
    for rel in sorted(entries):
        full = path / rel
        if full.is_file() and not full.is_symlink():
            h.update(rel.encode() + b"\0")
            # In chunks: the same digest as the whole file's bytes, without holding them (a 1 GB
            # workspace file made every cell's process 2 GB large).
            with open(full, "rb") as f:
                for chunk in iter(lambda: f.read(_CHUNK), b""):
                    h.update(chunk)
            h.update(b"\0")
    return h.hexdigest()


def copy_workspace(task: Task, dst: Path) -> None:
    """The task's starting workspace: its shared layers, then its own ``workspace/``."""
    for layer in (*task.layers, task.workspace):
        _copy_tree(layer, dst)


def workspace_bytes(task: Task) -> int:
    """The apparent size of the regular files a cell's workspace copy starts with."""
    total = 0
    for layer in (*task.layers, task.workspace):
        for dirpath, _, filenames in os.walk(layer):
            for name in filenames:
                st = os.lstat(os.path.join(dirpath, name))
                total += st.st_size if stat.S_ISREG(st.st_mode) else 0
    return total


def large_workspace(task: Task) -> str | None:
    """The warning for a task whose workspace is above ``LARGE_WORKSPACE``, else None."""
    size = workspace_bytes(task)
    if size <= LARGE_WORKSPACE:
        return None
    return (
        f"{task.yaml_path}: workspace: {size / 2**20:.0f} MB (shared layers included) is copied into every cell's "
        f"run dir; keep it under {LARGE_WORKSPACE // 2**20} MB (large data belongs outside the workspace)"
    )


def task_hash(task: Task) -> str:
    """The content hash of everything a task's cells start from: its directory and its layers."""
    if not task.layers:
        return tree_hash(task.task_dir)
    return hashlib.sha256("\0".join([tree_hash(task.task_dir), *map(tree_hash, task.layers)]).encode()).hexdigest()


def _copy_tree(src: Path, dst: Path) -> None:
    # Regular files and directories only, .gitkeep skipped: docs/corpus.md, "Layout".
    dst.mkdir(parents=True, exist_ok=True)
    if not src.is_dir():
        return
    for dirpath, dirnames, filenames in os.walk(src):
        rel = Path(dirpath).relative_to(src)
        for d in dirnames:
            (dst / rel / d).mkdir(exist_ok=True)
        for name in filenames:
            source = Path(dirpath) / name
            if name == ".gitkeep" or not source.is_file() or source.is_symlink():
                continue
            _copy_file(source, dst / rel / name)


def _copy_file(source: Path, target: Path) -> None:
    """``shutil.copy2``, but a sparse file (fewer blocks than its size) keeps its holes: only its
    data extents are copied, in chunks, so a 1 GB file of holes costs no 1 GB per cell."""
    st = os.stat(source)
    if st.st_blocks * 512 >= st.st_size or not hasattr(os, "SEEK_DATA"):
        shutil.copy2(source, target)  # streams (sendfile): never the whole file in memory
        return
    with open(source, "rb") as src, open(target, "wb") as out:
        fd, offset = src.fileno(), 0
        while offset < st.st_size:
            try:
                start = os.lseek(fd, offset, os.SEEK_DATA)
            except OSError:  # ENXIO: only a hole is left
                break
            end = os.lseek(fd, start, os.SEEK_HOLE)
            src.seek(start)
            out.seek(start)
            while start < end:
                chunk = src.read(min(_CHUNK, end - start))
                if not chunk:
                    break
                out.write(chunk)
                start += len(chunk)
            offset = end
        out.truncate(st.st_size)
    shutil.copystat(source, target)


def write_akm_stub(bin_dir: Path) -> None:
    """An ``akm`` in ``bin_dir`` that behaves like a missing command."""
    # One open and an fchmod (not a umask-dependent mode): the sandbox's uid must run it too.
    fd = os.open(bin_dir / "akm", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o755)
    try:
        os.write(fd, _NO_AKM.encode())
        os.fchmod(fd, 0o755)
    finally:
        os.close(fd)


def hide_akm(entries: list[str], bin_dir: Path, run_dir: Path, arm: str, warnings: list[str]) -> list[str]:
    """PATH entries for an arm that must not have akm.

    A directory holding ``akm`` is dropped (silently when it is inside the cell's run dir,
    e.g. the runner's own bin dir). A system directory (one that also holds ``sh``) cannot be
    dropped, so ``akm`` is shadowed there by a missing-command stub in ``bin_dir``.
    """
    kept: list[str] = []
    shadow = False
    run_root = run_dir.resolve()
    for entry in entries:
        # os.access first: a cell asks this of every PATH entry, and most hold no akm.
        if not os.access(os.path.join(entry, "akm"), os.X_OK) or not is_executable(Path(entry) / "akm"):
            kept.append(entry)
            continue
        path = Path(entry)
        if path.resolve().is_relative_to(run_root):
            continue
        if is_executable(path / "sh"):
            kept.append(entry)
            shadow = True
            warnings.append(f"{entry}/akm shadowed by a missing-command stub for the {arm} arm")
        else:
            warnings.append(f"PATH entry {entry} holds an akm executable; dropped for the {arm} arm")
    if shadow:
        write_akm_stub(bin_dir)
    return kept


def copy_stash(task: Task, stashes_root: Path, dst: Path) -> None:
    """The akm arm's stash: the task's fixture, then its ``stash_overlay``."""
    _copy_tree(stashes_root / task.stash, dst)
    if task.stash_overlay:
        _copy_tree((task.task_dir / task.stash_overlay).resolve(), dst)


class TreatmentDown(Exception):
    """The akm arm's akm did not work for this cell: the cell is a harness_error."""


def index_stash(
    info: akm.AkmInfo, stash: Path, env: dict[str, str], procs: ProcessTracker, *, empty_ok: bool = False
) -> dict[str, Any]:
    """``akm index`` of the cell's own stash copy, at the path the agent will search. An index
    with no entry means akm did not work, unless ``empty_ok``: the attribute track masked the
    stash's last asset, and an empty stash is then the treatment (docs/tracks.md)."""
    started = time.monotonic()
    code, output, timed_out = procs.run([str(info.path), "index"], cwd=stash, env=env, timeout_s=300)
    report = akm.index_report(output)
    report["ms"] = round((time.monotonic() - started) * 1000)
    if code != 0 or timed_out:
        why = "timed out" if timed_out else f"exit {code}"
        raise TreatmentDown(f"akm index of the stash failed ({why}): {output.strip()[-300:]}")
    if report["entries"] == 0 and not empty_ok:
        raise TreatmentDown("akm index found no asset in the stash: the akm arm would search an empty stash")
    return report


def akm_events(
    info: akm.AkmInfo, env: dict[str, str], cwd: Path, procs: ProcessTracker, since_ms: int
) -> tuple[list[dict[str, Any]] | None, str | None]:
    """What akm logged since the agent started, or (None, why) when its log cannot be read."""
    argv = akm.log_argv(info)
    if argv is None:
        return akm.since(akm.parse_events_file(akm.events_file(env), root=cwd), since_ms), None
    code, output, timed_out = procs.run(argv, cwd=cwd, env=env, timeout_s=60)
    events = akm.parse_log(output) if code == 0 and not timed_out else None
    if events is None:
        return None, f"akm log unreadable (exit {code}): {output.strip()[-200:]}"
    return akm.since(events, since_ms), None
