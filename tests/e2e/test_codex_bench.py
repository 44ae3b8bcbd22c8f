"""Codex through pytest: the real Codex binary, the scripted model and real akm, in the cell
sandbox (bwrap, isolated network) a bench run uses by default.

The shipped corpus under the oracle passes on both arms, with tokens measured on every run and
each akm cell's trajectory accounted for by akm's own log; under ``snoop`` the sandbox holds (and
without it the same policy reads everything, so the policy works); the version reaches the
report's provenance. Few cells, serial: about 3 s of CPU per Codex cell.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from pytest_akmbench.corpus.tasks import load_corpus
from pytest_akmbench.scripted import snoop
from tests.support import codex, real_akm
from tests.support.bench import samples
from tests.support.bwrap import require_bwrap

ROOT = real_akm.ROOT
CODEX = codex.binary()
# One task of each shipped domain and both workflow-compliance tasks.
TASKS = (
    "logline/*",
    "pagerbook/*",
    "shipyard/*",
    "tidectl/drain-cell",
    "workflow-compliance/drain-hold",
    "workflow-compliance/rollback-rev",
)


def bench(cwd: Path, *args: str, home: Path | None = None, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "AKMBENCH_CODEX"} | ({"HOME": str(home)} if home else {})
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--bench-agent",
            "codex",
            "--bench-codex",
            str(CODEX),
            *args,
        ],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _picked() -> list[str]:
    """The task ids of TASKS: a domain's first task in name order where a pattern names a domain."""
    ids = sorted(load_corpus(ROOT / "corpus" / "tasks", ROOT / "corpus" / "stashes").by_id())
    return [t if not t.endswith("*") else next(i for i in ids if i.startswith(t[:-1])) for t in TASKS]


def test_oracle_passes_the_shipped_corpus_on_both_arms(tmp_path: Path) -> None:
    require_bwrap()
    info = real_akm.get()
    picked = _picked()
    args = ["corpus", "--bench-model", "scripted/oracle", "--bench-akm", str(info.path), "--bench-seeds", "1"]
    args += ["--bench-tasks", ",".join(picked), "--bench-tmp", str(tmp_path / "cells")]
    args += ["--bench-store", str(tmp_path / "store"), "--bench-report", str(tmp_path / "report")]
    proc = bench(ROOT, *args)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    got = samples(tmp_path / "store", missing_ok=False)
    assert sorted((s["task_id"], s["arm"]) for s in got) == sorted((t, a) for t in picked for a in ("akm", "noakm"))
    tasks = load_corpus(ROOT / "corpus" / "tasks", ROOT / "corpus" / "stashes").by_id()
    for s in got:
        assert s["outcome"] == "pass", (s["task_id"], s["arm"], s["reason"])
        assert s["token_measurement"] == "measured" and s["tokens"]["total"] == sum(
            1020 + 10 * t for t in range(s["turns"])
        ), s
        if s["arm"] != "akm":
            continue
        t, gold = s["trajectory"], tasks[s["task_id"]].gold_ref
        # akm's own log holds exactly the agent's calls: every event accounted for, none missing.
        assert t["source"] == "transcript" and t["akm_events"] is True and t["akm_answered"] is True
        assert t["unconfirmed_events"] == 0 and t["warnings"] == [], (s["task_id"], t["warnings"])
        logged = [a for a in t["actions"] if a["kind"] in ("search", "show", "feedback")]
        assert len(logged) == t["akm_calls"] == 3 and all(a["ok"] for a in logged), t["actions"]
        assert t["time_to_first_search_ms"] is not None and t["time_to_first_search_ms"] > 0
        if gold:
            assert t["correct_asset_loaded"] is True and t["gold_ranks"][0] is not None, s["task_id"]
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert report["provenance"]["agent"] == {"name": "codex", "version": codex.VERSION}
    assert report["workflow"]["strict_pass_rate"] == 1.0 and report["workflow"]["violation_count"] == 0


def test_snoop_reads_nothing_sandboxed_and_everything_without(tmp_path: Path) -> None:
    require_bwrap()
    shutil.copytree(ROOT / "corpus", tmp_path / "corpus")
    home = tmp_path / "userhome"
    home.mkdir()
    (home / "secret.txt").write_text("the user's own file\n")
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nbench_corpus = corpus/tasks\nbench_stashes = corpus/stashes\n"
        f"bench_tmp = {tmp_path / 'cells'}\nbench_akm = {real_akm.get().path}\n"
    )
    task_dir = tmp_path / "corpus" / "tasks" / "tidectl" / "drain-cell"
    solution_sha = hashlib.sha256((task_dir / "solution" / "solve.sh").read_bytes()[:4096]).hexdigest()[:12]
    store = tmp_path / ".akmbench" / "store" / "samples.jsonl"
    seen = {}
    for mode in ("bwrap", "none"):
        args = ["--bench-seeds", "1", "--bench-model", "scripted/snoop", "--bench-tasks", "tidectl/drain-cell"]
        proc = bench(tmp_path, *args, "--bench-keep-runs", "--bench-sandbox", mode, home=home, timeout=300)
        assert f"sandbox {mode}" in proc.stdout, proc.stdout
        runs = [json.loads(line) for line in store.read_text().splitlines()][-2:]
        assert sorted(r["arm"] for r in runs) == ["akm", "noakm"] and all(r["outcome"] == "fail" for r in runs), runs
        seen[mode] = [snoop.parse(r["final_text_tail"]) for r in runs]
        assert all(set(s) == set(snoop.TARGETS) for s in seen[mode]), seen[mode]
    assert all(s[t][0] == "DENIED" for s in seen["bwrap"] for t in snoop.TARGETS), seen["bwrap"]
    for s in seen["none"]:
        assert s["solution"] == ("READ", "solve.sh", solution_sha)
        assert s["verifier"][:2] == ("READ", "verify.sh") and s["home"][:2] == ("READ", "secret.txt")


def test_hang_ends_at_the_wall_budget_with_no_process_left(tmp_path: Path) -> None:
    """A model that never answers: the sandboxed cell ends at its wall budget, nothing of it left."""
    require_bwrap()
    cells = tmp_path / "cells"
    args = ["corpus", "--bench-model", "scripted/hang", "--bench-tasks", "tidectl/drain-cell", "--bench-seeds", "1"]
    args += ["-k", "noakm", "--bench-budget-wall-ms", "8000", "--bench-tmp", str(cells)]
    args += ["--bench-store", str(tmp_path / "store"), "--bench-report", str(tmp_path / "report")]
    proc = bench(ROOT, *args, timeout=300)
    (got,) = samples(tmp_path / "store", missing_ok=False)
    assert got["outcome"] == "budget_exceeded" and got["budget"] == "wall", (got, proc.stdout[-2000:])
    assert got["budget_tag"] == "hung" and got["token_measurement"] == "missing"
    left = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _cmdline_has(p, str(cells))]
    assert left == []


def _cmdline_has(proc: Path, text: str) -> bool:
    try:
        return text in (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return False
