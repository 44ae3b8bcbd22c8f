"""A run's numbers hold under real-world pytest use: other plugins, layouts, budgets, bad paths.

Each class is the regression test of an item of "never silently wrong"; the README's
"What the harness refuses" section says what a user sees.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from typing import ClassVar

import pytest

from tests.support import real_akm
from tests.support.agents import COIN, SLOW
from tests.support.bench import STORE, read_report, samples
from tests.support.corpus import standard_corpus, write_task
from tests.support.waiting import interrupt_when


def _without_warnings(lines: list[str]) -> list[str]:
    """stderr without Python warnings (``file.py:N: SomeWarning: ...`` and its source line) that
    other installed plugins print at start-up (pytest-benchmark does under xdist): they are not
    the harness's output."""
    out: list[str] = []
    skip_next = False
    for line in lines:
        if skip_next and line.startswith(" "):
            skip_next = False
            continue
        skip_next = bool(re.match(r"^\S+\.py:\d+: \w*Warning: ", line))
        if not skip_next:
            out.append(line)
    return out


class TestRunBudgets:
    """Item 5: an explicit run-level budget caps the task's own (effective = the smaller)."""

    def test_run_wall_budget_caps_the_tasks(self, bench: pytest.Pytester) -> None:
        """The task declares 20 s; --bench-budget-wall-ms 1500 stops a hung solution after 1.5 s."""
        write_task(bench.path / "corpus" / "tasks", "gamma/hangs", solve="sleep 120\n")
        started = time.monotonic()
        result = bench.runpytest(
            "corpus",
            "--bench-agent",
            "oracle",
            "--bench-seeds",
            "1",
            "--bench-arms",
            "noakm",
            "-k",
            "hangs",
            "--bench-budget-wall-ms",
            "1500",
            "--bench-report",
            "out",
        )
        assert time.monotonic() - started < 15
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(["*task.yaml:1: wall budget exceeded*"])
        (record,) = samples(bench.path / STORE)
        assert record["fingerprint"]["budget"]["wall_ms"] == 1500

    def test_task_budget_wins_when_smaller_or_run_budget_unset(self, bench: pytest.Pytester) -> None:
        """Without a run-level value the task's own budget holds; a larger run value changes nothing."""
        bench.runpytest(
            "corpus",
            "--bench-agent",
            "oracle",
            "--bench-seeds",
            "1",
            "--bench-arms",
            "noakm",
            "-k",
            "script",
            "--bench-report",
            "out",
        ).assert_outcomes(passed=1)
        bench.runpytest(
            "corpus",
            "--bench-agent",
            "oracle",
            "--bench-seeds",
            "1",
            "--bench-arms",
            "noakm",
            "-k",
            "script",
            "--bench-report",
            "out",
            "--bench-budget-wall-ms",
            "900000",
            "--bench-budget-tokens",
            "5000",
            "-v",
        ).assert_outcomes(passed=1)
        first, *rest = samples(bench.path / STORE)
        assert first["fingerprint"]["budget"] == {"tokens": 1000, "wall_ms": 20000, "turns": None}
        assert rest == []  # same effective budgets, so the stored sample still counts


EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


class TestCorpusOutsideTheRootdir:
    """Item 1: under -n 2 a corpus outside pytest's rootdir gave an empty report marked complete."""

    @pytest.mark.parametrize("layout", ["rootdir", "relative-option"])
    def test_xdist_report_is_whole(
        self, bench: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory, layout: str
    ) -> None:
        """Node ids relative to the collection argument still name their cells."""
        tasks, stashes = standard_corpus(tmp_path_factory.mktemp("elsewhere"))
        if layout == "rootdir":
            extra = ["--rootdir", str(bench.path)]
        else:  # a relative path among the options moves pytest's rootdir guess
            (bench.path / "tools").mkdir()
            (bench.path / "tools" / "akm").symlink_to(real_akm.get().path)
            extra = ["--bench-akm", "tools/akm"]
        result = bench.runpytest_subprocess(
            str(tasks),
            "--bench-corpus",
            str(tasks),
            "--bench-stashes",
            str(stashes),
            "--bench-agent",
            "oracle",
            "--bench-seeds",
            "1",
            "-n",
            "2",
            "--bench-report",
            str(bench.path / "out"),
            "--bench-store",
            str(bench.path / "store"),
            *extra,
        )
        result.assert_outcomes(passed=6)
        report = read_report(bench.path)
        assert report["complete"] is True
        assert len(report["runs"]) == 6 and report["corpus"]["tasks"] == 3
        assert report["corpus"]["taskCorpusHash"] != EMPTY_SHA256
        assert not any(w.startswith("report mismatch") for w in report["warnings"])

    def test_interrupted_run_still_writes_its_report(
        self, bench: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
    ) -> None:
        """Ctrl-C half-way: the report exists, is incomplete, and holds exactly the stored samples."""
        tasks, stashes = standard_corpus(tmp_path_factory.mktemp("elsewhere"))
        # A plugin module rather than a conftest: a conftest beside the rootdir is not loaded
        # for a corpus outside it.
        (bench.path / "slowagent.py").write_text(SLOW)
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pytest",
                str(tasks),
                "-p",
                "slowagent",
                "-p",
                "no:cacheprovider",
                "--bench-corpus",
                str(tasks),
                "--bench-stashes",
                str(stashes),
                "--bench-agent",
                "slow",
                "--bench-seeds",
                "2",
                "-n",
                "2",
                "--rootdir",
                str(bench.path),
                "--bench-report",
                str(bench.path / "out"),
                "--bench-store",
                str(bench.path / "store"),
            ],
            cwd=bench.path,
            env={**os.environ, "PYTHONPATH": str(bench.path)},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        out = interrupt_when(proc, lambda: len(samples(bench.path / "store")) >= 3, "3 samples are stored")
        report = read_report(bench.path)
        assert report["complete"] is False and report["corpus"]["tasks"] == 3
        assert len(report["runs"]) == len(samples(bench.path / "store")) >= 3, out
        assert not any(w.startswith("report mismatch") for w in report["warnings"]), report["warnings"]


class TestOtherPlugins:
    """Item 2: pytest-rerunfailures and pytest-timeout cannot bend a cell's numbers."""

    ARGS: ClassVar = [
        "corpus",
        "--bench-agent",
        "coin",
        "--bench-arms",
        "noakm",
        "--bench-seeds",
        "4",
        "-k",
        "script",
        "--bench-report",
        "out",
    ]

    def test_reruns_never_add_a_second_sample(self, bench: pytest.Pytester) -> None:
        """A 0.5 cell stays 0.5 under --reruns 2: each trial runs once, the store holds one sample per trial."""
        bench.makeconftest(COIN)
        result = bench.runpytest(*self.ARGS, "--reruns", "2")
        result.assert_outcomes(passed=2, failed=2)
        result.stdout.fnmatch_lines(["akmbench: cells are never rerun*--bench-seeds*"])
        assert (bench.path / "calls").read_text() == "4"
        assert len(samples(bench.path / STORE)) == 4
        assert read_report(bench.path)["aggregate"]["noakm"]["pass_rate"] == 0.5

    def test_forced_reruns_reuse_the_first_sample(self, bench: pytest.Pytester) -> None:
        """Even --force-reruns (beats every marker) only repeats the first sample of a trial."""
        bench.makeconftest(COIN)
        result = bench.runpytest(*self.ARGS, "--force-reruns", "1")
        assert (bench.path / "calls").read_text() == "4"
        assert len(samples(bench.path / STORE)) == 4
        assert read_report(bench.path)["aggregate"]["noakm"]["pass_rate"] == 0.5
        assert result.ret == pytest.ExitCode.TESTS_FAILED

    def test_timeout_thread_method_cannot_orphan_a_cell(self, bench: pytest.Pytester) -> None:
        """--timeout 2 --timeout-method thread used to os._exit the run and orphan the agent; the
        cell's own wall budget bounds it instead, and nothing of it survives."""
        tag = f"7{os.getpid() % 10000:04d}{time.time_ns() % 10000:04d}"
        write_task(bench.path / "corpus" / "tasks", "gamma/slow", solve=f"sleep 60.{tag}\n")
        result = bench.runpytest_subprocess(
            "corpus",
            "--bench-agent",
            "oracle",
            "--bench-arms",
            "noakm",
            "--bench-seeds",
            "1",
            "-k",
            "slow",
            "--bench-budget-wall-ms",
            "4000",
            "--timeout",
            "2",
            "--timeout-method",
            "thread",
            "--bench-report",
            "out",
        )
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(
            ["akmbench: pytest-timeout is off for cells*budget*", "*task.yaml:1: wall budget exceeded*"]
        )
        survivors = subprocess.run(["pgrep", "-f", f"sleep 60.{tag}"], capture_output=True, text=True).stdout
        assert survivors == ""
        assert len(samples(bench.path / STORE)) == 1

    def test_lf_reports_stored_failures_and_fresh_lf_is_refused(self, bench: pytest.Pytester) -> None:
        """--lf selects the failed cells and reports their stored samples; with --bench-fresh it is refused."""
        bench.makeconftest(COIN)
        bench.runpytest(*self.ARGS, "-p", "cacheprovider").assert_outcomes(passed=2, failed=2)
        again = bench.runpytest(*self.ARGS, "-p", "cacheprovider", "--lf", "-v")
        again.assert_outcomes(failed=2)
        assert (
            len([line for line in again.outlines if line.startswith("corpus/") and "FAILED (from store)" in line]) == 2
        )
        assert (bench.path / "calls").read_text() == "4"
        refused = bench.runpytest(*self.ARGS, "-p", "cacheprovider", "--lf", "--bench-fresh")
        assert refused.ret == pytest.ExitCode.USAGE_ERROR
        refused.stderr.fnmatch_lines(["ERROR: --bench-fresh with --lf re-runs only the failed trials*"])


FOREIGN_WRITER = """
import json, time
import pytest
from pathlib import Path

@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    # Another writer appends a newer sample for one of this run's cells before the report is built.
    store = Path(str(session.config.rootpath)) / ".akmbench" / "store" / "samples.jsonl"
    if not hasattr(session.config, "workerinput") and store.exists():
        mine = [json.loads(l) for l in store.read_text().splitlines() if l.strip()]
        newer = dict(mine[0], run_id="someone-else", started_at=f"2999-{time.time_ns()}", outcome="fail")
        with store.open("a") as fh:
            fh.write(json.dumps(newer) + "\\n")
"""


class TestReportInvariant:
    """The report's runs are exactly the selected cells' latest valid samples, or it says so."""

    def test_newer_foreign_sample_makes_the_report_incomplete_and_the_run_red(self, bench: pytest.Pytester) -> None:
        """A report that would show numbers this run did not see is flagged, incomplete, exit 1, gate or not."""
        bench.makeconftest(FOREIGN_WRITER)
        args = ["corpus", "--bench-agent", "oracle", "--bench-seeds", "1", "--bench-report", "out"]
        result = bench.runpytest(*args)
        result.assert_outcomes(passed=6)
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        result.stdout.fnmatch_lines(
            [
                "report mismatch: 1 cells have a newer sample in the store*",
                "report is INCOMPLETE: it does not match the run*",
            ]
        )
        report = read_report(bench.path)
        assert report["complete"] is False
        assert report["warnings"][0].startswith("report mismatch: 1 cells have a newer sample")
        gated = bench.runpytest(*args, "--bench-gate", "akm.pass_rate>=0")
        assert gated.ret == pytest.ExitCode.TESTS_FAILED

    def test_a_clean_run_is_complete_and_green(self, bench: pytest.Pytester) -> None:
        result = bench.runpytest("corpus", "--bench-agent", "oracle", "--bench-seeds", "1", "--bench-report", "out")
        assert result.ret == pytest.ExitCode.OK
        report = read_report(bench.path)
        assert report["complete"] is True and len(report["runs"]) == 6
        assert not any("mismatch" in w for w in report["warnings"])


class TestUnwritablePlaces:
    """Items 8 and 9: a place the run cannot write to is a one-line error before any cell runs."""

    ARGS: ClassVar = ["corpus", "--bench-agent", "oracle", "--bench-seeds", "1"]

    @pytest.mark.parametrize("option", ["--bench-report", "--bench-store", "--bench-tmp"])
    def test_directory_under_an_existing_file(self, bench: pytest.Pytester, option: str) -> None:
        (bench.path / "afile").write_text("")
        result = bench.runpytest_subprocess(*self.ARGS, option, "afile/sub")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        errors = [line for line in _without_warnings(result.stderr.lines) if line.strip()]
        assert len(errors) == 1 and errors[0].startswith("ERROR: ") and "afile/sub" in errors[0], errors
        assert option in errors[0]
        assert "Traceback" not in result.stdout.str() + result.stderr.str()
        assert not (bench.path / ".akmbench" / "store" / "samples.jsonl").exists()

    def test_samples_file_is_a_directory(self, bench: pytest.Pytester) -> None:
        (bench.path / ".akmbench" / "store" / "samples.jsonl").mkdir(parents=True)
        result = bench.runpytest_subprocess(*self.ARGS)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["ERROR: *store: samples.jsonl is not a regular file; move it away*"])
        assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()

    def test_unwritable_step_summary(self, bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
        (bench.path / "afile").write_text("")
        monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(bench.path / "afile" / "summary.md"))
        result = bench.runpytest_subprocess(*self.ARGS)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["ERROR: *afile/summary.md: GITHUB_STEP_SUMMARY cannot be appended to*"])

    def test_report_dir_lost_during_the_run(self, bench: pytest.Pytester) -> None:
        """A report that cannot be written after every cell ran: one line naming the fix, exit 1, samples kept."""
        bench.makeconftest(
            "import shutil\n"
            "def pytest_runtest_teardown(item):\n"
            "    out = item.config.rootpath / 'out'\n"
            "    if out.is_dir():\n"
            "        shutil.rmtree(out)\n"
            "        out.write_text('now a file')\n"
        )
        result = bench.runpytest_subprocess(*self.ARGS, "--bench-report", "out")
        result.assert_outcomes(passed=6)
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        result.stdout.fnmatch_lines(
            ["ERROR: akmbench: cannot write the report to *out: *pytest_akmbench report --store*"]
        )
        assert "Traceback" not in result.stdout.str() + result.stderr.str()
        assert len(samples(bench.path / STORE)) == 6
