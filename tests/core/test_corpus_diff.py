"""Which tasks two reports' corpora disagree on (report/compare/corpus_diff.py): the lines
``compare`` prints when it refuses or warns."""

from __future__ import annotations

from typing import Any, cast

from pytest_akmbench.report.compare.corpus_diff import SHOWN, describe, differing, incomplete
from pytest_akmbench.report.envelope_types import Envelope


def envelope(ids: list[str], hashes: dict[str, str] | None = None, **extra: Any) -> Envelope:
    corpus: dict[str, Any] = {"selectedTaskIds": ids}
    if hashes is not None:
        corpus["taskHashes"] = hashes
    return cast(Envelope, {"corpus": corpus, **extra})


def test_changed_tasks_and_tasks_on_one_side() -> None:
    base = envelope(["a/1", "a/2", "a/3", "b/1"], {"a/1": "x", "a/2": "y", "a/3": "z", "b/1": "q"})
    head = envelope(["a/3", "a/2", "a/1", "c/1"], {"a/1": "x", "a/2": "Y", "a/3": "z2", "c/1": "q"})
    assert differing(base, head) == {"changed": ["a/2", "a/3"], "onlyInBase": ["b/1"], "onlyInCurrent": ["c/1"]}


def test_a_report_without_task_hashes_changes_nothing_it_cannot_tell() -> None:
    base = envelope(["a/1", "a/2"])
    head = envelope(["a/1", "a/2"], {"a/1": "x", "a/2": "y"})
    assert differing(base, head) == {"changed": [], "onlyInBase": [], "onlyInCurrent": []}
    partial = envelope(["a/1", "a/2"], {"a/1": "other"})
    assert differing(partial, head)["changed"] == ["a/1"]
    assert differing(head, partial)["changed"] == ["a/1"]
    no_corpus = cast(Envelope, {"corpus": None})
    assert differing(no_corpus, head) == {"changed": [], "onlyInBase": [], "onlyInCurrent": ["a/1", "a/2"]}
    assert differing(head, cast(Envelope, {}))["onlyInBase"] == ["a/1", "a/2"]
    assert differing(envelope(None, None), head)["onlyInCurrent"] == ["a/1", "a/2"]  # type: ignore[arg-type]


def test_the_line_names_each_kind_and_cuts_long_lists() -> None:
    assert describe({"changed": [], "onlyInBase": [], "onlyInCurrent": []}) == ""
    assert describe({"changed": ["a/1"], "onlyInBase": ["b/1", "b/2"], "onlyInCurrent": ["c/1"]}) == (
        "changed: a/1; only in base: b/1, b/2; only in current: c/1"
    )
    ids = [f"t/{n:02}" for n in range(SHOWN + 2)]
    assert SHOWN == 10
    assert describe({"changed": ids, "onlyInBase": [], "onlyInCurrent": []}) == (
        f"changed: {', '.join(ids[:10])} and 2 more"
    )
    assert describe({"changed": ids[:10], "onlyInBase": [], "onlyInCurrent": ids[:1]}) == (
        f"changed: {', '.join(ids[:10])}; only in current: t/00"
    )


def test_an_incomplete_report_is_said_once_by_name() -> None:
    assert incomplete("base", envelope([])) is None
    assert incomplete("base", envelope([], complete=True)) is None
    assert incomplete("current", envelope([], complete=False)) == (
        "the current report is incomplete (not every selected cell has a valid sample, or it does not match "
        "its run): its figures cover only what ran"
    )
