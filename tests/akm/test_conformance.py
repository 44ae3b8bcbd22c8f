"""What the harness relies on, checked against every real akm at hand (0.7.0 and 0.9.0 in CI).

Each test states one behaviour the akm arm depends on; where the two lines of akm differ, the
test says how, and the harness's code for that difference (``pytest_akmbench.cell.akm``) is used
to read the answer, so a change in akm's behaviour fails here rather than in a report.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_akmbench.agents.opencode.transcript import read_transcript
from pytest_akmbench.cell import akm, akm_calls
from pytest_akmbench.cell.akm_evidence import cross_check
from pytest_akmbench.cell.transcript import Transcript
from tests.support import real_akm

STASH = real_akm.ROOT / "corpus" / "stashes" / "logline"
ASSETS = 8  # 1 skill and 7 knowledge documents in the logline fixture


class Akm:
    """One real akm on a private copy of a stash, with the environment a cell gives it."""

    def __init__(self, info: akm.AkmInfo, tmp: Path, stash: Path = STASH) -> None:
        self.info = info
        self.stash = tmp / "stash"
        shutil.copytree(stash, self.stash)
        self.env = akm.cell_env(info, self.stash, akm.private_env(tmp / "home"))
        akm.write_config(info, self.env)
        self.cwd = tmp

    def __call__(self, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
        proc = subprocess.run(
            [str(self.info.path), *args],
            env=env or self.env,
            cwd=self.cwd,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        return proc.returncode, proc.stdout + proc.stderr

    def ref(self, ref: str) -> str:
        return akm.format_ref(ref, self.info.line)

    def events(self) -> list[dict[str, Any]]:
        argv = akm.log_argv(self.info)
        if argv is None:
            return akm.parse_events_file(akm.events_file(self.env))
        proc = subprocess.run(argv, env=self.env, cwd=self.cwd, capture_output=True, text=True, timeout=120)
        events = akm.parse_log(proc.stdout)
        assert events is not None, proc.stdout + proc.stderr
        return events


@pytest.fixture(params=real_akm.versions())
def info(request: pytest.FixtureRequest) -> akm.AkmInfo:
    return real_akm.get(request.param)


@pytest.fixture
def tool(info: akm.AkmInfo, tmp_path: Path) -> Akm:
    """A real akm with the logline stash indexed, as in a cell."""
    a = Akm(info, tmp_path)
    code, out = a("index")
    assert code == 0, out
    return a


class TestVersionAndConfig:
    def test_version_line_and_pinned_keyword_search(self, info: akm.AkmInfo) -> None:
        """`--version` names a supported line; the pinned config turns semantic search off."""
        assert info.line in akm.SUPPORTED and info.warning is None
        assert '"semanticSearchMode": "off"' in info.config

    def test_index_builds_keyword_index_without_download(self, tool: Akm) -> None:
        """`akm index` reports every asset and keyword search: no model download is attempted."""
        code, out = tool("index", "--full")
        report = akm.index_report(out)
        assert code == 0 and report["entries"] == ASSETS
        assert report["search_mode"] == "keyword" and report["semantic_status"] == "disabled"


class TestSearch:
    def test_json_hits_in_rank_order(self, tool: Akm) -> None:
        """Search prints JSON hits whose refs the harness reads; the gold of a corpus query is among them."""
        code, out = tool("search", "logline event catalog")
        assert code == 0
        assert akm.search_refs(out) == [tool.ref("knowledge:logline-catalog")]
        code, out = tool("search", "logline")
        refs = akm.search_refs(out)
        assert refs is not None and len(refs) == 6 and tool.ref("skill:logline") in refs

    def test_quoted_query_needs_every_word(self, tool: Akm) -> None:
        """A quoted multi-word query matches only assets carrying all its words."""
        assert akm.search_refs(tool("search", "logline zzzunknown")[1]) == []
        assert akm.search_refs(tool("search", "logline pii redaction")[1]) == [tool.ref("knowledge:logline-pii")]

    def test_unquoted_query_is_its_first_word(self, tool: Akm) -> None:
        """`akm search a b` searches "a" alone, as `akm_calls.calls` assumes for an agent's command."""
        code, _ = tool("search", "metrics", "logline")
        assert code == 0
        searches = [e for e in tool.events() if e["kind"] == "search"]
        assert searches[-1]["query"] == "metrics" == akm_calls.calls("akm search metrics logline")[0].query
        assert searches[-1]["results"] == [tool.ref("knowledge:metrics-naming")]

    def test_index_is_tied_to_the_stash_path(self, info: akm.AkmInfo, tool: Akm, tmp_path: Path) -> None:
        """Why every cell indexes its own copy: akm 0.7 searches a copy at another path without the
        index (it then matches the whole query as one substring); akm 0.9 follows the bundle."""
        assert akm.search_refs(tool("search", "catalog logline")[1]) == [tool.ref("knowledge:logline-catalog")]
        moved = tmp_path / "elsewhere"
        shutil.copytree(tool.stash, moved)
        env = akm.cell_env(info, moved, tool.env)
        hits = akm.search_refs(tool("search", "catalog logline", env=env)[1])
        assert hits == ([] if info.line == "0.7" else [tool.ref("knowledge:logline-catalog")])


class TestShow:
    def test_show_serves_the_asset(self, tool: Akm) -> None:
        """`akm show <ref>` in the line's syntax exits 0 with the asset's content and logs a show."""
        ref = tool.ref("knowledge:logline-catalog")
        code, out = tool("show", ref)
        assert code == 0 and "events.catalog.yaml" in out
        shows = [e for e in tool.events() if e["kind"] == "show"]
        assert len(shows) == 1 and akm.same_asset(shows[0]["ref"], "knowledge:logline-catalog")

    def test_unknown_ref_exits_1_and_logs_nothing(self, tool: Akm) -> None:
        """A ref not in the stash: exit 1 and no show event, so it never counts as loaded."""
        code, out = tool("show", tool.ref("knowledge:nope"))
        assert code == 1 and "ASSET_NOT_FOUND" in out
        assert [e for e in tool.events() if e["kind"] == "show"] == []

    def test_other_lines_ref_syntax(self, info: akm.AkmInfo, tool: Akm) -> None:
        """0.9 refuses 0.7's `type:name` refs (exit 1): the corpus's refs are translated for it."""
        code, _ = tool("show", "knowledge:logline-catalog")
        assert code == (0 if info.line == "0.7" else 1)


class TestFeedback:
    def test_positive_and_negative(self, tool: Akm) -> None:
        """Both polarities exit 0 and log a feedback event with the signal (negative with --reason)."""
        ref = tool.ref("skill:logline")
        assert tool("feedback", ref, "--positive")[0] == 0
        assert tool("feedback", ref, "--negative", "--reason", "stale")[0] == 0
        feedback = [e for e in tool.events() if e["kind"] == "feedback"]
        assert [e["signal"] for e in feedback] == ["positive", "negative"]
        assert all(akm.same_asset(e["ref"], "skill:logline") for e in feedback)

    def test_negative_without_reason(self, info: akm.AkmInfo, tool: Akm) -> None:
        """0.9 refuses negative feedback without --reason (exit 2); 0.7 accepts it."""
        code, _ = tool("feedback", tool.ref("skill:logline"), "--negative")
        assert code == (0 if info.line == "0.7" else 2)

    def test_unknown_ref_is_refused_and_logs_nothing(self, info: akm.AkmInfo, tool: Akm) -> None:
        """Feedback on a ref akm does not know is refused (exit 2 on 0.7, 1 on 0.9) with no event,
        so it never counts as recorded feedback."""
        code, _ = tool("feedback", tool.ref("skill:nope"), "--negative", "--reason", "x")
        assert code == (2 if info.line == "0.7" else 1)
        assert [e for e in tool.events() if e["kind"] == "feedback"] == []


class TestEventsAndExits:
    def test_search_events_carry_query_results_and_time(self, tool: Akm) -> None:
        """Search events have the query, ranked result refs, the hit count and a timestamp."""
        tool("search", "logline severity sev")
        (search,) = [e for e in tool.events() if e["kind"] == "search"]
        assert search["query"] == "logline severity sev" and search["hit_count"] == 1
        assert search["results"] == [tool.ref("knowledge:logline-sev-guide")]
        assert isinstance(search["t_ms"], int) and akm.since([search], search["t_ms"] + 1) == []

    def test_missing_stash_is_a_config_error(self, info: akm.AkmInfo, tool: Akm, tmp_path: Path) -> None:
        """A stash that is not there: exit 78 (config) from both lines: a broken treatment."""
        env = akm.cell_env(info, tmp_path / "missing", tool.env)
        code, _ = tool("search", "logline", env=env)
        assert code == 78 and code in akm.BROKEN_EXITS

    def test_unknown_command(self, info: akm.AkmInfo, tool: Akm) -> None:
        """An unknown command: exit 1 (0.7) or 2 (0.9), both the caller's mistake, not a broken akm."""
        code, _ = tool("frobnicate")
        assert code == (1 if info.line == "0.7" else 2) and code not in akm.BROKEN_EXITS


class TestEachCallItsEvents:
    def test_what_one_call_logs_is_what_the_cross_check_expects(self, info: akm.AkmInfo, tool: Akm) -> None:
        """Commands typed as an agent types them, each timed as opencode times its tool call: every
        event akm logs is accounted for by its own call (a padded query as akm trims it, a search,
        show and feedback one event each, 0.7's curate its search and the shows it picked), and no
        call accounts for an event of another (docs/akm.md, "akm's log, cross-checked")."""
        ref = tool.ref("skill:logline")
        commands = ["search '  logline   severity sev '", f"show {ref}", f"feedback {ref} --positive"]
        commands += ["curate 'logline event catalog'"] if info.line == "0.7" else []
        lines, per_command = [], []
        for command in commands:
            before = len(tool.events())
            start = time.time_ns() // 1_000_000
            code, _ = tool(*shlex.split(command))
            end = time.time_ns() // 1_000_000
            assert code == 0, command
            per_command.append([e["kind"] for e in tool.events()[before:]])
            state = {
                "status": "completed",
                "input": {"command": f"akm {command}"},
                "output": "",
                "metadata": {"exit": 0},
            }
            state["time"] = {"start": start, "end": end}
            lines.append(json.dumps({"type": "tool_use", "timestamp": end, "part": {"tool": "bash", "state": state}}))
        assert per_command[:3] == [["search"], ["show"], ["feedback"]]
        if info.line == "0.7":
            assert per_command[3][0] == "search" and set(per_command[3][1:]) == {"show"}, per_command[3]
        transcript = tool.cwd / "transcript.jsonl"
        transcript.write_text("\n".join(lines) + "\n")
        seen = Transcript()
        seen.read(transcript, read_transcript)
        matched, unconfirmed = cross_check(tool.events(), seen.calls)
        assert unconfirmed == [] and len(matched) == sum(map(len, per_command))
        assert [c["kind"] for _, c in matched[:3]] == ["search", "show", "feedback"]
        without_show = cross_check(tool.events(), [c for c in seen.calls if c["kind"] != "show"])
        assert [e["kind"] for e in without_show[1]] == ["show"]  # the feedback call does not stand for the show
