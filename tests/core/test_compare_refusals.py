"""Whether two reports compare (report/compare/refusals.py): each refusal's reason, message and
fields, in order, and the warning an allowed mismatch or a missing pin leaves instead."""

from __future__ import annotations

from typing import Any, cast

import pytest

from pytest_akmbench.report.compare.refusals import corpus_field, refusal
from pytest_akmbench.report.envelope_types import Envelope

PINS = {"taskCorpusHash": "tc", "fixtureContentHash": "fx", "selectedTaskIds": ["a/1"], "taskHashes": {"a/1": "h"}}


def report(corpus: dict[str, Any] | None = None, model: str | None = "m/1", **top: Any) -> Envelope:
    envelope = {"schemaVersion": 1, "track": "utility", "agent": {"model": model}, "corpus": {**PINS, **(corpus or {})}}
    return cast(Envelope, {**envelope, **top})


def ask(base: Envelope, head: Envelope, **allow: bool) -> tuple[dict[str, Any] | None, list[str]]:
    warnings: list[str] = []
    flags = {f"allow_{k}": allow.get(k, False) for k in ("model", "corpus", "fixture")}
    return refusal(base, head, warnings=warnings, **flags), warnings


def test_two_reports_of_one_corpus_and_model_compare_without_a_word() -> None:
    assert ask(report(), report()) == (None, [])


@pytest.mark.parametrize(
    ("base", "head", "reason", "message"),
    [
        (report(schemaVersion=2), report(), "schema_mismatch", "base report has schemaVersion 2; expected 1"),
        (report(), report(schemaVersion=None), "schema_mismatch", "current report has schemaVersion None; expected 1"),
        (
            report(),
            report(track="evolve"),
            "track_mismatch",
            "current report has track 'evolve'; only utility reports compare",
        ),
        (report(track=None), report(), "track_mismatch", "base report has track None; only utility reports compare"),
    ],
)
def test_a_report_of_another_format_or_track_is_refused(
    base: Envelope, head: Envelope, reason: str, message: str
) -> None:
    refused, _ = ask(base, head, model=True, corpus=True, fixture=True)
    assert refused == {"ok": False, "reason": reason, "message": message, "warnings": []}


def test_the_format_is_checked_before_the_track() -> None:
    refused, _ = ask(report(track="evolve"), report(schemaVersion=2))
    assert refused is not None and refused["reason"] == "schema_mismatch"


def test_another_model_is_refused_or_warned() -> None:
    refused, _ = ask(report(model=None), report(model="m/2"))
    assert refused == {
        "ok": False,
        "reason": "model_mismatch",
        "message": "models differ (base='<unknown>', current='m/2'); use --allow-model-mismatch to diff anyway",
        "baseModel": "<unknown>",
        "currentModel": "m/2",
        "warnings": [],
    }
    assert ask(report(), report(model="m/2"), model=True) == (
        None,
        ["models differ (base='m/1', current='m/2') — diff requested via --allow-model-mismatch"],
    )
    assert ask(report(agent=None), report(agent={}))[0] is None  # both unknown: the same


def test_another_corpus_names_its_tasks() -> None:
    head = report({"taskCorpusHash": "tc2", "selectedTaskIds": ["a/1", "b/1"], "taskHashes": {"a/1": "h2"}})
    refused, _ = ask(report(), head)
    assert refused == {
        "ok": False,
        "reason": "corpus_mismatch",
        "message": 'task corpus hashes differ (base="tc", current="tc2"): changed: a/1; only in current: b/1',
        "baseTaskCorpusHash": "tc",
        "currentTaskCorpusHash": "tc2",
        "changed": ["a/1"],
        "onlyInBase": [],
        "onlyInCurrent": ["b/1"],
        "warnings": [],
    }
    assert ask(report(), head, corpus=True) == (
        None,
        [
            'task corpus hashes differ (base="tc", current="tc2"): changed: a/1; only in current: b/1 — diff '
            "requested via --allow-corpus-mismatch"
        ],
    )


def test_another_corpus_that_does_not_say_which_tasks() -> None:
    bare = {"selectedTaskIds": None, "taskHashes": None}
    refused, _ = ask(report(bare), report({**bare, "taskCorpusHash": "tc2"}))
    assert refused is not None
    assert (
        refused["message"] == 'task corpus hashes differ (base="tc", current="tc2"): the reports do not say which tasks'
    )
    _, warnings = ask(report(bare), report({**bare, "taskCorpusHash": "tc2"}), corpus=True)
    assert warnings == [
        'task corpus hashes differ (base="tc", current="tc2") — diff requested via --allow-corpus-mismatch'
    ]


def test_reports_without_corpus_hashes_compare_their_task_ids() -> None:
    base = report({"taskCorpusHash": None, "selectedTaskIds": ["a/1", "c/1"]})
    head = report({"taskCorpusHash": "", "selectedTaskIds": ["b/1", "a/1"]})
    refused, _ = ask(base, head)
    assert refused == {
        "ok": False,
        "reason": "corpus_mismatch",
        "message": "selected task IDs differ",
        "onlyInBase": ["c/1"],
        "onlyInCurrent": ["b/1"],
        "warnings": [],
    }
    unpinned = [
        f"{name} report has no corpus.taskCorpusHash; proceeding without task-corpus-pin check"
        for name in ("base", "current")
    ]
    assert ask(base, head, corpus=True) == (
        None,
        ["selected task IDs differ — diff requested via --allow-corpus-mismatch", *unpinned],
    )
    same = report({"taskCorpusHash": None, "selectedTaskIds": ["c/1", "a/1"]})
    assert ask(base, same) == (None, unpinned)
    assert ask(report(), report({"taskCorpusHash": None, "selectedTaskIds": ["z/9"]})) == (None, unpinned[1:])
    assert ask(base, report({"taskCorpusHash": None, "selectedTaskIds": None}))[0] is None


def test_another_fixture_is_refused_or_warned_and_a_missing_pin_is_said() -> None:
    refused, _ = ask(report(), report({"fixtureContentHash": "fx2"}))
    assert refused == {
        "ok": False,
        "reason": "hash_mismatch",
        "message": 'fixture-content hashes differ (base="fx", current="fx2")',
        "baseFixtureContentHash": "fx",
        "currentFixtureContentHash": "fx2",
        "warnings": [],
    }
    assert ask(report(), report({"fixtureContentHash": "fx2"}), fixture=True) == (
        None,
        ['fixture-content hashes differ (base="fx", current="fx2") — diff requested via --allow-fixture-mismatch'],
    )
    assert ask(report({"fixtureContentHash": None}), report()) == (
        None,
        ["base report has no corpus.fixtureContentHash; proceeding without fixture-pin check"],
    )


def test_the_warnings_so_far_come_with_a_later_refusal() -> None:
    refused, warnings = ask(report(), report({"fixtureContentHash": "fx2"}, model="m/2"), model=True)
    assert refused is not None and refused["reason"] == "hash_mismatch"
    assert refused["warnings"] is warnings and len(warnings) == 1 and warnings[0].startswith("models differ")


def test_a_corpus_field_of_a_report_without_one_is_none() -> None:
    assert corpus_field(cast(Envelope, {}), "taskCorpusHash") is None
    assert corpus_field(cast(Envelope, {"corpus": None}), "x") is None
    assert corpus_field(report(), "taskCorpusHash") == "tc"
