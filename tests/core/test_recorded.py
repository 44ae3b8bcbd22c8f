"""What the offline ``report`` takes from the samples (run/recorded.py), in process: which samples
it reads, the one akm it counts, and the line naming the cells it leaves out."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_akmbench.errors import ConfigError
from pytest_akmbench.run import recorded


def rec(task: str, arm: str, seed: Any, run: str = "r1", **extra: Any) -> dict[str, Any]:
    return {"schema": 1, "task_id": task, "arm": arm, "seed": seed, "run_id": run, **extra}


CELLS = [("d/a", "noakm", 1), ("d/a", "akm", 1), ("d/b", "noakm", 1), ("d/b", "akm", 1)]


def test_nothing_left_out_is_no_line() -> None:
    samples = [rec(*c) for c in CELLS] + [rec("d/x", "akm", 1, run="other")]
    assert recorded.left_out(samples, {"r1"}, CELLS, (), seeds=1) == []


def test_the_cells_left_out_are_one_line_by_arm_task_and_seed() -> None:
    samples = [
        *(rec(*c) for c in CELLS),
        rec("d/a", "synthetic", 1),
        rec("d/c", "akm", 1),
        rec("d/a", "akm", 2),
        rec("d/b", "akm", 3),
        rec("d/b", "noakm", "2"),
    ]
    (line,) = recorded.left_out(samples, {"r1"}, CELLS, (), seeds=1)
    assert line == (
        "left out of this report: 5 cells the reported run(s) stored (arm synthetic: 1; 1 of tasks not "
        "selected; 3 of seeds over 1: d/a::akm-s2, d/a::synthetic-s1, d/b::akm-s3 …); give --arms "
        "noakm,akm,synthetic --tasks --seeds 3 to report them (or the options that leave them out, to do so "
        "knowingly)"
    )


def test_what_the_command_chose_itself_is_not_said() -> None:
    samples = [*(rec(*c) for c in CELLS), rec("d/c", "akm", 1), rec("d/a", "akm", 2)]
    (line,) = recorded.left_out(samples, {"r1"}, CELLS, ("tasks",), seeds=1)
    assert line == (
        "left out of this report: 1 cell the reported run(s) stored (1 of seeds over 1: d/a::akm-s2); "
        "give --seeds 2 to report them (or the options that leave them out, to do so knowingly)"
    )
    assert recorded.left_out(samples, {"r1"}, CELLS, ("tasks", "seeds"), seeds=1) == []
    assert recorded.left_out(samples, {"r1"}, CELLS, (), seeds=2)[0].startswith(
        "left out of this report: 1 cell the reported run(s) stored (1 of tasks not selected: d/c::akm-s1)"
    )


def test_the_samples_a_report_reads() -> None:
    fp = {"fingerprint": {}}
    good = rec("d/a", "akm", 1, agent={"name": "opencode"}, **fp)
    others = [
        {**good, "schema": 2},
        {**good, "schema": True},
        {**good, "agent": {"name": "other"}},
        {**good, "agent": None},
        {**good, "task_id": "d/z"},
        {**good, "fingerprint": None},
        {**good, "condition": "post"},
    ]
    assert recorded.samples_of([good, *others], "opencode", {"d/a"}) == [good]


def akm(version: str, sha: str, seed: int = 1, at: str = "2026-01-01T00:00:01.000Z") -> dict[str, Any]:
    return rec("d/a", "akm", seed, fingerprint={"akm": {"version": version, "sha256": sha}}, started_at=at)


def test_one_akm_is_counted_and_a_version_not_run_is_refused() -> None:
    a, b = akm("0.7.0", "a" * 64), akm("0.9.0", "b" * 64, seed=2, at="2026-01-01T00:00:02.000Z")
    assert recorded.one_akm([a], None) == [a]
    assert recorded.one_akm([a, b], "0.9.0") == [b]
    with pytest.raises(ConfigError) as err:
        recorded.one_akm([a, b], "1.0.0")
    assert str(err.value) == (
        "--akm-version 1.0.0: no akm-arm sample ran akm 1.0.0; they ran akm 0.7.0: 1 cell, akm 0.9.0: 1 cell"
    )
    assert err.value.usage is True
    with pytest.raises(ConfigError) as err:
        recorded.one_akm([a, b], None)
    assert str(err.value) == (
        "the akm arm's samples ran 2 different akms (akm 0.7.0: 1 cell, akm 0.9.0: 1 cell) and a report counts "
        "one: give --akm-version 0.9.0 (or another) or --run-id to say which, or report the stores apart"
    )
    assert err.value.usage is True
    twice = akm("0.7.0", "c" * 64, seed=2)
    with pytest.raises(ConfigError, match=r"\(akm 0.7.0 \(sha256 aaaaaaaaaaaa\): 1 cell, akm 0.7.0 \(sha256 cccc"):
        recorded.one_akm([a, twice], None)
