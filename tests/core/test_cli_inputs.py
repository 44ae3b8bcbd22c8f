"""The commands' small things (issue 14, item 7): their own option names and the paths as typed,
the config that names an unknown task, the default report directory, and what compare says when
corpora differ or a report is incomplete."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from pytest_akmbench.cli.main import main
from pytest_akmbench.report.compare.changes import compare
from tests.core.test_compare import envelope
from tests.support.corpus import standard_corpus


@pytest.mark.parametrize("command", ["validate", "report"])
def test_a_missing_or_empty_corpus_is_named_as_typed(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    assert main([command, "--corpus", "nowhere"]) == 2
    assert capsys.readouterr().err == (
        "akmbench: nowhere: tasks root is not a directory; pass --corpus DIR (default corpus/tasks)\n"
    )
    assert main([command, "--corpus", "empty"]) == 2
    assert capsys.readouterr().err == (
        "akmbench: empty: no task.yaml under this tasks root; pass --corpus DIR (default corpus/tasks)\n"
    )


def test_report_names_the_config_with_an_unknown_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    standard_corpus(tmp_path)
    (tmp_path / "run.json").write_text('{"schemaVersion": 1, "tasks": ["gamma/x"]}')
    assert main(["report", "--corpus", "corpus/tasks", "--stashes", "corpus/stashes", "--config", "run.json"]) == 2
    assert capsys.readouterr().err.startswith("akmbench: run.json: tasks: task not found: 'gamma/x'")


def test_report_says_it_replaces_the_default_report(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    standard_corpus(pytester.path)
    pytester.makeini("[pytest]\nbench_corpus = corpus/tasks\nbench_stashes = corpus/stashes\n")
    pytester.runpytest("corpus", "--bench-agent", "nop", "--bench-seeds", "1", "-p", "no:cacheprovider")
    capsys.readouterr()
    args = ["report", "--agent", "nop", "--seeds", "1"]
    assert main(args) == 0
    out = capsys.readouterr()
    assert out.err == "note: replacing the report in .akmbench/report (the last run's); --out DIR writes elsewhere\n"
    assert main([*args, "--out", "other"]) == 0
    assert capsys.readouterr().err == ""


def test_compare_names_the_tasks_that_differ() -> None:
    base = envelope([3, 3, 3], [1, 1, 1])
    head = copy.deepcopy(base)
    head["corpus"]["taskCorpusHash"] = "f" * 64
    head["corpus"]["taskHashes"]["d/t01"] = "0" * 16
    head["corpus"]["selectedTaskIds"] = ["d/t00", "d/t01", "d/t09"]
    refused = compare(base, head)
    assert refused["reason"] == "corpus_mismatch"
    assert refused["message"].endswith(": changed: d/t01; only in base: d/t02; only in current: d/t09")
    assert refused["changed"] == ["d/t01"]


def test_compare_flags_an_incomplete_report() -> None:
    base = envelope([3, 3], [1, 1])
    head = dict(copy.deepcopy(base), complete=False)
    warnings = compare(base, head)["warnings"]
    assert any(w.startswith("the current report is incomplete") for w in warnings)
    assert not any("base report is incomplete" in w for w in warnings)
