"""Gates on an unreliable report (issue 30, item 1): every gate fails where the verdict refuses,
and the regression gates count a harness error as a run that did not pass."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_akmbench.report import envelope as report
from pytest_akmbench.report import gates, lift
from tests.core.test_report import TS, _bench, inp

GATES = ["no-regression:base.json", "no-task-regression:base.json", "akm.pass_rate>=0.7"]


def build(tasks: int, seeds: int, outcome: Callable[[int, str, int], str]) -> dict[str, Any]:
    found, samples = _bench(tasks, seeds, outcome)
    return report.build(inp(found, [x for x in samples if x["arm"] != "synthetic"], seeds=seeds), timestamp=TS)


def test_an_akm_release_that_turns_most_runs_into_harness_errors_passes_no_gate(tmp_path: Path) -> None:
    """The issue's bench: 17 tasks × 5 seeds, akm 4/5 per task in the base; now akm passes 1 run
    per task and the other 4 are harness errors (68 of 85). Before, all three gates passed
    ("akm +0.20": the one valid run of each task passed); now each fails and says why."""
    base = build(
        17, 5, lambda i, arm, s: ("pass" if s <= 4 else "fail") if arm == "akm" else "pass" if s <= 2 else "fail"
    )
    (tmp_path / "base.json").write_text(json.dumps(base))
    now = build(
        17,
        5,
        lambda i, arm, s: ("pass" if s == 1 else "harness_error") if arm == "akm" else "pass" if s <= 2 else "fail",
    )
    assert now["verdict"].startswith("provisional: 17 of 34 cells below the floor of 3 — unreliable: 68 of 85 akm")
    results = gates.evaluate(now, GATES, tmp_path)
    assert [r["ok"] for r in results] == [False, False, False]
    # Counted as failures, akm fell from 4/5 to 1/5 on every task: a regression beyond noise.
    assert results[0]["message"].startswith(f"regressed beyond noise vs {tmp_path / 'base.json'}: akm -0.60")
    assert results[2]["message"] == (
        "not passed: unreliable, 68 of 85 akm runs are harness errors (over the 10% limit); "
        "akm.pass_rate = 1, holds >= 0.7"
    )


def test_harness_errors_in_one_arm_only_under_the_limit_are_still_unreliable(tmp_path: Path) -> None:
    """8 of 85 akm runs are harness errors (9%, under the limit), none of noakm's: that difference is
    beyond noise (Fisher exact p = 0.0066, as scipy gives), so the lift may measure the harness; the verdict refuses
    and so does every gate, lift>0 included."""
    now = build(
        17,
        5,
        lambda i, arm, s: (
            "harness_error"
            if arm == "akm" and s == 5 and i < 8
            else "pass"
            if (s <= 3) == (arm == "akm") or s == 1
            else "fail"
        ),
    )
    why = "harness errors differ between arms beyond noise (akm 8/85, noakm 0/85, Fisher exact p=0.0066)"
    assert f"unreliable: {why}, no verdict on akm vs noakm" in now["verdict"]
    results = gates.evaluate(now, ["lift>0", "lift.low>0", "harness_errors<=10"], tmp_path)
    assert [r["ok"] for r in results] == [False, False, False]
    assert results[0]["message"].startswith(f"not passed: unreliable, {why}; lift = ")
    assert results[1]["message"] == f"lift.low refused: {why}"


def test_the_rule_is_the_verdicts() -> None:
    """One rule for the verdict and the gates: a share over 10%, or a difference beyond noise."""
    assert (
        lift.unreliable({"akm": {"runs": 10, "harness_errors": 1}, "noakm": {"runs": 10, "harness_errors": 1}}) is None
    )
    assert (
        lift.unreliable({"akm": {"runs": 85, "harness_errors": 3}, "noakm": {"runs": 85, "harness_errors": 0}}) is None
    )
    assert "2 of 10 akm runs" in str(lift.unreliable({"akm": {"runs": 10, "harness_errors": 2}}))
    assert "Fisher exact" in str(
        lift.unreliable({"akm": {"runs": 85, "harness_errors": 0}, "noakm": {"runs": 85, "harness_errors": 8}})
    )


def test_regression_gates_count_harness_errors_against_the_arm(tmp_path: Path) -> None:
    """17 tasks × 10 seeds. Base: akm 9/10 per task. Now akm passes 8, fails 1 and breaks 1 run per
    task, and noakm breaks 1 too (10% each, equal: reliable). On valid runs akm is at 8/9 = 0.89
    against 0.9, no change; counting the harness error as a run that did not pass, akm delivered
    8/10 against 9/10 on every task, and no-regression fails."""

    def outcome(now: bool) -> Callable[[int, str, int], str]:
        def f(i: int, arm: str, s: int) -> str:
            if now and s == 10:
                return "harness_error"
            passes = (8 if now else 9) if arm == "akm" else 5
            return "pass" if s <= passes else "fail"

        return f

    (tmp_path / "base.json").write_text(json.dumps(build(17, 10, outcome(False))))
    now = build(17, 10, outcome(True))
    assert gates.unreliable(now) is None
    results = gates.evaluate(now, GATES[:2], tmp_path)
    assert [r["ok"] for r in results] == [False, False]
    assert "akm -0.10" in results[0]["message"]
