"""CI shards: ``--bench-shard K/N`` runs a disjoint part of the cells into its own store, and
``python -m pytest_akmbench report --store A --store B`` merges the stores into the report a
single machine would have written (docs/ci.md)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.agents import SOLVER
from tests.support.bench import INI, read_report, strip_times
from tests.support.schemas import problems

BENCH_AGENT = SOLVER
ARGS = ["corpus", "--bench-agent", "slow", "--bench-seeds", "2", "-p", "no:cacheprovider"]


def merge(base: Path, *stores: str, out: str = "merged", extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "pytest_akmbench", "report", "--agent", "slow", "--out", out, *extra]
    for store in stores:
        argv += ["--store", store]
    return subprocess.run(argv, cwd=base, capture_output=True, text=True, timeout=120)


def cells_of(report: dict[str, Any]) -> list[tuple[str, str, int]]:
    return sorted((r["task_id"], r["arm"], r["seed"]) for r in report["runs"])


def shard_run(bench: pytest.Pytester, spec: str, name: str, *extra: str) -> pytest.RunResult:
    return bench.runpytest_subprocess(
        *ARGS, "--bench-shard", spec, "--bench-store", f"store-{name}", "--bench-report", name, *extra
    )


class TestShardOption:
    @pytest.mark.parametrize("value", ["0/2", "3/2", "x", "1/0", "-1/2", "1/2/3"])
    def test_bad_value_is_one_line(self, bench: pytest.Pytester, value: str) -> None:
        """A bad --bench-shard stops the run with one line naming the option and the fix."""
        result = bench.runpytest(*ARGS, f"--bench-shard={value}")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        errors = [line for line in result.errlines if "bench-shard" in line]
        assert errors == [
            f"ERROR: --bench-shard: {value!r} is not a shard: give K/N with whole numbers 1 <= K <= N "
            "(e.g. 1/2 and 2/2 for two jobs)"
        ]
        assert "Traceback" not in result.stdout.str() + result.stderr.str()

    def test_bad_ini_value_names_the_ini(self, bench: pytest.Pytester) -> None:
        bench.makeini(INI + "bench_shard = 2/1\n")
        result = bench.runpytest(*ARGS)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["ERROR: ini bench_shard: '2/1' is not a shard*"])

    def test_the_evolve_track_is_not_sharded(self, bench: pytest.Pytester) -> None:
        """Evolve items depend on each other (train, proposal step, post) and attribute's masked
        cells share a (task, arm, seed): neither splits into shards, and the run says so first."""
        track = "evolve"
        result = bench.runpytest(*ARGS, "--bench-track", track, "--bench-shard", "1/2")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        errors = [line for line in result.errlines if "bench-shard" in line]
        assert errors == [f"ERROR: --bench-shard: splits utility runs only; run the {track} track without it"]

    def test_shards_cover_the_selection_once(self, bench: pytest.Pytester) -> None:
        """After -k, 3 shards list disjoint cells that together are exactly the unsharded listing."""
        whole = [line for line in bench.runpytest(*ARGS, "-k", "akm", "--co", "-q").outlines if "::" in line]
        parts = []
        for k in (1, 2, 3):
            out = bench.runpytest(*ARGS, "-k", "akm", "--co", "-q", "--bench-shard", f"{k}/3").outlines
            parts.append([line for line in out if "::" in line])
        assert len(whole) == 6 and all(line.endswith(("akm-s1", "akm-s2")) and "noakm" not in line for line in whole)
        assert sorted(line for part in parts for line in part) == sorted(whole)
        assert [len(p) for p in parts] == [2, 2, 2]  # no history: equal counts


class TestBalance:
    def test_split_follows_the_store_history_also_under_xdist(self, bench: pytest.Pytester) -> None:
        """With walls in the store the split is the balanced one, not the one by count, and the
        xdist workers (which get the controller's walls) run exactly the cells it names."""
        from pytest_akmbench.store import shards

        store = bench.path / "store-h"
        store.mkdir()
        cells = [
            (t, a, s)
            for t in ("alpha/pytest-task", "alpha/script-task", "beta/regex-task")
            for a in ("noakm", "akm")
            for s in (1, 2, 3)
        ]
        history = [
            {
                "task_id": t,
                "arm": a,
                "seed": s,
                "outcome": "pass",
                "wallclock_ms": 9000 if (t, a) == ("alpha/pytest-task", "akm") else 100,
            }
            for t, a, s in cells
        ]
        (store / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in history))
        plan = shards.split(cells, 2, shards.expected_walls(history))
        assert plan != shards.split(cells, 2, {})
        three = ("--bench-seeds", "3")
        listed = bench.runpytest(
            *ARGS, *three, "--co", "-q", "--bench-shard", "1/2", "--bench-store", "store-h"
        ).outlines
        names = sorted(
            line.split("/task.yaml::")[0].removeprefix("corpus/tasks/") + "::" + line.split("::")[1]
            for line in listed
            if "::" in line
        )
        mine = sorted(f"{t}::{a}-s{s}" for (t, a, s), k in plan.items() if k == 1)
        assert names == mine
        assert len(mine) == 2  # the two slow cells fill shard 1; the 16 quick ones go to shard 2
        shard_run(bench, "1/2", "h", *three, "--bench-store", "store-h", "-n", "2").assert_outcomes(passed=2)
        assert sorted(f"{t}::{a}-s{s}" for t, a, s in cells_of(read_report(bench.path, "h"))) == mine


class TestShardReport:
    def test_shard_report_says_it_is_partial(self, bench: pytest.Pytester) -> None:
        """A shard's report names the shard, never claims the whole run, and its store records the plan."""
        result = shard_run(bench, "1/2", "one")
        result.assert_outcomes(passed=6)
        result.stdout.fnmatch_lines(["report covers shard 1/2 only: 6 of 12 cells, every one with a sample"])
        report = read_report(bench.path, "one")
        assert report["complete"] is False
        assert report["shard"] == {"index": 1, "of": 2, "cells": 6, "selected": 12, "complete": True}
        assert report["warnings"][0].startswith("shard 1/2: this report covers 6 of 12 selected cells")
        assert report["verdict"].startswith("incomplete run")
        assert problems(report, "report") == []
        (record,) = [json.loads(line) for line in (bench.path / "store-one" / "shards.jsonl").read_text().splitlines()]
        assert (record["shard"], record["of"], len(record["plan"])) == (1, 2, 12)
        mine = sorted((t, a, s) for t, a, s, k in record["plan"] if k == 1)
        assert mine == cells_of(report)


class TestMerge:
    def test_merged_shards_equal_one_machine(self, bench: pytest.Pytester) -> None:
        """The same cells unsharded and as two shards (one under xdist) merged: the same envelope
        field by field, but for run ids, times, store paths and the merge block itself."""
        bench.runpytest_subprocess(*ARGS, "--bench-store", "store-whole", "--bench-report", "whole").assert_outcomes(
            passed=12
        )
        shard_run(bench, "1/2", "one").assert_outcomes(passed=6)
        shard_run(bench, "2/2", "two", "-n", "2").assert_outcomes(passed=6)
        one, two = read_report(bench.path, "one"), read_report(bench.path, "two")
        assert not set(cells_of(one)) & set(cells_of(two))
        proc = merge(bench.path, "store-one", "store-two")
        assert proc.returncode == 0, proc.stderr
        whole, merged = read_report(bench.path, "whole"), read_report(bench.path, "merged")
        assert merged["merge"]["shards"] == 2 and merged["merge"]["present"] == [1, 2]
        assert merged["merge"]["missing"] == []
        assert merged["complete"] is True and "shard" not in merged
        assert problems(merged, "report") == []
        drop = ("merge", "provenance")
        assert strip_times({k: v for k, v in merged.items() if k not in drop}) == strip_times(
            {k: v for k, v in whole.items() if k not in drop}
        )
        volatile = {"store", "host"}
        assert {k: v for k, v in merged["provenance"].items() if k not in volatile} == {
            k: v for k, v in whole["provenance"].items() if k not in volatile
        }
        # Every run's transcript was copied from the store that holds it.
        for run in merged["runs"]:
            assert run["transcript"] and (bench.path / "merged" / run["transcript"]).is_file()

    def test_same_trial_in_two_stores_counts_once(self, bench: pytest.Pytester) -> None:
        """The unsharded store and a shard's hold the same trials: each is reported once, the latest."""
        bench.runpytest_subprocess(*ARGS, "--bench-store", "store-whole", "--bench-report", "whole")
        shard_run(bench, "2/2", "two").assert_outcomes(passed=6)
        proc = merge(bench.path, "store-whole", "store-two", extra=("--seeds", "2"))
        assert proc.returncode == 0, proc.stderr
        merged = read_report(bench.path, "merged")
        assert len(merged["runs"]) == 12 and len(set(cells_of(merged))) == 12
        two = {r["transcript"] for r in read_report(bench.path, "two")["runs"]}
        newer = [r for r in merged["runs"] if r["transcript"] in two]
        assert len(newer) == 6  # the shard ran later: its samples win for its cells

    def test_missing_shard_is_named(self, bench: pytest.Pytester) -> None:
        shard_run(bench, "1/3", "one").assert_outcomes(passed=4)
        shard_run(bench, "3/3", "three").assert_outcomes(passed=4)
        proc = merge(bench.path, "store-one", "store-three")
        assert proc.returncode == 1
        assert "shard 2/3 missing: no store given ran it (4 cells without a sample: " in proc.stderr
        assert "add its store with --store, or run it with --bench-shard 2/3" in proc.stderr
        merged = read_report(bench.path, "merged")
        assert merged["complete"] is False and len(merged["runs"]) == 8
        assert merged["merge"]["missing"] == [2]
        assert any(w.startswith("shard 2/3 missing") for w in merged["warnings"])

    def test_conflicting_fingerprints_are_named(self, bench: pytest.Pytester) -> None:
        """A shard run under another model is not mixed into the report: its cells are named apart."""
        shard_run(bench, "1/2", "one").assert_outcomes(passed=6)
        shard_run(bench, "2/2", "two", "--bench-model", "other/model").assert_outcomes(passed=6)
        proc = merge(bench.path, "store-one", "store-two")
        assert proc.returncode == 1
        merged = read_report(bench.path, "merged")
        assert merged["complete"] is False and len(merged["runs"]) == 6
        (line,) = [w for w in merged["warnings"] if w.startswith("conflicting fingerprints")]
        assert (
            "store-one holds 6 selected cells (akm 3, noakm 3) only under another fingerprint (differing in model)"
            in line
        )
        assert {r["model"] for r in merged["runs"]} == {"other/model"}

    def test_gates_decide_the_exit_status(self, bench: pytest.Pytester) -> None:
        shard_run(bench, "1/2", "one").assert_outcomes(passed=6)
        shard_run(bench, "2/2", "two").assert_outcomes(passed=6)
        held = merge(bench.path, "store-one", "store-two", extra=("--gate", "akm.pass_rate>=0.9"))
        assert held.returncode == 0, held.stderr
        assert "gate held: akm.pass_rate>=0.9" in held.stdout
        failed = merge(bench.path, "store-one", "store-two", extra=("--gate", "akm.pass_rate>1.5"))
        assert failed.returncode == 1 and "gate FAILED" in failed.stdout
        bad = merge(bench.path, "store-one", extra=("--gate", "nonsense"))
        assert bad.returncode == 2 and bad.stderr.startswith("akmbench: --gate: ")
        assert len(bad.stderr.strip().splitlines()) == 1


def cut_mid_line(samples: Path, keep: int) -> None:
    """Truncate ``samples`` in the middle of its line ``keep + 1``: the first ``keep`` lines stay
    whole, the next is torn, the rest are gone (an upload or copy cut short)."""
    data = samples.read_bytes()
    end = 0
    for _ in range(keep):
        end = data.index(b"\n", end) + 1
    samples.write_bytes(data[: end + (data.index(b"\n", end) - end) // 2])


class TestMergeCompleteness:
    """A shard's store that lost samples never merges green (issue 28, item 9): each shard's part of
    the plan is checked against the samples the stores hold, and a gate never passes the gap."""

    GATE = ("--gate", "akm.pass_rate>=0.5")

    def test_truncated_shard_store_does_not_merge_green(self, bench: pytest.Pytester) -> None:
        shard_run(bench, "1/2", "one").assert_outcomes(passed=6)
        shard_run(bench, "2/2", "two").assert_outcomes(passed=6)
        samples = bench.path / "store-two" / "samples.jsonl"
        kept = [json.loads(line) for line in samples.read_text().splitlines()[:2]]
        cut_mid_line(samples, keep=2)
        proc = merge(bench.path, "store-one", "store-two", extra=self.GATE)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "gate held" not in proc.stdout
        assert "gate FAILED: akm.pass_rate>=0.5: not passed: the report is incomplete" in proc.stdout
        (line,) = [line for line in proc.stderr.splitlines() if "shard 2/2 incomplete" in line]
        assert line.startswith(f"akmbench: shard 2/2 incomplete: {bench.path / 'store-two'} ran it but holds ")
        assert "no sample for 4 of its 6 cells (" in line
        assert f"{samples}: line 3 is torn (the file ends mid-record), skipped" in line
        assert "rerun them with --bench-shard 2/2 into that store (it runs exactly the missing cells)" in line
        merged = read_report(bench.path, "merged")
        assert merged["complete"] is False and len(merged["runs"]) == 8
        assert merged["verdict"].startswith("incomplete run")
        block = merged["merge"]
        assert block["present"] == [1, 2] and block["missing"] == []
        (gap,) = block["incomplete"]
        assert gap == {
            "shard": 2,
            "stores": [str(bench.path / "store-two")],
            "cells": 6,
            "without_sample": 4,
            "unreadable_lines": 1,
        }
        assert any("shard 2/2 incomplete" in p for p in block["problems"])
        assert any("shard 2/2 incomplete" in w for w in merged["warnings"])
        # The cells named are exactly those whose samples were cut off.
        lost = {(r["task_id"], r["arm"], r["seed"]) for r in read_report(bench.path, "two")["runs"]} - {
            (r["task_id"], r["arm"], r["seed"]) for r in kept
        }
        assert len(lost) == 4
        for task, arm, seed in sorted(lost)[:3]:
            assert f"{task}::{arm}-s{seed}" in line
        (gate,) = merged["gates"]
        assert gate["ok"] is False
        assert problems(merged, "report") == []

    def test_shard_store_without_samples_does_not_merge_green(self, bench: pytest.Pytester) -> None:
        """Its samples.jsonl deleted (the shard record kept): every cell of the shard is named lost."""
        shard_run(bench, "1/2", "one").assert_outcomes(passed=6)
        shard_run(bench, "2/2", "two").assert_outcomes(passed=6)
        (bench.path / "store-two" / "samples.jsonl").unlink()
        proc = merge(bench.path, "store-one", "store-two", extra=self.GATE)
        assert proc.returncode == 1
        assert "no sample for 6 of its 6 cells" in proc.stderr and "has no samples.jsonl" in proc.stderr
        assert read_report(bench.path, "merged")["merge"]["incomplete"][0]["without_sample"] == 6

    def test_deleted_shard_store_is_named(self, bench: pytest.Pytester) -> None:
        """The whole store gone (an artifact not downloaded): the store and its shard are named."""
        shard_run(bench, "1/2", "one").assert_outcomes(passed=6)
        shard_run(bench, "2/2", "two").assert_outcomes(passed=6)
        shutil.rmtree(bench.path / "store-two")
        proc = merge(bench.path, "store-one", "store-two", extra=self.GATE)
        assert proc.returncode == 1
        assert f"akmbench: {bench.path / 'store-two'}: no such store" in proc.stderr
        assert "shard 2/2 missing: no store given ran it (6 cells without a sample: " in proc.stderr
        assert "gate held" not in proc.stdout
        merged = read_report(bench.path, "merged")
        assert merged["merge"]["missing"] == [2] and merged["gates"][0]["ok"] is False

    def test_complete_merge_stays_green(self, bench: pytest.Pytester) -> None:
        shard_run(bench, "1/2", "one").assert_outcomes(passed=6)
        shard_run(bench, "2/2", "two").assert_outcomes(passed=6)
        proc = merge(bench.path, "store-one", "store-two", extra=self.GATE)
        assert proc.returncode == 0, proc.stderr
        assert "gate held: akm.pass_rate>=0.5" in proc.stdout
        block = read_report(bench.path, "merged")["merge"]
        assert block["incomplete"] == [] and block["problems"] == []

    def test_rerun_of_the_cut_shard_makes_the_merge_whole(self, bench: pytest.Pytester) -> None:
        """What the line says to do works: the shard run again into its store runs the lost cells
        (the torn line is terminated by the next append) and the merge is green."""
        shard_run(bench, "1/2", "one").assert_outcomes(passed=6)
        shard_run(bench, "2/2", "two").assert_outcomes(passed=6)
        cut_mid_line(bench.path / "store-two" / "samples.jsonl", keep=2)
        shard_run(bench, "2/2", "two").assert_outcomes(passed=6)
        proc = merge(bench.path, "store-one", "store-two", extra=self.GATE)
        assert proc.returncode == 0, proc.stderr
        merged = read_report(bench.path, "merged")
        assert merged["complete"] is True and len(merged["runs"]) == 12

    def test_torn_last_line_is_said_when_every_cell_still_has_a_sample(self, bench: pytest.Pytester) -> None:
        """A store ending in a torn line that lost no cell (the torn record was a second sample of
        one) merges whole, and the merge still says the line was torn."""
        shard_run(bench, "1/2", "one").assert_outcomes(passed=6)
        shard_run(bench, "2/2", "two").assert_outcomes(passed=6)
        samples = bench.path / "store-two" / "samples.jsonl"
        first = samples.read_text().splitlines()[0]
        with samples.open("a") as f:
            f.write(first[: len(first) // 2])
        proc = merge(bench.path, "store-one", "store-two", extra=self.GATE)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == f"akmbench: warning: {samples}: line 7 is torn (the file ends mid-record), skipped\n"
        merged = read_report(bench.path, "merged")
        assert merged["complete"] is True and merged["merge"]["problems"] == []
        assert f"{samples}:7: skipped unreadable record (torn or corrupt line)" in merged["warnings"]
