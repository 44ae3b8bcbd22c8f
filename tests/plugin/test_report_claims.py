"""What a report claims, read back from real runs: the verdict line of a three-arm run against
the significance flags it reports, and compare over reports whose runs hold harness errors."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.support.agents import FLAKY, POLICY
from tests.support.bench import read_report
from tests.support.corpus import write_task

BENCH_FILES = {"delay": "0", "policy": "noakm-loses"}


def clause(verdict: str, other: str) -> str:
    """The verdict's clause on akm against ``other`` (after a "provisional: … — " prefix)."""
    parts = verdict.split(" — ", 1)[-1].split("; ")
    mine = (
        f"and {other} (",
        f"akm vs {other} ",
        "pass rate by " if other == "noakm" else f"pass rate over {other} by ",
    )
    found = [c for c in parts if any(m in c for m in mine) and (other != "noakm" or " over " not in c.split("(")[0])]
    assert len(found) == 1, (other, verdict)
    return found[0]


class TestThreeArmVerdict:
    """akm and synthetic solve every task, noakm none: akm beats noakm beyond noise and ties
    synthetic. Each clause of the verdict says what its comparison's flags say."""

    def test_each_clause_follows_its_own_comparison(self, bench: pytest.Pytester) -> None:
        bench.makeconftest(POLICY)
        tasks = bench.path / "corpus" / "tasks"
        for i in range(4):  # seven tasks in all: enough pairs for an exact p below 0.05 after Holm
            write_task(tasks, f"gamma/more-{i}")
        result = bench.runpytest(
            "corpus", "--bench-agent", "policy", "--bench-arms", "noakm,akm,synthetic", "--bench-seeds", "1",
            "--bench-report", "out", "-p", "no:cacheprovider",
        )  # fmt: skip
        result.assert_outcomes(passed=14, failed=7)
        report = read_report(bench.path)
        agg = report["aggregate"]
        over_noakm, over_synthetic = agg["delta"]["paired"], agg["akm_over_synthetic_paired"]
        assert (over_noakm["significant"], over_synthetic["significant"]) == (True, False)
        assert over_noakm["holm_family"] == over_synthetic["holm_family"] == 2
        verdict = report["verdict"]
        assert clause(verdict, "noakm").startswith("akm lifts pass rate by +")
        assert clause(verdict, "synthetic").startswith("no significant difference between akm and synthetic")
        for other in ("noakm", "synthetic"):
            assert "Holm-adjusted over 2 comparisons" in clause(verdict, other)


def compare_json(base: Any, head: Any) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "pytest_akmbench", "compare", str(base), str(head), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode in (0, 1), out.stdout + out.stderr
    data: dict[str, Any] = json.loads(out.stdout)
    return data


class TestCompareWithHarnessErrors:
    """A harness error is no failure of the agent: compare counts a task's valid runs only, as
    the reports themselves do."""

    def test_harness_errors_are_not_failures_in_compare(self, bench: pytest.Pytester) -> None:
        bench.makeconftest(FLAKY)
        args = ("corpus", "--bench-agent", "flaky", "--bench-arms", "noakm", "--bench-seeds", "4", "-k", "script")
        bench.runpytest(*args, "--bench-report", "base", "--bench-store", "s1").assert_outcomes(passed=4)
        (bench.path / "errors").write_text("alpha/script-task noakm 2\nalpha/script-task noakm 3\n")
        bench.runpytest(*args, "--bench-report", "head", "--bench-store", "s2").assert_outcomes(passed=2, errors=2)
        head = read_report(bench.path, "head")
        row = next(t for t in head["tasks"] if t["id"] == "alpha/script-task")["noakm"]
        assert row["pass_rate"] == 1.0 and row["harness_error_count"] == 2
        diff = compare_json(bench.path / "base" / "report.json", bench.path / "head" / "report.json")
        arm = diff["arms"]["noakm"]
        (task,) = [t for t in arm["perTask"] if t["id"] == "alpha/script-task"]
        assert (task["base_runs"], task["current_runs"]) == (4, 2)
        assert (task["base_pass_rate"], task["current_pass_rate"], task["sign"]) == (1.0, 1.0, "flat")
        assert arm["pass_rate_sign"] == "flat"
