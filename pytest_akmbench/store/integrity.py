"""The report invariant: a report's runs are exactly the selected cells' latest valid samples.

The session builds its report from the store, so the store and the report agree by
construction. What can disagree is the run itself: a cell the controller could not identify,
a sample the terminal counted that the store never got (a failed append), a newer sample
another writer appended for one of our cells, a sample a worker stored after the controller
stopped listening. :func:`check` names each such problem in one line; the session then marks
the report incomplete and makes the exit status non-zero, so a wrong number never comes with
a green run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..records import VALID_OUTCOMES, CellKey, Sample

PREFIX = "report mismatch: "


def cell_of(sample: Mapping[str, Any]) -> CellKey:
    return (sample["task_id"], sample["arm"], sample["seed"])


def identity(sample: Mapping[str, Any]) -> tuple[Any, ...]:
    """What tells two samples of one cell apart: the run and moment that made them."""
    return (sample.get("run_id"), sample.get("started_at"), sample.get("fingerprint_hash"), sample.get("outcome"))


def _name(cell: CellKey) -> str:
    return f"{cell[0]}::{cell[1]}-s{cell[2]}"


def _line(count: int, what: str, examples: list[CellKey], tail: str = "") -> str:
    shown = ", ".join(_name(c) for c in sorted(examples)[:3])
    more = f" and {count - 3} more" if count > 3 else ""
    return f"{PREFIX}{count} {what} ({shown}{more}){tail}"


def check(
    *,
    chosen: Iterable[Sample],
    received: Iterable[Sample],
    stored_by_run: Iterable[Sample],
    unidentified: Iterable[str] = (),
) -> list[str]:
    """The problems that make a report disagree with the run that wrote it; empty when none.

    ``chosen``: the samples the report is made of (one per selected cell that has one);
    ``received``: the samples this session's items reported (what the terminal counted);
    ``stored_by_run``: the store's records written by this run; ``unidentified``: node ids of
    collected items the controller could not match to a selected cell.
    """
    problems = _unmatched(sorted(unidentified))
    chosen_by_cell = {cell_of(s): s for s in chosen}
    got = {cell_of(s): s for s in received}
    unstored, replaced, absent = _compare(got, chosen_by_cell, {identity(r) for r in stored_by_run})
    unreported = sorted({cell_of(r) for r in stored_by_run} - set(got))
    return problems + _disagreements(unstored, replaced, absent, unreported)


def _unmatched(missing_ids: list[str]) -> list[str]:
    """Collected items that match no selected cell: they cannot be in the report."""
    if not missing_ids:
        return []
    more = f" and {len(missing_ids) - 1} more" if len(missing_ids) > 1 else ""
    return [
        f"{PREFIX}{len(missing_ids)} collected cells could not be matched to a selected task "
        f"({missing_ids[0]!r}{more}); they are missing from this report"
    ]


def _compare(
    got: Mapping[CellKey, Mapping[str, Any]],
    chosen_by_cell: Mapping[CellKey, Mapping[str, Any]],
    stored_ids: set[tuple[Any, ...]],
) -> tuple[list[CellKey], list[CellKey], list[CellKey]]:
    """The received cells whose sample is not stored, was replaced in the report by another
    sample, or is absent from the report."""
    unstored: list[CellKey] = []
    replaced: list[CellKey] = []
    absent: list[CellKey] = []
    for cell, sample in got.items():
        if not sample.get("from_store") and identity(sample) not in stored_ids:
            unstored.append(cell)
        if sample.get("outcome") not in VALID_OUTCOMES:
            continue  # the report rightly keeps an earlier valid sample over a harness error
        in_report = chosen_by_cell.get(cell)
        if in_report is None:
            absent.append(cell)
        elif identity(in_report) != identity(sample):
            replaced.append(cell)
    return unstored, replaced, absent


def _disagreements(
    unstored: list[CellKey], replaced: list[CellKey], absent: list[CellKey], unreported: list[CellKey]
) -> list[str]:
    """One line per kind of disagreement between the run, the store and the report."""
    problems: list[str] = []
    if unstored:
        problems.append(
            _line(
                len(unstored),
                "samples this run produced are not in the store",
                unstored,
                "; they are in this report only, and a resumed run will run them again",
            )
        )
    if replaced:
        problems.append(
            _line(
                len(replaced),
                "cells have a newer sample in the store than the one this run "
                "reported (another run wrote to the same store)",
                replaced,
            )
        )
    if absent:
        problems.append(_line(len(absent), "cells this run reported have no sample in the report", absent))
    if unreported:
        problems.append(
            _line(
                len(unreported),
                "samples of this run are in the store but were never reported to "
                "this session (a worker went on after the run stopped)",
                unreported,
                "; the terminal's counts leave them out",
            )
        )
    return problems
