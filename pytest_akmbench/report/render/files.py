"""The report directory as a CI artifact: report.json, summary.md and report.html written
atomically, readable files, and the transcripts the report links to.

The store is private (0700 directories, 0600 files): it holds every sample of every run. The
report directory is what a CI job uploads or hands to its next step, which may run as another
user, so its files are 0644 under a 0755 directory, and the transcripts the report links to are
copied into it (``transcripts/<run_id>/<cell>.jsonl``, the same relative path as in the store),
so the uploaded directory has no dangling link. Transcripts are scrubbed of secrets when they
are stored; they are copied byte for byte.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ...store import atomic
from ..envelope_rows import RunRow
from ..envelope_types import Envelope
from .markdown import render_markdown

FILE_MODE = atomic.FILE_MODE  # a copied transcript is readable as the written files are
DIR_MODE = 0o755
TRANSCRIPTS = "transcripts"
_LONG_LIST = 8  # report.json writes lists longer than this one compact element per line


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


def _safe_rel(rel: object) -> str | None:
    """``rel`` when it is a plain relative path under ``transcripts/`` (records are data, not
    trusted paths), else None."""
    if not isinstance(rel, str) or not rel.startswith(TRANSCRIPTS + "/") or "\\" in rel or ":" in rel:
        return None
    parts = rel.split("/")
    return None if "" in parts or "." in parts or ".." in parts else rel


def copy_transcripts(
    directory: Path, envelope: Envelope, store_dir: Path | None, more_stores: Sequence[Path] = ()
) -> Envelope:
    """Copy the transcripts ``envelope["runs"]`` names from ``store_dir`` (or the first of
    ``more_stores`` holding it: a report merged from several stores) into ``directory``.

    Returns the envelope to write: ``envelope`` itself, or a copy whose runs name no transcript that
    could not be copied (missing from the store), so every link in the report resolves. A
    transcript already there with the same size and mtime is not copied again (a resumed run
    reports many stored samples). Files under ``directory/transcripts`` that this report does
    not name are removed, so the directory holds exactly this report's transcripts.
    """
    if store_dir is not None and _same_dir(directory, store_dir):
        return envelope  # the report lives in the store: its links already resolve
    # Plain strings and os calls: pathlib costs more than the copying at 10,000s of runs.
    out = os.fspath(directory)
    roots = [os.fspath(p) for p in (store_dir, *more_stores) if p is not None]
    wanted: set[str] = set()
    missing: set[str] = set()
    made: set[str] = set()
    for run in envelope.get("runs", []):
        given = run.get("transcript")
        rel = _safe_rel(given)
        src, src_root = _find(roots, rel)
        if rel is None or src is None or not stat.S_ISREG(src.st_mode):
            if given is not None:
                missing.add(given)
            continue
        wanted.add(rel)
        folder = rel.rpartition("/")[0]
        if folder not in made:
            _make_dirs(out, folder)
            made.add(folder)
        target = os.path.join(out, rel)
        try:
            dst = os.stat(target)
            if (
                dst.st_size == src.st_size
                and int(dst.st_mtime) == int(src.st_mtime)
                and stat.S_IMODE(dst.st_mode) == FILE_MODE
            ):
                continue
        except FileNotFoundError:
            pass
        tmp = os.path.join(out, folder, f".{rel.rpartition('/')[2]}.tmp")
        shutil.copyfile(os.path.join(src_root, rel), tmp)
        os.chmod(tmp, FILE_MODE)
        os.utime(tmp, (src.st_atime, src.st_mtime))
        os.replace(tmp, target)
    _prune(out, wanted)
    if not missing:
        return envelope
    runs: list[RunRow] = [{**r, "transcript": None} if r.get("transcript") in missing else r for r in envelope["runs"]]
    return {**envelope, "runs": runs}


def _find(roots: list[str], rel: str | None) -> tuple[os.stat_result | None, str]:
    """The stat of ``rel`` in the first root holding it, and that root."""
    if rel is None:
        return None, ""
    for root in roots:
        try:
            return os.stat(os.path.join(root, rel)), root
        except OSError:
            continue
    return None, ""


def _same_dir(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def _make_dirs(out: str, folder: str) -> None:
    parts = folder.split("/")
    for i in range(1, len(parts) + 1):
        path = os.path.join(out, *parts[:i])
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, DIR_MODE)
        open_dir(Path(path))


def _prune(out: str, wanted: set[str]) -> None:
    """Remove files under ``out/transcripts`` that the report does not link to, then empty directories."""
    root = os.path.join(out, TRANSCRIPTS)
    if not os.path.isdir(root) or os.path.islink(root):
        return
    for dirpath, dirnames, filenames in os.walk(root, topdown=False):
        rel_dir = os.path.relpath(dirpath, out).replace(os.sep, "/")
        for name in filenames:
            if f"{rel_dir}/{name}" not in wanted:
                os.unlink(os.path.join(dirpath, name))
        for name in dirnames:
            with contextlib.suppress(OSError):
                os.rmdir(os.path.join(dirpath, name))  # only when empty


def write(
    directory: Path, envelope: Envelope, store_dir: Path | None = None, more_stores: Sequence[Path] = ()
) -> tuple[Path, Path, Path]:
    """Write report.json, summary.md and report.html atomically, with the transcripts the runs
    name copied from the store (``store_dir``, default the envelope's ``provenance.store``);
    append the summary to $GITHUB_STEP_SUMMARY. The files are 0644 under a 0755 directory,
    for the next CI step."""
    from . import html  # only a session that writes a report pays for the page

    store = (envelope.get("provenance") or {}).get("store")
    store_dir = store_dir or (Path(store) if store else None)
    make_dir(directory, store_dir)
    envelope = copy_transcripts(directory, envelope, store_dir, more_stores)
    json_path, md_path, html_path = directory / "report.json", directory / "summary.md", directory / "report.html"
    markdown = render_markdown(envelope)
    atomic.write(json_path, lambda fh: fh.writelines(_json_chunks(envelope)))
    atomic.write(md_path, lambda fh: fh.write(markdown))
    atomic.write(html_path, lambda fh: fh.write(html.render(envelope)))
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        with open(step_summary, "a", encoding="utf-8") as fh:
            fh.write(markdown + "\n")
    return json_path, md_path, html_path


def _json_chunks(value: Any, level: int = 0) -> Iterator[str]:
    """Indented JSON in which long lists hold one compact element per line.

    Readable and diff-friendly like ``indent=2``, but each row goes through the C encoder, so a
    100k-run report is written in a fraction of the time and never held as one string.
    """
    pad = "  " * (level + 1)
    if isinstance(value, dict) and value:
        yield "{\n"
        for i, (key, item) in enumerate(value.items()):
            yield f"{',' if i else ''}\n{pad}" if i else pad
            yield json.dumps(str(key)) + ": "
            yield from _json_chunks(item, level + 1)
        yield "\n" + "  " * level + "}" + ("\n" if level == 0 else "")
    elif isinstance(value, list) and value:
        yield "["
        long = len(value) > _LONG_LIST
        for i, item in enumerate(value):
            yield ("," if i else "") + "\n" + pad
            if long:
                yield json.dumps(item)
            else:
                yield from _json_chunks(item, level + 1)
        yield "\n" + "  " * level + "]"
    else:
        yield json.dumps(value)
