"""The shard split (store/shards.py): deterministic, disjoint, complete, balanced by history,
the same in any interpreter; and K/N parsed or refused in one line."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_akmbench.errors import ConfigError, StoreError
from pytest_akmbench.store import shards

ROOT = Path(__file__).resolve().parents[2]
CELLS = [(f"d{t % 3}/t{t}", arm, seed) for t in range(10) for arm in ("noakm", "akm") for seed in (1, 2, 3)]


@pytest.mark.parametrize(("text", "shard"), [("1/1", (1, 1)), ("2/3", (2, 3)), (" 3 / 3 ", (3, 3))])
def test_parse(text: str, shard: tuple[int, int]) -> None:
    assert shards.parse(text) == shards.Shard(*shard)


@pytest.mark.parametrize("text", ["0/2", "3/2", "x", "1/0", "1", "1/2/3", "-1/2", "1.0/2", ""])
def test_parse_refuses(text: str) -> None:
    with pytest.raises(ConfigError, match=r"^--bench-shard: .* is not a shard: give K/N") as err:
        shards.parse(text)
    assert err.value.usage and "\n" not in str(err.value)


@pytest.mark.parametrize("of", [1, 2, 3, 7])
def test_split_without_history_is_by_count(of: int) -> None:
    plan = shards.split(CELLS, of, {})
    assert set(plan) == set(CELLS) and set(plan.values()) <= set(range(1, of + 1))
    counts = [sum(1 for s in plan.values() if s == k) for k in range(1, of + 1)]
    assert max(counts) - min(counts) <= 1


def test_split_balances_expected_walls() -> None:
    """The akm cells of half the tasks take 10x the others': split by count, one shard would get
    twice as many of them; split by the history, the shards' expected walls come out even."""
    slow = {f"d{t % 3}/t{t}" for t in range(5)}
    records = [
        {
            "task_id": t,
            "arm": a,
            "seed": s,
            "outcome": "pass",
            "wallclock_ms": 10_000 if a == "akm" and t in slow else 1_000,
        }
        for t, a, s in CELLS
    ]
    walls = shards.expected_walls(records)
    weight = shards.weights(CELLS, walls)

    def loads(plan: shards.Plan) -> list[int]:
        return [sum(weight[c] for c, k in plan.items() if k == i) for i in (1, 2)]

    by_count = loads(shards.split(CELLS, 2, {}))
    balanced = loads(shards.split(CELLS, 2, walls))
    assert max(by_count) - min(by_count) >= 40_000
    assert max(balanced) - min(balanced) <= 1_000  # within the smallest cell


def test_expected_walls_use_valid_samples_and_fall_back() -> None:
    records = [
        {"task_id": "a/x", "arm": "akm", "outcome": "pass", "wallclock_ms": 100},
        {"task_id": "a/x", "arm": "akm", "outcome": "fail", "wallclock_ms": 300},
        {"task_id": "a/x", "arm": "akm", "outcome": "harness_error", "wallclock_ms": 9_000},
        {"task_id": "a/x", "arm": "noakm", "outcome": "pass", "wallclock_ms": 500},
    ]
    walls = shards.expected_walls(records)
    assert walls == {"a/x|akm": 200, "a/x|noakm": 500, "a/x|": 300}
    w = shards.weights([("a/x", "synthetic", 1), ("b/y", "akm", 1), ("a/x", "akm", 1)], walls)
    assert w == {("a/x", "synthetic", 1): 300, ("b/y", "akm", 1): 250, ("a/x", "akm", 1): 200}


def test_split_is_the_same_in_any_interpreter() -> None:
    """No hash seed, path or order of input changes the plan."""
    code = (
        "import json, sys; from pytest_akmbench.store import shards; "
        "cells = [tuple(c) for c in json.loads(sys.argv[1])]; "
        "print(shards.plan_hash(shards.split(cells, 3, {'d1/t1|akm': 5000})))"
    )
    seen = set()
    for seed, cells in (("1", CELLS), ("2", list(reversed(CELLS))), ("random", CELLS[5:] + CELLS[:5])):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", code, json.dumps(cells)], env=env, capture_output=True, text=True, check=True
        )
        seen.add(out.stdout.strip())
    assert len(seen) == 1
    assert seen == {shards.plan_hash(shards.split(CELLS, 3, {"d1/t1|akm": 5000}))}


def test_records_round_trip_and_bad_lines_are_skipped(tmp_path: Path) -> None:
    plan = shards.split(CELLS, 2, {})
    record = shards.make_record(shards.Shard(2, 2), plan, "run-1", "2026-01-01T00:00:00.000Z")
    shards.append(tmp_path, record)
    with (tmp_path / shards.SHARDS_FILE).open("a") as fh:
        fh.write('{"schema": 1, "shard": 3, "of": 2, "plan": []}\n{torn\n')
    warnings: list[str] = []
    (read,) = shards.read(tmp_path, warnings)
    assert shards.plan_of(read) == plan and read["plan_hash"] == shards.plan_hash(plan)
    assert [w.rsplit(":", 2)[-2] for w in warnings] == ["2", "3"]


GOOD = {"schema": 1, "run_id": "r", "plan_hash": "h", "shard": 1, "of": 2, "plan": [["d/t", "akm", 1, 2]]}
BAD = [
    {**GOOD, "schema": 2},
    {**GOOD, "plan_hash": 1},
    {**GOOD, "run_id": None},
    {**GOOD, "shard": 0},
    {**GOOD, "shard": 3},
    {**GOOD, "shard": True},
    {**GOOD, "of": "2"},
    {**GOOD, "plan": {}},
    {**GOOD, "plan": [["d/t", "akm", 1]]},
    {**GOOD, "plan": [("d/t", "akm", 1, 2, 0)]},
    {**GOOD, "plan": [["d/t", "akm", "1", 2]]},
    {**GOOD, "plan": [["d/t", "akm", 1, 2.0]]},
    {**GOOD, "plan": [["d/t", "akm", 1, 0]]},
    {**GOOD, "plan": [["d/t", "akm", 1, 3]]},
    {**GOOD, "plan": ["d/t"]},
    [GOOD],
]


def test_a_shard_record_is_read_only_whole(tmp_path: Path) -> None:
    """Each line with one field wrong is skipped with a warning naming it; the good lines around it,
    at the edges of what is allowed (shard K = N, a cell in shard N), are kept."""
    edge = {**GOOD, "shard": 2, "plan": [["d/t", "akm", 1, 1], ["d/u", "akm", 2, 2]]}
    lines = [GOOD, *BAD, edge]
    (tmp_path / shards.SHARDS_FILE).write_text("".join(json.dumps(r) + "\n" for r in lines))
    warnings: list[str] = []
    assert shards.read(tmp_path, warnings) == [GOOD, edge]
    assert [w.rsplit(":", 2)[-2] for w in warnings] == [str(n) for n in range(2, len(BAD) + 2)]
    assert warnings[0] == f"{tmp_path / shards.SHARDS_FILE}:2: skipped unreadable shard record"
    assert shards.plan_of(edge) == {("d/t", "akm", 1): 1, ("d/u", "akm", 2): 2}


def test_the_record_names_the_shard_and_the_whole_plan() -> None:
    plan = {("d/u", "akm", 1): 1, ("d/t", "akm", 2): 2}
    record = shards.make_record(shards.Shard(2, 3), plan, "run-1", "2026-01-01T00:00:00.000Z")
    assert record == {
        "schema": 1,
        "run_id": "run-1",
        "started_at": "2026-01-01T00:00:00.000Z",
        "shard": 2,
        "of": 3,
        "plan_hash": shards.plan_hash(plan),
        "plan": [["d/t", "akm", 2, 2], ["d/u", "akm", 1, 1]],
    }
    assert shards.Shard(2, 3).label == "2/3"
    assert shards.plan_hash(plan) != shards.plan_hash({**plan, ("d/u", "akm", 1): 2})
    assert len(shards.plan_hash(plan)) == 16


def test_an_invalid_or_unknown_wall_does_not_weigh() -> None:
    records = [
        {"task_id": "a/x", "arm": "akm", "outcome": "pass", "wallclock_ms": 0},
        {"task_id": "a/x", "arm": "akm", "outcome": "pass", "wallclock_ms": 1.5},
        {"task_id": "a/x", "arm": "akm", "outcome": "pass", "wallclock_ms": True},
        {"task_id": "a/x", "arm": "akm", "outcome": "pass", "wallclock_ms": -5},
        {"task_id": "a/x", "arm": "akm", "outcome": "pass"},
        {"task_id": 1, "arm": "akm", "outcome": "pass", "wallclock_ms": 10},
        {"task_id": "a/x", "arm": None, "outcome": "pass", "wallclock_ms": 10},
        {"task_id": "a/x", "arm": "akm", "wallclock_ms": 10},
        {"task_id": "a/x", "arm": "akm", "outcome": "pass", "wallclock_ms": 1},
    ]
    assert shards.expected_walls(records) == {"a/x|akm": 1, "a/x|": 1}
    # Medians are rounded to whole ms; a cell of an unknown task weighs the known cells' median.
    walls = shards.expected_walls(
        [{"task_id": "a/x", "arm": "akm", "outcome": "fail", "wallclock_ms": w} for w in (1, 2)]
    )
    assert walls == {"a/x|akm": 2, "a/x|": 2}
    cells = [("a/x", "akm", 1), ("c/z", "noakm", 1), ("b/y", "akm", 1)]
    assert shards.weights(cells, {"a/x|akm": 3, "c/z|": 6}) == {cells[0]: 3, cells[1]: 6, cells[2]: 4}


def test_the_heaviest_cells_go_first_to_the_lightest_shard() -> None:
    """Three cells of 5, 4 and 3 ms on two shards: 5 to shard 1, 4 to shard 2, 3 to shard 2
    (4 < 5); ties go to the lower shard, and equal weights go in cell order."""
    walls = {"a/x|akm": 5, "b/y|akm": 4, "c/z|akm": 3}
    cells = [("c/z", "akm", 1), ("a/x", "akm", 1), ("b/y", "akm", 1)]
    assert shards.split(cells, 2, walls) == {("a/x", "akm", 1): 1, ("b/y", "akm", 1): 2, ("c/z", "akm", 1): 2}
    assert shards.split([("b", "a", 1), ("a", "a", 1), ("a", "a", 1)], 2, {}) == {("a", "a", 1): 1, ("b", "a", 1): 2}
    # In cell order a light first cell would pull the second heavy one onto its shard.
    light_first = {"a/x|akm": 1, "b/y|akm": 5, "c/z|akm": 5}
    assert shards.split([("a/x", "akm", 1), ("b/y", "akm", 1), ("c/z", "akm", 1)], 2, light_first) == {
        ("b/y", "akm", 1): 1,
        ("c/z", "akm", 1): 2,
        ("a/x", "akm", 1): 1,
    }


def test_the_plan_hash_is_the_same_in_every_version() -> None:
    """Shards of one run may be written by two versions of the bench: a merge compares their hashes."""
    plan = {("d/t", "akm", 1): 1, ("d/t", "noakm", 1): 2}
    assert shards.plan_hash(plan) == hashlib.sha256(b'[["d/t","akm",1,1],["d/t","noakm",1,2]]').hexdigest()[:16]


def test_a_shard_record_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    (tmp_path / shards.SHARDS_FILE).mkdir()
    with pytest.raises(StoreError, match=r"shards.jsonl: cannot record the shard \(Is a directory\); check the store"):
        shards.append(tmp_path, {"schema": 1})
