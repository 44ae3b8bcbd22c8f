"""The attribute track end to end: real opencode, the scripted model, real akm.

A corpus of seven tasks shares one stash of two skills: ``greeting-rule`` is every task's gold
asset and the ``needs-asset`` policy solves a task only when its search finds it (decisive);
``greeting-lore`` matches the same search and is shown too, but nothing depends on it
(distractor). The base is a utility run of the akm arm; the attribute run masks both.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from pytest_akmbench.cell import akm
from tests.support import opencode as oc
from tests.support import real_akm
from tests.support.bench import samples
from tests.support.corpus import write_task
from tests.support.waiting import output, wait_until

TASKS = [f"greet/t{i}" for i in range(1, 8)]  # 7: Holm over 2 assets needs p < 0.025
RULE = "---\nname: greeting-rule\ndescription: The greeting rule: how to greet in out.txt\n---\nWrite hello.\n"
LORE = "---\nname: greeting-lore\ndescription: Greeting history and lore, for reading only\n---\nPeople waved.\n"


def corpus(base: Path) -> tuple[Path, Path]:
    tasks, stashes = base / "corpus" / "tasks", base / "corpus" / "stashes"
    stash = stashes / "greet"
    for name, text in (("greeting-rule", RULE), ("greeting-lore", LORE)):
        (stash / "skills" / name).mkdir(parents=True)
        (stash / "skills" / name / "SKILL.md").write_text(text)
    (stash / "MANIFEST.json").write_text('{"name": "greet", "assets": {"skill": 2}}\n')
    # The wall budget only bounds a stuck cell: on two cores at a load of 12-14 a passing cell's
    # agent took up to 60 s, and a 60 s budget turned one distractor-masked pass into a budget hit.
    for task_id in TASKS:
        write_task(
            tasks,
            task_id,
            stash="greet",
            extra={"gold_ref": "skill:greeting-rule", "akm_keywords": "greeting", "budget": {"wallMs": 180000}},
        )
    return tasks, stashes


def bench_args(tmp: Path, info: akm.AkmInfo, *extra: str) -> list[str]:
    tasks, stashes = tmp / "corpus" / "tasks", tmp / "corpus" / "stashes"
    return [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        str(tasks),
        "--bench-corpus",
        str(tasks),
        "--bench-stashes",
        str(stashes),
        "--bench-akm",
        str(info.path),
        "--bench-opencode",
        str(oc.binary()),
        "--bench-model",
        "scripted/needs-asset",
        "--bench-seeds",
        "1",
        "--bench-tmp",
        str(tmp / "cells"),
        "--bench-store",
        str(tmp / "store"),
        "--bench-report",
        str(tmp / "report"),
        *extra,
    ]


def stored(tmp: Path) -> list[dict[str, Any]]:
    return samples(tmp / "store", missing_ok=False)


def masked_cells(tmp: Path) -> list[tuple[str, str, int]]:
    return [(s["task_id"], s["fingerprint"]["mask"], s["seed"]) for s in stored(tmp) if "mask" in s["fingerprint"]]


def test_decisive_asset_matters_distractor_does_not_and_resume_reruns_nothing(tmp_path: Path) -> None:
    info = real_akm.get()
    corpus(tmp_path)
    started = time.monotonic()
    base = subprocess.run(
        bench_args(tmp_path, info, "--bench-arms", "akm", "-q"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert base.returncode == 0, base.stdout[-3000:] + base.stderr[-2000:]
    base_report = tmp_path / "report" / "report.json"
    loaded = {akm.ref_key(r) for row in json.loads(base_report.read_text())["runs"] for r in row["assets_loaded"]}
    assert loaded == {("skill", "greeting-rule"), ("skill", "greeting-lore")}

    # The base and the interrupted run go serially: under the suite's two workers a nested -n 2
    # adds two workers' start-up and no speed (tests/support/schedule.py); the resumed run keeps
    # the track under xdist.
    attribute = bench_args(tmp_path, info, "--bench-track", "attribute", "--bench-base", str(base_report))
    # Masked reruns under other conditions than the base's are refused before any cell runs.
    for extra, field in (
        (["--bench-model", "scripted/oracle"], "model"),
        (["--bench-budget-tokens", "5000"], "budget"),
    ):
        other = subprocess.run(attribute + extra, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        # Other plugins may warn on stderr (pytest-benchmark does under xdist): ours is one line.
        lines = [line for line in other.stderr.splitlines() if line.startswith("ERROR")]
        assert other.returncode == 4 and len(lines) == 1, other.stdout[-2000:] + other.stderr
        assert "Traceback" not in other.stderr
        assert f"this run's akm cells of greet/t1 differ from the base run's in {field} (" in lines[0]
    assert not masked_cells(tmp_path)
    proc = subprocess.Popen(attribute + ["-q"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    wait_until(lambda: len(masked_cells(tmp_path)) >= 3, "3 masked cells are stored", timeout=600, proc=proc, every=0.2)
    proc.send_signal(signal.SIGINT)
    out = output(proc, timeout=120)
    before = masked_cells(tmp_path)
    assert 3 <= len(before) < 14, out[-3000:]
    assert json.loads((tmp_path / "report" / "attribute.json").read_text())["complete"] is False

    resumed = subprocess.run(attribute + ["-v", "-n", "2"], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    seconds = time.monotonic() - started
    assert resumed.returncode == 0, resumed.stdout[-4000:] + resumed.stderr[-2000:]
    from_store = re.findall(r"^  cell (\S+) akm-mask\[(\S+)\]-s1: \w+ \(from store\)", resumed.stdout, re.M)
    assert sorted(from_store) == sorted((t, m) for t, m, _ in before), resumed.stdout[-4000:]
    after = masked_cells(tmp_path)
    assert len(after) == len(set(after)) == 14  # every masked cell once: nothing ran twice
    assert set(before) <= set(after)

    envelope = json.loads((tmp_path / "report" / "attribute.json").read_text())
    assert envelope["track"] == "attribute" and envelope["complete"] is True
    rows = {r["asset_ref"]: r for r in envelope["attributions"]}
    rule, lore = rows["skill:greeting-rule"], rows["skill:greeting-lore"]
    assert rule["loaded_on_tasks"] == lore["loaded_on_tasks"] == TASKS
    assert rule["base_pass_rate"] == 1.0 and rule["masked_pass_rate"] == 0.0
    assert rule["comparison"]["low"] > 0 and rule["significant"] is True
    assert lore["masked_pass_rate"] == 1.0
    assert lore["comparison"]["low"] <= 0 <= lore["comparison"]["high"] and lore["significant"] is False
    assert envelope["verdict"].startswith("1 of 2 masked assets matter: skill:greeting-rule lifts")
    # The unmasked side is a fresh rerun of each task at the seed after the base's, never the base's run.
    reference = sorted(
        (s["task_id"], s["seed"]) for s in stored(tmp_path) if s["arm"] == "akm" and "mask" not in s["fingerprint"]
    )
    assert reference == sorted([(t, 1) for t in TASKS] + [(t, 2) for t in TASKS])  # the base's, then the rerun
    assert envelope["attribution"]["reference"]["seeds"] == [2] and envelope["referenceRunsPerformed"] == 7
    # The masked reruns were given the base's providers (here: the scripted model's own).
    base_providers = json.loads(base_report.read_text())["provenance"]["providers"]
    assert envelope["agent"]["providers"] == base_providers == envelope["base"]["providers"]
    assert base_providers["model"] == "scripted/needs-asset" and base_providers["source"] is None
    assert "skill:greeting-rule" in (tmp_path / "report" / "attribute.html").read_text()
    markdown = (tmp_path / "report" / "attribute.md").read_text()
    assert "| asset" in markdown and "greeting-lore" in markdown
    print(f"attribute run (base + interrupted + resumed) took {seconds:.0f} s\n{markdown}")
