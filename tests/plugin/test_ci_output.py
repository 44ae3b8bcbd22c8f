"""What CI reads of a run (issue 14, item 8): the failure at the task.yaml with one reason, junit
properties per cell, GitHub annotations."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from pytest_akmbench.report.render import github
from tests.support.corpus import write_task

RUN = ("corpus", "--bench-agent", "nop", "--bench-arms", "noakm", "--bench-seeds", "1", "-p", "no:cacheprovider")


def test_a_failure_points_at_the_task_with_one_reason(bench: pytest.Pytester) -> None:
    result = bench.runpytest(*RUN, "--bench-tasks", "beta/regex-task", "--tb=line", "-rf", "-vv")
    reason = r"verifier rejected the work: regex did not match: answer is 4\d"
    result.stdout.fnmatch_lines(
        [f"corpus/tasks/beta/regex-task/task.yaml:1: {reason}", "FAILED *regex-task/task.yaml::noakm-s1 - verifier*"]
    )
    assert result.stdout.str().count("regex did not match") == 2  # the line and the short summary, once each
    assert "Failed: fail:" not in result.stdout.str() and "nodes.py" not in result.stdout.str()


def test_the_long_form_prints_the_verifier_output_once(bench: pytest.Pytester) -> None:
    result = bench.runpytest(*RUN, "--bench-tasks", "alpha/script-task", "--bench-fresh")
    out = result.stdout.str()
    assert "corpus/tasks/alpha/script-task/task.yaml:1: verifier rejected the work: " in out
    assert "Failed:" not in out


def test_junit_carries_each_cells_figures(bench: pytest.Pytester) -> None:
    bench.runpytest(*RUN, "--junitxml", "junit.xml")
    cases = ET.parse(bench.path / "junit.xml").getroot().iter("testcase")
    props = [{p.get("name"): p.get("value") for p in c.iter("property")} for c in cases]
    assert len(props) == 3
    for p in props:
        assert p == {
            "outcome": "fail",
            "tokens": "",
            "cost_usd": "",
            "wall_ms": p["wall_ms"],
            "budget": "",
            "from_store": "false",
        }
        assert int(p["wall_ms"]) >= 0
    bench.runpytest(*RUN, "--junitxml", "junit.xml")  # again: every cell from the store
    cases = ET.parse(bench.path / "junit.xml").getroot().iter("testcase")
    assert {p.get("value") for c in cases for p in c.iter("property") if p.get("name") == "from_store"} == {"true"}


def test_github_annotations_for_harness_errors_and_gates(
    bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A test file without a test: pytest collects nothing, a harness error of every cell.
    write_task(bench.path / "corpus" / "tasks", "gamma/no-verifier", verifier="pytest", tests="x = 1\n")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_WORKSPACE", str(bench.path))
    result = bench.runpytest(*RUN, "--bench-gate", "noakm.pass_rate>=0.5")
    out = result.stdout.lines
    assert "::error title=akmbench gate failed%3A noakm.pass_rate>=0.5::" in "\n".join(out)
    errors = [line for line in out if line.startswith("::error file=corpus/tasks/gamma/no-verifier/task.yaml,line=1,")]
    assert len(errors) == 1 and "harness error" in errors[0]
    assert any(line.startswith("::warning title=akmbench%3A report incomplete::") for line in out)
    monkeypatch.delenv("GITHUB_ACTIONS")
    assert not any(line.startswith("::") for line in bench.runpytest(*RUN).stdout.lines)


def test_annotation_text_is_escaped() -> None:
    line = github.command("error", "gate: a,b", "50% of\nruns", "x/task.yaml")
    assert line == "::error file=x/task.yaml,line=1,title=gate%3A a%2Cb::50%25 of%0Aruns"


@pytest.mark.parametrize("verbosity", ["-q", "-v"])
def test_each_annotation_starts_its_own_line(
    bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, verbosity: str
) -> None:
    """GitHub reads a workflow command only at the start of a line; under -q the first one used
    to follow the progress line (`...[100%]::error title=…`), and GitHub ignored it (issue 29,
    item 2)."""
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    out = bench.runpytest(*RUN, verbosity, "--bench-gate", "noakm.pass_rate>=0.5").stdout.lines
    glued = [line for line in out if ("::error" in line or "::warning" in line) and not line.startswith("::")]
    assert glued == []
    assert [line for line in out if line.startswith("::error title=akmbench gate failed")] != []
