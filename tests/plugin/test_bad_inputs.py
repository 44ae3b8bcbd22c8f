"""Bad inputs in a bench run (issue 28, item 10): one line naming the file and the fix, no
traceback, and nothing the store already holds is lost. The readers themselves are tested in
tests/core/test_bad_inputs.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.bench import read_report, samples, store_lines

ARGS = ("corpus", "--bench-agent", "oracle", "--bench-seeds", "1", "-p", "no:cacheprovider")
SECRET = "sk-" + "proj4Qq7Rr2Ss9Tt"

BENCH_INI = "bench_store = store\nbench_report = out\n"


def task_yaml(bench: pytest.Pytester, task: str = "alpha/script-task") -> Path:
    return bench.path / "corpus" / "tasks" / task / "task.yaml"


def no_traceback(result: pytest.RunResult) -> None:
    text = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in text and "OverflowError" not in text and "INTERNALERROR" not in text, text


def rel(path: Path) -> str:
    return "corpus/" + str(path).split("/corpus/", 1)[1]


def collection_error(result: pytest.RunResult, path: Path) -> str:
    """The one line a bad task.yaml's collection error is, after pytest's own header."""
    out = result.stdout.lines
    at = next(i for i, line in enumerate(out) if line.startswith("_") and f"ERROR collecting {rel(path)} " in line)
    assert out[at + 1].startswith(f"{path}: "), out
    assert out[at + 2].startswith(("_", "-", "=")), out  # one line, then the next section
    return out[at + 1]


class TestBudgets:
    """Items 10.1-2: ``.inf`` and NaN were an OverflowError traceback; ``wallMs: 1e23`` let every
    cell run with its wall timer's thread crashed."""

    @pytest.mark.parametrize(
        ("value", "message"),
        [
            ("{tokens: .inf}", "budget.tokens: must be a finite number of at most 1000000000000 tokens, got inf"),
            ("{tokens: .nan}", "budget.tokens: must be a positive number, got nan"),
            ("{wallMs: 1e23}", "budget.wallMs: must be a finite number of at most 604800000 ms (7 days), got 1e+23"),
        ],
    )
    def test_a_task_budget_out_of_bounds_is_its_collection_error(
        self, bench: pytest.Pytester, value: str, message: str
    ) -> None:
        bench.runpytest_subprocess(*ARGS).assert_outcomes(passed=6)
        before = store_lines(bench.path / "store")
        path = task_yaml(bench)
        path.write_text(path.read_text().replace("budget:\n  tokens: 1000\n  wallMs: 20000\n", f"budget: {value}\n"))
        result = bench.runpytest_subprocess(*ARGS)
        no_traceback(result)
        assert collection_error(result, path) == f"{path}: {message}"
        assert store_lines(bench.path / "store")[: len(before)] == before  # nothing recorded is lost

    @pytest.mark.parametrize(
        ("option", "value", "message"),
        [
            ("--bench-budget-tokens", "inf", "--bench-budget-tokens: expected a positive integer, got 'inf'"),
            (
                "--bench-budget-wall-ms",
                str(10**23),
                f"--bench-budget-wall-ms: {10**23} is more than a budget can be: at most 604800000 ms (7 days)",
            ),
            (
                "--bench-verify-timeout",
                "inf",
                "--bench-verify-timeout: expected a number of seconds from 0 to 604800 (7 days), got 'inf'",
            ),
        ],
    )
    def test_an_option_out_of_bounds_is_one_line(
        self, bench: pytest.Pytester, option: str, value: str, message: str
    ) -> None:
        result = bench.runpytest_subprocess(*ARGS, option, value)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert [line for line in result.errlines if line.startswith("ERROR:")] == [f"ERROR: {message}"]
        no_traceback(result)
        assert store_lines(bench.path / "store") == []

    def test_a_run_config_budget_out_of_bounds_is_one_line(self, bench: pytest.Pytester) -> None:
        config = bench.path / "run.json"
        config.write_text('{"schemaVersion": 1, "agent": "oracle", "budgetWallMs": 100000000000000000000000}')
        result = bench.runpytest_subprocess("--bench-config", str(config), "-p", "no:cacheprovider")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert [line for line in result.errlines if line.startswith("ERROR:")] == [
            f"ERROR: {config}: budgetWallMs: {10**23} is more than a budget can be: at most 604800000 ms (7 days)"
        ]


class TestDuplicatesVerifiersAndKeys:
    def test_a_run_config_with_a_key_twice_is_one_line(self, bench: pytest.Pytester) -> None:
        config = bench.path / "run.json"
        config.write_text('{"schemaVersion": 1, "agent": "oracle", "seeds": 1, "seeds": 5}')
        result = bench.runpytest_subprocess("--bench-config", str(config), "-p", "no:cacheprovider")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert [line for line in result.errlines if line.startswith("ERROR:")] == [
            f"ERROR: {config}: key 'seeds' is given twice in one object (JSON would keep only the last); keep one"
        ]
        assert store_lines(bench.path / "store") == []

    def test_a_task_yaml_with_a_key_twice_is_its_collection_error(self, bench: pytest.Pytester) -> None:
        path = task_yaml(bench)
        path.write_text(path.read_text() + "verifier: pytest\n")
        result = bench.runpytest_subprocess(*ARGS)
        no_traceback(result)
        line = collection_error(result, path)
        assert line.startswith(f"{path}: invalid YAML (line 10): duplicate key 'verifier' (first at line ")

    def test_a_task_without_its_verifier_files_runs_no_cell(self, bench: pytest.Pytester) -> None:
        """Before: validate passed, and every cell of such a task was a harness error."""
        (task_yaml(bench).parent / "verify.sh").unlink()
        odd = bench.path / "corpus" / "tasks" / "beta" / "odd" / "task.yaml"
        odd.mkdir(parents=True)
        result = bench.runpytest_subprocess(*ARGS)
        no_traceback(result)
        assert collection_error(result, task_yaml(bench)).endswith("verify.sh; add it (exit 0 on a pass)")
        assert collection_error(result, odd) == (
            f"{odd}: is a directory; replace it with the task's YAML file of fields (docs/corpus.md)"
        )
        assert "harness error" not in result.stdout.str()
        assert not any(r["outcome"] == "harness_error" for r in samples(bench.path / "store"))

    @pytest.mark.parametrize("agent", ["oracle", "nop"])
    def test_a_literal_key_in_a_run_config_is_refused_whatever_the_agent(
        self, bench: pytest.Pytester, agent: str
    ) -> None:
        config = bench.path / "run.json"
        providers = {"local": {"npm": "@ai-sdk/openai-compatible", "options": {"apiKey": SECRET}}}
        config.write_text(json.dumps({"schemaVersion": 1, "agent": agent, "providers": providers}))
        result = bench.runpytest_subprocess("--bench-config", str(config), "-p", "no:cacheprovider")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert [line for line in result.errlines if line.startswith("ERROR:")] == [
            f"ERROR: {config}: providers.local.options.apiKey: looks like a literal API key (sk-...); a run config "
            "holds no keys: reference it as {env:NAME} in a providers entry and export NAME"
        ]
        assert SECRET not in result.stdout.str() + result.stderr.str()
        assert store_lines(bench.path / "store") == []


def test_a_large_workspace_is_said_once_per_task(bench: pytest.Pytester) -> None:
    """Item 10.7: the run names each task whose workspace every cell copies past 100 MB, once (in
    the terminal and the report's warnings), and the cells still pass."""
    workspace = task_yaml(bench).parent / "workspace"
    with open(workspace / "big.bin", "wb") as f:
        f.truncate(300 * 1024 * 1024)
    result = bench.runpytest_subprocess(*ARGS, "--bench-seeds", "2")
    result.assert_outcomes(passed=12)
    line = (
        f"{task_yaml(bench)}: workspace: 300 MB (shared layers included) is copied into every cell's run dir; "
        "keep it under 100 MB (large data belongs outside the workspace)"
    )
    assert (result.stdout.str() + result.stderr.str()).count(line) == 1
    assert read_report(bench.path)["warnings"].count(line) == 1
