"""A run on a corpus whose workspaces mention akm says so before its first cell (issue 29):
``validate`` refuses such a workspace, but a run went ahead in silence with a control arm told
about akm. The check itself is tested in tests/core/test_akmbench_format.py."""

from __future__ import annotations

import pytest

from tests.support.bench import read_report
from tests.support.corpus import write_task

ARGS = ("corpus", "--bench-agent", "oracle", "--bench-seeds", "1", "-p", "no:cacheprovider")


BENCH_INI = "bench_store = store\nbench_report = out\n"


@pytest.fixture
def bench(bench: pytest.Pytester) -> pytest.Pytester:
    """The bench project and a task whose workspace mentions akm."""
    tasks = bench.path / "corpus" / "tasks"
    write_task(tasks, "alpha/leaky", workspace={"README.md": "Task.\n", "AGENTS.md": "Run `akm search` first.\n"})
    return bench


def test_the_run_warns_and_the_report_says_it(bench: pytest.Pytester) -> None:
    """One line naming the task and the file, in the terminal and in the report's warnings and
    summary; the cells still run."""
    result = bench.runpytest_subprocess(*ARGS)
    result.assert_outcomes(passed=8)
    out = result.stdout.str() + result.stderr.str()
    lines = [w for w in read_report(bench.path)["warnings"] if w.startswith("arm neutrality:")]
    assert len(lines) == 1 and "1 selected task(s) mentions akm" in lines[0]
    assert "control arm is contaminated" in lines[0] and "alpha/leaky (workspace/AGENTS.md)" in lines[0]
    assert out.count(lines[0]) == 1
    assert f"- {lines[0]}" in (bench.path / "out" / "summary.md").read_text()


def test_an_akm_only_run_has_no_control_to_contaminate(bench: pytest.Pytester) -> None:
    result = bench.runpytest_subprocess(*ARGS, "--bench-arms", "akm")
    result.assert_outcomes(passed=4)
    assert "arm neutrality" not in result.stdout.str() + result.stderr.str()
    assert not any("arm neutrality" in w for w in read_report(bench.path)["warnings"])


def test_a_bad_workflow_spec_is_left_out_of_the_run_with_a_warning(bench: pytest.Pytester) -> None:
    """A spec that does not load (here akm-bench's weight named twice) no longer stops the run:
    its cells run, checked by the specs that loaded, and the report says which spec was left out."""
    specs = bench.path / "corpus" / "workflows"
    specs.mkdir()
    (specs / "bad.yaml").write_text(
        "id: bad\ntitle: Bad\nrequired_sequence: [{event: akm_search}]\n"
        "scoring: {required: 1, required_steps_weight: 1, forbidden: 0, evidence: 0}\n"
    )
    result = bench.runpytest_subprocess(*ARGS, "--bench-arms", "akm")
    result.assert_outcomes(passed=4)
    (line,) = [w for w in read_report(bench.path)["warnings"] if "bad.yaml" in w]
    assert line == (
        f"{specs / 'bad.yaml'}: scoring.required_steps_weight: the same weight as scoring.required; give one of "
        "them; left out of this run, its checks not made"
    )
    assert line in result.stdout.str() + result.stderr.str()
