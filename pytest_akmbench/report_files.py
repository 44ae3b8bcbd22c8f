"""The report directory as a CI artifact: readable files, and the transcripts it links to.

The store is private (0700 directories, 0600 files): it holds every sample of every run. The
report directory is what a CI job uploads or hands to its next step, which may run as another
user, so its files are 0644 under a 0755 directory, and the transcripts the report links to are
copied into it (``transcripts/<run_id>/<cell>.jsonl``, the same relative path as in the store),
so the uploaded directory has no dangling link. Transcripts are scrubbed of secrets when they
are stored; they are copied byte for byte.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from pathlib import Path, PurePosixPath
from typing import Any

FILE_MODE = 0o644
DIR_MODE = 0o755
TRANSCRIPTS = "transcripts"


def open_dir(directory: Path) -> None:
    """Make ``directory`` listable by everyone (adds r-x for group and others; never removes a bit)."""
    mode = stat.S_IMODE(directory.stat().st_mode)
    if mode & DIR_MODE != DIR_MODE:
        os.chmod(directory, mode | DIR_MODE)


def make_dir(directory: Path, store_dir: Path | None) -> None:
    """Create the report directory, readable by all unless it is the (private) store itself."""
    directory.mkdir(parents=True, exist_ok=True)
    if store_dir is None or not _same_dir(directory, store_dir):
        open_dir(directory)


def _safe_rel(rel: object) -> PurePosixPath | None:
    if not isinstance(rel, str) or not rel or "\\" in rel or ":" in rel:
        return None
    path = PurePosixPath(rel)
    if path.is_absolute() or ".." in path.parts or not path.parts or path.parts[0] != TRANSCRIPTS:
        return None
    return path


def copy_transcripts(directory: Path, env: dict[str, Any], store_dir: Path | None) -> dict[str, Any]:
    """Copy the transcripts ``env["runs"]`` names from ``store_dir`` into ``directory``.

    Returns the envelope to write: ``env`` itself, or a copy whose runs name no transcript that
    could not be copied (missing from the store), so every link in the report resolves. A
    transcript already there with the same size and mtime is not copied again (a resumed run
    reports many stored samples). Files under ``directory/transcripts`` that this report does
    not name are removed, so the directory holds exactly this report's transcripts.
    """
    target_root = directory / TRANSCRIPTS
    if store_dir is not None and _same_dir(directory, store_dir):
        return env  # the report lives in the store: its links already resolve
    wanted: set[PurePosixPath] = set()
    missing: set[str] = set()
    for run in env.get("runs", []):
        rel = _safe_rel(run.get("transcript"))
        if rel is None:
            if run.get("transcript") is not None:
                missing.add(run["transcript"])
            continue
        source = Path(store_dir, *rel.parts) if store_dir is not None else None
        if source is None or not source.is_file():
            missing.add(str(rel))
            continue
        target = directory.joinpath(*rel.parts)
        _make_dirs(directory, target.parent)
        src = source.stat()
        with contextlib.suppress(FileNotFoundError):
            dst = target.stat()
            if dst.st_size == src.st_size and int(dst.st_mtime) == int(src.st_mtime) and stat.S_IMODE(dst.st_mode) == FILE_MODE:
                wanted.add(rel)
                continue
        tmp = target.with_name(f".{target.name}.tmp")
        shutil.copyfile(source, tmp)
        os.chmod(tmp, FILE_MODE)
        os.utime(tmp, (src.st_atime, src.st_mtime))
        os.replace(tmp, target)
        wanted.add(rel)
    _prune(target_root, directory, wanted)
    if not missing:
        return env
    runs = [dict(r, transcript=None) if r.get("transcript") in missing else r for r in env["runs"]]
    return {**env, "runs": runs}


def _same_dir(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def _make_dirs(directory: Path, leaf: Path) -> None:
    for part in [*reversed(leaf.relative_to(directory).parents)][1:] + [leaf.relative_to(directory)]:
        path = directory / part
        path.mkdir(mode=DIR_MODE, exist_ok=True)
        open_dir(path)


def _prune(root: Path, directory: Path, wanted: set[PurePosixPath]) -> None:
    """Remove files under ``root`` that the report does not link to, then empty directories."""
    if not root.is_dir() or root.is_symlink():
        return
    for dirpath, dirnames, filenames in os.walk(root, topdown=False):
        here = Path(dirpath)
        for name in filenames:
            path = here / name
            if PurePosixPath(path.relative_to(directory).as_posix()) not in wanted:
                path.unlink()
        for name in dirnames:
            with contextlib.suppress(OSError):
                (here / name).rmdir()  # only when empty
