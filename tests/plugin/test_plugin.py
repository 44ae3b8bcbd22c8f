from __future__ import annotations

import gc
import json

import pytest

from tests.support import real_akm
from tests.support.agents import ECHO, SLEEPY, USES_AND_NEVER
from tests.support.bench import INI, read_report, strip_times
from tests.support.corpus import write_task


def collected(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if "::" in line]


class TestInert:
    """Without a corpus or a --bench option the plugin does nothing."""

    def test_plain_project(self, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
        """A normal test suite runs as if the plugin were not installed."""
        pytester.makepyfile("def test_one():\n    assert True\n")
        # This plugin alone, in a fresh process: other plugins of the environment may warn on
        # their own (pytest-benchmark under xdist), and an xdist worker running this test has
        # state of its own (environment, imported modules) an in-process run would inherit.
        monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
        result = pytester.runpytest_subprocess("-W", "error", "-p", "pytest_akmbench.plugin")
        result.assert_outcomes(passed=1)
        assert "akmbench:" not in result.stdout.str() and "-- akmbench --" not in result.stdout.str()
        assert not (pytester.path / ".akmbench").exists()

    def test_ini_corpus_but_tests_elsewhere(self, bench: pytest.Pytester) -> None:
        """Plain pytest beside an ini corpus runs only the project's own tests."""
        bench.makeini(INI + "testpaths = tests\n")
        (bench.path / "tests").mkdir()
        (bench.path / "tests" / "test_own.py").write_text("def test_own():\n    pass\n")
        result = bench.runpytest()
        result.assert_outcomes(passed=1)
        assert not (bench.path / ".akmbench").exists()


class TestCollection:
    """One item per (task, arm, seed) with stable ids and markers."""

    def test_node_ids(self, bench: pytest.Pytester) -> None:
        """Cells are task.yaml::<arm>-s<seed>, seeds 1..N, arms in configured order."""
        result = bench.runpytest("corpus", "--bench-agent", "nop", "--bench-seeds", "2", "--co", "-q")
        ids = collected(result)
        assert len(ids) == 3 * 2 * 2
        assert ids[:4] == [
            "corpus/tasks/alpha/pytest-task/task.yaml::noakm-s1",
            "corpus/tasks/alpha/pytest-task/task.yaml::noakm-s2",
            "corpus/tasks/alpha/pytest-task/task.yaml::akm-s1",
            "corpus/tasks/alpha/pytest-task/task.yaml::akm-s2",
        ]

    def test_task_files_are_not_collected_as_tests(self, bench: pytest.Pytester) -> None:
        """A pytest task's tests/ and the stash are the task's, not the session's."""
        (bench.path / "corpus" / "stashes" / "st" / "scripts").mkdir()
        (bench.path / "corpus" / "stashes" / "st" / "scripts" / "test_stash.py").write_text("def test_x(): pass\n")
        result = bench.runpytest("corpus", "--bench-agent", "nop", "--bench-seeds", "1", "--co", "-q")
        assert all("task.yaml::" in line for line in collected(result))
        assert len(collected(result)) == 6

    @pytest.mark.parametrize(
        "args, expected",
        [
            (["-k", "akm"], {"akm"}),
            (["-k", "noakm"], {"noakm"}),
            (["-k", "not noakm"], {"akm", "synthetic"}),
            (["-k", "akm or synthetic"], {"akm", "synthetic"}),
            (["-m", "cell(arm='akm')"], {"akm"}),
        ],
    )
    def test_arm_selection_is_exact(self, bench: pytest.Pytester, args: list[str], expected: set[str]) -> None:
        """-k akm selects the akm arm only: the 'akm' inside 'noakm' does not match."""
        result = bench.runpytest(
            "corpus",
            "--bench-agent",
            "nop",
            "--bench-arms",
            "noakm,akm,synthetic",
            "--bench-seeds",
            "3",
            "--co",
            "-q",
            *args,
        )
        ids = collected(result)
        assert {i.split("::")[1].split("-s")[0] for i in ids} == expected
        assert len(ids) == 3 * 3 * len(expected)

    def test_task_and_seed_selection(self, bench: pytest.Pytester) -> None:
        """A task name and a seed token select exactly; s1 does not match s10."""
        result = bench.runpytest(
            "corpus", "--bench-agent", "nop", "--bench-seeds", "10", "--co", "-q", "-k", "script-task and s1"
        )
        assert collected(result) == [
            "corpus/tasks/alpha/script-task/task.yaml::noakm-s1",
            "corpus/tasks/alpha/script-task/task.yaml::akm-s1",
        ]

    def test_markers_carry_the_cell(self, bench: pytest.Pytester) -> None:
        """-m selects by domain and slice through the cell marker."""
        result = bench.runpytest(
            "corpus", "--bench-agent", "nop", "--bench-seeds", "1", "--co", "-q", "-m", "cell(domain='beta')"
        )
        assert collected(result) == [
            "corpus/tasks/beta/regex-task/task.yaml::noakm-s1",
            "corpus/tasks/beta/regex-task/task.yaml::akm-s1",
        ]

    def test_config_without_paths_collects_the_corpus(self, bench: pytest.Pytester) -> None:
        """--bench-config alone collects the configured corpus, not the project's testpaths."""
        bench.makeini(INI + "testpaths = tests\n")
        (bench.path / "tests").mkdir()
        (bench.path / "tests" / "test_own.py").write_text("def test_own():\n    raise AssertionError\n")
        (bench.path / "run.json").write_text(
            json.dumps({"schemaVersion": 1, "tasks": "alpha", "seeds": 1, "agent": "oracle"})
        )
        result = bench.runpytest("--bench-config", "run.json", "--bench-report", "out")
        result.assert_outcomes(passed=4)
        assert read_report(bench.path)["corpus"]["selectedTaskIds"] == ["alpha/pytest-task", "alpha/script-task"]

    def test_tasks_override_narrows_the_config(self, bench: pytest.Pytester) -> None:
        """--bench-tasks picks ids inside the config's selection."""
        (bench.path / "run.json").write_text(json.dumps({"schemaVersion": 1, "tasks": "alpha", "seeds": 1}))
        result = bench.runpytest(
            "--bench-config", "run.json", "--bench-agent", "nop", "--bench-tasks", "alpha/script-task", "--co", "-q"
        )
        assert len(collected(result)) == 2


class TestErrors:
    """Bad input is a one-line error naming the file and the fix; never a traceback."""

    def test_malformed_task_is_a_collection_error(self, bench: pytest.Pytester) -> None:
        """A bad task.yaml stops the run with its file and field named."""
        write_task(bench.path / "corpus" / "tasks", "beta/bad", extra={"difficulty": "brutal"})
        result = bench.runpytest("corpus", "--bench-agent", "oracle", "--bench-seeds", "1")
        result.stdout.fnmatch_lines(["*task.yaml: difficulty: 'brutal' is not one of easy, medium, hard*"])
        assert "Traceback" not in result.stdout.str()
        assert result.ret == pytest.ExitCode.INTERRUPTED
        result.assert_outcomes(errors=1)

    def test_config_error(self, bench: pytest.Pytester) -> None:
        """An unknown config field is a usage error naming the file."""
        (bench.path / "run.json").write_text('{"schemaVersion": 1, "seedz": 2}')
        result = bench.runpytest("--bench-config", "run.json")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["ERROR: *run.json: unknown field 'seedz'; known fields: *"])
        assert "Traceback" not in result.stderr.str()

    def test_zero_task_selection(self, bench: pytest.Pytester) -> None:
        """A selector that matches nothing is an error, not an empty run."""
        result = bench.runpytest("corpus", "--bench-tasks", "gamma", "--bench-agent", "nop")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["ERROR: tasks: no task with id or domain 'gamma'; domains: alpha, beta"])

    def test_unknown_task_in_a_config_names_the_config(self, bench: pytest.Pytester) -> None:
        """A run config's selection that names no task is an error naming the config file."""
        (bench.path / "run.json").write_text('{"schemaVersion": 1, "tasks": ["gamma/x"], "agent": "nop"}')
        result = bench.runpytest("--bench-config", "run.json", "--bench-corpus", "corpus/tasks")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["ERROR: */run.json: tasks: task not found: 'gamma/x'*"])

    def test_empty_tasks_root_says_it_holds_no_task(self, bench: pytest.Pytester) -> None:
        """A tasks root without any task.yaml says so, at the path given, not "matched no task"."""
        (bench.path / "elsewhere").mkdir()
        result = bench.runpytest("elsewhere", "--bench-corpus", "elsewhere", "--bench-agent", "nop")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["ERROR: */elsewhere: no <domain>/<task>/task.yaml under this tasks root; *"])

    def test_unknown_agent_and_arm(self, bench: pytest.Pytester) -> None:
        """Unknown agents and arms say what exists."""
        result = bench.runpytest("corpus", "--bench-agent", "gpt9")
        result.stderr.fnmatch_lines(["ERROR: --bench-agent: unknown agent 'gpt9'; available: *nop*oracle*"])
        result = bench.runpytest("corpus", "--bench-arms", "akm,control")
        result.stderr.fnmatch_lines(["ERROR: --bench-arms: unknown arm 'control'; arms are noakm, akm, synthetic"])


class TestOutcomes:
    """PASSED = solved; fail and budget are FAILED; harness_error is an ERROR with its reason."""

    def test_oracle_passes(self, bench: pytest.Pytester) -> None:
        """The oracle solves every task of the corpus."""
        result = bench.runpytest("corpus", "--bench-agent", "oracle", "--bench-seeds", "1", "--bench-report", "out")
        result.assert_outcomes(passed=6)

    def test_nop_fails_with_the_verifier_output(self, bench: pytest.Pytester) -> None:
        """An untouched workspace fails; the message quotes the verifier."""
        result = bench.runpytest(
            "corpus", "--bench-agent", "nop", "--bench-seeds", "1", "--bench-report", "out", "-k", "regex"
        )
        result.assert_outcomes(failed=2)
        result.stdout.fnmatch_lines(["*verifier rejected the work: regex did not match: answer is 4\\d*"])

    def test_a_failed_pytest_verifier_shows_each_failure_once_and_says_what_it_cut(
        self, bench: pytest.Pytester
    ) -> None:
        """Eight failed tests: under the cell, the verifier's short tracebacks, not its FAILED
        summary lines as well (the bench's own summary lists the cell once); its output's cut
        start is said, not silent."""
        tests = "".join(f"def test_{i}():\n    assert {i} == -1\n\n" for i in range(8))
        write_task(bench.path / "corpus" / "tasks", "beta/eight", verifier="pytest", tests=tests)
        result = bench.runpytest(
            "corpus", "--bench-agent", "oracle", "--bench-seeds", "1", "--bench-arms", "noakm", "-k", "eight"
        )
        result.assert_outcomes(failed=1)
        out = result.stdout.str()
        assert not [line for line in out.splitlines() if "::test_" in line and line.lstrip().startswith("FAILED")], out
        assert "earlier lines of the verifier's output cut …]" in out and "E   assert 7 == -1" in out

    def test_harness_error_is_an_error(self, bench: pytest.Pytester) -> None:
        """A task whose verifier cannot judge (its tests/ hold a test file without a test: pytest
        collects nothing) errors with the reason, and stays out of the pass rate. (A task without
        any verifier file is refused before the run: tests/plugin/test_bad_inputs.py.)"""
        write_task(bench.path / "corpus" / "tasks", "beta/no-verifier", verifier="pytest", tests="x = 1\n")
        result = bench.runpytest(
            "corpus", "--bench-agent", "oracle", "--bench-seeds", "1", "--bench-report", "out", "-k", "beta"
        )
        result.assert_outcomes(passed=2, errors=2)
        result.stdout.fnmatch_lines(
            ["*harness error (not the agent*s fault): pytest verifier: no tests collected in *"]
        )
        task = next(t for t in read_report(bench.path)["tasks"] if t["id"] == "beta/no-verifier")
        assert task["akm"]["pass_rate"] is None
        assert task["akm"]["harness_error_count"] == 1
        agg = read_report(bench.path)["aggregate"]["akm"]
        assert agg["pass_rate"] == 1.0 and agg["harness_error_count"] == 1

    def test_custom_agent_from_a_conftest(self, bench: pytest.Pytester) -> None:
        """A conftest registers an agent through the plugin hook."""
        bench.makeconftest(ECHO)
        akm = real_akm.get().path  # an agent other than oracle/nop gets the real treatment on the akm arm
        result = bench.runpytest(
            "corpus",
            "--bench-agent",
            "echo",
            "--bench-seeds",
            "1",
            "--bench-report",
            "out",
            "--bench-akm",
            str(akm),
            "-k",
            "script or regex",
        )
        result.assert_outcomes(passed=4)
        report = read_report(bench.path)
        assert report["agent"]["harness"] == "echo" and report["agent"]["version"] == "7"
        assert report["aggregate"]["akm"]["tokens_per_pass"] == 15
        assert report["token_measurement"]["coverage"] == 1.0

    def test_agent_that_uses_akm_needs_one(self, bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
        """An agent that may call akm refuses the akm arm without one: one line, nothing run;
        an agent that says it never calls akm runs the akm arm without it."""
        monkeypatch.setenv("PATH", "/usr/bin:/bin")
        bench.makeconftest(USES_AND_NEVER)
        result = bench.runpytest("corpus", "--bench-agent", "uses", "--bench-seeds", "1", "-k", "script")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(
            ["ERROR: the akm arm needs the akm executable and found none (looked in *; install it into the project*"]
        )
        assert not (bench.path / ".akmbench" / "store").exists()
        result = bench.runpytest("corpus", "--bench-agent", "never", "--bench-seeds", "1", "-k", "script")
        result.assert_outcomes(passed=2)


class TestReport:
    """The envelope and summary written at session end."""

    def test_envelope(self, bench: pytest.Pytester) -> None:
        """Reference keys, hashes, null for an arm not run, runs in fixed order."""
        result = bench.runpytest(
            "corpus", "--bench-agent", "oracle", "--bench-arms", "akm", "--bench-seeds", "2", "--bench-report", "out"
        )
        result.assert_outcomes(passed=6)
        report = read_report(bench.path)
        assert list(report)[:8] == [
            "schemaVersion",
            "track",
            "branch",
            "commit",
            "timestamp",
            "complete",
            "agent",
            "corpus",
        ]
        corpus = report["corpus"]
        assert corpus["selectedTaskIds"] == ["alpha/pytest-task", "alpha/script-task", "beta/regex-task"]
        assert len(corpus["taskCorpusHash"]) == 64 and list(corpus["fixtures"]) == ["st"]
        assert report["aggregate"]["noakm"] is None and report["aggregate"]["delta"] is None
        assert report["aggregate"]["akm"]["pass_rate"] == 1.0
        assert all(t["noakm"] is None for t in report["tasks"])
        assert [(r["task_id"], r["seed"]) for r in report["runs"]] == [
            (t, s) for t in ("alpha/pytest-task", "alpha/script-task", "beta/regex-task") for s in (1, 2)
        ]
        summary = (bench.path / "out" / "summary.md").read_text()
        assert summary.startswith("# akm-bench utility — oracle")
        assert "| akm   | 1.00" in summary
        result.stdout.fnmatch_lines(
            ["*akmbench*", "akm: pass_rate 1.00 over 3 tasks, 6 runs*", "report: *out/report.json"]
        )

    def test_report_under_xdist_equals_serial(self, bench: pytest.Pytester) -> None:
        """-n 2 yields the same report as a serial run, apart from times."""
        serial = bench.runpytest_subprocess(
            "corpus", "--bench-agent", "oracle", "--bench-seeds", "2", "--bench-report", "serial", "--bench-store", "s1"
        )
        parallel = bench.runpytest_subprocess(
            "corpus",
            "--bench-agent",
            "oracle",
            "--bench-seeds",
            "2",
            "--bench-report",
            "par",
            "--bench-store",
            "s2",
            "-n",
            "2",
        )
        serial.assert_outcomes(passed=12)
        parallel.assert_outcomes(passed=12)
        assert "2 workers" in parallel.stdout.str()
        assert strip_times(read_report(bench.path, "serial")) == strip_times(read_report(bench.path, "par"))

    @pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
    def test_a_finished_run_leaves_no_cell_dir(self, bench: pytest.Pytester, workers: list[str]) -> None:
        """Cells' dirs are deleted on a thread of their own (system/cleaner.py), and all of them
        before the run ends: the tmp root holds nothing of the run afterwards."""
        # A slow disk: each delete waits first, so a run that did not wait for them would leave some.
        bench.makeconftest(
            "import shutil, time\n"
            "from pytest_akmbench.system import cleaner\n"
            "def slow(path):\n"
            "    time.sleep(0.2)\n"
            "    shutil.rmtree(path, ignore_errors=True)\n"
            "cleaner.Cleaner._delete = staticmethod(slow)\n"
        )
        result = bench.runpytest_subprocess(
            "corpus", "--bench-agent", "oracle", "--bench-seeds", "1", "--bench-tmp", "cells", *workers
        )
        result.assert_outcomes(passed=6)
        assert [p.name for p in (bench.path / "cells").iterdir()] == []

    def test_collection_is_frozen_for_the_run_and_thawed_after(self, bench: pytest.Pytester) -> None:
        """What collection built is kept out of the cyclic collector while the cells run (gc.freeze)
        and given back when the session ends: an in-process run leaves nothing frozen behind."""
        bench.makeconftest(
            "import gc\n"
            "import pytest\n"
            "@pytest.hookimpl(tryfirst=True)\n"
            "def pytest_runtestloop(session):\n"
            "    (session.config.rootpath / 'frozen.txt').write_text(str(gc.get_freeze_count()))\n"
        )
        result = bench.runpytest("corpus", "--bench-agent", "oracle", "--bench-seeds", "1", "--bench-report", "out")
        result.assert_outcomes(passed=6)
        assert int((bench.path / "frozen.txt").read_text()) > 1000
        assert gc.get_freeze_count() == 0

    def test_parallel_option_drives_xdist(self, bench: pytest.Pytester) -> None:
        """--parallel N runs cells on N xdist workers."""
        result = bench.runpytest_subprocess(
            "corpus", "--bench-agent", "nop", "--bench-seeds", "1", "--parallel", "2", "--bench-report", "out"
        )
        result.assert_outcomes(failed=6)
        assert "2 workers" in result.stdout.str()
        assert read_report(bench.path)["complete"] is True


class TestGatesAndBaseline:
    """Gates decide the exit status; a config's baseline adds the vs-base column."""

    def test_gates_decide_the_exit_status(self, bench: pytest.Pytester) -> None:
        """All cells fail under nop, yet a gate expecting that makes the run green, and vice versa."""
        args = ["corpus", "--bench-agent", "nop", "--bench-seeds", "1", "--bench-report", "out"]
        held = bench.runpytest(*args, "--bench-gate", "akm.pass_rate<=0", "--bench-gate", "noakm.pass_rate<=0")
        held.assert_outcomes(failed=6)
        assert held.ret == pytest.ExitCode.OK
        failed = bench.runpytest(*args, "--bench-gate", "akm.pass_rate>=0.5")
        assert failed.ret == pytest.ExitCode.TESTS_FAILED
        failed.stdout.fnmatch_lines(["gate FAILED: akm.pass_rate>=0.5: *"])
        assert [g["ok"] for g in read_report(bench.path)["gates"]] == [False]

    def test_bad_gate_is_a_usage_error(self, bench: pytest.Pytester) -> None:
        """A gate that does not parse stops the run before any cell."""
        result = bench.runpytest("corpus", "--bench-agent", "nop", "--bench-gate", "akm.passrate>=1")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["ERROR: --bench-gate 'akm.passrate>=1': unknown metric 'akm.passrate'*"])

    def test_baseline_from_config(self, bench: pytest.Pytester) -> None:
        """The run config's baseline map lands in the envelope and the summary's vs-base column."""
        (bench.path / "base.json").write_text('{"alpha/script-task": 0.5}')
        (bench.path / "run.json").write_text(
            json.dumps({"schemaVersion": 1, "tasks": "alpha", "seeds": 1, "agent": "oracle", "baseline": "base.json"})
        )
        bench.runpytest("--bench-config", "run.json", "--bench-report", "out").assert_outcomes(passed=4)
        assert read_report(bench.path)["baseline_by_task_id"] == {"alpha/script-task": 0.5}
        summary = (bench.path / "out" / "summary.md").read_text()
        assert "vs base" in summary and "+0.50" in summary

    def test_bad_baseline(self, bench: pytest.Pytester) -> None:
        """A baseline rate outside [0, 1] is an error naming the file and the task."""
        (bench.path / "base.json").write_text('{"alpha/script-task": 1.5}')
        result = bench.runpytest("corpus", "--bench-agent", "nop", "--bench-baseline", "base.json")
        result.stderr.fnmatch_lines(
            ["ERROR: *base.json: alpha/script-task: baseline pass rate must be a number in [[]0, 1[]], got 1.5"]
        )


def test_worker_finishing_early_leaves_its_siblings_alone(bench: pytest.Pytester) -> None:
    """Under -n 2 a worker that runs out of cells must not kill the cells another still runs."""
    bench.makeconftest(SLEEPY)
    result = bench.runpytest_subprocess(
        "corpus", "--bench-agent", "sleepy", "--bench-seeds", "1", "-n", "2", "--bench-report", "out"
    )
    result.assert_outcomes(passed=6)
