"""What a run's exit status, selection and store promise at its edges, through pytest runs of a
bench project: gates that hold over a run with harness errors, an arm negated in -k, the
permissions of the store the preflight makes."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from tests.support.agents import FLAKY, USES_AND_NEVER
from tests.support.bench import read_report, samples

BENCH_INI = "bench_store = store\nbench_report = out\n"
ORACLE = ("corpus", "--bench-agent", "oracle", "--bench-seeds", "1", "-p", "no:cacheprovider")


class TestGatesHoldYetTheRunIsRed:
    """With gates, they decide the exit status, but only over a run the harness judged whole:
    one harness error in 12 runs (under the 10% that makes a gate unreliable) still fails it."""

    ARGS = ("corpus", "--bench-agent", "flaky", "--bench-arms", "noakm", "--bench-seeds", "6", "-k", "script or regex")
    GATE = ("--bench-gate", "noakm.pass_rate>=0.9", "-p", "no:cacheprovider")

    def test_a_harness_error_fails_the_run_though_every_gate_holds(self, bench: pytest.Pytester) -> None:
        bench.makeconftest(FLAKY)
        (bench.path / "errors").write_text("alpha/script-task noakm 3\n")
        result = bench.runpytest(*self.ARGS, *self.GATE)
        result.assert_outcomes(passed=11, errors=1)
        report = read_report(bench.path)
        assert [g["ok"] for g in report["gates"]] == [True], report["gates"]
        assert not any("mismatch" in w for w in report["warnings"])  # the harness error alone fails it
        assert result.ret == pytest.ExitCode.TESTS_FAILED

    def test_the_same_gates_over_a_clean_run_are_green(self, bench: pytest.Pytester) -> None:
        """The control: without the harness error the same gate gives exit 0."""
        bench.makeconftest(FLAKY)
        result = bench.runpytest(*self.ARGS, *self.GATE)
        result.assert_outcomes(passed=12)
        assert result.ret == pytest.ExitCode.OK


class TestNegatedArm:
    """``-k "not akm"`` rules out the akm arm only: the 'akm' inside 'noakm' is not that arm."""

    @pytest.mark.parametrize(
        ("expression", "expected"),
        [
            ("not akm", {"noakm", "synthetic"}),
            ("not akm and not synthetic", {"noakm"}),
            ("not (akm)", {"noakm", "synthetic"}),
        ],
    )
    def test_collection(self, bench: pytest.Pytester, expression: str, expected: set[str]) -> None:
        result = bench.runpytest(
            *ORACLE, "--bench-arms", "noakm,akm,synthetic", "--bench-seeds", "2", "--co", "-q", "-k", expression
        )
        ids = [line for line in result.outlines if "::" in line]
        assert {i.split("::")[1].split("-s")[0] for i in ids} == expected
        assert len(ids) == 3 * 2 * len(expected)

    def test_a_run_without_the_akm_arm_needs_no_akm(
        self, bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """An agent that may call akm runs its control cells without an akm executable when -k
        negates the akm arm; negating the control arm instead still asks for akm."""
        monkeypatch.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"]))
        bench.makeconftest(USES_AND_NEVER)
        args = ("corpus", "--bench-agent", "uses", "--bench-seeds", "1", "-p", "no:cacheprovider")
        result = bench.runpytest(*args, "-k", "script and not akm")
        result.assert_outcomes(passed=1)
        assert [(r["arm"], r["outcome"]) for r in samples(bench.path / "store")] == [("noakm", "pass")]
        refused = bench.runpytest(*args, "-k", "script and not noakm")
        assert refused.ret == pytest.ExitCode.USAGE_ERROR
        refused.stderr.fnmatch_lines(["ERROR: the akm arm needs the akm executable and found none*"])


class TestStorePermissions:
    """A transcript may hold what the agent read: the store the preflight makes is private."""

    def test_a_new_store_is_private_before_and_after_the_cells(self, bench: pytest.Pytester) -> None:
        result = bench.runpytest(*ORACLE, "-k", "script and noakm", "--bench-store", "deep/new/store")
        result.assert_outcomes(passed=1)
        store = bench.path / "deep" / "new" / "store"
        assert stat.S_IMODE(store.stat().st_mode) == 0o700
        assert stat.S_IMODE((store / "samples.jsonl").stat().st_mode) == 0o600
        assert len(samples(store, missing_ok=False)) == 1
