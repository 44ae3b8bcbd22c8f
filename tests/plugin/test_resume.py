from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.agents import RESUMABLE
from tests.support.bench import STORE, read_report, samples, strip_times
from tests.support.waiting import interrupt_when


def runs_logged(base: Path) -> list[str]:
    log = base / "agent-runs.log"
    return log.read_text().splitlines() if log.exists() else []


BENCH_AGENT = RESUMABLE
BENCH_FILES = {"delay": "0"}
ARGS = ["corpus", "--bench-agent", "slow", "--bench-report", "out"]


class TestResume:
    """Running the same command again runs only what is missing."""

    def test_deepen_runs_only_new_trials(self, bench: pytest.Pytester) -> None:
        """--bench-seeds 2 then 4: only trials 3 and 4 run; the report has all four."""
        bench.runpytest(*ARGS, "--bench-seeds", "2").assert_outcomes(passed=12)
        assert len(runs_logged(bench.path)) == 12
        result = bench.runpytest(*ARGS, "--bench-seeds", "4", "-v")
        result.assert_outcomes(passed=24)
        new_runs = runs_logged(bench.path)[12:]
        assert sorted({int(r.split()[-1]) for r in new_runs}) == [3, 4] and len(new_runs) == 12
        assert result.stdout.str().count("PASSED (from store)") == 12
        report = read_report(bench.path)
        assert len(report["runs"]) == 24
        assert sum(r["from_store"] for r in report["runs"]) == 12
        assert report["aggregate"]["akm"]["runs"] == 12

    def test_two_sessions_of_one_process_in_one_second_are_two_runs(
        self, bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """pytest.main twice in one process within a second (frozen clock here): the second run
        is a run of its own, so the first run's samples are reported as from the store."""
        import pytest_akmbench.plugin.bench as bench_mod

        monkeypatch.setattr(bench_mod.time, "strftime", lambda fmt, t=None: "20260101T000000Z")
        bench.runpytest(*ARGS, "--bench-seeds", "1").assert_outcomes(passed=6)
        bench.runpytest(*ARGS, "--bench-seeds", "2").assert_outcomes(passed=12)
        first, second = (
            {s["run_id"] for s in part}
            for part in (
                samples(bench.path / STORE, missing_ok=False)[:6],
                samples(bench.path / STORE, missing_ok=False)[6:],
            )
        )
        assert len(first) == len(second) == 1 and first != second
        assert sum(r["from_store"] for r in read_report(bench.path)["runs"]) == 6

    def test_fresh_reruns_and_appends(self, bench: pytest.Pytester) -> None:
        """--bench-fresh runs everything again and appends; the latest samples are reported."""
        bench.runpytest(*ARGS, "--bench-seeds", "1").assert_outcomes(passed=6)
        bench.runpytest(*ARGS, "--bench-seeds", "1", "--bench-fresh").assert_outcomes(passed=6)
        assert len(runs_logged(bench.path)) == 12
        assert len(samples(bench.path / STORE, missing_ok=False)) == 12
        assert not any(r["from_store"] for r in read_report(bench.path)["runs"])

    def test_changed_task_content_invalidates(self, bench: pytest.Pytester) -> None:
        """Editing a task's verifier changes its fingerprint: its cells run again, others do not."""
        bench.runpytest(*ARGS, "--bench-seeds", "1").assert_outcomes(passed=6)
        verify = bench.path / "corpus" / "tasks" / "alpha" / "script-task" / "verify.sh"
        verify.write_text(verify.read_text() + "# stricter now\n")
        bench.runpytest(*ARGS, "--bench-seeds", "1").assert_outcomes(passed=6)
        assert runs_logged(bench.path)[6:] == ["alpha/script-task noakm 1", "alpha/script-task akm 1"]
        assert len(samples(bench.path / STORE, missing_ok=False)) == 8  # old samples stay in the file

    def test_changed_model_invalidates(self, bench: pytest.Pytester) -> None:
        """A different model makes every old sample not count."""
        bench.runpytest(*ARGS, "--bench-seeds", "1", "--bench-model", "m/one").assert_outcomes(passed=6)
        bench.runpytest(*ARGS, "--bench-seeds", "1", "--bench-model", "m/two").assert_outcomes(passed=6)
        assert len(runs_logged(bench.path)) == 12
        assert {r["model"] for r in read_report(bench.path)["runs"]} == {"m/two"}

    def test_harness_errors_run_again(self, bench: pytest.Pytester) -> None:
        """A harness_error attempt is kept in the store but its cell runs again next time, under
        the same fingerprint (an outage of the agent's provider changes nothing the cell is
        fingerprinted on); cells with a valid sample do not."""
        bench.runpytest(*ARGS, "--bench-seeds", "1", "-k", "regex").assert_outcomes(passed=2)
        (bench.path / "down").touch()
        bench.runpytest(*ARGS, "--bench-seeds", "1", "-k", "script").assert_outcomes(errors=2)
        assert read_report(bench.path)["complete"] is False
        (bench.path / "down").unlink()
        result = bench.runpytest(*ARGS, "--bench-seeds", "1", "-k", "script or regex", "-v")
        result.assert_outcomes(passed=4)
        assert result.stdout.str().count("PASSED (from store)") == 2  # the regex cells only
        assert runs_logged(bench.path)[2:] == ["alpha/script-task noakm 1", "alpha/script-task akm 1"] * 2
        records = samples(bench.path / STORE, missing_ok=False)
        assert [r["outcome"] for r in records] == ["pass", "pass", "harness_error", "harness_error", "pass", "pass"]
        assert len({r["fingerprint_hash"] for r in records if r["task_id"] == "alpha/script-task"}) == 2  # one per arm
        assert read_report(bench.path)["complete"] is True

    def test_torn_last_line(self, bench: pytest.Pytester) -> None:
        """A torn last line is skipped with a warning; every other sample is kept."""
        bench.runpytest(*ARGS, "--bench-seeds", "1").assert_outcomes(passed=6)
        store = bench.path / ".akmbench" / "store" / "samples.jsonl"
        with store.open("a") as fh:
            fh.write('{"task_id": "alpha/scr')
        result = bench.runpytest(*ARGS, "--bench-seeds", "1", "-v")
        result.assert_outcomes(passed=6)
        assert result.stdout.str().count("PASSED (from store)") == 6
        warnings = read_report(bench.path)["warnings"]
        assert any("samples.jsonl:7: skipped unreadable record" in w for w in warnings)


class TestOfflineReport:
    """`python -m pytest_akmbench report` rebuilds the session's report from the store."""

    def test_equal_to_session_report(self, bench: pytest.Pytester) -> None:
        """Same envelope and summary, apart from the timestamp."""
        bench.runpytest(*ARGS, "--bench-seeds", "2").assert_outcomes(passed=12)
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest_akmbench",
                "report",
                "--store",
                ".akmbench/store",
                "--out",
                "offline",
                "--agent",
                "slow",
                "--seeds",
                "2",
            ],
            cwd=bench.path,
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stderr
        session, offline = read_report(bench.path), read_report(bench.path, "offline")
        session.pop("timestamp"), offline.pop("timestamp")
        assert session == offline
        strip = lambda p: "\n".join(line for line in p.read_text().splitlines() if not line.startswith("branch "))  # noqa: E731
        assert strip(bench.path / "out" / "summary.md") == strip(bench.path / "offline" / "summary.md")

    def test_a_gate_is_withheld_from_an_incomplete_report(self, bench: pytest.Pytester) -> None:
        """The offline report of a run not yet deepened to the seeds asked for says it is
        incomplete, and a gate that would hold on the cells it has does not pass (exit 1)."""
        bench.runpytest(*ARGS, "--bench-seeds", "1").assert_outcomes(passed=6)
        command = [sys.executable, "-m", "pytest_akmbench", "report", "--store", ".akmbench/store"]
        command += ["--out", "offline", "--agent", "slow", "--gate", "noakm.pass_rate>=0.5"]
        held = subprocess.run([*command, "--seeds", "1"], cwd=bench.path, capture_output=True, text=True)
        assert held.returncode == 0 and "gate held: noakm.pass_rate>=0.5" in held.stdout, held.stderr
        short = subprocess.run([*command, "--seeds", "2"], cwd=bench.path, capture_output=True, text=True)
        assert short.returncode == 1, short.stdout + short.stderr
        assert "gate FAILED: noakm.pass_rate>=0.5: not passed: the report is incomplete" in short.stdout
        assert read_report(bench.path, "offline")["complete"] is False


class TestInterrupt:
    """Ctrl-C loses at most the cells in flight; the same command resumes exactly."""

    def test_sigint_then_resume(self, bench: pytest.Pytester) -> None:
        """Interrupt a -n 2 run, run it again: the missing cells run once, the report is whole."""
        (bench.path / "delay").write_text("0.6")
        cmd = [sys.executable, "-m", "pytest", *ARGS, "--bench-seeds", "2", "-n", "2", "-p", "no:cacheprovider"]
        proc = subprocess.Popen(cmd, cwd=bench.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        out = interrupt_when(proc, lambda: len(samples(bench.path / STORE)) >= 3, "3 cells are stored")
        stored_after_interrupt = len(samples(bench.path / STORE, missing_ok=False))
        assert 3 <= stored_after_interrupt < 12, out
        assert read_report(bench.path)["complete"] is False

        (bench.path / "delay").write_text("0")
        result = bench.runpytest_subprocess(*ARGS[:-1], "resumed", "--bench-seeds", "2", "-n", "2", "-v")
        result.assert_outcomes(passed=12)
        assert result.stdout.str().count("PASSED (from store)") == stored_after_interrupt
        cells = [(r["task_id"], r["arm"], r["seed"]) for r in samples(bench.path / STORE, missing_ok=False)]
        assert len(cells) == len(set(cells)) == 12  # nothing ran twice
        resumed = read_report(bench.path, "resumed")
        assert resumed["complete"] is True

        bench.runpytest_subprocess(
            *ARGS[:-1], "whole", "--bench-seeds", "2", "--bench-store", "other-store"
        ).assert_outcomes(passed=12)
        whole = read_report(bench.path, "whole")
        # runs[] and provenance legitimately differ in from_store; everything else must not.
        drop = lambda env: strip_times({k: v for k, v in env.items() if k not in ("runs", "provenance")})  # noqa: E731
        assert drop(resumed) == drop(whole)
        assert [(r["task_id"], r["arm"], r["seed"], r["outcome"]) for r in resumed["runs"]] == [
            (r["task_id"], r["arm"], r["seed"], r["outcome"]) for r in whole["runs"]
        ]
