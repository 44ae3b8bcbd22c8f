"""Leave-one-out masking of the attribute track: a stash copy without one asset (docs/tracks.md).

The asset goes from the copy in two ways, so a fixture with or without ``.stash.json``
metadata is masked alike: its entry in every ``.stash.json`` of the copy (and the file or
directory that entry names), and the asset's own file or directory in akm's layout
(``skills/<name>/``, ``knowledge/<name>.md``). The copy is then indexed like any akm cell's.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from . import akm

_PLURAL = {"skill": "skills", "knowledge": "knowledge"}


def canonical(ref: str) -> str:
    """``kind:name`` of a ref in either akm syntax (``skills/x`` and ``skill:x`` are one asset)."""
    key = akm.ref_key(ref)
    if key is None:
        raise ValueError(f"not an asset ref: {ref!r}")
    return f"{key[0]}:{key[1]}"


def mask(stash: Path, ref: str) -> int:
    """Remove the asset ``ref`` from the stash copy at ``stash``; returns how many things went
    (metadata entries, files, directories): 0 means the asset was not in the stash."""
    kind, name = canonical(ref).split(":", 1)
    removed = 0
    for meta in sorted(stash.rglob(".stash.json")):
        removed += _drop_entries(meta, kind, name)
    folder = stash / _PLURAL.get(kind, kind + "s")
    for path in [folder / name, *sorted(folder.glob(f"{name}.*"))] if folder.is_dir() else []:
        if _inside(path, stash):
            removed += _remove(path)
    return removed


def holds_assets(stash: Path) -> bool:
    """Whether a stash copy still holds an asset: a file in one of its folders other than a
    hidden one (akm's ``.stash.json`` metadata, a ``.gitkeep``; the stash's own MANIFEST.json
    sits at its root). Masking the only asset of a stash leaves none: the masked cell then runs
    on an empty stash."""
    return any(
        not p.name.startswith(".") and (p.is_file() or p.is_symlink())
        for folder in stash.iterdir()
        if folder.is_dir() and not folder.is_symlink()
        for p in folder.rglob("*")
    )


def _drop_entries(meta: Path, kind: str, name: str) -> int:
    try:
        data = json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0
    entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return 0
    kept, removed = [], 0
    for entry in entries:
        if isinstance(entry, dict) and entry.get("type") == kind and entry.get("name") == name:
            removed += 1
            filename = entry.get("filename")
            if isinstance(filename, str) and "/" not in filename and filename not in ("", ".", ".."):
                removed += _remove(meta.parent / filename)
            if name not in ("", ".", "..") and "/" not in name:
                removed += _remove(meta.parent / name)
        else:
            kept.append(entry)
    if removed:
        if kept:
            meta.write_text(json.dumps({**data, "entries": kept}, indent=2) + "\n", encoding="utf-8")
        else:
            meta.unlink()
    return removed


def _inside(path: Path, root: Path) -> bool:
    return path.resolve().is_relative_to(root.resolve())


def _remove(path: Path) -> int:
    if path.is_symlink() or path.is_file():
        path.unlink()
        return 1
    if path.is_dir():
        shutil.rmtree(path)
        return 1
    return 0
