"""The corpus's content hashes (docs/corpus.md, "Hashes"): the task corpus hash over every
task.yaml text, a stash fixture's hash over its files, and the selection's combined fixture
hash. They follow the reference bench exactly, so reports stay comparable."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .tasks import Task


def task_corpus_hash(tasks: list[Task]) -> str:
    """docs/corpus.md, "Hashes": SHA-256 over sorted ids, each ``id NUL body NUL``."""
    h = hashlib.sha256()
    for task in sorted(tasks, key=lambda t: _code_units(t.id)):
        h.update(task.id.encode())
        h.update(b"\0")
        h.update(task_body(task).encode())
        h.update(b"\0")
    return h.hexdigest()


def task_body(task: Task) -> str:
    """What a task's hash covers: its task.yaml text, then for each shared workspace layer it
    starts from, ``NUL base/... NUL <fixture hash of the layer>`` (a changed layer changes the
    corpus's hash; a task without layers hashes as akm-bench's does)."""
    body = task.yaml_text
    for layer in task.layers:
        body += f"\0{layer_label(layer)}\0{fixture_hash(layer)}"
    return body


def layer_label(layer: Path) -> str:
    """A shared layer's name from its ``base`` on (``base/domains/<domain>/workspace``); a
    task's own workspace is ``workspace``."""
    parts = layer.parts
    return "/".join(parts[max(i for i, p in enumerate(parts) if p == "base") :]) if "base" in parts else layer.name


def fixture_hash(fixture_dir: Path) -> str:
    """docs/corpus.md, "Hashes": SHA-256 over sorted relative paths of regular files, ``path NUL bytes NUL``."""
    files: list[str] = []
    for dirpath, dirnames, filenames in os.walk(fixture_dir):
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
        for name in filenames:
            full = os.path.join(dirpath, name)
            if os.path.isfile(full) and not os.path.islink(full):
                files.append(os.path.relpath(full, fixture_dir))
    h = hashlib.sha256()
    for rel in sorted(files, key=_code_units):
        h.update(rel.encode())
        h.update(b"\0")
        with open(fixture_dir / rel, "rb") as f:  # in chunks: the same digest, never a whole file in memory
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        h.update(b"\0")
    return h.hexdigest()


def fixtures_stamp(tasks: list[Task], stashes_root: Path) -> tuple[dict[str, str], str]:
    """``fixtures`` {name: hash} for the selection's distinct stashes and the combined hash."""
    fixtures = {name: fixture_hash(stashes_root / name) for name in sorted({t.stash for t in tasks}, key=_code_units)}
    h = hashlib.sha256()
    for name, digest in fixtures.items():
        h.update(name.encode())
        h.update(b"\0")
        h.update(digest.encode())
        h.update(b"\0")
    return fixtures, h.hexdigest()


def _code_units(text: str) -> list[int]:
    # JS sorts strings by UTF-16 code unit; only differs from Python for astral characters.
    units = text.encode("utf-16-be")
    return [int.from_bytes(units[i : i + 2], "big") for i in range(0, len(units), 2)]
