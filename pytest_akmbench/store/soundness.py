"""The corpus's soundness results, kept beside the samples: ``<store>/soundness.jsonl``.

``--bench-soundness`` appends one line per task it checked (docs/report.md, "Soundness"); a
later report of the same store shows, for each of its tasks, the latest result whose task
content hash is the task's current one, so an edited task is shown as unchecked, never as sound.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from . import jsonl

SOUNDNESS_FILE = "soundness.jsonl"


def append(store_dir: Path, record: dict[str, Any]) -> None:
    """Append one task's result with the store's guarantees (xdist workers append at once); raises OSError."""
    payload = (json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n").encode()
    jsonl.append_line(store_dir / SOUNDNESS_FILE, payload)


def latest(store_dir: Path) -> dict[str, dict[str, Any]]:
    """The latest result of each (task id, task hash), keyed ``"<id>\\0<hash>"``; torn or foreign
    lines are skipped."""
    path = store_dir / SOUNDNESS_FILE
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (FileNotFoundError, NotADirectoryError):
        return {}
    out: dict[str, dict[str, Any]] = {}
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if (
            isinstance(record, dict)
            and isinstance(record.get("task_id"), str)
            and isinstance(record.get("task_hash"), str)
        ):
            out[f"{record['task_id']}\0{record['task_hash']}"] = record
    return out
