"""Run-level spend caps (--bench-budget-usd, --bench-budget-run-tokens) with an agent a plugin
registers that reports a fixed cost and token count per cell: what stops, what the report says,
what a later run does with the cells the cap kept from starting, and bad values."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.support.agents import PRICED
from tests.support.bench import project as project_of


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """Three tasks × two arms, the priced agent, no opencode or akm needed."""
    project_of(pytester, agent=PRICED)
    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"]))
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    return pytester


def run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest_subprocess(
        "corpus", "--bench-agent", "priced", "--bench-seeds", "2", "--bench-arms", "noakm", "-rs", *args
    )


def report(project: pytest.Pytester) -> dict[str, object]:
    data: dict[str, object] = json.loads((project.path / ".akmbench" / "report" / "report.json").read_text())
    return data


def test_usd_cap_stops_new_cells_and_the_report_says_so(project: pytest.Pytester) -> None:
    """$0.0125 a cell under a $0.03 cap: three cells run (0.0125, 0.025, then 0.0375 reaches it),
    the other three are skipped without running, and the report is incomplete and says why."""
    result = run(project, "--bench-budget-usd", "0.03", "-p", "no:xdist")
    result.assert_outcomes(passed=3, skipped=3)
    assert result.ret == 0
    out = result.stdout.str()
    reason = "not run: spend cap $0.0300 reached ($0.0375 spent by this run; --bench-budget-usd)"
    said = [line for line in result.outlines if line.startswith("SKIPPED [") and line.endswith(reason)]
    assert sum(int(line.split("[")[1].split("]")[0]) for line in said) == 3, out
    assert all(": not run" in line and "task.yaml:1:" in line for line in said)  # at the cell's task
    env = report(project)
    assert env["complete"] is False
    line = "stopped: spend cap $0.0300 reached ($0.0375 spent by this run); 3 cells not run"
    assert env["warnings"][0] == line  # type: ignore[index]
    assert env["verdict"].startswith("incomplete run — ")  # type: ignore[attr-defined]
    spend = env["spend"]
    assert spend["cap"] == {"kind": "usd", "limit": 0.03, "spent": pytest.approx(0.0375), "reached": True, "not_run": 3}  # type: ignore[index]
    assert spend["run"]["cost_usd"] == pytest.approx(0.0375) and spend["run"]["runs"] == 3  # type: ignore[index]
    summary = (project.path / ".akmbench" / "report" / "summary.md").read_text()
    assert f"**{line}**" in summary
    assert line in out and "report is INCOMPLETE" in out
    # The skipped cells stored nothing: a run without the cap runs exactly them and completes.
    again = run(project, "-p", "no:xdist")
    again.assert_outcomes(passed=6)
    env = report(project)
    assert env["complete"] is True and env["spend"]["cap"] is None  # type: ignore[index]
    assert sum(r["from_store"] for r in env["runs"]) == 3  # type: ignore[attr-defined,index]
    store = (project.path / ".akmbench" / "store" / "samples.jsonl").read_text().splitlines()
    assert len(store) == 6  # 3 from the capped run + the 3 it kept from starting, none twice


def test_token_cap_under_two_workers(project: pytest.Pytester) -> None:
    """1000 tokens a cell under a 2500-token cap on -n 2: three cells are needed to reach it and
    each worker may start one more before it sees the other's sample, never beyond."""
    pytest.importorskip("xdist")
    result = run(project, "--bench-budget-run-tokens", "2500", "-n", "2", "--bench-seeds", "4")
    outcomes = result.parseoutcomes()
    ran, skipped = outcomes.get("passed", 0), outcomes.get("skipped", 0)
    assert ran + skipped == 3 * 4 and 3 <= ran <= 4, result.stdout.str()
    cap = report(project)["spend"]["cap"]  # type: ignore[index]
    assert cap == {"kind": "tokens", "limit": 2500, "spent": 1000 * ran, "reached": True, "not_run": skipped}


def test_cap_not_reached(project: pytest.Pytester) -> None:
    result = run(project, "--bench-budget-run-tokens", "100000", "-p", "no:xdist")
    result.assert_outcomes(passed=6)
    assert "spend cap 100000 tokens: 6000 tokens spent by this run, not reached" in result.stdout.str()
    assert report(project)["complete"] is True


@pytest.mark.parametrize(
    ("args", "ini", "message"),
    [
        (["--bench-budget-usd", "lots"], "", "--bench-budget-usd: 'lots' is not a positive number of US dollars"),
        (["--bench-budget-usd", "0"], "", "--bench-budget-usd: '0' is not a positive number of US dollars"),
        (["--bench-budget-usd", "nan"], "", "--bench-budget-usd: 'nan' is not a positive number"),
        ([], "bench_budget_run_tokens = 2.5\n", "ini bench_budget_run_tokens: '2.5' is not a positive whole number"),
        ([], "bench_budget_run_tokens = -5\n", "ini bench_budget_run_tokens: '-5' is not a positive whole number"),
        (
            ["--bench-budget-usd", "1", "--bench-track", "evolve"],
            "",
            "--bench-budget-usd: spend caps apply to utility runs only; run the evolve track without it",
        ),
    ],
)
def test_bad_values_are_one_line_errors(project: pytest.Pytester, args: list[str], ini: str, message: str) -> None:
    """A bad value stops the run before any cell with one line naming the option or ini key."""
    project.makeini("[pytest]\nbench_corpus = corpus/tasks\nbench_stashes = corpus/stashes\n" + ini)
    result = run(project, *args, "-p", "no:xdist")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.errlines if line.startswith("ERROR:")]
    assert len(errors) == 1 and message in errors[0], result.errlines
    assert "Traceback" not in result.stderr.str()
    assert not (project.path / ".akmbench" / "store" / "samples.jsonl").exists()
