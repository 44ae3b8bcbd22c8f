"""The attribute track on a one-asset stash, with real akm (issue 29, item 9).

Masking a stash's only asset leaves it empty. That is a valid treatment (the agent with akm and
nothing in it), so the masked cell runs on the empty stash and is scored: before, akm's empty
index made every such cell a harness error, and the report stayed incomplete (exit 1).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.akm.test_attribute import RULE, bench_args, stored
from tests.support import real_akm
from tests.support.corpus import write_task


@pytest.mark.parametrize("version", real_akm.versions())
def test_masking_the_only_asset_runs_the_cell_on_an_empty_stash(version: str, tmp_path: Path) -> None:
    info = real_akm.get(version)
    tasks, stashes = tmp_path / "corpus" / "tasks", tmp_path / "corpus" / "stashes"
    (stashes / "greet" / "skills" / "greeting-rule").mkdir(parents=True)
    (stashes / "greet" / "skills" / "greeting-rule" / "SKILL.md").write_text(RULE)
    (stashes / "greet" / "MANIFEST.json").write_text('{"name": "greet", "assets": {"skill": 1}}\n')
    extra = {"gold_ref": "skill:greeting-rule", "akm_keywords": "greeting", "budget": {"wallMs": 180000}}
    write_task(tasks, "greet/only", stash="greet", extra=extra)

    def bench(*args: str) -> subprocess.CompletedProcess[str]:
        argv = bench_args(tmp_path, info, *args)
        return subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=600)

    base = bench("--bench-arms", "akm", "-q")
    assert base.returncode == 0, base.stdout[-3000:] + base.stderr[-2000:]
    run = bench("--bench-track", "attribute", "--bench-base", str(tmp_path / "report" / "report.json"), "-q")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    masked = [s for s in stored(tmp_path) if "mask" in s["fingerprint"]]
    assert len(masked) == 1, masked
    # Scored like any cell: the needs-asset agent finds nothing in the empty stash and fails.
    assert masked[0]["outcome"] == "fail", masked[0].get("reason")
    assert masked[0]["akm_setup"]["index"]["entries"] == 0
    envelope = json.loads((tmp_path / "report" / "attribute.json").read_text())
    assert envelope["complete"] is True and envelope["warnings"] == []
    (row,) = envelope["attributions"]
    assert row["asset_ref"] == "skill:greeting-rule" and row["paired_tasks"] == 1
    assert row["base_pass_rate"] == 1.0 and row["masked_pass_rate"] == 0.0
    # One paired task cannot show an asset that matters, and the verdict says so beside its count.
    assert envelope["verdict"].startswith("0 of 1 masked asset matter (none could: with 1 paired task the exact")
