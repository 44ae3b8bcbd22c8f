"""Which tasks two reports' corpora disagree on (``compare``; docs/report.md, "compare").

A report's ``corpus.taskHashes`` maps each selected task id to the hash of its task.yaml text and
shared workspace layers (the same body ``taskCorpusHash`` covers), so a mismatch can name the
tasks behind it.
"""

from __future__ import annotations

import hashlib

from ...corpus.hashes import task_body
from ...corpus.tasks import Task
from ..envelope_types import Envelope

SHOWN = 10


def task_hashes(tasks: list[Task]) -> dict[str, str]:
    return {t.id: hashlib.sha256(task_body(t).encode()).hexdigest()[:16] for t in sorted(tasks, key=lambda t: t.id)}


def differing(base: Envelope, head: Envelope) -> dict[str, list[str]]:
    """``{changed, onlyInBase, onlyInCurrent}``; ``changed`` is empty when a report predates
    ``taskHashes``."""
    bc, hc = base.get("corpus") or {}, head.get("corpus") or {}
    bids, hids = set(bc.get("selectedTaskIds") or []), set(hc.get("selectedTaskIds") or [])
    bh, hh = bc.get("taskHashes") or {}, hc.get("taskHashes") or {}
    return {
        "changed": sorted(i for i in bids & hids if i in bh and i in hh and bh[i] != hh[i]),
        "onlyInBase": sorted(bids - hids),
        "onlyInCurrent": sorted(hids - bids),
    }


def describe(diff: dict[str, list[str]]) -> str:
    """``"changed: a/b; only in base: c/d"``, each list cut at SHOWN; empty when nothing is known."""
    parts = []
    for key, label in (("changed", "changed"), ("onlyInBase", "only in base"), ("onlyInCurrent", "only in current")):
        ids = diff[key]
        if ids:
            more = f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else ""
            parts.append(f"{label}: {', '.join(ids[:SHOWN])}{more}")
    return "; ".join(parts)


def incomplete(name: str, envelope: Envelope) -> str | None:
    """A warning when ``envelope`` is an incomplete report."""
    if envelope.get("complete", True):
        return None
    return (
        f"the {name} report is incomplete (not every selected cell has a valid sample, or it does not match its "
        "run): its figures cover only what ran"
    )
