"""Tests for pytest_akmbench.report.gates: parsing and evaluation of --bench-gate expressions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_akmbench.report import envelope as report
from pytest_akmbench.report import gates
from tests.core.test_compare import envelope
from tests.core.test_metrics import make_task, sample
from tests.core.test_report import TS, inp


class TestParse:
    @pytest.mark.parametrize(
        ("expr", "spec"),
        [
            ("akm.pass_rate>=0.6", {"kind": "threshold", "metric": "akm.pass_rate", "op": ">=", "value": 0.6}),
            (" lift >= 0.1 ", {"kind": "threshold", "metric": "lift", "op": ">=", "value": 0.1}),
            ("lift.low>0", {"kind": "threshold", "metric": "lift.low", "op": ">", "value": 0.0}),
            ("harness_errors<=0", {"kind": "threshold", "metric": "harness_errors", "op": "<=", "value": 0.0}),
            ("synthetic_lift.p<5e-2", {"kind": "threshold", "metric": "synthetic_lift.p", "op": "<", "value": 0.05}),
            (
                "noakm.pass_rate.high<1",
                {"kind": "threshold", "metric": "noakm.pass_rate.high", "op": "<", "value": 1.0},
            ),
            ("cells_missing==0", {"kind": "threshold", "metric": "cells_missing", "op": "==", "value": 0.0}),
            ("akm.pass_rate>=-.5", {"kind": "threshold", "metric": "akm.pass_rate", "op": ">=", "value": -0.5}),
            ("no-regression: base.json", {"kind": "no-regression", "path": "base.json"}),
            ("no-task-regression:base.json", {"kind": "no-task-regression", "path": "base.json"}),
            ("lift.significant", {"kind": "significant", "metric": "lift.significant"}),
            ("synthetic_lift.significant", {"kind": "significant", "metric": "synthetic_lift.significant"}),
        ],
    )
    def test_valid(self, expr: str, spec: dict) -> None:
        """Known metrics, operators and the regression forms parse into what the gate will check."""
        assert gates.parse(expr) == spec

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

    def test_a_malformed_gate_lists_the_forms_a_gate_takes(self) -> None:
        with pytest.raises(ValueError) as err:
            gates.parse("lift=>0")
        assert str(err.value) == (
            "--bench-gate 'lift=>0': expected METRIC OP NUMBER (e.g. akm.pass_rate>=0.6), "
            "lift.significant, no-regression:PATH or no-task-regression:PATH"
        )


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
        """3 paired tasks, akm 3/3 against 0/3: lift.low, lift.high and lift.p refuse; the point lift
        does not. Each refusal names its own gate."""
        results = gates.evaluate(
            envelope([3] * 3, [0] * 3), ["lift.low>0", "lift.high<=1", "lift.p<0.05", "lift>0.5"], tmp_path
        )
        assert [r["ok"] for r in results] == [False, False, False, True]
        for result, metric in zip(results, ("lift.low", "lift.high", "lift.p")):
            assert result == {
                "gate": result["gate"],
                "ok": False,
                "observed": None,
                "message": f"{metric} needs at least 6 paired tasks (has 3): "
                "with fewer, the paired test can never reject",
            }
        assert [r["gate"] for r in results[:3]] == ["lift.low>0", "lift.high<=1", "lift.p<0.05"]

    def test_no_task_regression(self, tmp_path: Path) -> None:
        """10 seeds: one task drops 10/10 → 0/10 (Fisher p = 2/C(20,10), Holm over 2 tasks)."""
        (tmp_path / "base.json").write_text(json.dumps(envelope([10, 10], seeds=10)))
        dropped = gates.evaluate(envelope([0, 10], seeds=10), ["no-task-regression:base.json"], tmp_path)[0]
        assert dropped["ok"] is False and "akm:d/t00 -1.00" in dropped["message"]
        same = gates.evaluate(envelope([9, 10], seeds=10), ["no-task-regression:base.json"], tmp_path)[0]
        assert same["ok"] is True and same["message"].startswith("no arm or task regressed beyond noise")


def with_harness_errors(errors: int) -> dict:
    """10 tasks × 3 seeds, akm passes all, noakm passes 1 of 3; seed 3 of the first ``errors``
    akm tasks is a harness error instead."""
    tasks = [make_task(f"d/t{i:02d}") for i in range(10)]
    samples = []
    for i, t in enumerate(tasks):
        for s in (1, 2, 3):
            samples.append(sample(t.id, "akm", s, "harness_error" if s == 3 and i < errors else "pass"))
            samples.append(sample(t.id, "noakm", s, "pass" if s == 1 else "fail"))
    return report.build(inp(tasks, samples), timestamp=TS)


class TestThresholdSemantics:
    """What a user writes is what is checked: operators at the boundary, the right bound, real counts."""

    @pytest.mark.parametrize(("op", "ok"), [(">=", True), (">", False), ("<=", True), ("<", False), ("==", True)])
    def test_operators_at_the_boundary(self, tmp_path: Path, op: str, ok: bool) -> None:
        """akm passes everything: pass_rate is exactly 1, so >= 1 and <= 1 hold, > 1 and < 1 fail."""
        (result,) = gates.evaluate(envelope([3] * 10), [f"akm.pass_rate{op}1"], tmp_path)
        assert result["observed"] == 1.0 and result["ok"] is ok
        assert result["message"] == f"akm.pass_rate = 1, {'holds' if ok else 'fails'} {op} 1"

    def test_operators_off_the_boundary(self, tmp_path: Path) -> None:
        """pass rate 0.8 (8 of 10 tasks): each operator against 0.7 and 0.9."""
        env = envelope([3] * 8 + [0] * 2)
        got = [
            r["ok"]
            for r in gates.evaluate(
                env, [f"akm.pass_rate{op}{v}" for op in (">=", ">", "<=", "<", "==") for v in (0.7, 0.9)], tmp_path
            )
        ]
        assert got == [True, False, True, False, False, True, False, True, False, False]

    def test_lift_bounds_are_the_interval_bounds(self, tmp_path: Path) -> None:
        """lift.low is the lower end of the paired interval and lift.high the upper end, so
        lift.low > 0 holds for a clear lift while lift.high < 1 holds only if the upper end is below 1."""
        env = envelope([3] * 10, [0] * 6 + [3] * 4)
        paired = env["aggregate"]["delta"]["paired"]
        assert paired["low"] < paired["delta"] < paired["high"]
        low, high, point = gates.evaluate(env, ["lift.low>0", "lift.high>=0.9", "lift>0.55"], tmp_path)
        assert low["observed"] == paired["low"] and low["ok"] is True
        assert high["observed"] == paired["high"] and high["ok"] is True
        assert point["observed"] == pytest.approx(0.6) and point["ok"] is True
        (below,) = gates.evaluate(env, [f"lift.high<={paired['low'] + 0.01}"], tmp_path)
        assert below["ok"] is False

    def test_harness_errors_are_counted(self, tmp_path: Path) -> None:
        """Two harness-error runs: harness_errors<=0 fails and shows 2; the arm gate sees them too."""
        env = with_harness_errors(2)
        total, arm, none = gates.evaluate(
            env, ["harness_errors<=0", "akm.harness_errors==2", "noakm.harness_errors==0"], tmp_path
        )
        assert total["ok"] is False and total["observed"] == 2 and "harness_errors = 2, fails" in total["message"]
        assert arm["ok"] is True and none["ok"] is True
        (clean,) = gates.evaluate(with_harness_errors(0), ["harness_errors<=0"], tmp_path)
        assert clean["ok"] is True and clean["observed"] == 0

    def test_too_many_harness_errors_refuse_the_interval_gate(self, tmp_path: Path) -> None:
        """4 of 30 akm runs are harness errors (over 10%): lift.low refuses with the counts."""
        (result,) = gates.evaluate(with_harness_errors(4), ["lift.low>0"], tmp_path)
        assert result["ok"] is False and "4 of 30 akm runs are harness errors" in result["message"]


def rich_envelope() -> dict:
    """Three arms over 8 tasks × 3 seeds, with tokens, budget overruns, harness errors, flaky tasks,
    akm trajectories and missing and partial cells, so every gate metric has a value of its own."""
    from tests.core.test_metrics import traj

    tasks = [make_task(f"d/t{i:02d}", gold_ref="skill:gold") for i in range(8)]
    samples = []
    for i, t in enumerate(tasks):
        for s in (1, 2, 3):
            akm_outcome = "harness_error" if (i, s) == (0, 3) else "fail" if (i == 1 and s == 2) else "pass"
            samples.append(
                sample(
                    t.id,
                    "akm",
                    s,
                    akm_outcome,
                    tokens=1000 + 10 * i + s,
                    wallclock_ms=900 + i,
                    trajectory=traj(
                        searches=[1 if i % 2 else 3],
                        shown=["skill:gold"] if i < 6 else [],
                        feedback="positive" if i < 3 else None,
                        before=i < 5,
                    ),
                )
            )
            if i == 7:
                continue  # noakm and synthetic never ran d/t07: two missing cells, beside akm's partial one
            samples.append(
                sample(
                    t.id,
                    "noakm",
                    s,
                    "budget_exceeded" if (i, s) == (2, 1) else "pass" if i < 2 + s % 2 else "fail",
                    tokens=800 + i,
                    wallclock_ms=700,
                )
            )
            samples.append(
                sample(t.id, "synthetic", s, "pass" if (i + s) % 3 else "fail", tokens=900, wallclock_ms=800)
            )
    return report.build(inp(tasks, samples, arms=("noakm", "synthetic", "akm")), timestamp=TS)


AGG = lambda arm, *keys: lambda env: gates._dig(env, "aggregate", arm, *keys)  # noqa: E731
METRICS = [
    *[
        (f"{arm}.{name}", AGG(arm, *path))
        for arm in ("noakm", "synthetic", "akm")
        for name, path in (
            ("pass_rate", ("pass_rate",)),
            ("pass_rate.low", ("pass_rate_ci", "low")),
            ("pass_rate.high", ("pass_rate_ci", "high")),
            ("pass_at_1", ("pass_at_1",)),
            ("tokens_per_pass", ("tokens_per_pass",)),
            ("tokens_per_run", ("tokens_per_run",)),
            ("wallclock_ms", ("wallclock_ms",)),
            ("harness_errors", ("harness_error_count",)),
            ("budget_exceeded", ("budget_exceeded_count",)),
            ("flaky_tasks", ("flaky_tasks",)),
        )
    ],
    ("lift", lambda env: env["aggregate"]["delta"]["pass_rate"]),
    ("lift.low", lambda env: env["aggregate"]["delta"]["paired"]["low"]),
    ("lift.high", lambda env: env["aggregate"]["delta"]["paired"]["high"]),
    ("lift.p", lambda env: env["aggregate"]["delta"]["paired"]["p_value_holm"]),
    ("synthetic_lift", lambda env: env["aggregate"]["akm_over_synthetic_lift"]),
    ("synthetic_lift.low", lambda env: env["aggregate"]["akm_over_synthetic_paired"]["low"]),
    ("synthetic_lift.high", lambda env: env["aggregate"]["akm_over_synthetic_paired"]["high"]),
    ("synthetic_lift.p", lambda env: env["aggregate"]["akm_over_synthetic_paired"]["p_value_holm"]),
    ("harness_errors", lambda env: sum(r["outcome"] == "harness_error" for r in env["runs"])),
    ("budget_exceeded", lambda env: sum(r["outcome"] == "budget_exceeded" for r in env["runs"])),
    ("negative_transfer_count", lambda env: env["negative_transfer_count"]),
    ("flaky_tasks", lambda env: len(env["flaky_tasks"])),
    ("cells_partial", lambda env: sum(a["partial"] for a in env["floor_coverage"]["by_arm"].values())),
    ("cells_missing", lambda env: sum(a["missing"] for a in env["floor_coverage"]["by_arm"].values())),
    ("token_coverage", lambda env: env["token_measurement"]["coverage"]),
    ("correct_asset_loaded", lambda env: env["trajectory"]["akm"]["correct_asset_loaded"]),
    ("feedback_recorded", lambda env: env["trajectory"]["akm"]["feedback_recorded"]),
    ("searched_before_acting", lambda env: env["trajectory"]["akm"]["searched_before_acting"]),
]


@pytest.fixture(scope="module")
def env() -> dict:
    return rich_envelope()


class TestEveryMetric:
    """Each documented gate metric reads the figure the report prints for it (docs/report.md)."""

    @pytest.mark.parametrize(("metric", "where"), METRICS, ids=[m for m, _ in METRICS])
    def test_observed_is_the_reported_figure(self, env: dict, metric: str, where, tmp_path: Path) -> None:
        expected = where(env)
        assert isinstance(expected, (int, float)), f"{metric}: the test envelope has no value for it"
        (result,) = gates.evaluate(env, [f"{metric}>=-1e9"], tmp_path)
        assert result["observed"] == expected and result["ok"] is True, result
        (below,) = gates.evaluate(env, [f"{metric}<{expected}"], tmp_path)
        assert below["ok"] is False

    def test_missing_and_partial_cells_are_counted_apart(self, env: dict, tmp_path: Path) -> None:
        """Two cells never ran and one ran short of the floor: each gate counts its own kind."""
        missing, partial = gates.evaluate(env, ["cells_missing==0", "cells_partial<=1"], tmp_path)
        assert (missing["ok"], missing["observed"], missing["message"]) == (False, 2, "cells_missing = 2, fails == 0")
        assert (partial["ok"], partial["observed"]) == (True, 1)

    def test_a_large_count_is_printed_whole(self, tmp_path: Path) -> None:
        """A count is shown as the number it is, not rounded to four digits (12345, not 1.234e+04)."""
        env = {"floor_coverage": {"by_arm": {"akm": {"missing": 12345, "partial": 0}}}}
        (result,) = gates.evaluate(env, ["cells_missing<=0"], tmp_path)
        assert result["message"] == "cells_missing = 12345, fails <= 0"

    def test_the_figures_differ(self, env: dict) -> None:
        """The envelope tells metrics apart: a gate reading the wrong figure would be noticed."""
        values = [where(env) for _, where in METRICS]
        assert len({round(v, 9) for v in values if isinstance(v, float) and 0 < v < 1}) >= 12

    def test_an_arm_that_did_not_run(self, tmp_path: Path) -> None:
        """Every metric of an arm not run, and lift without noakm, fails as not available."""
        env = envelope([3] * 6)  # akm only
        results = gates.evaluate(
            env,
            [
                "noakm.pass_rate>=0",
                "synthetic.tokens_per_run<=1e9",
                "lift>=-1",
                "lift.low>=-1",
                "synthetic_lift.p<=1",
                "lift.significant",
            ],
            tmp_path,
        )
        assert [r["ok"] for r in results] == [False] * 6
        assert all(r["observed"] is None and "not available" in r["message"] for r in results)
        assert results[0] == {
            "gate": "noakm.pass_rate>=0",
            "ok": False,
            "observed": None,
            "message": "noakm.pass_rate is not available (arm not run or no data)",
        }
        assert results[5] == {
            "gate": "lift.significant",
            "ok": False,
            "observed": None,
            "message": "lift.significant is not available (arm not run or no paired task)",
        }


def _bench(tasks: int, outcome) -> dict:
    """A report over ``tasks`` tasks × 3 seeds where outcome(i, arm, seed) gives each run's outcome."""
    ts = [make_task(f"d/t{i:02d}") for i in range(tasks)]
    samples = [
        sample(t.id, arm, s, outcome(i, arm, s))
        for i, t in enumerate(ts)
        for arm in ("noakm", "akm")
        for s in (1, 2, 3)
    ]
    return report.build(inp(ts, samples, arms=("noakm", "akm"), seeds=3), timestamp=TS)


class TestNoRegressionFailures:
    """Every way a no-regression gate fails gives the whole result a report shows: gate, ok, observed, message."""

    def test_an_arm_lost_since_the_baseline(self, tmp_path: Path) -> None:
        (tmp_path / "base.json").write_text(json.dumps(_bench(6, lambda i, arm, s: "pass")))
        now = _bench(6, lambda i, arm, s: "harness_error" if arm == "noakm" else "pass")
        (result,) = gates.evaluate(now, ["no-regression:base.json"], tmp_path)
        assert result == {
            "gate": "no-regression:base.json",
            "ok": False,
            "observed": None,
            "message": f"arm noakm ran in {tmp_path / 'base.json'} but has no valid run now "
            "(missing or all harness errors)",
        }

    @pytest.mark.parametrize(("lost", "tail"), [(5, ""), (6, ", … and 1 more"), (7, ", … and 2 more")])
    def test_tasks_lost_since_the_baseline(self, tmp_path: Path, lost: int, tail: str) -> None:
        """Five lost tasks are named; beyond five, the rest are counted."""
        (tmp_path / "base.json").write_text(json.dumps(_bench(8, lambda i, arm, s: "pass")))
        now = _bench(8, lambda i, arm, s: "harness_error" if arm == "akm" and i < lost else "pass")
        (result,) = gates.evaluate(now, ["no-regression:base.json"], tmp_path)
        assert result == {
            "gate": "no-regression:base.json",
            "ok": False,
            "observed": None,
            "message": f"{lost} task(s) with valid runs in {tmp_path / 'base.json'} have none now: "
            f"akm:d/t00, akm:d/t01, akm:d/t02, akm:d/t03, akm:d/t04{tail}",
        }

    def test_unreadable_or_incomparable_baseline(self, tmp_path: Path) -> None:
        (tmp_path / "base.json").write_text(json.dumps(envelope([3] * 10)))
        for gate, words in (
            ("no-regression:nope.json", "cannot read"),
            ("no-regression:base.json", f"cannot compare with {tmp_path / 'base.json'}: "),
        ):
            (result,) = gates.evaluate(envelope([3, 3]), [gate], tmp_path)
            assert (result["gate"], result["ok"], result["observed"]) == (gate, False, None)
            assert set(result) == {"gate", "ok", "observed", "message"} and words in result["message"]

    @pytest.mark.parametrize("kind", ["no-regression", "no-task-regression"])
    @pytest.mark.parametrize("rows", ["absent", "empty"])
    def test_a_baseline_without_per_task_rows(self, tmp_path: Path, kind: str, rows: str) -> None:
        """A baseline with an aggregate but no per-task rows (a reference report) pairs no task, so no
        test could see akm's drop from 1.0 to 0.1 here: the gate fails instead of passing unseen,
        and names every arm it cannot test."""
        base = envelope([3] * 10, [3] * 10)
        if rows == "absent":
            del base["tasks"]
        else:
            base["tasks"] = []
        (tmp_path / "base.json").write_text(json.dumps(base))
        (result,) = gates.evaluate(envelope([0] * 9 + [3], [3] * 10), [f"{kind}:base.json"], tmp_path)
        assert result == {
            "gate": f"{kind}:base.json",
            "ok": False,
            "observed": None,
            "message": f"arm noakm, akm: no task has valid runs in both this report and {tmp_path / 'base.json'} "
            "(the baseline has no per-task rows), so a regression cannot be tested",
        }

    def test_a_baseline_where_no_arm_ran(self, tmp_path: Path) -> None:
        (tmp_path / "base.json").write_text(json.dumps(_bench(6, lambda i, arm, s: "harness_error")))
        (result,) = gates.evaluate(_bench(6, lambda i, arm, s: "pass"), ["no-regression:base.json"], tmp_path)
        assert result == {
            "gate": "no-regression:base.json",
            "ok": False,
            "observed": None,
            "message": f"no arm ran in both this report and {tmp_path / 'base.json'}",
        }


class TestWholeResults:
    """The whole result of each gate outcome, as the report's gates section shows it."""

    def test_no_regression_outcomes(self, tmp_path: Path) -> None:
        base = tmp_path / "base.json"
        base.write_text(json.dumps(envelope([3] * 10)))
        gate = "no-regression:base.json"
        assert gates.evaluate(envelope([0] * 8 + [3] * 2), [gate], tmp_path)[0] == {
            "gate": gate,
            "ok": False,
            "observed": {"akm": pytest.approx(-0.8)},
            "message": f"regressed beyond noise vs {base}: akm -0.80",
        }
        assert gates.evaluate(envelope([2] + [3] * 9), [gate], tmp_path)[0] == {
            "gate": gate,
            "ok": True,
            "observed": {"akm": pytest.approx(-1 / 30)},
            "message": "no arm regressed beyond noise (akm -0.03)",
        }

    def test_one_task_down_while_the_arm_holds(self, tmp_path: Path) -> None:
        """Task d/t00 drops 10/10 → 0/10 while 20 others wobble by one run either way: the arm holds,
        so no-regression passes (naming the task) and no-task-regression fails on it."""
        base = tmp_path / "base.json"
        base.write_text(json.dumps(envelope([10] + [5, 6] * 10, seeds=10)))
        now = envelope([0] + [6, 5] * 10, seeds=10)
        by_task, by_arm = gates.evaluate(now, ["no-task-regression:base.json", "no-regression:base.json"], tmp_path)
        assert by_task == {
            "gate": "no-task-regression:base.json",
            "ok": False,
            "observed": ["akm:d/t00 -1.00"],
            "message": f"1 task(s) regressed beyond noise vs {base} (Fisher exact, Holm over 21 task comparisons): "
            "akm:d/t00 -1.00",
        }
        assert by_arm == {
            "gate": "no-regression:base.json",
            "ok": True,
            "observed": {"akm": pytest.approx(-1 / 21)},
            "message": "no arm regressed beyond noise (akm -0.05); tasks regressed beyond noise: akm:d/t00 -1.00",
        }

    def test_an_arm_and_a_task_down(self, tmp_path: Path) -> None:
        base = tmp_path / "base.json"
        base.write_text(json.dumps(envelope([10, 10], seeds=10)))
        (result,) = gates.evaluate(envelope([0, 10], seeds=10), ["no-task-regression:base.json"], tmp_path)
        assert result == {
            "gate": "no-task-regression:base.json",
            "ok": False,
            "observed": {"akm": pytest.approx(-0.5)},
            "message": f"regressed beyond noise vs {base}: akm -0.50; tasks regressed beyond noise: akm:d/t00 -1.00",
        }
        (same,) = gates.evaluate(envelope([9, 10], seeds=10), ["no-task-regression:base.json"], tmp_path)
        assert same == {
            "gate": "no-task-regression:base.json",
            "ok": True,
            "observed": {"akm": pytest.approx(-0.05)},
            "message": "no arm or task regressed beyond noise (akm -0.05)",
        }

    def test_both_arms_lost(self, tmp_path: Path) -> None:
        base = tmp_path / "base.json"
        base.write_text(json.dumps(_bench(6, lambda i, arm, s: "pass")))
        (result,) = gates.evaluate(_bench(6, lambda i, arm, s: "harness_error"), ["no-regression:base.json"], tmp_path)
        assert result["message"] == (
            f"arm noakm, akm ran in {base} but has no valid run now (missing or all harness errors)"
        )

    def test_lift_significant_outcomes(self, tmp_path: Path) -> None:
        up = gates.evaluate(envelope([3] * 10, [0] * 8 + [3] * 2), ["lift.significant"], tmp_path)[0]
        assert up == {
            "gate": "lift.significant",
            "ok": True,
            "observed": 2 / 2**8,
            "message": "akm better beyond noise: +0.80, Holm-adjusted p = 0.0078 over 10 paired tasks",
        }
        down = gates.evaluate(envelope([0] * 8 + [3] * 2, [3] * 10), ["lift.significant"], tmp_path)[0]
        assert down == {
            "gate": "lift.significant",
            "ok": False,
            "observed": 2 / 2**8,
            "message": "not significantly better: -0.80, Holm-adjusted p = 0.0078 over 10 paired tasks",
        }
        few = gates.evaluate(envelope([3] * 3, [0] * 3), ["lift.significant"], tmp_path)[0]
        assert few == {
            "gate": "lift.significant",
            "ok": False,
            "observed": None,
            "message": "lift.significant needs at least 6 paired tasks (has 3): "
            "with fewer, the paired test can never reject",
        }

    def test_improvements_are_not_regressions(self, tmp_path: Path) -> None:
        """An arm or a task better beyond noise passes the regression gates."""
        (tmp_path / "arm.json").write_text(json.dumps(envelope([0] * 8 + [3] * 2)))
        (arm,) = gates.evaluate(envelope([3] * 10), ["no-regression:arm.json"], tmp_path)
        assert (arm["ok"], arm["message"]) == (True, "no arm regressed beyond noise (akm +0.80)")
        (tmp_path / "task.json").write_text(json.dumps(envelope([0] + [5, 6] * 10, seeds=10)))
        (task,) = gates.evaluate(envelope([10] + [6, 5] * 10, seeds=10), ["no-task-regression:task.json"], tmp_path)
        assert (task["ok"], task["message"]) == (True, "no arm or task regressed beyond noise (akm +0.05)")

    def test_every_regressed_task_is_named(self, tmp_path: Path) -> None:
        (tmp_path / "base.json").write_text(json.dumps(envelope([10, 10] + [5, 6] * 12, seeds=10)))
        (result,) = gates.evaluate(envelope([0, 0] + [6, 5] * 12, seeds=10), ["no-regression:base.json"], tmp_path)
        assert result["message"] == (
            "no arm regressed beyond noise (akm -0.08); tasks regressed beyond noise: akm:d/t00 -1.00, akm:d/t01 -1.00"
        )


def test_six_paired_tasks_are_enough_for_interval_gates(tmp_path: Path) -> None:
    """At 6 paired tasks (2/2^6 < 0.05) the interval and test gates are evaluated, not refused."""
    low, significant = gates.evaluate(envelope([3] * 6, [0] * 6), ["lift.low>0", "lift.significant"], tmp_path)
    assert (low["ok"], low["message"]) == (True, "lift.low = 0.7976, holds > 0")
    assert (significant["ok"], significant["observed"]) == (True, 2 / 2**6)


def test_two_arms_and_two_tasks_are_listed(tmp_path: Path) -> None:
    """Messages list every arm and every task they are about, and a task 0/10 → 9/10 is no regression."""
    (tmp_path / "arms.json").write_text(json.dumps(envelope([3] * 10, [3] * 10)))
    (down,) = gates.evaluate(envelope([0] * 8 + [3] * 2, [0] * 8 + [3] * 2), ["no-regression:arms.json"], tmp_path)
    assert down["message"] == f"regressed beyond noise vs {tmp_path / 'arms.json'}: noakm -0.80, akm -0.80"
    (held,) = gates.evaluate(envelope([3] * 10, [3] * 10), ["no-regression:arms.json"], tmp_path)
    assert held["message"] == "no arm regressed beyond noise (noakm +0.00, akm +0.00)"
    (tmp_path / "tasks.json").write_text(json.dumps(envelope([10, 10] + [5, 6] * 10, seeds=10)))
    (tasks,) = gates.evaluate(envelope([0, 0] + [6, 5] * 10, seeds=10), ["no-task-regression:tasks.json"], tmp_path)
    assert tasks["message"].endswith("(Fisher exact, Holm over 22 task comparisons): akm:d/t00 -1.00, akm:d/t01 -1.00")
    (tmp_path / "up.json").write_text(json.dumps(envelope([0] + [5, 6] * 10, seeds=10)))
    (up,) = gates.evaluate(envelope([9] + [6, 5] * 10, seeds=10), ["no-task-regression:up.json"], tmp_path)
    assert (up["ok"], up["message"]) == (True, "no arm or task regressed beyond noise (akm +0.04)")
