"""Seeded simulations: the size of every claim on null benches and its power on a fixed
alternative. Bounds are the nominal level plus 3 Monte Carlo standard errors; the longer runs
(and the comparison with the rules these replaced) are in benchmarks/stats_power.py."""

from __future__ import annotations

import itertools
import json
import math
import random
from pathlib import Path
from typing import Any

from pytest_akmbench.report import gates, lift, metrics
from pytest_akmbench.report.compare import changes as compare
from pytest_akmbench.stats import intervals as stats
from tests.stats.benches import envelope, paired, rows, runs, task_rates


def ceiling(level: float, reps: int) -> float:
    """The largest rejection rate a test of size ``level`` shows in ``reps`` draws, at 3 SE."""
    return level + 3 * math.sqrt(level * (1 - level) / reps)


def gate_env(block: dict[str, Any]) -> dict[str, Any]:
    return {"aggregate": {"delta": {"pass_rate": block["delta"], "paired": block}}}


class TestVerdict:
    def test_size_on_null_benches(self, tmp_path: Path) -> None:
        """17 tasks × 5 seeds, heterogeneous tasks, both arms equal: the verdict claims a
        difference, and the lift gates pass, no more often than their level allows."""
        rng, reps = random.Random(101), 300
        significant = low_gate = sig_gate = 0
        for _ in range(reps):
            rates = task_rates(rng, 17, "beta")
            block = paired(runs(rng, rates, 5), runs(rng, rates, 5))
            significant += block["significant"]
            low, sig = gates.evaluate(gate_env(block), ["lift.low>0", "lift.significant"], tmp_path)
            low_gate += low["ok"]
            sig_gate += sig["ok"]
        assert significant / reps <= ceiling(0.05, reps)
        assert low_gate / reps <= ceiling(0.025, reps) and sig_gate / reps <= ceiling(0.025, reps)

    def test_power_and_coverage_at_plus_0_2(self) -> None:
        """+0.2 on every task (17 × 5): the verdict finds it far more often than the rule it
        replaced (bootstrap interval AND sign test, both still in the diagnostics), and the
        interval covers the true lift at least at its level."""
        rng, reps = random.Random(202), 200
        hits = old_hits = covered = 0
        for _ in range(reps):
            rates = task_rates(rng, 17, "u")
            block = paired(runs(rng, [p + 0.2 for p in rates], 5), runs(rng, rates, 5))
            diag = block["diagnostics"]
            hits += block["significant"] and block["delta"] > 0
            old_hits += diag["bootstrap_low"] > 0 and diag["sign_test_p"] < 0.05
            covered += block["low"] <= 0.2 <= block["high"]
        assert hits / reps >= 0.65 and hits > old_hits * 1.15
        assert covered / reps >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / reps)

    def test_one_task_never_passes_interval_gates(self, tmp_path: Path) -> None:
        """1 task at 1/1 vs 0/1 passed lift.low>0 before; now interval gates refuse < 6 tasks."""
        block = paired([[True]], [[False]])
        results = gates.evaluate(gate_env(block), ["lift.low>0", "lift.significant", "lift.p<0.05"], tmp_path)
        assert not any(r["ok"] for r in results)
        assert all(f"at least {lift.MIN_PAIRED_TASKS} paired tasks (has 1)" in r["message"] for r in results)

    def test_holm_keeps_the_family_at_five_percent(self) -> None:
        """akm, noakm and synthetic all equal (16 × 3): P(any comparison significant) <= 5%."""
        rng, reps, any_hit = random.Random(303), 300, 0
        for _ in range(reps):
            rates = task_rates(rng, 16, "beta")
            akm, noakm, syn = (runs(rng, rates, 3) for _ in range(3))
            blocks = [
                lift.compare_arms(("akm", b), rows("akm", akm), rows(b, o), akm, o, resamples=2000)
                for b, o in (("noakm", noakm), ("synthetic", syn))
            ]
            lift.adjust(blocks)
            any_hit += any(b["significant"] for b in blocks)
        assert any_hit / reps <= ceiling(0.05, reps)


class TestCompareAndRegressionGates:
    def run(self, tmp_path: Path, base: dict[str, Any], head: dict[str, Any], kind: str) -> bool:
        (tmp_path / "base.json").write_text(json.dumps(base))
        return gates.evaluate(head, [f"{kind}:base.json"], tmp_path)[0]["ok"]

    def test_regression_gates_size(self, tmp_path: Path) -> None:
        """Nothing changed (17 × 5, two arms): no-regression and no-task-regression fail rarely."""
        rng, reps = random.Random(404), 150
        fails = task_fails = 0
        for _ in range(reps):
            rates = task_rates(rng, 17, "beta")
            base = envelope({"noakm": runs(rng, rates, 5), "akm": runs(rng, rates, 5)}, 5)
            head = envelope({"noakm": runs(rng, rates, 5), "akm": runs(rng, rates, 5)}, 5)
            fails += not self.run(tmp_path, base, head, "no-regression")
            task_fails += not self.run(tmp_path, base, head, "no-task-regression")
        assert fails / reps <= ceiling(0.05, reps) and task_fails / reps <= ceiling(0.05, reps)

    def test_five_of_seventeen_tasks_dropping_fails_no_regression(self, tmp_path: Path) -> None:
        """17 tasks at 0.8 (5 seeds); 5 of them drop to 0.0: the sign test needed 6 losses and
        passed this; the gate now fails nearly always."""
        rng, reps, caught = random.Random(505), 60, 0
        for _ in range(reps):
            base = envelope({"akm": runs(rng, [0.8] * 17, 5)}, 5)
            head = envelope({"akm": runs(rng, [0.0] * 5 + [0.8] * 12, 5)}, 5)
            caught += not self.run(tmp_path, base, head, "no-regression")
        assert caught / reps >= 0.95

    def test_missing_or_all_error_arm_fails_no_regression(self, tmp_path: Path) -> None:
        rng = random.Random(606)
        base = envelope({"noakm": runs(rng, [0.5] * 6, 3), "akm": runs(rng, [0.5] * 6, 3)}, 3)
        missing = envelope({"noakm": runs(rng, [0.5] * 6, 3)}, 3)
        errored = dict(
            missing,
            aggregate={
                **missing["aggregate"],
                "akm": metrics.aggregate(rows("akm", [[] for _ in range(6)], errors=[3] * 6)),
            },
        )
        errored["tasks"] = [
            {**t, "akm": r} for t, r in zip(missing["tasks"], rows("akm", [[] for _ in range(6)], errors=[3] * 6))
        ]
        for head in (missing, errored):
            (tmp_path / "base.json").write_text(json.dumps(base))
            result = gates.evaluate(head, ["no-regression:base.json"], tmp_path)[0]
            assert result["ok"] is False and "arm akm ran in" in result["message"]

    def test_unequal_seeds_not_biased_in_one_direction(self) -> None:
        """Base 3 seeds, current 5, the same 40 mostly easy tasks: "regressed" and "improved"
        beyond noise each stay within their half of the level (with 5 seeds a task at 0.9 misses
        a perfect score more often than with 3, which pulled the sign test towards "regressed")."""
        rng, reps = random.Random(707), 300
        regressed = improved = 0
        for _ in range(reps):
            rates = task_rates(rng, 40, "high")
            result = compare.compare(
                envelope({"akm": runs(rng, rates, 3)}, 3), envelope({"akm": runs(rng, rates, 5)}, 5)
            )
            c = result["arms"]["akm"]
            regressed += c["beyond_noise"] and c["paired"]["delta"] < 0
            improved += c["beyond_noise"] and c["paired"]["delta"] > 0
        assert regressed / reps <= ceiling(0.025, reps) and improved / reps <= ceiling(0.025, reps)


class TestArmFigures:
    def test_cluster_interval_coverage(self) -> None:
        """The per-arm interval covers the mean pass rate of the task population: 17 × 5 and
        40 × 5, tasks spread out (Beta(0.5, 0.5), mean 0.5) or mostly easy (Beta(4, 1), 0.8)."""
        for (m, n, dist, mean), seed in zip(
            ((17, 5, "beta", 0.5), (40, 5, "high", 0.8), (17, 3, "high", 0.8)), (1, 2, 3)
        ):
            rng, reps, covered = random.Random(seed), 1000, 0
            for _ in range(reps):
                outcomes = runs(rng, task_rates(rng, m, dist), n)
                low, high = stats.cluster_rate_interval([sum(o) / n for o in outcomes], m * n)
                covered += low <= mean <= high
            assert covered / reps >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / reps), (m, n, dist)

    def test_pass_k_monotone_with_harness_errors(self) -> None:
        """Random harness errors leave tasks with different numbers of valid runs; the curves
        stay monotone (pass@k up, pass^k down) because every k uses the same tasks."""
        rng = random.Random(808)
        for _ in range(100):
            outcomes = runs(rng, task_rates(rng, 10, "beta"), 5)
            errors = [rng.choice([0, 0, 1, 2]) for _ in outcomes]
            kept = [o[: len(o) - e] for o, e in zip(outcomes, errors)]
            agg = metrics.aggregate(rows("akm", kept, errors=errors))
            assert agg is not None
            at, hat = list(agg["pass_at_k"].values()), list(agg["pass_hat_k"].values())
            assert all(x <= y + 1e-12 for x, y in itertools.pairwise(at)) and all(
                x >= y - 1e-12 for x, y in itertools.pairwise(hat)
            )
