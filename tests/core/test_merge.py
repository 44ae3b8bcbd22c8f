"""Several stores read as one (run/merge.py): the latest valid sample of a trial wins across
stores as within one, and the stores' shard plans are checked against each other."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_akmbench.agents.base import NopAgent
from pytest_akmbench.cell.context import Cell, RunContext, cell_fingerprint
from pytest_akmbench.corpus.tasks import load_corpus
from pytest_akmbench.records import SAMPLE_SCHEMA
from pytest_akmbench.run import merge
from pytest_akmbench.store import shards
from pytest_akmbench.store.samples import SampleStore, fingerprint_hash
from tests.support.corpus import standard_corpus

CELLS = [("d/t1", "noakm", 1), ("d/t1", "akm", 1), ("d/t2", "noakm", 1), ("d/t2", "akm", 1)]


def sample(cell: tuple[str, str, int], started: str, outcome: str = "pass", run: str = "r") -> dict:
    task, arm, seed = cell
    return {
        "schema": SAMPLE_SCHEMA,
        "task_id": task,
        "arm": arm,
        "seed": seed,
        "outcome": outcome,
        "fingerprint_hash": "f" * 16,
        "started_at": started,
        "run_id": run,
    }


def test_latest_valid_sample_wins_across_stores(tmp_path: Path) -> None:
    a, b = SampleStore(tmp_path / "a", fsync=False), SampleStore(tmp_path / "b", fsync=False)
    cell = CELLS[0]
    a.append(sample(cell, "2026-01-01T00:00:02.000Z", "fail", run="late"))
    b.append(sample(cell, "2026-01-01T00:00:01.000Z", "pass", run="early"))
    b.append(sample(cell, "2026-01-01T00:00:03.000Z", "harness_error", run="error"))
    for order in ([a.directory, b.directory], [b.directory, a.directory]):
        merged = merge.load(order)
        assert merged.stored.done(cell, "f" * 16)["run_id"] == "late"  # a harness error never wins
    twice = merge.load([a.directory, a.directory])
    assert len(twice.stored.for_report([(cell, "f" * 16)])) == 1


def record(store: Path, k: int, n: int, plan: shards.Plan, run: str, started: str) -> None:
    shards.append(store, shards.make_record(shards.Shard(k, n), plan, run, started))


def test_plans_that_differ_are_named(tmp_path: Path) -> None:
    by_count = shards.split(CELLS, 2, {})
    by_wall = shards.split(CELLS, 2, {"d/t1|akm": 9000, "d/t1|noakm": 100, "d/t2|akm": 100, "d/t2|noakm": 100})
    assert by_count != by_wall
    record(tmp_path / "one", 1, 2, by_count, "r1", "2026-01-01T00:00:01.000Z")
    record(tmp_path / "two", 2, 2, by_wall, "r2", "2026-01-01T00:00:02.000Z")
    merged = merge.load([tmp_path / "one", tmp_path / "two"])
    assert merged.plan == by_wall and merged.present == [2] and merged.own_runs == {"r2"}
    (line,) = merged.problems
    assert line.startswith("shards split the cells differently (their stores' histories differed): ")
    assert f"{tmp_path / 'one'} ran shard 1/2 of plan {shards.plan_hash(by_count)}" in line
    assert "give every shard job the same store history (or none)" in line


def test_the_newest_plan_counts_and_older_ones_are_history(tmp_path: Path) -> None:
    """A store that also holds an older run's shard record (a restored history) is not a conflict."""
    old = shards.split(CELLS[:2], 2, {})
    new = shards.split(CELLS, 2, {})
    record(tmp_path / "one", 1, 2, old, "old", "2026-01-01T00:00:01.000Z")
    record(tmp_path / "one", 1, 2, new, "n1", "2026-01-02T00:00:01.000Z")
    record(tmp_path / "two", 2, 2, new, "n2", "2026-01-02T00:00:02.000Z")
    merged = merge.load([tmp_path / "one", tmp_path / "two"])
    assert merged.problems == [] and merged.present == [1, 2] and merged.own_runs == {"n1", "n2"}
    assert merged.cells() == sorted(CELLS) and merged.arms() == ("noakm", "akm") and merged.seeds() == 1


def two_shards(tmp_path: Path, *, records: bool, seeds: int = 1) -> tuple[Any, RunContext, shards.Plan]:
    """The standard corpus split into two shards, each store holding its shard's samples (under
    the report's fingerprints) and, with ``records``, its shard record."""
    tasks_root, stashes = standard_corpus(tmp_path)
    corpus = load_corpus(tasks_root, stashes)
    ctx = RunContext(
        run_id="r",
        tmp_root=tmp_path,
        stashes_root=stashes,
        agent=NopAgent(),
        model=None,
        budget_tokens=1,
        budget_wall_ms=1,
        budget_turns=None,
        verify_timeout_s=1,
    )
    cells = [(t.id, arm, n) for t in corpus.tasks for arm in ("noakm", "akm") for n in range(1, seeds + 1)]
    plan = shards.split(cells, 2, {})
    by_id = {t.id: t for t in corpus.tasks}
    for name, k in (("one", 1), ("two", 2)):
        if records:
            record(tmp_path / name, k, 2, plan, f"r{k}", f"2026-01-01T00:00:0{k}.000Z")
        store = SampleStore(tmp_path / name, fsync=False)
        for cell in sorted(c for c, shard in plan.items() if shard == k):
            fp = cell_fingerprint(Cell(by_id[cell[0]], cell[1], cell[2]), ctx)
            store.append(
                {
                    **sample(cell, "2026-01-01T00:00:03.000Z"),
                    "fingerprint": fp,
                    "fingerprint_hash": fingerprint_hash(fp),
                }
            )
    return corpus, ctx, plan


def test_a_shard_whose_store_lost_cells_is_incomplete(tmp_path: Path) -> None:
    """A shard record says the shard ran; only samples count: the cells whose samples are gone
    (a corrupt line, a torn tail) are named with the shard and its store, and the store's damage."""
    corpus, ctx, plan = two_shards(tmp_path, records=True)
    one, two = tmp_path / "one", tmp_path / "two"
    lines = (two / "samples.jsonl").read_bytes().splitlines(keepends=True)
    (two / "samples.jsonl").write_bytes(lines[0] + b"{corrupt\n" + lines[1] + lines[2][:40])
    merged = merge.load([one, two])
    problems = merge.check(merged, corpus.tasks, sorted(plan), ctx)
    (line,) = problems
    assert line.startswith(f"shard 2/2 incomplete: {two} ran it but holds no sample for 1 of its 3 cells (")
    assert f"{two / 'samples.jsonl'}: 1 corrupt line(s) skipped (line 2)" in line
    assert f"{two / 'samples.jsonl'}: line 4 is torn (the file ends mid-record), skipped" in line
    assert merged.incomplete == [
        {"shard": 2, "stores": [str(two)], "cells": 3, "without_sample": 1, "unreadable_lines": 2}
    ]
    assert merged.block()["problems"] == problems and merged.notes() == []
    # The store cut at a line boundary (whole records lost, nothing torn) is caught alike.
    (two / "samples.jsonl").write_bytes(lines[0])
    merged = merge.load([one, two])
    (line,) = merge.check(merged, corpus.tasks, sorted(plan), ctx)
    assert "no sample for 2 of its 3 cells" in line and "torn" not in line
    lost = sorted(c for c, k in plan.items() if k == 2)[1:]
    assert line == (
        f"shard 2/2 incomplete: {two} ran it but holds no sample for 2 of its 3 cells "
        f"({', '.join(f'{t}::{a}-s{n}' for t, a, n in lost)}); rerun them with --bench-shard 2/2 into that store "
        "(it runs exactly the missing cells), then merge again"
    )
    assert merged.block()["missing"] == merged.missing


def test_stores_without_a_plan_name_the_cells_no_store_holds(tmp_path: Path) -> None:
    """Benches run apart (no shard record): the selected cells no store holds are one line, and a
    store given that is not there is named."""
    corpus, ctx, plan = two_shards(tmp_path, records=False)
    one, two = tmp_path / "one", tmp_path / "two"
    lines = (two / "samples.jsonl").read_bytes().splitlines(keepends=True)
    (two / "samples.jsonl").write_bytes(lines[0])
    merged = merge.load([one, two, tmp_path / "gone"])
    gone, line = merge.check(merged, corpus.tasks, sorted(plan), ctx)
    assert gone == (
        f"{tmp_path / 'gone'}: no such store (the directory does not exist); give the store the shard or bench "
        "wrote (its whole directory), or leave it out"
    )
    assert line.startswith("no store given holds a sample of 2 of the 6 selected cells (")
    assert merged.plan is None and merged.incomplete == [] and merged.seeds() == 0
    whole = sorted(c for c, k in plan.items() if k == 1)  # all in store one, given twice: counted once
    assert merge.check(merge.load([one, two, one]), corpus.tasks, whole, ctx) == []


def _refingerprint(store: Path, **changes: Any) -> None:
    """Store ``store``'s samples again under a fingerprint with ``changes``."""
    path = store / "samples.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for r in records:
        r["fingerprint"] = {**r["fingerprint"], **changes}
        r["fingerprint_hash"] = fingerprint_hash(r["fingerprint"])
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_cells_held_only_under_another_fingerprint_are_named_with_the_fields(tmp_path: Path) -> None:
    corpus, ctx, plan = two_shards(tmp_path, records=False)
    one, two = tmp_path / "one", tmp_path / "two"
    _refingerprint(two, model="x/other", sandbox="none")
    cells = sorted(plan)
    (conflict,) = merge.check(merge.load([one, two]), corpus.tasks, cells, ctx)
    arms = sorted(c[1] for c, k in plan.items() if k == 2)
    by_arm = ", ".join(f"{a} {arms.count(a)}" for a in sorted(set(arms)))
    assert conflict == (
        f"conflicting fingerprints: {two} holds 3 selected cells ({by_arm}) only under another fingerprint "
        "(differing in model, sandbox), left out of this report: report that store apart, or rerun those cells "
        "with this report's settings"
    )
    (alone,) = merge.check(merge.load([two]), corpus.tasks, sorted(c for c, k in plan.items() if k == 2), ctx)
    assert alone.endswith(
        "left out of this report: rerun those cells (a bench runs exactly them), or give --run-id of the run "
        "that made them"
    )


def test_a_shard_no_store_ran_is_missing(tmp_path: Path) -> None:
    corpus, ctx, plan = two_shards(tmp_path, records=True)
    merged = merge.load([tmp_path / "one"])
    own = ", ".join(f"{t}::{a}-s{n}" for t, a, n in sorted(c for c, k in plan.items() if k == 2))
    assert merge.check(merged, corpus.tasks, sorted(plan), ctx) == [
        f"shard 2/2 missing: no store given ran it (3 cells without a sample: {own}); add its store with "
        "--store, or run it with --bench-shard 2/2"
    ]
    assert merged.missing == [2]


def test_a_long_list_of_cells_is_cut_to_three(tmp_path: Path) -> None:
    """Nine cells a shard: the line names three and counts the rest, whether the shard is
    missing or two stores that ran it hold none of its samples."""
    corpus, ctx, plan = two_shards(tmp_path, records=True, seeds=3)
    one, two, three = tmp_path / "one", tmp_path / "two", tmp_path / "three"
    own = sorted(c for c, k in plan.items() if k == 2)
    assert len(own) == 9
    shown = ", ".join(f"{t}::{a}-s{n}" for t, a, n in own[:3])
    (line,) = merge.check(merge.load([one]), corpus.tasks, sorted(plan), ctx)
    assert f"(9 cells without a sample: {shown} and 6 more)" in line
    lines = (two / "samples.jsonl").read_bytes().splitlines(keepends=True)
    (two / "samples.jsonl").write_bytes(b"".join(lines[:5]))
    (line,) = merge.check(merge.load([one, two]), corpus.tasks, sorted(plan), ctx)
    assert "holds no sample for 4 of its 9 cells (" in line and " and 1 more)" in line
    (two / "samples.jsonl").write_bytes(b"")
    record(three, 2, 2, plan, "r3", "2026-01-01T00:00:05.000Z")
    (line,) = merge.check(merge.load([one, two, three]), corpus.tasks, sorted(plan), ctx)
    assert line.startswith(f"shard 2/2 incomplete: {two}, {three} ran it but hold no sample for 9 of its 9 cells ")
    assert f"({shown} and 6 more)" in line


def test_a_fingerprint_differing_only_in_its_hash_says_so(tmp_path: Path) -> None:
    """Samples whose fingerprint fields match but whose hash does not (made by another hash)."""
    corpus, ctx, plan = two_shards(tmp_path, records=False)
    one, two = tmp_path / "one", tmp_path / "two"
    path = two / "samples.jsonl"
    records = [{**json.loads(line), "fingerprint_hash": "0" * 16} for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    (conflict,) = merge.check(merge.load([one, two]), corpus.tasks, sorted(plan), ctx)
    assert "only under another fingerprint (differing in its hash), left out of this report" in conflict
