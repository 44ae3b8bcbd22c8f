"""An agent that forges akm's log: a whole bench through pytest, the real opencode binary in its
sandbox, the scripted model and real akm.

akm keeps its event log in the cell's run dir, where the agent can write (akm 0.7 a JSON-lines
file under ``$XDG_CACHE_HOME/akm/``, akm 0.9 the ``events`` table of the SQLite
``$XDG_DATA_HOME/akm/state.db`` that ``akm log`` reads). ``scripted/shortcut`` runs the task's
``solution/solve.sh`` through opencode's bash tool; here that script solves the task and writes a
search, a show of the gold asset and positive feedback into akm's log, in akm's own format. One
task does so without calling akm at all; the other makes one real search and then forges a
second one of the same query next to the show and the feedback. None of the forged events may
earn the trajectory anything, and the report must name both cells (docs/akm.md, "akm's log,
cross-checked").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_akmbench.cell import akm
from tests.akm.test_akm_arm import bench, samples
from tests.support import opencode as oc
from tests.support import real_akm
from tests.support.corpus import write_stash, write_task
from tests.support.procs import processes_under

GOLD = "skill:howto"
QUERY = "howto greetings"

# Written by the agent's own tool command: the events akm would log for a search, a show of the
# gold asset and positive feedback on it, stamped now (so after the agent started).
FORGE = """python3 - <<'FORGE_EOF'
import datetime, json, os, sqlite3
now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
gold = {gold!r}
events = [
    ("search", None, {{"query": {query!r}, "hitCount": 1, "resultRefs": [gold]}}),
    ("show", gold, {{"type": "skill", "name": "howto"}}),
    ("feedback", gold, {{"signal": "positive"}}),
]
if {line!r} == "0.7":
    path = os.path.join(os.environ["XDG_CACHE_HOME"], "akm", "events.jsonl")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a") as fh:
        for kind, ref, meta in events:
            line = {{"schemaVersion": 1, "ts": now, "eventType": kind, "metadata": meta}}
            if ref:
                line["ref"] = ref
            fh.write(json.dumps(line) + "\\n")
else:
    db = sqlite3.connect(os.path.join(os.environ["XDG_DATA_HOME"], "akm", "state.db"))
    db.executemany(
        "INSERT INTO events (event_type, ts, ref, metadata_json) VALUES (?, ?, ?, ?)",
        [(kind, now, ref, json.dumps(meta)) for kind, ref, meta in events],
    )
    db.commit()
print("forged", len(events), "akm events")
FORGE_EOF
"""


def solve(line: str, *, real_search: bool) -> str:
    search = f"akm search '{QUERY}' > /dev/null\n" if real_search else ""
    return search + "echo hello > out.txt\n" + FORGE.format(gold=akm.format_ref(GOLD, line), query=QUERY, line=line)


@pytest.mark.parametrize("version", real_akm.versions())
def test_a_forged_akm_log_earns_nothing_and_is_named(version: str, tmp_path: Path) -> None:
    info = real_akm.get(version)
    tasks, stashes = tmp_path / "corpus" / "tasks", tmp_path / "corpus" / "stashes"
    write_stash(stashes)
    extra = {"gold_ref": GOLD, "akm_keywords": QUERY, "budget": {"tokens": 100000, "wallMs": 120000}}
    write_task(tasks, "alpha/forged", solve=solve(info.line, real_search=False), extra=extra)
    write_task(tasks, "alpha/partial", solve=solve(info.line, real_search=True), extra=extra)
    args = [str(tasks), "--bench-corpus", str(tasks), "--bench-stashes", str(stashes)]
    args += ["--bench-model", "scripted/shortcut", "--bench-akm", str(info.path), "--bench-opencode", str(oc.binary())]
    args += ["--bench-arms", "akm", "--bench-seeds", "1", "--bench-sandbox", "bwrap"]
    args += ["--bench-tmp", str(tmp_path / "cells"), "--bench-store", str(tmp_path / "store")]
    args += ["--bench-report", str(tmp_path / "report")]
    proc = bench(tmp_path, *args, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert processes_under(tmp_path) == []
    got = {s["task_id"]: s for s in samples(tmp_path / "store")}
    assert sorted(got) == ["alpha/forged", "alpha/partial"]
    for s in got.values():
        t = s["trajectory"]
        assert s["outcome"] == "pass" and "forged 3 akm events" in s["final_text_tail"], s
        assert t["source"] == "transcript" and t["akm_events"] is True, t
        # the forged show and feedback earn nothing
        assert t["correct_asset_loaded"] is False and t["assets_loaded"] == [] and t["show_count"] == 0, t
        assert t["feedback_recorded"] is False and t["feedback_count"] == 0 and t["feedback_polarity"] is None, t
    forged, partial = got["alpha/forged"]["trajectory"], got["alpha/partial"]["trajectory"]
    # No akm call at all: no search, akm never asked, so nothing says it answered.
    assert forged["akm_calls"] == 0 and forged["search_count"] == 0 and forged["unconfirmed_events"] == 3
    assert forged["akm_answered"] is None and forged["searched_before_acting"] is False
    gold = akm.format_ref(GOLD, info.line)
    assert forged["warnings"] == [
        "3 akm event(s) in akm's log match no akm call in the transcript (akm log tampered or unconfirmed): "
        f"search {QUERY!r}, show {gold}, feedback {gold} positive; none credited"
    ]
    # One real search: it counts once (akm answered it); its forged twin, the show and the feedback do not.
    assert partial["akm_calls"] == 1 and partial["search_count"] == 1 and partial["unconfirmed_events"] == 3
    assert partial["akm_answered"] is True and partial["searched_before_acting"] is True
    assert partial["warnings"][0].startswith("3 akm event(s) in akm's log match no akm call in the transcript")
    _report_names_both(tmp_path / "report")


def _report_names_both(report_dir: Path) -> None:
    report: dict[str, Any] = json.loads((report_dir / "report.json").read_text())
    block = report["trajectory"]["akm"]
    assert block["unconfirmed_cells"] == [
        {"task_id": "alpha/forged", "seed": 1, "outcome": "pass", "unconfirmed_events": 3},
        {"task_id": "alpha/partial", "seed": 1, "outcome": "pass", "unconfirmed_events": 3},
    ]
    assert (block["counts"]["unconfirmed_runs"], block["counts"]["unconfirmed_events"]) == (2, 6)
    assert block["correct_asset_loaded"] == 0.0 and block["feedback_recorded"] == 0.0
    assert [r["trajectory"]["unconfirmed_events"] for r in report["runs"]] == [3, 3]
    line = (
        "akm log tampered or unconfirmed in 2 of 2 akm-arm runs: alpha/forged s1 (3 events), alpha/partial s1 "
        "(3 events); their akm log holds events no akm call of the agent accounts for, and those events got no credit"
    )
    assert any(w.startswith(line) for w in report["warnings"]), report["warnings"]
    assert f"**{line}**" in (report_dir / "summary.md").read_text()
    assert f'id="akm-unconfirmed" data-runs="2" data-events="6">{line}</p>' in (report_dir / "report.html").read_text()
