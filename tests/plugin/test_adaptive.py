"""--bench-until decisive: the rounds, the stop, the report, xdist and resume (docs/adaptive.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.agents import POLICY
from tests.support.bench import STORE, cells, read_report, samples
from tests.support.schemas import problems
from tests.support.waiting import interrupt_when

BENCH_AGENT = POLICY
BENCH_FILES = {"delay": "0", "policy": "akm-wins"}
ARGS = ["corpus", "--bench-agent", "policy", "--bench-until", "decisive", "-p", "no:cacheprovider"]


def runs_logged(base: Path) -> list[tuple[str, str, int]]:
    log = base / "agent-runs.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return [(t, a, int(s)) for t, a, s in (line.split() for line in lines)]


def unneeded(result: pytest.RunResult) -> int:
    return result.parseoutcomes().get("unneeded", 0)


class TestStopping:
    def test_decisive_stops_early(self, bench: pytest.Pytester) -> None:
        """akm solves every task, noakm none: after the floor of 2 seeds 6 discordant pairs fall short
        of the lead of 7 the first look needs; after the third round 9 reach the 8 needed. Seeds 4
        and 5 never run and are NOT NEEDED, not failures."""
        result = bench.runpytest(*ARGS, "--bench-floor", "2", "--bench-max-seeds", "5", "--bench-report", "out", "-v")
        result.assert_outcomes(passed=9, failed=9)
        assert unneeded(result) == 12
        assert sorted({s for _, _, s in runs_logged(bench.path)}) == [1, 2, 3]
        assert result.stdout.str().count("NOT NEEDED") == 12
        block = read_report(bench.path)["adaptive"]
        assert (block["stopping_reason"], block["looks"], block["direction"]) == ("decisive", 2, "akm")
        assert (block["cells_used"], block["cells_max"], block["akm_only"], block["noakm_only"]) == (18, 30, 9, 0)
        assert [look["lead_needed"] for look in block["history"]] == [7, 8] and block["lead_needed"] == 8
        assert (block["floor_lift"], block["conditional_power"]) == (1.0, None)
        report = read_report(bench.path)
        assert len(report["runs"]) == 18 and report["complete"] is True
        assert report["verdict"].startswith("adaptive seeds: 2 looks, stopped: decisive")
        assert "lift +1.00 over seeds 1–2 of every task (unbiased)" in report["verdict"]
        summary = (bench.path / "out" / "summary.md").read_text()
        assert "## Adaptive seeds" in summary and "| 3 | 3 | 9 | 9 | 0 | 8 |" in summary
        assert problems(report, "report") == []

    def test_cells_over_budget_are_failures_of_the_plan(self, bench: pytest.Pytester) -> None:
        """noakm runs out of tokens in every cell instead of failing: budget_exceeded is a valid
        failure, so the run stops where test_decisive_stops_early's does, with the same plan."""
        (bench.path / "over-budget").write_text("")
        result = bench.runpytest(*ARGS, "--bench-floor", "2", "--bench-max-seeds", "5", "--bench-report", "out", "-v")
        result.assert_outcomes(passed=9, failed=9)
        assert unneeded(result) == 12
        report = read_report(bench.path)
        assert {r["outcome"] for r in report["runs"] if r["arm"] == "noakm"} == {"budget_exceeded"}
        assert report["aggregate"]["noakm"]["budget_exceeded_count"] == 9
        block = report["adaptive"]
        assert (block["stopping_reason"], block["looks"], block["direction"]) == ("decisive", 2, "akm")
        assert (block["cells_used"], block["akm_only"], block["noakm_only"]) == (18, 9, 0)
        assert [look["lead_needed"] for look in block["history"]] == [7, 8]
        assert report["complete"] is True and problems(report, "report") == []

    def test_futile_when_every_pair_ties(self, bench: pytest.Pytester) -> None:
        """Both arms solve the even seeds only: every pair ties, so more seeds at that rate can never
        be decisive: the run stops after the floor (the default, 2) as futile, and says why."""
        (bench.path / "policy").write_text("even")
        result = bench.runpytest(*ARGS, "--bench-max-seeds", "4", "--bench-report", "out", "-v")
        result.assert_outcomes(passed=6, failed=6)
        assert unneeded(result) == 12
        assert result.stdout.str().count("NOT NEEDED") == 12
        report = read_report(bench.path)
        block = report["adaptive"]
        assert (block["stopping_reason"], block["looks"], block["floor"]) == ("futile", 1, 2)
        assert (block["conditional_power"], block["cells_used"], block["cells_max"]) == (0.0, 12, 24)
        assert report["verdict"].startswith("adaptive seeds: 1 look, stopped: futile (conditional power 0.0%")
        assert report["complete"] is True and problems(report, "report") == []

    def test_max_reached(self, bench: pytest.Pytester) -> None:
        """The most seeds are the floor: every task runs them, and the reason says so."""
        (bench.path / "policy").write_text("even")
        result = bench.runpytest(*ARGS, "--bench-floor", "2", "--bench-max-seeds", "2", "--bench-report", "out")
        result.assert_outcomes(passed=6, failed=6)
        assert unneeded(result) == 0
        block = read_report(bench.path)["adaptive"]
        assert (block["stopping_reason"], block["looks"], block["decisive"]) == ("max_seeds", 1, False)
        assert block["cells_used"] == block["cells_max"] == 12

    def test_settled_tasks_stop_at_the_floor(self, bench: pytest.Pytester) -> None:
        """Every cell passes: after the floor akm has no room left on any task, the run stops."""
        (bench.path / "policy").write_text("all")
        result = bench.runpytest(*ARGS, "--bench-floor", "2", "--bench-max-seeds", "6", "--bench-report", "out")
        result.assert_outcomes(passed=12)
        assert unneeded(result) == 24
        block = read_report(bench.path)["adaptive"]
        assert (block["stopping_reason"], block["looks"], block["cells_used"]) == ("settled", 1, 12)

    def test_a_spend_cap_ends_the_rounds_without_waiting(self, bench: pytest.Pytester) -> None:
        """Three cells of round 1 reach the 300-token cap (110 each): the cap skips every later cell,
        the round before's included, and no cell waits at the barrier for one that will never run."""
        result = bench.runpytest(
            *ARGS, "--bench-floor", "2", "--bench-max-seeds", "5", "--bench-budget-run-tokens", "300",
            "--bench-report", "out",
        )  # fmt: skip
        result.assert_outcomes(passed=1, failed=2, skipped=27)
        assert result.duration < 120  # the barrier's stall limit is over 360 s
        report = read_report(bench.path)
        assert report["adaptive"]["stopping_reason"] is None and report["complete"] is False
        assert report["spend"]["cap"]["reached"] is True


class TestXdist:
    def test_rounds_under_two_workers(self, bench: pytest.Pytester) -> None:
        """Under -n 2 the barrier keeps a round's decision after the round before: the same cells as
        a serial run, and the time the workers waited is in the block."""
        result = bench.runpytest_subprocess(
            *ARGS, "--bench-floor", "2", "--bench-max-seeds", "5", "--bench-report", "out", "-n", "2"
        )
        result.assert_outcomes(passed=9, failed=9)
        assert unneeded(result) == 12
        runs = runs_logged(bench.path)
        assert len(runs) == len(set(runs)) == 18 and max(s for _, _, s in runs) == 3
        block = read_report(bench.path)["adaptive"]
        assert (block["stopping_reason"], block["looks"]) == ("decisive", 2)
        assert block["barrier_wait_s"] >= 0


class TestResume:
    def test_sigint_then_resume_continues_the_looks(self, bench: pytest.Pytester) -> None:
        """Interrupt an adaptive -n 2 run, run it again: no finished cell runs again, the looks go on
        from the store and the report equals an uninterrupted run's."""
        (bench.path / "delay").write_text("0.5")
        options = ["--bench-floor", "2", "--bench-max-seeds", "5"]
        cmd = [sys.executable, "-m", "pytest", *ARGS, *options, "--bench-report", "out", "-n", "2"]
        proc = subprocess.Popen(cmd, cwd=bench.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        out = interrupt_when(proc, lambda: len(samples(bench.path / STORE)) >= 4, "4 cells are stored")
        first = cells(samples(bench.path / STORE))
        assert 4 <= len(first) < 18, out
        interrupted = read_report(bench.path)
        assert interrupted["complete"] is False and interrupted["adaptive"]["stopping_reason"] is None

        (bench.path / "delay").write_text("0")
        result = bench.runpytest_subprocess(*ARGS, *options, "--bench-report", "resumed", "-n", "2")
        result.assert_outcomes(passed=9, failed=9)
        stored = cells(samples(bench.path / STORE))
        assert len(stored) == len(set(stored)) == 18  # nothing ran twice
        resumed = read_report(bench.path, "resumed")
        assert resumed["complete"] is True
        bench.runpytest_subprocess(*ARGS, *options, "--bench-report", "whole", "--bench-store", "other")
        whole = read_report(bench.path, "whole")
        keep = ("stopping_reason", "looks", "history", "seeds_by_task", "cells_used", "floor_lift")
        assert {k: resumed["adaptive"][k] for k in keep} == {k: whole["adaptive"][k] for k in keep}


class TestRefusals:
    @pytest.mark.parametrize(
        ("extra", "message"),
        [
            (["-k", "s1"], "needs every arm and seed of a selected task"),
            (["--bench-arms", "akm"], "run both arms"),
            (["--bench-max-seeds", "1"], "below the floor of 2"),
            (["--bench-max-seeds", "x"], "--bench-max-seeds: 'x' is not a whole number"),
            (["--bench-shard", "1/2"], "run the adaptive run whole, without --bench-shard"),
            (["-n", "2", "--dist", "loadfile"], "--dist loadfile could hold a round's cells behind the next round's"),
        ],
    )
    def test_one_line_errors(self, bench: pytest.Pytester, extra: list[str], message: str) -> None:
        result = bench.runpytest(*ARGS, *extra)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert message in result.stderr.str()
        assert "Traceback" not in result.stderr.str()
        assert not runs_logged(bench.path)

    def test_unknown_until(self, bench: pytest.Pytester) -> None:
        result = bench.runpytest("corpus", "--bench-agent", "policy", "--bench-until", "sometimes")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert "--bench-until: unknown value 'sometimes'; the one choice is decisive" in result.stderr.str()

    def test_seeds_are_not_used_and_a_warning_says_so(self, bench: pytest.Pytester) -> None:
        (bench.path / "policy").write_text("all")
        result = bench.runpytest(*ARGS, "--bench-seeds", "7", "--bench-floor", "1", "--bench-max-seeds", "2")
        result.assert_outcomes(passed=6)
        line = (
            "--bench-seeds is not used by an adaptive run: every task runs 1 first (--bench-floor) "
            "and at most 2 (--bench-max-seeds)"
        )
        assert line in result.stdout.str()
        assert line in read_report(bench.path, ".akmbench/report")["warnings"]

    def test_max_seeds_alone(self, bench: pytest.Pytester) -> None:
        result = bench.runpytest("corpus", "--bench-agent", "policy", "--bench-max-seeds", "4")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert "--bench-max-seeds: needs --bench-until decisive" in result.stderr.str()


class TestStall:
    def test_the_barrier_gives_up_only_when_the_store_stops_growing(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A lost worker's cell never reports: a cell waiting for its round gives up once the store
        has not grown for longer than any cell may take; a store that grows keeps it waiting. The
        clock is the test's, so no sleep races the 0.4 s limit on a loaded machine."""
        from types import SimpleNamespace

        from pytest_akmbench.plugin import adaptive

        now = [1000.0]
        monkeypatch.setattr(adaptive, "time", SimpleNamespace(monotonic=lambda: now[0]))
        monkeypatch.setattr(adaptive, "STALL_MARGIN_S", 0.0)
        task = SimpleNamespace(budget=SimpleNamespace(wall_ms=300))
        settings = SimpleNamespace(budget_wall_ms=100, verify_timeout=0.1)
        state = SimpleNamespace(settings=settings, tasks=[task], store_dir=tmp_path)
        stall = adaptive.Stall(state)  # type: ignore[arg-type]
        assert stall.limit_s == pytest.approx(0.4)  # the largest wall budget + the verify timeout
        samples = tmp_path / "samples.jsonl"
        for _ in range(6):  # 1.8 s in all, the store growing every 0.3 s: never 0.4 s without growth
            now[0] += 0.3
            with samples.open("a") as f:
                f.write("{}\n")
            assert not stall.over()
        now[0] += 0.39
        assert not stall.over()  # still within the limit since the last growth
        now[0] += 0.02
        assert stall.over()
