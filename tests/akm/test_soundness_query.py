"""Soundness searches a task's keywords as akm-bench's prompt does, with real akm (issue 29, item 7).

akm-bench's prompt shows ``akm search <words>``: the words as separate arguments, of which akm
searches the first. Quoted as one phrase, akm wants every word on one asset, which most
keywords of a foreign corpus never are (docs/akm.md, "Query forms"). Soundness tries the words,
then the phrase, and records which found the gold asset.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_akmbench.cell import akm
from pytest_akmbench.report import soundness
from tests.support import real_akm
from tests.support.corpus import write_stash, write_task

RULE = "---\nname: greeting-rule\ndescription: The greeting rule for out.txt\n---\nWrite hello.\n"


@pytest.mark.parametrize("version", real_akm.versions())
def test_soundness_finds_gold_by_words_and_says_so(version: str, tmp_path: Path) -> None:
    info = real_akm.get(version)
    tasks, stashes = tmp_path / "corpus" / "tasks", tmp_path / "corpus" / "stashes"
    write_stash(stashes, assets={"skills/greeting-rule/SKILL.md": RULE})
    gold = {"gold_ref": "skill:greeting-rule"}
    # The first word names the asset; the phrase carries words no asset has, as akm-bench's do.
    write_task(tasks, "alpha/words", extra={**gold, "akm_keywords": "greeting file write lowercase hello"})
    write_task(tasks, "alpha/neither", extra={**gold, "akm_keywords": "farewell greeting"})
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(tasks), "--bench-soundness"]
        + ["--bench-corpus", str(tasks), "--bench-stashes", str(stashes), "--bench-akm", str(info.path)]
        + ["--bench-tmp", str(tmp_path / "cells"), "--bench-store", str(tmp_path / "store")]
        + ["--bench-report", str(tmp_path / "report")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    report = json.loads((tmp_path / "report" / "soundness" / "report.json").read_text())
    rows = {r["task_id"]: r for r in report["soundness"]["by_task"]}
    assert rows["alpha/words"]["sound"] is True and rows["alpha/words"]["found_by"] == "words"
    assert rows["alpha/words"]["checks"]["akm_finds_gold"] is True
    neither = rows["alpha/neither"]
    assert neither["sound"] is False and neither["found_by"] == "none"
    assert neither["checks"]["akm_finds_gold"] is False
    assert "neither as separate words nor as one phrase" in neither["problems"][0], neither
    summary = (tmp_path / "report" / "soundness" / "summary.md").read_text()
    assert "## Corpus soundness" in summary and "alpha/neither: akm " in summary
    page = (tmp_path / "report" / "soundness" / "report.html").read_text()
    assert "<th>found_by</th>" in page and "<td>words</td>" in page
    # The form the scripted policies send is the form soundness found the gold with.
    assert akm.search_refs(_search(info, stashes, tmp_path, "greeting", "file", "write")) == [
        akm.format_ref("skill:greeting-rule", info.line)
    ]


def _search(info: akm.AkmInfo, stashes: Path, tmp: Path, *words: str) -> str:
    stash = tmp / "probe"
    shutil.copytree(stashes / "st", stash)
    env = akm.cell_env(info, stash, akm.private_env(tmp / "probe-home"))
    akm.write_config(info, env)
    for argv in (["index"], ["search", *words]):
        proc = subprocess.run([str(info.path), *argv], env=env, cwd=stash, capture_output=True, text=True, timeout=120)
    return proc.stdout


def test_headline_and_summary_count_each_query_form() -> None:
    """A corpus whose gold assets are found by both forms says how many each found, and names the
    tasks only the phrase finds (an agent following akm-bench's prompt would miss them)."""
    rows = [
        {"task_id": "a/1", "sound": True, "checks": {"akm_finds_gold": True}, "problems": [], "found_by": "words"},
        {"task_id": "a/2", "sound": True, "checks": {"akm_finds_gold": True}, "problems": [], "found_by": "words"},
        {"task_id": "a/3", "sound": True, "checks": {"akm_finds_gold": True}, "problems": [], "found_by": "phrase"},
    ]
    block = {"tasks": 3, "checked": 3, "sound": 3, "unchecked": [], "by_task": rows}
    assert soundness.headline(block).endswith("akm finds each gold asset (by words 2, only as a phrase 1))")
    lines = soundness.markdown_lines({"soundness": block})
    assert lines[-1].startswith("Found only as a quoted phrase, not as separate words") and lines[-1].endswith(": a/3")
