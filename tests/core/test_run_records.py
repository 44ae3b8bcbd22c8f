"""The store's run records (store/runs.py) and the cap block rebuilt from a run's samples
(run/adaptive.py), as the offline report command reads them."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_akmbench.errors import StoreError
from pytest_akmbench.report.spend import cap_block
from pytest_akmbench.store import runs


def record(run_id: str, **extra: object) -> dict[str, object]:
    base = {"run_id": run_id, "tasks": ["a/t1", "b/t2"], "arms": ["noakm", "akm"], "adaptive": None, "caps": []}
    return {**base, **extra}


def test_the_latest_record_of_a_run_wins_across_stores(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    runs.append(one, record("r1", not_run=1))
    runs.append(one, record("r2"))
    runs.append(one, record("r1", not_run=2))
    assert runs.find([one], "r1") == {"schema": 1, **record("r1", not_run=2)}
    runs.append(two, record("r1", not_run=3))
    assert runs.find([one, two], "r1")["not_run"] == 3  # type: ignore[index]
    assert runs.find([one, two], "r9") is None
    assert (one / runs.RUNS_FILE).stat().st_mode & 0o777 == 0o600


def test_an_unreadable_or_malformed_line_is_skipped_with_a_warning(tmp_path: Path) -> None:
    runs.append(tmp_path, record("r1"))
    bad = [
        "not json",
        '{"schema": 2, "run_id": "r1", "tasks": [], "arms": [], "caps": []}',
        '{"schema": 1, "run_id": "r1", "tasks": [1], "arms": [], "caps": []}',
        '{"schema": 1, "run_id": "r1", "tasks": [], "arms": [], "caps": [], "adaptive": {"floor": 0, "max_seeds": 5}}',
        '{"schema": 1, "run_id": "r1", "tasks": [], "arms": [], "caps": [{"kind": "eur", "limit": 1}]}',
    ]
    with (tmp_path / runs.RUNS_FILE).open("a") as fh:
        fh.write("\n".join(bad) + "\n\n")
    warnings: list[str] = []
    assert [r["run_id"] for r in runs.read(tmp_path, warnings)] == ["r1"]
    assert [w.rsplit(":", 2)[1] for w in warnings] == ["2", "3", "4", "5", "6"]
    assert all(w.endswith("skipped unreadable run record") for w in warnings)


def test_an_unwritable_store_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(StoreError, match=r"cannot record the run .*; check the store is writable$"):
        runs.append(tmp_path / "file", record("r1"))


def sample(tokens: int | None, cost: float | None) -> dict[str, object]:
    measured = {"token_measurement": "measured", "tokens": {"total": tokens}} if tokens is not None else {}
    return {**measured, "cost_usd": cost}


def test_the_cap_block_is_the_first_cap_reached_else_the_first_set() -> None:
    samples = [sample(1000, 0.5), sample(None, 0.25), sample(500, None)]
    usd, tokens = {"kind": "usd", "limit": 1.0}, {"kind": "tokens", "limit": 1500}
    # $0.75 spent: the USD cap is not reached, the token cap (1500 measured) is.
    assert cap_block([usd, tokens], samples, 4) == {
        "kind": "tokens",
        "limit": 1500,
        "spent": 1500.0,
        "reached": True,
        "not_run": 4,
    }
    assert cap_block([usd], samples, 0) == {"kind": "usd", "limit": 1.0, "spent": 0.75, "reached": False, "not_run": 0}
    assert cap_block([{"kind": "usd", "limit": 0.75}], samples, 0)["reached"] is True  # reaching is enough
