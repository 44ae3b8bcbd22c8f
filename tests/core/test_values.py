"""Tests for pytest_akmbench.corpus.values: the parsers behind the adaptive and spend options and
run-config fields. Each accepts what docs/adaptive.md says and refuses the rest in one line."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from pytest_akmbench.corpus.config import load_run_config, resolve
from pytest_akmbench.corpus.config_fields import run_config_problems
from pytest_akmbench.corpus.values import (
    MAX_BUDGET_TOKENS,
    MAX_BUDGET_TURNS,
    MAX_BUDGET_WALL_MS,
    MAX_SEEDS,
    MAX_VERIFY_TIMEOUT_S,
    budget_tokens,
    budget_turns,
    budget_wall_ms,
    parallel_count,
    seeds_most,
    token_cap,
    until_choice,
    usd_cap,
    verify_timeout,
)
from pytest_akmbench.errors import ConfigError


@pytest.mark.parametrize(("text", "want"), [("1", 1), (" 7 ", 7), (MAX_SEEDS, MAX_SEEDS)])
def test_max_seeds_accepts_one_to_the_limit(text: object, want: int) -> None:
    assert seeds_most(text) == want


@pytest.mark.parametrize("text", ["0", MAX_SEEDS + 1, "x", "2.5", "-3"])
def test_max_seeds_refuses_the_rest(text: object) -> None:
    with pytest.raises(ValueError) as err:
        seeds_most(text)
    assert str(err.value) == f"{text!r} is not a whole number of seeds of at least 1 (at most {MAX_SEEDS})"


@pytest.mark.parametrize(("text", "want"), [("1", 1), (" 200000 ", 200000), (2, 2)])
def test_token_cap_accepts_a_positive_whole_number(text: object, want: int) -> None:
    assert token_cap(text) == want


@pytest.mark.parametrize("text", ["0", "x", "-5", "1.5"])
def test_token_cap_refuses_the_rest(text: object) -> None:
    with pytest.raises(ValueError) as err:
        token_cap(text)
    assert str(err.value) == (
        f"{text!r} is not a positive whole number of tokens, e.g. 200000; set it to the run's spend limit"
    )


@pytest.mark.parametrize(("text", "want"), [("2.50", 2.5), ("0.01", 0.01), (1, 1.0), (" 1 ", 1.0)])
def test_usd_cap_accepts_a_positive_amount(text: object, want: float) -> None:
    assert usd_cap(text) == want


@pytest.mark.parametrize("text", ["0", "-1", "x", "nan", "inf", ""])
def test_usd_cap_refuses_the_rest(text: str) -> None:
    with pytest.raises(ValueError) as err:
        usd_cap(text)
    assert str(err.value) == (
        f"{text!r} is not a positive number of US dollars, e.g. 2.50; set it to the run's spend limit"
    )


def test_until_has_one_choice() -> None:
    assert until_choice(" decisive ") == "decisive"
    with pytest.raises(ValueError) as err:
        until_choice("fast")
    assert str(err.value) == "unknown value 'fast'; the one choice is decisive"


def test_parallel_is_any_whole_number() -> None:
    assert (parallel_count("3"), parallel_count(-2)) == (3, -2)
    with pytest.raises(ValueError) as err:
        parallel_count("many")
    assert str(err.value) == "expected a whole number of workers, got 'many'"


def test_a_run_config_names_each_bad_limit(tmp_path: Path) -> None:
    """A run config's adaptive and spend fields are checked by the same parsers, each problem one
    line naming the file and the field."""
    path = tmp_path / "x.json"
    data = {"schemaVersion": 1, "maxSeeds": 0, "budgetUsd": -1, "until": "fast", "budgetRunTokens": 5}
    problems = run_config_problems(data, path)
    assert problems == [
        f"{path}: until: unknown value 'fast'; the one choice is decisive",
        f"{path}: maxSeeds: 0 is not a whole number of seeds of at least 1 (at most {MAX_SEEDS})",
        f"{path}: budgetUsd: -1 is not a positive number of US dollars, e.g. 2.50; set it to the run's spend limit",
    ]


class TestBudgetBounds:
    """A budget is a finite whole number from 1 to its bound (issue 28, item 10.1-2): ``.inf`` and
    NaN were an OverflowError traceback, and ``wallMs: 1e23`` crashed the cell's timer thread."""

    @pytest.mark.parametrize(
        ("parse", "most", "unit"),
        [
            (budget_tokens, MAX_BUDGET_TOKENS, "tokens"),
            (budget_wall_ms, MAX_BUDGET_WALL_MS, "ms (7 days)"),
            (budget_turns, MAX_BUDGET_TURNS, "turns"),
        ],
    )
    def test_each_budget_takes_one_to_its_bound(self, parse: Any, most: int, unit: str) -> None:
        assert (parse("1"), parse(most), parse(str(most))) == (1, most, most)
        with pytest.raises(ValueError) as err:
            parse(most + 1)
        assert str(err.value) == f"{most + 1} is more than a budget can be: at most {most} {unit}"
        for text in ("inf", "nan", "1e23", "0", "-1"):
            with pytest.raises(ValueError) as err:
                parse(text)
            assert str(err.value) == f"expected a positive integer, got {text!r}"

    def test_the_bounds_keep_every_timer_far_below_what_a_thread_can_wait(self) -> None:
        assert MAX_BUDGET_WALL_MS == 7 * 24 * 3600 * 1000 and MAX_VERIFY_TIMEOUT_S == 7 * 24 * 3600
        assert MAX_BUDGET_WALL_MS / 1000 < threading.TIMEOUT_MAX / 1000

    @pytest.mark.parametrize("text", ["inf", "nan", "-1", "0", str(MAX_VERIFY_TIMEOUT_S + 1), "1e300"])
    def test_verify_timeout_is_finite_and_bounded(self, text: str) -> None:
        with pytest.raises(ValueError) as err:
            verify_timeout(text)
        assert "expected a" in str(err.value) and repr(text) in str(err.value)
        assert verify_timeout(str(MAX_VERIFY_TIMEOUT_S)) == MAX_VERIFY_TIMEOUT_S and verify_timeout("0.5") == 0.5

    def test_a_run_config_names_each_budget_past_its_bound(self, tmp_path: Path) -> None:
        path = tmp_path / "x.json"
        data = {
            "schemaVersion": 1,
            "budgetTokens": MAX_BUDGET_TOKENS + 1,
            "budgetWallMs": 10**23,
            "budgetTurns": MAX_BUDGET_TURNS,
        }
        assert run_config_problems(data, path) == [
            f"{path}: budgetTokens: {MAX_BUDGET_TOKENS + 1} is more than a budget can be: at most "
            f"{MAX_BUDGET_TOKENS} tokens",
            f"{path}: budgetWallMs: {10**23} is more than a budget can be: at most {MAX_BUDGET_WALL_MS} ms (7 days)",
        ]

    @pytest.mark.parametrize("literal", ["Infinity", "NaN", "1e23", "-Infinity"])
    def test_a_run_config_refuses_non_whole_budgets(self, tmp_path: Path, literal: str) -> None:
        """JSON's Infinity and NaN (Python's json reads them) and 1e23 are not whole numbers."""
        path = tmp_path / "x.json"
        path.write_text(f'{{"schemaVersion": 1, "budgetWallMs": {literal}}}')
        with pytest.raises(ConfigError) as err:
            load_run_config(path)
        assert str(err.value).startswith(f"{path}: budgetWallMs: expected int, got ")
        assert "\n" not in str(err.value)

    @pytest.mark.parametrize(
        ("option", "value", "message"),
        [
            ("budget_tokens", "inf", "--bench-budget-tokens: expected a positive integer, got 'inf'"),
            ("budget_tokens", "nan", "--bench-budget-tokens: expected a positive integer, got 'nan'"),
            (
                "budget_wall_ms",
                str(10**23),
                f"--bench-budget-wall-ms: {10**23} is more than a budget can be: at most {MAX_BUDGET_WALL_MS} ms (7 days)",
            ),
            (
                "budget_turns",
                str(MAX_BUDGET_TURNS + 1),
                f"--bench-budget-turns: {MAX_BUDGET_TURNS + 1} is more than a budget can be: at most "
                f"{MAX_BUDGET_TURNS} turns",
            ),
            (
                "verify_timeout",
                "inf",
                f"--bench-verify-timeout: expected a number of seconds from 0 to {MAX_VERIFY_TIMEOUT_S} (7 days), "
                "got 'inf'",
            ),
        ],
    )
    def test_an_option_past_its_bound_is_one_line(self, tmp_path: Path, option: str, value: str, message: str) -> None:
        with pytest.raises(ConfigError) as err:
            resolve(
                rootdir=tmp_path,
                cwd=tmp_path,
                cli={option: value},
                ini={},
                config=None,
                tasks_root=tmp_path,
                stashes_root=tmp_path,
            )
        assert str(err.value) == message
