"""The akm arm with real akm, through pytest, the real opencode binary and the scripted model.

The treatment must be live: every akm cell's own akm finds the task's gold asset with the
search the prompt asks for, and a cell whose akm cannot work is a harness error, never a fail.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_akmbench.cell import akm
from pytest_akmbench.corpus.tasks import load_corpus
from tests.support import opencode as oc
from tests.support import real_akm
from tests.support.bench import samples
from tests.support.corpus import write_stash, write_task

ROOT = real_akm.ROOT


@pytest.fixture(params=real_akm.versions())
def info(request: pytest.FixtureRequest) -> akm.AkmInfo:
    return real_akm.get(request.param)


def bench(cwd: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _one_task_per_domain(offset: int) -> list[str]:
    """The task.yaml paths (relative to the project) of one task per shipped domain, the
    ``offset``-th of each domain in name order (wrapping around)."""
    out = []
    for domain in sorted(p for p in (ROOT / "corpus" / "tasks").iterdir() if p.is_dir()):
        tasks = sorted(p.parent.name for p in domain.glob("*/task.yaml"))
        out.append(f"corpus/tasks/{domain.name}/{tasks[offset % len(tasks)]}/task.yaml")
    return out


class TestShippedCorpus:
    def test_every_task_keywords_find_its_gold(self, info: akm.AkmInfo, tmp_path: Path) -> None:
        """Soundness with akm: for every shipped task, akm indexes the stash and the prompt's quoted
        search lists the gold asset (a corpus whose akm arm cannot find its assets is unsound)."""
        proc = bench(
            ROOT,
            "corpus",
            "--bench-soundness",
            "--bench-akm",
            str(info.path),
            "-n",
            "2",
            "--bench-tmp",
            str(tmp_path / "cells"),
            "--bench-store",
            str(tmp_path / "store"),
            "--bench-report",
            str(tmp_path / "report"),
        )
        assert proc.returncode == 0, proc.stdout[-3000:]
        assert "26 passed" in proc.stdout

    def test_oracle_on_akm_cells(self, info: akm.AkmInfo, tmp_path: Path) -> None:
        """scripted/oracle on the akm arm of one shipped task per domain and both
        workflow-compliance tasks: every cell passes, akm's own log shows a search with hits that
        ranked the gold asset, and the gold asset shown; the workflow checks all pass; a rerun
        takes every cell from the store.

        Every task's stash and keywords are checked against this akm by the soundness test above;
        here the agent drives akm, which behaves alike across a domain's tasks. Each akm version
        takes a different task of each other domain, so the versions together cover more of the
        corpus. Both akm ref syntaxes (0.7's skill:x, 0.9's skills/x) must name the gold asset for
        the workflow checks, which is why the workflow-compliance tasks run on every version. One
        run serves both questions: the cells are the same kind (oracle policy, akm arm), and each
        is 10-15 CPU-seconds of opencode and akm. Serial: under the suite's two workers a nested
        -n 2 only adds two workers' start-up (tests/support/schedule.py).
        """
        opencode = oc.binary()
        picked = [p for p in _one_task_per_domain(real_akm.versions().index(info.version)) if WORKFLOW not in p]
        picked += [f"corpus/tasks/{WORKFLOW}/{t}/task.yaml" for t in WORKFLOW_TASKS]
        args = [*picked, "--bench-model", "scripted/oracle", "--bench-akm", str(info.path)]
        args += ["--bench-opencode", str(opencode), "--bench-arms", "akm", "--bench-seeds", "1"]
        args += ["--bench-tmp", str(tmp_path / "cells"), "--bench-store", str(tmp_path / "store")]
        args += ["--bench-report", str(tmp_path / "report")]
        proc = bench(ROOT, *args, timeout=900)
        assert proc.returncode == 0, proc.stdout[-3000:]
        tasks = load_corpus(ROOT / "corpus" / "tasks", ROOT / "corpus" / "stashes").by_id()
        got = samples(tmp_path / "store", missing_ok=False)
        assert sorted(s["task_id"] for s in got) == sorted(p.split("/", 2)[2].rsplit("/", 1)[0] for p in picked)
        for s in got:
            t, gold = s["trajectory"], tasks[s["task_id"]].gold_ref
            assert s["outcome"] == "pass", s["task_id"]
            assert s["akm_setup"]["version"] == info.version and s["akm_setup"]["index"]["search_mode"] == "keyword"
            assert t["akm_events"] is True and t["akm_answered"] is True, (s["task_id"], t["warnings"])
            # every event akm logged is accounted for by the oracle's own calls (docs/akm.md)
            assert t["unconfirmed_events"] == 0 and t["warnings"] == [], (s["task_id"], t["warnings"])
            assert t["searches_with_hits"] >= 1, s["task_id"]
            if gold:
                assert t["correct_asset_loaded"] is True and t["gold_ranks"][0] is not None, s["task_id"]
                assert all(akm.ref_key(r) is not None for r in t["assets_loaded"])
        report = json.loads((tmp_path / "report" / "report.json").read_text())
        prov = report["provenance"]
        assert prov["akm_version"] == info.version and prov["akm_sha256"] == info.sha256
        assert prov["akm_search_mode"] == "keyword" and prov["opencode_version"] == "1.18.33"
        assert report["trajectory"]["akm"]["unconfirmed_cells"] == [] and "tampered" not in json.dumps(report)
        _oracle_complies(report, (tmp_path / "report" / "summary.md").read_text(), got)
        again = bench(ROOT, *args, timeout=300)  # resumed: every cell from the store
        assert again.returncode == 0, again.stdout[-3000:]
        rerun = json.loads((tmp_path / "report" / "report.json").read_text())
        assert len(samples(tmp_path / "store", missing_ok=False)) == len(got) and all(
            r["from_store"] for r in rerun["runs"]
        )
        assert rerun["workflow"] == report["workflow"]


WORKFLOW, WORKFLOW_TASKS = "workflow-compliance", ("drain-hold", "rollback-rev")


def _oracle_complies(report: dict[str, Any], summary: str, got: list[dict[str, Any]]) -> None:
    """The oracle looked the convention up, then edited, then recorded positive feedback: every
    check of the two workflow-compliance cells passes; the other domains' cells have none that
    applies (tests/akm/test_workflow_e2e.py holds the shortcut policy, which fails them all)."""
    wf = report["workflow"]
    assert wf["specs"] == ["akm-feedback-after-use", "akm-lookup-before-edit"]
    assert wf["applicable_checks"] == 4, wf
    for s in got:
        checks = (s.get("workflow") or {}).get("checks") or []
        if s["task_id"].startswith(WORKFLOW + "/"):
            assert s["workflow"]["trace_source"] == "transcript"
            assert {c["workflow_id"] for c in checks} == set(wf["specs"])
        else:
            assert all(c["status"] == "not_applicable" for c in checks), s["task_id"]
    assert wf["strict_pass_rate"] == 1.0 and wf["overall_compliance"] == 1.0 and wf["violation_count"] == 0
    pass_row = next(r for r in wf["cross_tab"] if r["task_outcome"] == "pass")
    assert pass_row == {"task_outcome": "pass", "pass": 2, "partial": 0, "fail": 0, "total": 2}
    section = summary.split("## Workflow compliance", 1)[1].split("\n## ", 1)[0]
    assert wf["top_violations"] == [] and f"violations=0 (4 applicable checks of {wf['total_checks']})" in section


class TestTreatmentLive:
    def test_empty_stash_is_a_harness_error(self, info: akm.AkmInfo, tmp_path: Path) -> None:
        """A stash akm finds nothing in: the akm cell is a harness_error before the agent runs
        (no tokens spent), never a fail that would read as "akm does not help"."""
        tasks, stashes = tmp_path / "tasks", tmp_path / "stashes"
        write_task(tasks, "alpha/t", stash="empty")
        root = write_stash(stashes, "empty")
        shutil.rmtree(root / "skills")
        proc = bench(
            tmp_path,
            str(tasks),
            "--bench-corpus",
            str(tasks),
            "--bench-stashes",
            str(stashes),
            "--bench-akm",
            str(info.path),
            "--bench-agent",
            "oracle",
            "--bench-arms",
            "akm",
            "--bench-seeds",
            "1",
            "--bench-tmp",
            str(tmp_path / "cells"),
            "--bench-store",
            str(tmp_path / "store"),
            "--bench-report",
            str(tmp_path / "report"),
        )
        assert proc.returncode == 1, proc.stdout
        (s,) = samples(tmp_path / "store", missing_ok=False)
        assert s["outcome"] == "harness_error" and "found no asset" in s["reason"]
        assert s["timing_ms"]["agent"] == 0

    def test_akm_that_cannot_run_stops_the_run_before_any_cell(self, info: akm.AkmInfo, tmp_path: Path) -> None:
        """An akm whose runtime is missing is refused at start with one line; nothing runs."""
        broken = tmp_path / "akm-install"
        broken.mkdir()
        shutil.copy(info.path, broken / "akm")
        (broken / "akm.js").write_text("")  # the script's runtime (bun) is not there
        proc = bench(
            ROOT,
            "corpus",
            "--bench-akm",
            str(broken / "akm"),
            "--bench-model",
            "scripted/oracle",
            "--bench-tasks",
            "tidectl/drain-cell",
            "--bench-store",
            str(tmp_path / "store"),
            "--bench-tmp",
            str(tmp_path / "cells"),
            "--bench-report",
            str(tmp_path / "report"),
        )
        assert proc.returncode == 4, proc.stdout + proc.stderr
        assert "akm --version` failed" in proc.stderr and "Traceback" not in proc.stderr
        assert not (tmp_path / "store").exists()
