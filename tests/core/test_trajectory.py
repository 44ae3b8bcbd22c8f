"""Tests for pytest_akmbench.cell.trajectory on opencode event streams and akm's own event log.

``tests/data/transcripts/`` holds streams recorded from the real opencode 1.18.33 binary driven
by the scripted model on the akm arm of a small demo task, each with real akm's event log, for
akm 0.7.0 and 0.9.0 (``tests/data/record_transcripts.py`` regenerates them): ``oracle``,
``idle`` and ``wrong-asset`` (a search that misses the gold, a wrong asset shown, a refused
show, negative feedback).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_akmbench.agents.opencode.transcript import read_transcript
from pytest_akmbench.cell import akm, trajectory
from pytest_akmbench.cell.trajectory import failure_mode, liveness, ref_matches
from tests.core.test_metrics import make_task

DATA = Path(__file__).resolve().parents[1] / "data" / "transcripts"
GOLD = "skill:hello-file"
TASK = make_task("demo/hello-file", gold_ref=GOLD)
SID = "ses_test"
RECORDED = ("0.7.0", "0.9.0")


def analyse_cell(task: Any, transcript: Path | None, events: Any, summary: Any, **kw: Any) -> dict[str, Any]:
    """The trajectory of an opencode transcript (these tests' streams are opencode's events)."""
    return trajectory.analyse_cell(task, transcript, events, summary, reader=read_transcript, **kw)


def tool(
    tool_name: str,
    inputs: dict[str, Any],
    output: str = "",
    *,
    ts: int,
    status: str = "completed",
    exit: int | None = 0,
) -> dict[str, Any]:
    state: dict[str, Any] = {"status": status, "input": inputs, "output": output, "time": {"start": ts, "end": ts + 5}}
    if exit is not None:
        state["metadata"] = {"output": output, "exit": exit}
    return {
        "type": "tool_use",
        "timestamp": ts + 10,
        "sessionID": SID,
        "part": {"type": "tool", "tool": tool_name, "state": state},
    }


def bash(
    command: str, output: str = "(no output)", *, ts: int, status: str = "completed", exit: int | None = 0
) -> dict[str, Any]:
    return tool("bash", {"command": command, "description": "d"}, output, ts=ts, status=status, exit=exit)


def hits(*refs: str) -> str:
    """akm's JSON search output."""
    return json.dumps({"hits": [{"type": "skill", "name": r.split(":")[-1], "ref": r} for r in refs]}, indent=2)


def step(ts: int) -> dict[str, Any]:
    return {"type": "step_start", "timestamp": ts, "sessionID": SID, "part": {"type": "step-start"}}


def event(kind: str, ts: int, ref: str | None = None, **meta: Any) -> dict[str, Any]:
    """One akm event, normalised from akm 0.7's events-file shape."""
    raw: dict[str, Any] = {"schemaVersion": 1, "eventType": kind, "ts": ts, "metadata": meta}
    if ref is not None:
        raw["ref"] = ref
    normalised = akm.normalise_event(raw)
    assert normalised is not None
    return normalised


def write_stream(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def recorded_log(stem: Path, version: str) -> tuple[list[dict[str, Any]], int]:
    """A recorded run's akm log as the runner reads it (0.7's events file or 0.9's log), and when
    its agent started."""
    rec = json.loads(Path(f"{stem}.akm-log.json").read_text())
    if version.startswith("0.7"):
        events = [e for e in map(akm.normalise_event, json.loads(rec["log"])) if e is not None]
    else:
        events = akm.parse_log(rec["log"])
    assert events is not None
    return events, rec["agent_started_ms"]


def recorded(name: str, version: str) -> dict[str, Any]:
    """analyse_cell on a recorded transcript with its recorded akm log, read as the runner reads it."""
    stem = DATA / f"{name}-akm-{version}"
    events, started = recorded_log(stem, version)
    return analyse_cell(TASK, Path(f"{stem}.jsonl"), akm.since(events, started), None, agent_started_ms=started)


class TestHelpers:
    def test_ref_match_rule(self) -> None:
        """Equal, origin-prefixed or a sub-path of the gold ref, in either akm's ref syntax."""
        assert ref_matches("skill:x", "skill:x") and ref_matches("skills/x", "skill:x")
        assert ref_matches("local//skill:x", "skill:x") and ref_matches("stash//skills/x#usage", "skill:x")
        assert ref_matches("skill:x/SKILL.md", "skill:x") and ref_matches("knowledge:x.md", "knowledge/x")
        assert not ref_matches("skill:xy", "skill:x") and not ref_matches(None, "skill:x")
        assert not ref_matches("knowledge:x", "skill:x") and not ref_matches("x", "skill:x")


class TestHandWrittenStreams:
    """Streams in opencode's event shape, written for each rule."""

    def test_order_search_show_write_feedback(self, tmp_path: Path) -> None:
        """Without akm's log: actions in order, results and ranks from akm's JSON output."""
        stream = write_stream(
            tmp_path / "t.jsonl",
            [
                step(1000),
                bash("akm search 'hello file'", hits("knowledge:other", GOLD), ts=1200),
                bash("akm show skill:hello-file", "To greet, write hi.\n", ts=1500),
                tool("write", {"filePath": "/ws/out.txt", "content": "hi"}, "", ts=1700),
                bash("akm feedback skill:hello-file --positive", "{}", ts=1900),
            ],
        )
        t = analyse_cell(TASK, stream, None, None)
        assert [a["kind"] for a in t["actions"]] == ["search", "show", "write", "feedback"]
        assert t["actions"][0]["results"] == ["knowledge:other", GOLD] and t["gold_ranks"] == [2]
        assert t["correct_asset_loaded"] is True and t["assets_loaded"] == [GOLD]
        assert t["feedback_recorded"] is True and t["feedback_polarity"] == "positive"
        assert t["searched_before_acting"] is True and t["workspace_writes"] == 1
        assert t["time_to_first_search_ms"] == 200 and t["time_to_first_correct_asset_ms"] == 500
        assert t["asset_bytes_loaded"] == len("To greet, write hi.\n")
        assert t["irrelevant_assets_loaded"] == [] and t["akm_answered"] is True and t["akm_calls"] == 3
        assert t["actions"][0] == {
            "kind": "search",
            "t_ms": 1200,
            "ok": True,
            "query": "hello file",
            "results": ["knowledge:other", GOLD],
            "hit_count": 2,
            "gold_rank": 2,
        }
        assert t["searches_with_hits"] == 1 and t["akm_calls_failed"] == 0
        outputs = (hits("knowledge:other", GOLD), "To greet, write hi.\n", "{}")
        assert t["context_bytes_loaded"] == sum(len(o) for o in outputs)

    def test_akm_log_is_the_ground_truth(self, tmp_path: Path) -> None:
        """With akm's log, searches, results, shows and feedback come from what akm served."""
        stream = write_stream(
            tmp_path / "t.jsonl",
            [
                step(1000),
                bash("bash -c \"akm search 'hello file' && akm show skills/hello-file\"", "...", ts=1200),
                tool("write", {"filePath": "/ws/out.txt", "content": "hi"}, "", ts=1700),
            ],
        )
        events = [
            event("search", 1201, query="hello file", hitCount=2, resultRefs=["knowledge/other", "skills/hello-file"]),
            event("show", 1203, "skills/hello-file"),
        ]
        t = analyse_cell(TASK, stream, events, None, agent_started_ms=1000)
        assert t["search_count"] == 1 and t["gold_ranks"] == [2] and t["searches_with_hits"] == 1
        assert t["assets_loaded"] == ["skills/hello-file"] and t["correct_asset_loaded"] is True
        assert t["searched_before_acting"] is True and t["time_to_first_search_ms"] == 201
        assert t["akm_events"] is True and t["akm_calls"] == 2
        assert t["actions"][:2] == [
            {
                "kind": "search",
                "query": "hello file",
                "results": ["knowledge/other", "skills/hello-file"],
                "hit_count": 2,
                "gold_rank": 2,
                "t_ms": 1201,
                "ok": True,
            },
            {"kind": "show", "ref": "skills/hello-file", "t_ms": 1203, "ok": True, "bytes": None},
        ]

    def test_an_asset_shown_again_is_loaded_once(self, tmp_path: Path) -> None:
        """The gold skill shown three times, in both of akm's ref syntaxes, is one loaded asset; a
        part of it (its SKILL.md) and another asset are each one more."""
        stream = write_stream(
            tmp_path / "t.jsonl",
            [
                step(1000),
                bash("akm show skill:hello-file", "hi", ts=1100),
                bash("akm show skills/hello-file", "hi", ts=1200),
                bash("akm show skill:hello-file/SKILL.md", "hi", ts=1250),
                bash("akm show knowledge:other", "other", ts=1300),
                bash("akm show skill:hello-file", "hi", ts=1400),
            ],
        )
        t = analyse_cell(TASK, stream, None, None)
        assert t["show_count"] == 5
        assert t["assets_loaded"] == [GOLD, "skill:hello-file/SKILL.md", "knowledge:other"]
        assert t["irrelevant_assets_loaded"] == ["knowledge:other"] and t["warnings"] == []

    def test_show_sizes_and_feedback_counts_with_akms_log(self, tmp_path: Path) -> None:
        """akm logs the skill it served (`skills/hello-file`) while the agent asked for a file of it:
        the size the transcript shows still counts as loaded. Feedback is counted by polarity."""
        stream = write_stream(
            tmp_path / "t.jsonl",
            [
                step(1000),
                bash("akm show skill:hello-file/SKILL.md", "To greet, write hi.\n", ts=1100),
                bash("akm feedback skill:hello-file --positive", "{}", ts=1200),
                bash("akm feedback skill:hello-file --negative", "{}", ts=1300),
                bash("akm feedback skill:hello-file --positive", "{}", ts=1400),
            ],
        )
        events = [
            event("show", 1101, "skills/hello-file"),
            event("feedback", 1201, "skills/hello-file", signal="positive"),
            event("feedback", 1301, "skills/hello-file", signal="negative"),
            event("feedback", 1401, "skills/hello-file", signal="positive"),
        ]
        t = analyse_cell(TASK, stream, events, None, agent_started_ms=1000)
        assert t["asset_bytes_loaded"] == len("To greet, write hi.\n")
        assert (t["feedback_count"], t["positive_feedback_count"], t["negative_feedback_count"]) == (3, 2, 1)
        assert t["feedback_polarity"] == "mixed"
        assert t["actions"][1] == {
            "kind": "feedback",
            "ref": "skills/hello-file",
            "polarity": "positive",
            "t_ms": 1201,
            "ok": True,
        }

    def test_a_show_size_is_found_whichever_ref_is_the_longer(self, tmp_path: Path) -> None:
        """akm logged a file of the skill while the agent asked for the skill: its size still counts."""
        stream = write_stream(tmp_path / "t.jsonl", [step(1000), bash(f"akm show {GOLD}", "To greet.\n", ts=1100)])
        t = analyse_cell(TASK, stream, [event("show", 1101, "skills/hello-file/SKILL.md")], None, agent_started_ms=1000)
        assert t["asset_bytes_loaded"] == len("To greet.\n") and t["actions"][0]["bytes"] == len("To greet.\n")

    def test_calls_missing_from_akms_log_are_warned_about(self, tmp_path: Path) -> None:
        """Successful search, show and feedback calls the log lacks are counted in a warning; other
        akm commands and failed calls are not."""
        stream = write_stream(
            tmp_path / "t.jsonl",
            [
                step(1000),
                bash("akm search hello", hits(GOLD), ts=1100),
                bash("akm search 'hello file'", hits(GOLD), ts=1200),
                bash(f"akm show {GOLD}", "hi", ts=1300),
                bash("akm index", "{}", ts=1400),
                bash(f"akm feedback {GOLD} --positive", "{}", ts=1500, exit=2),
            ],
        )
        events = [event("search", 1101, query="hello", hitCount=1, resultRefs=[GOLD])]
        t = analyse_cell(TASK, stream, events, None, agent_started_ms=1000)
        assert t["warnings"] == ["2 akm call(s) the transcript shows succeeding are not in akm's log"]

    def test_a_transcript_that_cannot_be_read_is_warned_about(self) -> None:
        """A read error (here EIO) leaves the transcript unobserved with the system's reason."""
        t = analyse_cell(TASK, Path("/proc/self/mem"), None, None)
        assert t["source"] is None and t["warnings"] == ["transcript unreadable: [Errno 5] Input/output error"]

    def test_consecutive_writes_are_one_action(self, tmp_path: Path) -> None:
        """Writes with no akm call between them are one write action; a write after a call is another."""
        stream = write_stream(
            tmp_path / "t.jsonl",
            [
                step(1000),
                tool("write", {"filePath": "/ws/a.txt", "content": "a"}, "", ts=1100),
                tool("write", {"filePath": "/ws/b.txt", "content": "b"}, "", ts=1200),
                bash("akm search hello", hits(GOLD), ts=1300),
                tool("write", {"filePath": "/ws/c.txt", "content": "c"}, "", ts=1400),
            ],
        )
        t = analyse_cell(TASK, stream, None, None)
        assert [a["kind"] for a in t["actions"]] == ["write", "search", "write"] and t["workspace_writes"] == 3

    def test_actions_without_a_time_come_last(self, tmp_path: Path) -> None:
        """A call whose tool reported no time is put after the timed ones, not before."""
        untimed = bash("akm show skill:other", "x", ts=0)
        untimed.pop("timestamp")
        untimed["part"]["state"].pop("time")
        stream = write_stream(tmp_path / "t.jsonl", [untimed, bash("akm search hello", hits(GOLD), ts=1300)])
        t = analyse_cell(TASK, stream, None, None)
        assert [(a["kind"], a["t_ms"]) for a in t["actions"]] == [("search", 1300), ("show", None)]

    def test_failed_calls_are_actions_after_the_rest(self, tmp_path: Path) -> None:
        """A refused show is listed after the successful actions with its exit; a failed akm command
        that is not a search, show or feedback is not an action."""
        stream = write_stream(
            tmp_path / "t.jsonl",
            [
                step(1000),
                bash(f"akm show {GOLD}", '{"ok": false}', ts=1100, exit=1),
                bash("akm index", "{}", ts=1150, exit=1),
                bash("akm search hello", hits(GOLD), ts=1200),
            ],
        )
        t = analyse_cell(TASK, stream, None, None)
        assert t["actions"][1:] == [{"kind": "show", "t_ms": 1100, "ok": False, "exit": 1}]
        assert t["actions"][0]["kind"] == "search" and t["akm_calls_failed"] == 2

    def test_actions_are_capped_at_a_hundred(self, tmp_path: Path) -> None:
        """100 actions are all kept and not marked truncated; past 100, failed calls are not added,
        and a 101st action marks the list truncated."""
        searches = [bash(f"akm search q{i}", hits(), ts=1000 + i) for i in range(100)]
        refused = bash(f"akm show {GOLD}", "{}", ts=2000, exit=1)
        full = analyse_cell(TASK, write_stream(tmp_path / "a.jsonl", [*searches, refused]), None, None)
        assert len(full["actions"]) == 100 and full["actions_truncated"] is False
        assert all(a["ok"] for a in full["actions"])
        over = analyse_cell(
            TASK, write_stream(tmp_path / "b.jsonl", [*searches, bash("akm search x", ts=3000)]), None, None
        )
        assert len(over["actions"]) == 100 and over["actions_truncated"] is True

    def test_akms_log_answers_for_calls_whose_command_failed(self, tmp_path: Path) -> None:
        """`akm search q | grep zzz` fails on grep; akm's log shows the search was served: akm answered."""
        stream = write_stream(tmp_path / "t.jsonl", [step(1), bash("akm search q | grep zzz", "", ts=2, exit=127)])
        t = analyse_cell(TASK, stream, [event("search", 3, query="q", resultRefs=[])], None)
        assert t["akm_answered"] is True and t["akm_broken"] is None

    def test_a_search_at_the_moment_of_a_write_is_not_before_it(self, tmp_path: Path) -> None:
        """searched_before_acting needs a search strictly before the first write."""
        stream = write_stream(
            tmp_path / "t.jsonl",
            [
                step(900),
                tool("write", {"filePath": "/ws/a.txt", "content": "a"}, "", ts=995),  # ends at 1000
                bash("akm search hello", hits(GOLD), ts=1000),
            ],
        )
        assert analyse_cell(TASK, stream, None, None)["searched_before_acting"] is False

    def test_agent_start_anchor(self, tmp_path: Path) -> None:
        """With the agent's start time, time_to_first_search includes the start-up."""
        stream = write_stream(tmp_path / "t.jsonl", [step(5000), bash("akm search x", hits(), ts=5100)])
        assert analyse_cell(TASK, stream, None, None, agent_started_ms=1000)["time_to_first_search_ms"] == 4100

    def test_write_before_search(self, tmp_path: Path) -> None:
        """A workspace write before any search: searched_before_acting is False."""
        stream = write_stream(
            tmp_path / "t.jsonl",
            [
                step(1),
                bash("echo draft > out.txt", ts=2),
                bash("akm search hello", hits(GOLD), ts=30),
            ],
        )
        t = analyse_cell(TASK, stream, None, None)
        assert t["searched_before_acting"] is False and t["search_count"] == 1

    def test_search_writing_its_results_counts_as_searched_first(self, tmp_path: Path) -> None:
        """`akm search q > notes.txt`: the search runs before its output lands in the file."""
        stream = write_stream(tmp_path / "t.jsonl", [step(1), bash("akm search hello > notes.txt", ts=2)])
        events = [event("search", 3, query="hello", hitCount=1, resultRefs=[GOLD])]
        t = analyse_cell(TASK, stream, events, None)
        assert t["searched_before_acting"] is True and t["workspace_writes"] == 1

    def test_feedback_only_mention_is_not_loaded(self, tmp_path: Path) -> None:
        """Feedback on the gold ref without a show does not count as loading it (reference bug 10)."""
        stream = write_stream(tmp_path / "t.jsonl", [step(1), bash(f"akm feedback {GOLD} --negative", ts=2)])
        t = analyse_cell(TASK, stream, [event("feedback", 3, GOLD, signal="negative")], None)
        assert t["correct_asset_loaded"] is False and t["assets_loaded"] == []
        assert t["feedback_recorded"] is True and t["feedback_polarity"] == "negative"

    def test_refused_show_and_feedback_count_for_nothing(self, tmp_path: Path) -> None:
        """A show or feedback akm refused (non-zero exit, nothing in its log) is not loaded or recorded."""
        stream = write_stream(
            tmp_path / "t.jsonl",
            [
                step(1),
                bash(f"akm show {GOLD}", '{"ok": false, "code": "ASSET_NOT_FOUND"}', ts=2, exit=1),
                bash(f"akm feedback {GOLD} --positive", '{"ok": false}', ts=3, exit=2),
            ],
        )
        for events in ([], None):  # with akm's (empty) log, and from the transcript alone
            t = analyse_cell(TASK, stream, events, None)
            assert t["correct_asset_loaded"] is False and t["show_count"] == 0
            assert t["feedback_recorded"] is False and t["feedback_count"] == 0
            assert t["akm_calls"] == 2 and t["akm_calls_failed"] == 2 and t["akm_answered"] is False
            assert t["akm_broken"] is None  # the agent asked for what is not there: not a broken akm

    def test_failed_search_is_not_a_search_with_results(self, tmp_path: Path) -> None:
        """A search whose command failed has no results and shows no gold."""
        stream = write_stream(tmp_path / "t.jsonl", [step(1), bash("akm search hello", hits(GOLD), ts=2, exit=78)])
        t = analyse_cell(TASK, stream, None, None)
        assert t["search_count"] == 0 and t["gold_ranks"] == []
        assert t["akm_broken"] is not None and "exit 78" in t["akm_broken"]

    def test_search_with_unknown_results_is_not_a_miss(self, tmp_path: Path) -> None:
        """Two searches in one command that failed: each may have run, but their results are unknown,
        so they are searches without a gold rank, never searches that missed the gold. A failing run
        with only those is not labelled search_no_gold, and the search bridge sees no search."""
        from pytest_akmbench.report import akm_usage

        stream = write_stream(
            tmp_path / "t.jsonl",
            [
                step(1),
                bash("akm search hello; akm search 'hello file'", "...", ts=2, exit=1),
            ],
        )
        t = analyse_cell(TASK, stream, None, None)
        assert t["search_count"] == 2 and t["gold_ranks"] == []
        assert [a["results"] for a in t["actions"]] == [None, None]
        assert failure_mode({"arm": "akm", "outcome": "fail", "trajectory": t}, GOLD) == "unrelated_bug"
        bridge = akm_usage.search_bridge([{"task_id": TASK.id, "outcome": "fail", "trajectory": t}], {TASK.id: GOLD})
        assert bridge["runs_observed"] == 1 and bridge["searches_observed"] == 0 and bridge["gold_missing"] is None
        known = write_stream(tmp_path / "k.jsonl", [step(1), bash("akm search hello", hits("skill:other"), ts=2)])
        missed = analyse_cell(TASK, known, None, None)
        assert missed["gold_ranks"] == [None]
        assert failure_mode({"arm": "akm", "outcome": "fail", "trajectory": missed}, GOLD) == "search_no_gold"

    def test_time_before_the_agent_started_is_not_negative(self, tmp_path: Path) -> None:
        """A search and show stamped before the agent's start (a clock step) give no time, not a negative one."""
        stream = write_stream(
            tmp_path / "t.jsonl",
            [
                step(1000),
                bash("akm search hello", hits(GOLD), ts=1200),
                bash(f"akm show {GOLD}", "hi\n", ts=1500),
            ],
        )
        late = analyse_cell(TASK, stream, None, None, agent_started_ms=1300)
        assert late["time_to_first_search_ms"] is None and late["time_to_first_correct_asset_ms"] == 200
        on_time = analyse_cell(TASK, stream, None, None, agent_started_ms=1200)
        assert on_time["time_to_first_search_ms"] == 0 and on_time["time_to_first_correct_asset_ms"] == 300

    def test_errored_tool_call_is_not_loaded(self, tmp_path: Path) -> None:
        """A tool call that errored (e.g. permission rejected) loads nothing."""
        stream = write_stream(
            tmp_path / "t.jsonl", [step(1), bash(f"akm show {GOLD}", "rejected", ts=2, status="error", exit=None)]
        )
        assert analyse_cell(TASK, stream, None, None)["correct_asset_loaded"] is False

    def test_heredoc_and_echo_are_not_akm_calls(self, tmp_path: Path) -> None:
        """akm words written to a file or echoed are not calls; bash -c and $(...) calls are."""
        stream = write_stream(
            tmp_path / "t.jsonl",
            [
                step(1),
                bash("cat <<'EOF' > NOTES.md\nakm search q\nakm show skill:hello-file\nEOF", ts=20),
                bash('echo "line one\\nakm search q"', ts=30),
                bash(
                    "ref=$(akm search 'hello file' | head -1); bash -lc 'timeout 30 akm show skill:hello-file'",
                    "x",
                    ts=40,
                ),
            ],
        )
        t = analyse_cell(TASK, stream, None, None)
        assert t["akm_calls"] == 2 and t["search_count"] == 1 and t["correct_asset_loaded"] is True
        assert t["searched_before_acting"] is False  # NOTES.md was written first

    def test_irrelevant_assets(self, tmp_path: Path) -> None:
        """Shown refs that are neither gold nor expected transfer sources are irrelevant."""
        task = make_task("demo/x", gold_ref=GOLD, expected_transfer_from=("skill:related",))
        stream = write_stream(
            tmp_path / "t.jsonl",
            [
                step(1),
                bash("akm show skill:related && akm show skill:noise", "...", ts=2),
                bash(f"akm show {GOLD}", "...", ts=3),
            ],
        )
        t = analyse_cell(task, stream, None, None)
        assert t["assets_loaded"] == ["skill:related", "skill:noise", GOLD]
        assert t["irrelevant_assets_loaded"] == ["skill:noise"]

    def test_task_without_gold(self, tmp_path: Path) -> None:
        """No gold ref: correct_asset_loaded and irrelevant assets are not judged."""
        stream = write_stream(
            tmp_path / "t.jsonl",
            [step(1), bash("akm search a", hits("skill:a"), ts=2), bash("akm show skill:a", "...", ts=3)],
        )
        t = analyse_cell(make_task("demo/x"), stream, None, None)
        assert t["correct_asset_loaded"] is None and t["irrelevant_assets_loaded"] is None and t["gold_ranks"] == []

    def test_bad_and_huge_lines_are_skipped(self, tmp_path: Path) -> None:
        """Unparseable lines and lines over the cap are skipped, the rest still parsed."""
        path = tmp_path / "t.jsonl"
        with open(path, "w") as fh:
            fh.write("not json\n")
            fh.write(json.dumps({"type": "text", "part": {"text": "x" * (5 * 1024 * 1024)}}) + "\n")
            fh.write(json.dumps(bash("akm search hello", hits(GOLD), ts=9)) + "\n")
        assert analyse_cell(TASK, path, None, None)["gold_ranks"] == [1]

    def test_no_sources(self) -> None:
        """Nothing recorded: source None, counts 0, nothing judged as true."""
        t = analyse_cell(TASK, None, None, None)
        assert t["source"] is None and t["correct_asset_loaded"] is False and t["searched_before_acting"] is None
        assert t["akm_answered"] is None

    def test_agent_summary_fallback(self) -> None:
        """Without a transcript the adapter's akm summary is used; ordering-based fields stay None."""
        t = analyse_cell(TASK, None, None, {"searches": [{"query": "q"}], "shows": [GOLD], "feedback": []})
        assert t["source"] == "agent" and t["correct_asset_loaded"] is True and t["searched_before_acting"] is None

    def test_agent_summary_in_full(self) -> None:
        """Every search, show and feedback the adapter reports is an action of its kind, with what it
        says and no time; searches have unknown results (no rank); feedback that is not a dict is dropped."""
        summary = {
            "searches": [{"query": "hello file"}, "plain words"],
            "shows": ["skill:other", GOLD],
            "feedback": [{"ref": GOLD, "polarity": "negative"}, "junk"],
        }
        t = analyse_cell(TASK, None, None, summary)
        assert t["actions"] == [
            {
                "kind": "search",
                "query": "hello file",
                "results": None,
                "hit_count": None,
                "gold_rank": None,
                "t_ms": None,
                "ok": True,
            },
            {
                "kind": "search",
                "query": "plain words",
                "results": None,
                "hit_count": None,
                "gold_rank": None,
                "t_ms": None,
                "ok": True,
            },
            {"kind": "show", "ref": "skill:other", "t_ms": None, "ok": True},
            {"kind": "show", "ref": GOLD, "t_ms": None, "ok": True},
            {"kind": "feedback", "ref": GOLD, "polarity": "negative", "t_ms": None, "ok": True},
        ]
        assert (t["search_count"], t["show_count"], t["feedback_count"], t["negative_feedback_count"]) == (2, 2, 1, 1)
        assert t["gold_ranks"] == [] and t["assets_loaded"] == ["skill:other", GOLD]
        assert t["irrelevant_assets_loaded"] == ["skill:other"] and t["feedback_polarity"] == "negative"
        assert t["time_to_first_search_ms"] is None and t["workspace_writes"] is None and t["akm_calls"] is None
        assert t["akm_calls_failed"] is None and t["asset_bytes_loaded"] is None and t["context_bytes_loaded"] is None
        empty = analyse_cell(TASK, None, None, {"searches": None, "shows": [], "feedback": None})
        assert empty["source"] == "agent" and empty["actions"] == [] and empty["search_count"] == 0

    def test_events_without_a_transcript_are_not_credited(self) -> None:
        """Only akm's log, no transcript and no account from the adapter: nothing confirms the log,
        so the run is not observed (left out of the report's figures), its events are counted as
        unconfirmed and nothing is credited."""
        events = [event("search", 1, query="q", resultRefs=["skill:a", GOLD]), event("show", 2, GOLD)]
        t = analyse_cell(TASK, None, events, None)
        assert t["source"] is None and t["akm_events"] is True and t["unconfirmed_events"] == 2
        assert t["correct_asset_loaded"] is False and t["search_count"] == 0 and t["akm_answered"] is None
        assert t["warnings"] == [
            "no transcript: the 2 akm event(s) in akm's log cannot be checked against the agent's akm calls "
            "(akm log unconfirmed); none credited, and the trajectory is not observed"
        ]
        empty = analyse_cell(TASK, None, [], None)
        assert empty["source"] is None and empty["unconfirmed_events"] == 0 and empty["warnings"] == []

    def test_without_a_transcript_the_adapters_account_confirms_the_log(self) -> None:
        """No transcript, but the adapter reports the akm calls it saw: akm's events are checked
        against those (no times) and searches get their result refs from akm's log."""
        events = [
            event("search", 1, query="q", resultRefs=["skill:a", GOLD]),
            event("show", 2, "skills/hello-file"),
            event("feedback", 3, GOLD, signal="positive"),
        ]
        summary = {"searches": [{"query": "q"}], "shows": [GOLD], "feedback": []}
        t = analyse_cell(TASK, None, events, summary)
        assert t["source"] == "akm_events" and t["gold_ranks"] == [2] and t["correct_asset_loaded"] is True
        assert t["feedback_recorded"] is False and t["unconfirmed_events"] == 1 and t["akm_answered"] is True
        assert t["warnings"] == [
            "1 akm event(s) in akm's log match no akm call in the agent's own account of its calls "
            f"(akm log tampered or unconfirmed): feedback {GOLD} positive; none credited"
        ]

    def test_an_unreadable_log_has_nothing_to_confirm(self, tmp_path: Path) -> None:
        """akm's log not read (None): the transcript's calls count as before, unconfirmed is unknown."""
        stream = write_stream(tmp_path / "t.jsonl", [step(1), bash(f"akm show {GOLD}", "hi", ts=2)])
        t = analyse_cell(TASK, stream, None, None)
        assert t["unconfirmed_events"] is None and t["correct_asset_loaded"] is True and t["warnings"] == []


class TestCrossCheck:
    """akm's log lies where the agent can write: an event counts only when an akm call in the
    transcript accounts for it (pytest_akmbench/cell/akm_evidence.py)."""

    FORGED = (
        event("search", 1500, query="hello file", hitCount=1, resultRefs=[GOLD]),
        event("show", 1510, GOLD),
        event("feedback", 1520, GOLD, signal="positive"),
    )

    def test_forged_events_without_any_call_get_no_credit(self, tmp_path: Path) -> None:
        """The agent wrote the file and appended a search, a show and feedback to akm's log without
        calling akm: nothing is credited, all three are unconfirmed and named in a warning."""
        stream = write_stream(
            tmp_path / "t.jsonl",
            [step(1000), bash("echo hello > out.txt; printf '...' >> ~/.cache/akm/events.jsonl", ts=1400)],
        )
        t = analyse_cell(TASK, stream, list(self.FORGED), None, agent_started_ms=1000)
        assert t["unconfirmed_events"] == 3 and t["akm_events"] is True and t["akm_calls"] == 0
        assert t["correct_asset_loaded"] is False and t["feedback_recorded"] is False
        assert t["searched_before_acting"] is False and t["akm_answered"] is None
        assert (t["search_count"], t["show_count"], t["feedback_count"]) == (0, 0, 0)
        assert t["assets_loaded"] == [] and t["gold_ranks"] == [] and t["time_to_first_search_ms"] is None
        assert [a["kind"] for a in t["actions"]] == ["write"]
        assert t["warnings"] == [
            "3 akm event(s) in akm's log match no akm call in the transcript (akm log tampered or unconfirmed): "
            f"search 'hello file', show {GOLD}, feedback {GOLD} positive; none credited"
        ]
        assert failure_mode({"arm": "akm", "outcome": "fail", "trajectory": t}, GOLD) == "no_search"

    def test_events_matching_calls_are_all_confirmed(self, tmp_path: Path) -> None:
        """One search, show and feedback call each, each logged once within its tool call: all credited."""
        stream = write_stream(
            tmp_path / "t.jsonl",
            [
                step(1000),
                bash("akm search 'hello file'", hits(GOLD), ts=1490),
                bash(f"akm show {GOLD}", "hi", ts=1505),
                bash(f"akm feedback {GOLD} --positive", "{}", ts=1515),
            ],
        )
        t = analyse_cell(TASK, stream, list(self.FORGED), None, agent_started_ms=1000)
        assert t["unconfirmed_events"] == 0 and t["warnings"] == []
        assert t["correct_asset_loaded"] is True and t["feedback_polarity"] == "positive"
        assert t["searched_before_acting"] is True and t["akm_answered"] is True

    def test_one_real_call_confirms_one_event(self, tmp_path: Path) -> None:
        """A real search, then forged copies: the search is credited once; a second search of the same
        query, a show and feedback in the same tool call are not."""
        stream = write_stream(
            tmp_path / "t.jsonl",
            [step(1000), bash("akm search 'hello file'; echo hello > out.txt", hits(GOLD), ts=1490)],
        )
        events = [self.FORGED[0], event("search", 1501, query="hello file", resultRefs=[GOLD]), *self.FORGED[1:]]
        t = analyse_cell(TASK, stream, events, None, agent_started_ms=1000)
        assert t["search_count"] == 1 and t["unconfirmed_events"] == 3 and t["akm_answered"] is True
        assert t["correct_asset_loaded"] is False and t["feedback_recorded"] is False
        assert t["warnings"][0].startswith("3 akm event(s) in akm's log match no akm call in the transcript")

    def test_a_show_or_feedback_of_another_asset_confirms_nothing(self, tmp_path: Path) -> None:
        """A show of another asset does not stand for a show of the gold one; feedback of the other
        polarity does not stand for this one."""
        stream = write_stream(
            tmp_path / "t.jsonl",
            [
                step(1000),
                bash("akm search 'hello file'", hits(GOLD), ts=1490),
                bash("akm show knowledge:hello-file", "x", ts=1505),
                bash(f"akm feedback {GOLD} --negative", "{}", ts=1515),
            ],
        )
        t = analyse_cell(TASK, stream, list(self.FORGED), None, agent_started_ms=1000)
        assert t["search_count"] == 1 and t["unconfirmed_events"] == 2
        assert t["correct_asset_loaded"] is False and t["feedback_recorded"] is False
        assert t["warnings"] == [
            "2 akm event(s) in akm's log match no akm call in the transcript (akm log tampered or unconfirmed): "
            f"show {GOLD}, feedback {GOLD} positive; none credited",
            "2 akm call(s) the transcript shows succeeding are not in akm's log",
        ]

    @pytest.mark.parametrize(
        ("said", "logged"),
        [
            ("skill:hello-file", "skills/hello-file"),
            ("skills/hello-file", "skill:hello-file"),
            ("stash//skills/hello-file#usage", "skills/hello-file"),
            ("skill:hello-file/SKILL.md", "skills/hello-file"),
            ("skills/hello-file", "stash//skills/hello-file"),
            ('"$REF"', "skills/hello-file"),
        ],
    )
    def test_either_ref_syntax_confirms(self, tmp_path: Path, said: str, logged: str) -> None:
        """A show and a feedback call name the asset akm logged in either syntax, with an origin or
        fragment, a part of it, or a variable the transcript does not resolve."""
        stream = write_stream(
            tmp_path / "t.jsonl",
            [
                step(1000),
                bash(f"akm show {said}", "hi", ts=1100),
                bash(f"akm feedback {said} --positive", "{}", ts=1200),
            ],
        )
        events = [event("show", 1101, logged), event("feedback", 1201, logged, signal="positive")]
        t = analyse_cell(TASK, stream, events, None, agent_started_ms=1000)
        assert t["unconfirmed_events"] == 0 and t["correct_asset_loaded"] is True and t["feedback_recorded"] is True

    @pytest.mark.parametrize(
        ("command", "logged", "confirmed"),
        [
            ('akm search "greeting hello file"', "greeting hello file", True),
            ("akm search '  Greeting   Hello file '", "Greeting   Hello file", True),
            ("akm search greeting hello file", "greeting", True),
            ("akm search greeting hello file", "greeting hello file", False),
            ('akm search "greeting hello"', "greeting hello file", False),
            ('akm search --limit 5 "greeting"', "greeting", True),
            ('akm search "$KEYWORDS"', "greeting hello file", True),
            ("akm search", "", True),
            ("akm curate 'greeting file'", "greeting file", True),
            ("akm curate 'greeting file'", "file", True),
            ("akm wiki search notes 'greeting file'", "greeting file", True),
            ("akm show greeting", "greeting", False),
        ],
    )
    def test_a_search_needs_a_search_call_of_its_query(
        self, tmp_path: Path, command: str, logged: str, confirmed: bool
    ) -> None:
        """A search event is confirmed by a search of the query akm received: quoted multi-word
        keywords whole, unquoted only the first word (akm's trim and case aside); a word the shell
        expands stands for any query; akm 0.7's curate and wiki search search too."""
        stream = write_stream(tmp_path / "t.jsonl", [step(1000), bash(command, hits(GOLD), ts=1100)])
        events = [event("search", 1101, query=logged, hitCount=1, resultRefs=[GOLD])]
        t = analyse_cell(TASK, stream, events, None, agent_started_ms=1000)
        assert t["unconfirmed_events"] == (0 if confirmed else 1)
        assert t["search_count"] == (1 if confirmed else 0)

    def test_curate_confirms_its_search_and_the_shows_of_what_it_found(self, tmp_path: Path) -> None:
        """akm 0.7's `akm curate Q` logs a search of Q and a show of each asset it picked: those
        count, once each; a show of an asset its search did not find does not."""
        stream = write_stream(tmp_path / "t.jsonl", [step(1000), bash("akm curate 'hello file'", "{}", ts=1100)])
        events = [
            event("search", 1101, query="hello file", hitCount=2, resultRefs=[GOLD, "knowledge:other"]),
            event("show", 1102, GOLD),
            event("show", 1103, "knowledge:other"),
            event("show", 1104, GOLD),
            event("show", 1105, "knowledge:unfound"),
        ]
        t = analyse_cell(TASK, stream, events, None, agent_started_ms=1000)
        assert t["search_count"] == 1 and t["show_count"] == 2 and t["correct_asset_loaded"] is True
        assert t["unconfirmed_events"] == 2 and f"show {GOLD}, show knowledge:unfound" in t["warnings"][0]

    def test_an_event_stamped_outside_its_call_is_not_its_call(self, tmp_path: Path) -> None:
        """A search event back-dated to before the first write (the real search came after it) is not
        the search call's: searched_before_acting stays False."""
        stream = write_stream(
            tmp_path / "t.jsonl",
            [
                step(1000),
                tool("write", {"filePath": "/ws/out.txt", "content": "hi"}, "", ts=1100),
                bash("akm search hello", hits(GOLD), ts=9000),
            ],
        )
        forged = analyse_cell(TASK, stream, [event("search", 1050, query="hello")], None, agent_started_ms=1000)
        assert forged["unconfirmed_events"] == 1 and forged["search_count"] == 0
        assert forged["searched_before_acting"] is False
        honest = analyse_cell(TASK, stream, [event("search", 9002, query="hello")], None, agent_started_ms=1000)
        assert honest["unconfirmed_events"] == 0 and honest["search_count"] == 1
        assert honest["searched_before_acting"] is False
        # the slack: an event within 2 s of its tool call's start or end is still the call's
        late = analyse_cell(TASK, stream, [event("search", 9005 + 2000, query="hello")], None)
        early = analyse_cell(TASK, stream, [event("search", 9000 - 2000, query="hello")], None)
        too_late = analyse_cell(TASK, stream, [event("search", 9005 + 2001, query="hello")], None)
        assert (late["unconfirmed_events"], early["unconfirmed_events"], too_late["unconfirmed_events"]) == (0, 0, 1)

    def test_calls_are_matched_in_order_exact_before_unknown(self, tmp_path: Path) -> None:
        """Two shows in one command, one of a variable: the gold show is matched by the exact call,
        the other event by the variable."""
        stream = write_stream(
            tmp_path / "t.jsonl", [step(1000), bash(f'akm show "$X"; akm show {GOLD}', "...", ts=1100)]
        )
        events = [event("show", 1101, GOLD), event("show", 1102, "knowledge:other")]
        t = analyse_cell(TASK, stream, events, None)
        assert t["unconfirmed_events"] == 0 and t["assets_loaded"] == [GOLD, "knowledge:other"]


class TestLiveness:
    def test_rules(self) -> None:
        """Answered when akm logged anything or a call succeeded; broken only for exits a broken akm gives."""
        ok = {"kind": "search", "ok": True, "exit": 0}
        missing = {"kind": "show", "ok": False, "exit": 1}
        dead = {"kind": "search", "ok": False, "exit": 127}
        assert liveness([], None) == (None, None)
        assert liveness([dead], [{"kind": "search"}]) == (True, None)
        assert liveness([ok, dead], None) == (True, None)
        assert liveness([missing], None) == (False, None)
        answered, why = liveness([missing, dead], None)
        assert answered is False and why is not None and "2 akm call(s)" in why and "exit 127" in why
        assert liveness([{"kind": "search", "ok": None, "exit": None}], None) == (None, None)

    @pytest.mark.parametrize(("code", "broken"), [(-9, True), (129, True), (128, False), (0, False), (2, False)])
    def test_exits_of_a_broken_akm(self, code: int, broken: bool) -> None:
        """A signal (negative, or above 128) is a broken akm; 128 and below are not, nor a call stopped
        with exit 0 (a tool error)."""
        answered, why = liveness([{"kind": "search", "ok": False, "exit": code}], None)
        assert answered is False and (why == f"akm never answered: 1 akm call(s), all failed (exit {code})") is broken
        assert (why is None) is not broken


class TestRecordedTranscripts:
    """Streams recorded from the real opencode binary, with real akm's log."""

    @pytest.mark.parametrize("version", RECORDED)
    def test_oracle(self, version: str) -> None:
        """search (gold ranked), show gold, write via the solution heredoc, positive feedback."""
        t = recorded("oracle", version)
        assert [a["kind"] for a in t["actions"]] == ["search", "show", "write", "feedback"]
        assert t["gold_ranks"] == [1] and t["correct_asset_loaded"] is True and t["akm_events"] is True
        assert t["feedback_polarity"] == "positive" and t["searched_before_acting"] is True
        assert t["akm_calls"] == 3 and t["akm_calls_failed"] == 0 and t["akm_answered"] is True
        assert 0 < t["time_to_first_search_ms"] < t["time_to_first_correct_asset_ms"]
        assert t["warnings"] == [] and t["unconfirmed_events"] == 0

    @pytest.mark.parametrize("version", RECORDED)
    def test_idle(self, version: str) -> None:
        """No tool calls at all."""
        t = recorded("idle", version)
        assert t["source"] == "transcript" and t["search_count"] == 0 and t["assets_loaded"] == []
        assert t["searched_before_acting"] is False and t["workspace_writes"] == 0 and t["akm_answered"] is None
        assert failure_mode({"arm": "akm", "outcome": "fail", "trajectory": t}, GOLD) == "no_search"

    @pytest.mark.parametrize("version", RECORDED)
    def test_wrong_asset(self, version: str) -> None:
        """Search misses the gold, a wrong asset is shown, a show is refused, negative feedback."""
        t = recorded("wrong-asset", version)
        wrong = akm.format_ref("knowledge:file-formats", version[:3])
        assert t["gold_ranks"] == [None] and t["assets_loaded"] == [wrong]
        assert t["irrelevant_assets_loaded"] == [wrong] and t["correct_asset_loaded"] is False
        assert t["feedback_polarity"] == "negative" and t["akm_calls"] == 4 and t["akm_calls_failed"] == 1
        assert t["akm_answered"] is True and t["akm_broken"] is None
        assert t["unconfirmed_events"] == 0 and t["warnings"] == []
        assert failure_mode({"arm": "akm", "outcome": "fail", "trajectory": t}, GOLD) == "search_no_gold"


class TestFailureMode:
    """The taxonomy, rule by rule."""

    @staticmethod
    def mode(t: dict[str, Any], outcome: str = "fail", gold: str | None = GOLD, **kw: Any) -> str | None:
        return failure_mode({"arm": "akm", "outcome": outcome, "trajectory": t, **kw}, gold)

    def test_rules(self) -> None:
        """Each label from the trajectory that produces it."""
        from tests.core.test_metrics import traj

        gold_then_write = traj(searches=[1], shown=[GOLD], gold=GOLD)
        gold_then_write["actions"].append({"kind": "write", "tool": "bash"})
        assert self.mode(gold_then_write) == "followed_wrong"
        assert self.mode(traj(searches=[1], shown=[GOLD], gold=GOLD)) == "loaded_ignored"
        assert self.mode(traj(searches=[], gold=GOLD)) == "no_search"
        assert self.mode(traj(searches=[None, None], gold=GOLD)) == "search_no_gold"
        assert self.mode(traj(searches=[8], gold=GOLD)) == "search_low_rank"
        assert self.mode(traj(searches=[3], shown=["skill:other"], gold=GOLD)) == "loaded_wrong"
        assert self.mode(traj(searches=[3], gold=GOLD)) == "unrelated_bug"
        assert self.mode(traj(searches=[3], gold=None), gold=None) == "unrelated_bug"

    def test_low_rank_starts_after_five(self) -> None:
        """A gold found at rank 5 at best is not a low rank (the reference's cut: above 5 is low)."""
        from tests.core.test_metrics import traj

        assert self.mode(traj(searches=[5], gold=GOLD)) == "unrelated_bug"
        assert self.mode(traj(searches=[9, 5, None], gold=GOLD)) == "unrelated_bug"
        assert self.mode(traj(searches=[6], gold=GOLD)) == "search_low_rank"
        assert self.mode(traj(searches=[None, 6], gold=GOLD)) == "search_low_rank"

    def test_which_show_starts_following(self) -> None:
        """followed_wrong needs a write after the first successful show of the gold asset: not after
        feedback on it, another asset's show, or a write just before the show."""
        from tests.core.test_metrics import traj

        def with_actions(*actions: dict[str, Any]) -> dict[str, Any]:
            t = traj(searches=[1], shown=[GOLD], gold=GOLD)
            t["actions"] = [{"kind": "search", "results": [GOLD], "gold_rank": 1, "ok": True}, *actions]
            return t

        write = {"kind": "write", "tool": "write", "ok": True}
        gold_show = {"kind": "show", "ref": GOLD, "ok": True}
        feedback = {"kind": "feedback", "ref": GOLD, "polarity": "negative", "ok": True}
        other_show = {"kind": "show", "ref": "skill:other", "ok": True}
        assert self.mode(with_actions(feedback, write, gold_show)) == "loaded_ignored"
        assert self.mode(with_actions(other_show, write, gold_show)) == "loaded_ignored"
        assert self.mode(with_actions(write, gold_show)) == "loaded_ignored"
        assert self.mode(with_actions(gold_show, write)) == "followed_wrong"

    def test_gold_shown_past_the_action_cap(self, tmp_path: Path) -> None:
        """The gold asset was loaded but its show is past the 100 kept actions: loaded_ignored."""
        searches = [bash(f"akm search q{i}", hits(), ts=1000 + i) for i in range(100)]
        stream = write_stream(tmp_path / "t.jsonl", [*searches, bash(f"akm show {GOLD}", "hi", ts=2000)])
        t = analyse_cell(TASK, stream, None, None)
        assert t["correct_asset_loaded"] is True and t["actions_truncated"] is True
        assert self.mode(t) == "loaded_ignored"

    def test_budget_and_not_classified(self) -> None:
        """Budget endings take their tag; passes, harness errors, other arms and no trajectory get None."""
        assert failure_mode({"arm": "akm", "outcome": "budget_exceeded", "budget_tag": "hung"}, GOLD) == "hung"
        assert failure_mode({"arm": "akm", "outcome": "budget_exceeded", "budget_tag": "confused"}, GOLD) == "confused"
        assert failure_mode({"arm": "akm", "outcome": "budget_exceeded"}, GOLD) == "budget_exceeded"
        assert failure_mode({"arm": "akm", "outcome": "pass", "trajectory": {"source": "transcript"}}, GOLD) is None
        assert failure_mode({"arm": "akm", "outcome": "harness_error"}, GOLD) is None
        assert failure_mode({"arm": "noakm", "outcome": "fail"}, GOLD) is None
        assert failure_mode({"arm": "akm", "outcome": "fail"}, GOLD) is None


class TestIntoTheReport:
    def test_recorded_trajectories_feed_the_envelope(self) -> None:
        """analyse_cell output on recorded streams drives trajectory, bridge, per-asset and failure modes."""
        from pytest_akmbench.report import envelope as report
        from tests.core.test_metrics import sample
        from tests.core.test_report import TS, inp

        samples = []
        for seed, (name, outcome) in enumerate((("oracle", "pass"), ("idle", "fail"), ("wrong-asset", "fail")), 1):
            samples.append(sample(TASK.id, "akm", seed, outcome, trajectory=recorded(name, "0.7.0")))
        env = report.build(inp([TASK], samples, arms=("akm",)), timestamp=TS)
        assert env["trajectory"]["akm"]["correct_asset_loaded"] == pytest.approx(1 / 3)
        assert env["trajectory"]["akm"]["counts"]["feedback_negative"] == 1
        assert env["failure_modes"]["by_label"] == {"no_search": 1, "search_no_gold": 1}
        assert env["searchBridge"]["gold_rank_distribution"]["1"] == 1 and env["searchBridge"]["searches_observed"] == 2
        assert [r["asset_ref"] for r in env["perAsset"]["rows"]] == [GOLD, "knowledge:file-formats"]

    def test_runs_where_akm_never_answered_are_flagged(self, tmp_path: Path) -> None:
        """A run whose akm calls all failed is marked in runs[] and warned about in the envelope."""
        from pytest_akmbench.report import envelope as report
        from tests.core.test_metrics import sample
        from tests.core.test_report import TS, inp

        stream = write_stream(tmp_path / "t.jsonl", [step(1), bash(f"akm show {GOLD}", "{}", ts=2, exit=1)])
        dead = analyse_cell(TASK, stream, [], None)
        live = recorded("oracle", "0.9.0")
        env = report.build(
            inp(
                [TASK],
                [
                    sample(TASK.id, "akm", 1, "fail", trajectory=dead),
                    sample(TASK.id, "akm", 2, "pass", trajectory=live),
                ],
                arms=("akm",),
            ),
            timestamp=TS,
        )
        assert [r["trajectory"]["akm_answered"] for r in env["runs"]] == [False, True]
        assert any(w.startswith("akm never answered in 1 of 2 akm-arm runs") for w in env["warnings"])

    def test_a_forged_akm_log_is_named_in_the_report(self, tmp_path: Path) -> None:
        """A run whose akm log holds events no call accounts for: its row carries the count, the
        trajectory block counts and names it, and the warnings, summary and page say so; an honest
        run beside it is not named."""
        from pytest_akmbench.report import envelope as report
        from pytest_akmbench.report.render.html import render
        from pytest_akmbench.report.render.markdown import render_markdown
        from tests.core.test_metrics import sample
        from tests.core.test_report import TS, inp

        stream = write_stream(tmp_path / "t.jsonl", [step(1000), bash("echo hello > out.txt", ts=1400)])
        forged = analyse_cell(TASK, stream, list(TestCrossCheck.FORGED), None, agent_started_ms=1000)
        env = report.build(
            inp(
                [TASK],
                [
                    sample(TASK.id, "akm", 1, "pass", trajectory=forged),
                    sample(TASK.id, "akm", 2, "pass", trajectory=recorded("oracle", "0.7.0")),
                ],
                arms=("akm",),
            ),
            timestamp=TS,
        )
        akm_block = env["trajectory"]["akm"]
        assert akm_block["unconfirmed_cells"] == [
            {"task_id": TASK.id, "seed": 1, "outcome": "pass", "unconfirmed_events": 3}
        ]
        assert (akm_block["counts"]["unconfirmed_runs"], akm_block["counts"]["unconfirmed_events"]) == (1, 3)
        assert akm_block["correct_asset_loaded"] == 0.5 and akm_block["feedback_recorded"] == 0.5
        assert [r["trajectory"]["unconfirmed_events"] for r in env["runs"]] == [3, 0]
        assert [r["trajectory"]["correct_asset_loaded"] for r in env["runs"]] == [False, True]
        line = (
            f"akm log tampered or unconfirmed in 1 of 2 akm-arm runs: {TASK.id} s1 (3 events); their akm log "
            "holds events no akm call of the agent accounts for, and those events got no credit"
        )
        assert line + " (see trajectory.akm.unconfirmed_cells and docs/akm.md)." in env["warnings"]
        summary = render_markdown(env)
        assert f"**{line}**" in summary.split("## Trajectory (akm)", 1)[1].split("\n## ", 1)[0]
        page = render(env)
        assert f'<p class="bad" id="akm-unconfirmed" data-runs="1" data-events="3">{line}</p>' in page

    def test_analysis_never_raises(self) -> None:
        """A malformed adapter summary gives an unobserved trajectory with a warning, not an exception."""
        t = analyse_cell(TASK, None, None, {"searches": 5})
        assert t["source"] is None and t["warnings"][0].startswith("trajectory analysis failed: TypeError")
