"""The corpus's soundness results, kept beside the samples: ``<store>/soundness.jsonl``.

``--bench-soundness`` appends one line per task it checked (docs/report.md, "Soundness"); a
later report of the same store shows, for each of its tasks, the latest result whose task
content hash is the task's current one, so an edited task is shown as unchecked, never as sound.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypedDict, cast

from . import jsonl

SOUNDNESS_FILE = "soundness.jsonl"


class _SoundnessKeys(TypedDict):
    task_id: str
    task_hash: str  # the task as it was checked: a result counts for that content only


class SoundnessRecord(_SoundnessKeys, total=False):
    """A line of ``soundness.jsonl``: one task's ``--bench-soundness`` result (report/soundness.py).
    Only its keys are checked when read: the report reads the rest as it finds them."""

    sound: bool
    checks: dict[str, bool | None]
    problems: list[str]
    found_by: str | None
    akm_version: str | None
    run_id: str
    checked_at: str


def append(store_dir: Path, record: SoundnessRecord) -> None:
    """Append one task's result with the store's guarantees (xdist workers append at once); raises OSError."""
    payload = (json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n").encode()
    jsonl.append_line(store_dir / SOUNDNESS_FILE, payload)


def latest(store_dir: Path) -> dict[str, SoundnessRecord]:
    """The latest result of each (task id, task hash), keyed ``"<id>\\0<hash>"``; torn or foreign
    lines are skipped."""
    path = store_dir / SOUNDNESS_FILE
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (FileNotFoundError, NotADirectoryError):
        return {}
    out: dict[str, SoundnessRecord] = {}
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
            out[f"{record['task_id']}\0{record['task_hash']}"] = cast(SoundnessRecord, record)
    return out
