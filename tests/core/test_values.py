"""Tests for pytest_akmbench.corpus.values: the parsers behind the adaptive and spend options and
run-config fields. Each accepts what docs/adaptive.md says and refuses the rest in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_akmbench.corpus.config_fields import run_config_problems
from pytest_akmbench.corpus.values import (
    MAX_SEEDS,
    parallel_count,
    seeds_most,
    token_cap,
    until_choice,
    usd_cap,
)


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
