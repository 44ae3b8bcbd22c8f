"""Tests for pytest_akmbench.report.gates: parsing and evaluation of --bench-gate expressions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_akmbench.report import gates
from tests.core.test_compare import envelope


class TestParse:
    @pytest.mark.parametrize(
        "expr",
        [
            "akm.pass_rate>=0.6",
            " lift >= 0.1 ",
            "lift.low>0",
            "harness_errors<=0",
            "synthetic_lift.p<0.05",
            "noakm.pass_rate.high<1",
            "no-regression:base.json",
            "cells_missing==0",
            "lift.significant",
            "synthetic_lift.significant",
            "no-task-regression:base.json",
        ],
    )
    def test_valid(self, expr: str) -> None:
        """Known metrics, operators and the no-regression form parse."""
        gates.parse(expr)

    @pytest.mark.parametrize(
        ("expr", "fragment"),
        [
            ("akm.pass_rate", "expected METRIC OP NUMBER"),
            ("akm.pass_rate>=high", "expected METRIC OP NUMBER"),
            ("akm.speed>1", "unknown metric 'akm.speed'"),
            ("no-regression:", "needs a report path"),
            ("no-task-regression: ", "no-task-regression needs a report path"),
            ("lift.significant>0", "unknown metric 'lift.significant'"),
            ("lift=>0", "expected METRIC OP NUMBER"),
        ],
    )
    def test_invalid(self, expr: str, fragment: str) -> None:
        """Bad expressions raise ValueError with one line naming the gate."""
        with pytest.raises(ValueError, match=fragment) as err:
            gates.parse(expr)
        assert "\n" not in str(err.value) and "--bench-gate" in str(err.value)


class TestEvaluate:
    def test_thresholds(self, tmp_path: Path) -> None:
        """Observed values decide; an arm not run fails its gate."""
        env = envelope([3] * 10, [0] * 8 + [3] * 2)
        results = gates.evaluate(
            env,
            [
                "akm.pass_rate>=0.6",
                "lift>=0.1",
                "lift.low>0",
                "harness_errors<=0",
                "noakm.pass_rate>=0.5",
                "synthetic.pass_rate>=0",
            ],
            tmp_path,
        )
        assert [r["ok"] for r in results] == [True, True, True, True, False, False]
        assert results[1]["observed"] == pytest.approx(0.8)
        assert results[5]["observed"] is None and "not available" in results[5]["message"]
        assert set(results[0]) == {"gate", "ok", "observed", "message"}

    def test_invalid_raises_before_evaluating(self, tmp_path: Path) -> None:
        """One bad gate rejects the whole list."""
        with pytest.raises(ValueError):
            gates.evaluate(envelope([3]), ["akm.pass_rate>=0", "nonsense"], tmp_path)

    def test_no_regression(self, tmp_path: Path) -> None:
        """Fails on a regression beyond noise, holds on a wobble, fails on an unreadable baseline."""
        (tmp_path / "base.json").write_text(json.dumps(envelope([3] * 10)))
        regressed = gates.evaluate(envelope([0] * 8 + [3] * 2), ["no-regression:base.json"], tmp_path)[0]
        assert regressed["ok"] is False and "akm -0.80" in regressed["message"]
        wobble = gates.evaluate(envelope([2] + [3] * 9), ["no-regression:base.json"], tmp_path)[0]
        assert wobble["ok"] is True
        missing = gates.evaluate(envelope([3]), ["no-regression:nope.json"], tmp_path)[0]
        assert missing["ok"] is False and "cannot read" in missing["message"]
        refused = gates.evaluate(envelope([3, 3]), ["no-regression:base.json"], tmp_path)[0]
        assert refused["ok"] is False and "cannot compare" in refused["message"]


class TestSignificanceGates:
    def test_lift_significant(self, tmp_path: Path) -> None:
        """10 tasks, 8 lifted by 1: significant (p = 2/2^8) and positive, so lift.significant holds;
        the same report read the other way round (akm worse) fails it."""
        up = gates.evaluate(envelope([3] * 10, [0] * 8 + [3] * 2), ["lift.significant"], tmp_path)[0]
        assert up["ok"] is True and up["observed"] == 2 / 2**8 and "over 10 paired tasks" in up["message"]
        down = gates.evaluate(envelope([0] * 8 + [3] * 2, [3] * 10), ["lift.significant"], tmp_path)[0]
        assert down["ok"] is False and down["message"].startswith("not significantly better")

    def test_interval_gates_refuse_few_tasks(self, tmp_path: Path) -> None:
        """3 paired tasks, akm 3/3 against 0/3: lift.low and lift.p refuse; the point lift does not."""
        results = gates.evaluate(envelope([3] * 3, [0] * 3), ["lift.low>0", "lift.p<0.05", "lift>0.5"], tmp_path)
        assert [r["ok"] for r in results] == [False, False, True]
        assert "needs at least 6 paired tasks (has 3)" in results[0]["message"]

    def test_no_task_regression(self, tmp_path: Path) -> None:
        """10 seeds: one task drops 10/10 → 0/10 (Fisher p = 2/C(20,10), Holm over 2 tasks)."""
        (tmp_path / "base.json").write_text(json.dumps(envelope([10, 10], seeds=10)))
        dropped = gates.evaluate(envelope([0, 10], seeds=10), ["no-task-regression:base.json"], tmp_path)[0]
        assert dropped["ok"] is False and "akm:d/t00 -1.00" in dropped["message"]
        same = gates.evaluate(envelope([9, 10], seeds=10), ["no-task-regression:base.json"], tmp_path)[0]
        assert same["ok"] is True and same["message"].startswith("no arm or task regressed beyond noise")
