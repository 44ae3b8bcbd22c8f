"""A report whose cells all errored claims nothing about them (issue 14, item 6), and its
provenance names the akm the run found even when no cell got as far as setting it up."""

from __future__ import annotations

import dataclasses
from html import escape

from pytest_akmbench.report import envelope as report
from pytest_akmbench.report.render.html import render
from pytest_akmbench.report.render.markdown import render_markdown
from tests.core.test_metrics import make_task, sample, traj
from tests.core.test_report import inp

TASKS = [make_task(f"d{i}/t{i}", gold_ref="skill:gold") for i in range(4)]


def _errored() -> list[dict[str, object]]:
    # A provider error after the agent started: opencode's transcript exists, so the sample has a
    # trajectory source, yet the agent never did the task.
    return [
        sample(t.id, arm, 1, "harness_error", reason="provider error: HTTP 500", trajectory=traj())
        for t in TASKS
        for arm in ("noakm", "akm")
    ]


def test_every_cell_errored_observes_no_trajectory() -> None:
    env = report.build(dataclasses.replace(inp(TASKS, _errored(), seeds=1), provenance={"akm_version": "0.9.0"}))
    md = render_markdown(env)
    said = "not observed: all 4 akm-arm runs ended in harness_error, so the agent's use of akm was never measured"
    assert said in md and escape(said) in render(env)
    assert "observed in" not in md and "✗" not in md
    assert env["provenance"]["akm_version"] == "0.9.0"
    assert "opencode 1.18.33, akm 0.9.0" in md


def test_a_harness_error_row_is_not_marked_as_a_miss() -> None:
    samples = _errored()
    samples[1] = sample("d0/t0", "akm", 1, "pass", trajectory=traj(searches=[1], shown=["skill:gold"]))
    md = render_markdown(report.build(inp(TASKS, samples, seeds=1)))
    assert "observed in 1 of 4 akm-arm runs" in md
    assert md.count("harness_error (not observed)") == 3


def test_the_samples_akm_wins_and_an_unused_one_says_so() -> None:
    samples = [sample(t.id, "noakm", 1, "pass") for t in TASKS]
    env = report.build(dataclasses.replace(inp(TASKS, samples, ("noakm",), seeds=1), agent="oracle"))
    assert "opencode not used, akm not used" in render_markdown(env)
