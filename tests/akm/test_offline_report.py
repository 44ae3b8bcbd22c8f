"""The offline ``report`` of a bench with the akm arm (issue 29, item 1): a bench on both arms,
real opencode, the scripted model and real akm, then ``python -m pytest_akmbench report`` on its
store, as README's "Resume and deepen" and docs/ci.md's merge job run it.

The bench is given on its command line what its run config does not say (the akm it runs and a
wall budget): the offline command is not told either, and reads them from the samples. Before,
it took the akm from nowhere and the budgets from the config, and the akm arm's cells (or every
cell of the task whose budget the run capped) dropped out of the report, which still exited 0.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import opencode as oc
from tests.support import real_akm
from tests.support.bench import strip_times

ROOT = real_akm.ROOT
TASKS = ["workflow-compliance/rollback-rev"]  # with workflow specs, and a budget of its own
CONFIG = {"schemaVersion": 1, "name": "offline", "tasks": TASKS, "arms": ["noakm", "akm"], "seeds": 1}
# The one field of the envelope that differs between the bench's report and the offline one:
# when it was written. Everything else (runs, aggregates, provenance with its akm, host and store,
# warnings, workflow, spend) must be equal.
DIFFERS = {"timestamp"}


def bench(base: Path, store: str, report: str, akm_version: str, *extra: str) -> None:
    args = ["--bench-config", str(base / "run.json"), "--bench-model", "scripted/oracle"]
    args += ["--bench-opencode", str(oc.binary()), "--bench-akm", str(real_akm.get(akm_version).path)]
    args += ["--bench-budget-wall-ms", "150000"]  # caps rollback-rev's own 180 s: its budget differs
    args += ["--bench-store", str(base / store), "--bench-report", str(base / report)]
    args += ["--bench-tmp", str(base / "cells"), *extra]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


def report(base: Path, out: str, *args: str, config: str = "run.json") -> subprocess.CompletedProcess[str]:
    """``python -m pytest_akmbench report --config C --out OUT ARGS`` from the project's root."""
    argv = [sys.executable, "-m", "pytest_akmbench", "report", "--config", str(base / config)]
    return subprocess.run(
        [*argv, "--out", str(base / out), *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def envelope(base: Path, name: str) -> dict[str, Any]:
    return json.loads((base / name / "report.json").read_text())


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One bench of one task on both arms, one seed, with akm 0.7.0: its store and its report."""
    real_akm.get("0.7.0")
    base = tmp_path_factory.mktemp("offline")
    (base / "run.json").write_text(json.dumps(CONFIG))
    bench(base, "store", "report", "0.7.0")
    return base


def unequal(a: Any, b: Any, path: str = "") -> list[str]:
    """Every path at which ``a`` and ``b`` differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [
            p
            for k in sorted(set(a) | set(b))
            for p in unequal(a.get(k, "<absent>"), b.get(k, "<absent>"), f"{path}.{k}")
        ]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [p for i, (x, y) in enumerate(zip(a, b)) for p in unequal(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {str(a)[:120]} != {str(b)[:120]}"]


def test_offline_report_equals_the_bench_report_field_by_field(run: Path) -> None:
    proc = report(run, "offline", "--store", str(run / "store"))
    assert proc.returncode == 0, proc.stderr
    assert "akmbench:" not in proc.stderr  # nothing left out, nothing to say
    own, offline = envelope(run, "report"), envelope(run, "offline")
    assert own["complete"] is True and own["aggregate"]["akm"]["runs"] == own["aggregate"]["noakm"]["runs"] == 1
    assert {(r["arm"], r["outcome"]) for r in own["runs"]} == {("noakm", "pass"), ("akm", "pass")}
    assert own["provenance"]["akm_version"] == "0.7.0"
    assert set(own) == set(offline)
    for field in sorted(set(own) - DIFFERS):
        assert unequal(own[field], offline[field], field) == [], field
    assert own["timestamp"] != "" and offline["timestamp"] != ""
    # The summary too, but for its header line, which holds the time.
    strip = lambda p: [line for line in p.read_text().splitlines() if not line.startswith("branch ")]  # noqa: E731
    assert strip(run / "report" / "summary.md") == strip(run / "offline" / "summary.md")
    # And compare takes them for the same run: nothing to refuse, no difference.
    compared = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_akmbench",
            "compare",
            "--json",
            *(str(run / n / "report.json") for n in ("report", "offline")),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert compared.returncode == 0, compared.stderr
    assert json.loads(compared.stdout)["ok"] is True


def test_an_arm_left_out_is_said_and_fails(run: Path) -> None:
    """A run config that names fewer arms than the run ran: the akm arm's cells are named as left
    out, and the exit status is 1; asking for fewer arms on the command line is knowing, exit 0."""
    (run / "noakm.json").write_text(json.dumps({**CONFIG, "arms": ["noakm"]}))
    proc = report(run, "fewer", "--store", str(run / "store"), config="noakm.json")
    assert proc.returncode == 1, proc.stderr
    (line,) = [line for line in proc.stderr.splitlines() if line.startswith("akmbench: ")]
    assert line.startswith("akmbench: left out of this report: 1 cell the reported run(s) stored (arm akm: 1: ")
    assert line.endswith(
        "give --arms noakm,akm to report them (or the options that leave them out, to do so knowingly)"
    )
    fewer = envelope(run, "fewer")
    assert fewer["complete"] is False and line.removeprefix("akmbench: ") in fewer["warnings"]
    knowingly = report(run, "knowingly", "--store", str(run / "store"), "--arms", "noakm")
    assert knowingly.returncode == 0, knowingly.stderr
    assert envelope(run, "knowingly")["aggregate"]["akm"] is None


def test_samples_under_other_settings_are_named_not_dropped(run: Path) -> None:
    """A budget given to the report that the run did not have: no cell's sample counts, and the
    report says which cells it left out and why (before: "incomplete run", exit 0)."""
    proc = report(run, "other", "--store", str(run / "store"), "--budget-tokens", "1000")
    assert proc.returncode == 1, proc.stderr
    assert (
        f"akmbench: conflicting fingerprints: {run / 'store'} holds 2 selected cells (akm 1, noakm 1) only under "
        "another fingerprint (differing in budget), left out of this report" in proc.stderr
    )


def test_two_akms_are_refused_not_picked(run: Path) -> None:
    """The store also holds the akm arm run again with akm 0.9.0: which akm a report counts is
    the user's to say (before, the newest won without a word)."""
    real_akm.get("0.9.0")
    shutil.copytree(run / "store", run / "store-two")
    bench(run, "store-two", "report-two", "0.9.0")
    for stores in (
        ["--store", str(run / "store-two")],
        ["--store", str(run / "store"), "--store", str(run / "store-two")],
    ):
        proc = report(run, "refused", *stores)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.splitlines() == [
            "akmbench: the akm arm's samples ran 2 different akms (akm 0.7.0: 1 cell, akm 0.9.0: 1 cell) and a "
            "report counts one: give --akm-version 0.9.0 (or another) or --run-id to say which, or report the "
            "stores apart"
        ]
        assert not (run / "refused").exists()
    newer = report(run, "newer", "--store", str(run / "store-two"), "--akm-version", "0.9.0")
    assert newer.returncode == 0, newer.stderr
    own, offline = envelope(run, "report-two"), envelope(run, "newer")
    assert {f for f in set(own) | set(offline) if own.get(f) != offline.get(f)} == DIFFERS
    older = report(run, "older", "--store", str(run / "store-two"), "--akm-version", "0.7.0")
    assert older.returncode == 0, older.stderr
    assert envelope(run, "older")["provenance"]["akm_version"] == "0.7.0"
    assert envelope(run, "older")["aggregate"]["akm"]["runs"] == 1
    absent = report(run, "absent", "--store", str(run / "store-two"), "--akm-version", "0.8.0")
    assert absent.returncode == 2
    assert absent.stderr.startswith(
        "akmbench: --akm-version 0.8.0: no akm-arm sample ran akm 0.8.0; they ran akm 0.7.0"
    )


def test_shards_with_the_akm_arm_merge_whole(run: Path) -> None:
    """Two shards of the same bench into their own stores, merged: both arms, whole, the gate on
    akm.pass_rate held, and the same runs as the unsharded bench."""
    for k in (1, 2):
        bench(run, f"shard-{k}", f"shard-report-{k}", "0.7.0", "--bench-shard", f"{k}/2")
    stores = ["--store", str(run / "shard-1"), "--store", str(run / "shard-2")]
    proc = report(run, "merged", *stores, "--gate", "akm.pass_rate>=0.5")
    assert proc.returncode == 0, proc.stderr
    assert "gate held: akm.pass_rate>=0.5" in proc.stdout
    merged, own = envelope(run, "merged"), envelope(run, "report")
    assert merged["complete"] is True and merged["merge"]["missing"] == [] and merged["merge"]["problems"] == []
    assert [g["ok"] for g in merged["gates"]] == [True]
    assert strip_times(merged["aggregate"]) == strip_times(own["aggregate"])  # the cells ran twice: walls differ
    assert merged["provenance"]["akm_version"] == "0.7.0"
    cells = lambda e: sorted((r["task_id"], r["arm"], r["seed"], r["outcome"]) for r in e["runs"])  # noqa: E731
    assert cells(merged) == cells(own) and len(cells(merged)) == 2
