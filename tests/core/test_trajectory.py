"""Tests for pytest_akmbench.trajectory on opencode event streams.

``tests/data/transcripts/`` holds streams recorded from the real opencode 1.18.33 binary
driven by the scripted model (policy ``oracle`` on the akm arm; ``idle``; and an oracle run
with a scripted plan that loads the wrong asset), each with the akm test double's events file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_akmbench.trajectory import (
    analyse_cell,
    bash_writes_workspace,
    failure_mode,
    parse_search_results,
    ref_matches,
)
from tests.core.test_metrics import make_task

DATA = Path(__file__).resolve().parents[1] / "data" / "transcripts"
GOLD = "skill:hello-file"
TASK = make_task("demo/hello-file", gold_ref=GOLD)
SID = "ses_test"


def tool(tool_name: str, inputs: dict[str, Any], output: str = "", *, ts: int, status: str = "completed") -> dict[str, Any]:
    state: dict[str, Any] = {"status": status, "input": inputs, "output": output, "time": {"start": ts, "end": ts + 5}}
    return {"type": "tool_use", "timestamp": ts + 10, "sessionID": SID, "part": {"type": "tool", "tool": tool_name, "state": state}}


def bash(command: str, output: str = "(no output)", *, ts: int, status: str = "completed") -> dict[str, Any]:
    return tool("bash", {"command": command, "description": "d"}, output, ts=ts, status=status)


def step(ts: int) -> dict[str, Any]:
    return {"type": "step_start", "timestamp": ts, "sessionID": SID, "part": {"type": "step-start"}}


def write_stream(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


class TestHelpers:
    def test_ref_match_rule(self) -> None:
        """Equal, origin-prefixed, or a sub-path of the gold ref."""
        assert ref_matches("skill:x", "skill:x")
        assert ref_matches("local//skill:x", "skill:x")
        assert ref_matches("skill:x/SKILL.md", "skill:x")
        assert not ref_matches("skill:xy", "skill:x") and not ref_matches(None, "skill:x")

    def test_search_results_formats(self) -> None:
        """Numbered text output, JSON refs and ref: lines all give refs in rank order."""
        assert parse_search_results("1. skill:a  (score 3)\n2. knowledge:b  (score 1)\n") == ["skill:a", "knowledge:b"]
        assert parse_search_results('{"results":[{"ref":"skill:a"},{"ref":"skill:b"}]}') == ["skill:a", "skill:b"]
        assert parse_search_results("ref: skill:a\nscore: 1\nref: skill:c\n") == ["skill:a", "skill:c"]
        assert parse_search_results("no results\n") == []
        assert len(parse_search_results("".join(f"{i}. skill:s{i}\n" for i in range(1, 20)))) == 10

    @pytest.mark.parametrize(
        ("command", "writes"),
        [
            ("echo hi > out.txt", True),
            ("printf x >>log.txt", True),
            ("cat <<'EOF' > cfg.yaml\na: 1\nEOF", True),
            ("sed -i 's/a/b/' f.txt", True),
            ("mkdir -p build && touch build/x", True),
            ("bash <<'EOF'\nset -eu\necho hi > out.txt\nEOF", True),
            ("cat README.md", False),
            ("ls -la 2>&1", False),
            ("akm search 'x' > /dev/null 2>&1", False),
            ("grep -r foo . > /tmp/found.txt", False),
            ("python -c 'print(1)'", False),
        ],
    )
    def test_bash_write_detection(self, command: str, writes: bool) -> None:
        """Redirections and file-changing commands count; reads, /dev and /tmp targets do not."""
        assert bash_writes_workspace(command) is writes


class TestHandWrittenStreams:
    """Streams in the exact opencode.md §4 shape, written for each rule."""

    def test_order_search_show_write_feedback(self, tmp_path: Path) -> None:
        """Actions come out in order with results, ranks, polarity and times from the first step."""
        stream = write_stream(tmp_path / "t.jsonl", [
            step(1000),
            bash("akm search 'hello file'", "1. knowledge:other  (score 4)\n2. skill:hello-file  (score 2)\n", ts=1200),
            bash("akm show skill:hello-file", "To greet, write hi.\n", ts=1500),
            tool("write", {"filePath": "/ws/out.txt", "content": "hi"}, "", ts=1700),
            bash("akm feedback skill:hello-file --positive", "feedback recorded\n", ts=1900),
        ])
        t = analyse_cell(TASK, stream, None, None)
        assert [a["kind"] for a in t["actions"]] == ["search", "show", "write", "feedback"]
        assert t["actions"][0]["results"] == ["knowledge:other", GOLD] and t["gold_ranks"] == [2]
        assert t["correct_asset_loaded"] is True and t["assets_loaded"] == [GOLD]
        assert t["feedback_recorded"] is True and t["feedback_polarity"] == "positive"
        assert t["searched_before_acting"] is True and t["workspace_writes"] == 1
        assert t["time_to_first_search_ms"] == 200 and t["time_to_first_correct_asset_ms"] == 500
        assert t["asset_bytes_loaded"] == len("To greet, write hi.\n")
        assert t["irrelevant_assets_loaded"] == []

    def test_agent_start_anchor(self, tmp_path: Path) -> None:
        """With the agent's start time, time_to_first_search includes the start-up."""
        stream = write_stream(tmp_path / "t.jsonl", [step(5000), bash("akm search x", "no results\n", ts=5100)])
        assert analyse_cell(TASK, stream, None, None, agent_started_ms=1000)["time_to_first_search_ms"] == 4100

    def test_write_before_search(self, tmp_path: Path) -> None:
        """A workspace write before any search: searched_before_acting is False."""
        stream = write_stream(tmp_path / "t.jsonl", [
            step(1), bash("echo draft > out.txt", ts=2), bash("akm search hello", "1. skill:hello-file\n", ts=3),
        ])
        t = analyse_cell(TASK, stream, None, None)
        assert t["searched_before_acting"] is False and t["search_count"] == 1

    def test_feedback_only_mention_is_not_loaded(self, tmp_path: Path) -> None:
        """Feedback on the gold ref without a show does not count as loading it (reference bug 10)."""
        stream = write_stream(tmp_path / "t.jsonl", [step(1), bash(f"akm feedback {GOLD} --negative", ts=2)])
        events = tmp_path / "events.jsonl"
        events.write_text(json.dumps({"eventType": "feedback", "ref": GOLD, "metadata": {"signal": "negative"}}) + "\n")
        t = analyse_cell(TASK, stream, events, None)
        assert t["correct_asset_loaded"] is False and t["assets_loaded"] == []
        assert t["feedback_recorded"] is True and t["feedback_polarity"] == "negative"

    def test_failed_show_is_not_loaded(self, tmp_path: Path) -> None:
        """A show akm did not serve (no show event) is not a loaded asset."""
        stream = write_stream(tmp_path / "t.jsonl", [step(1), bash(f"akm show {GOLD}", "akm: asset not found\n", ts=2)])
        events = tmp_path / "events.jsonl"
        events.write_text("")
        t = analyse_cell(TASK, stream, events, None)
        assert t["correct_asset_loaded"] is False and t["show_count"] == 0

    def test_errored_tool_call_is_not_loaded(self, tmp_path: Path) -> None:
        """A tool call that errored (e.g. permission rejected) loads nothing."""
        stream = write_stream(tmp_path / "t.jsonl", [step(1), bash(f"akm show {GOLD}", "rejected", ts=2, status="error")])
        assert analyse_cell(TASK, stream, None, None)["correct_asset_loaded"] is False

    def test_polarity_from_events(self, tmp_path: Path) -> None:
        """A feedback command without a flag takes its polarity from akm's event metadata."""
        stream = write_stream(tmp_path / "t.jsonl", [step(1), bash(f"akm feedback {GOLD}", ts=2)])
        events = tmp_path / "events.jsonl"
        events.write_text(json.dumps({"eventType": "feedback", "ref": GOLD, "metadata": {"signal": "positive"}}) + "\n")
        assert analyse_cell(TASK, stream, events, None)["feedback_polarity"] == "positive"

    def test_irrelevant_assets(self, tmp_path: Path) -> None:
        """Shown refs that are neither gold nor expected transfer sources are irrelevant."""
        task = make_task("demo/x", gold_ref=GOLD, expected_transfer_from=("skill:related",))
        stream = write_stream(tmp_path / "t.jsonl", [
            step(1), bash("akm show skill:related && akm show skill:noise", "...", ts=2), bash(f"akm show {GOLD}", "...", ts=3),
        ])
        t = analyse_cell(task, stream, None, None)
        assert t["assets_loaded"] == ["skill:related", "skill:noise", GOLD]
        assert t["irrelevant_assets_loaded"] == ["skill:noise"]

    def test_task_without_gold(self, tmp_path: Path) -> None:
        """No gold ref: correct_asset_loaded and irrelevant assets are not judged."""
        stream = write_stream(tmp_path / "t.jsonl", [step(1), bash("akm show skill:a", "...", ts=2)])
        t = analyse_cell(make_task("demo/x"), stream, None, None)
        assert t["correct_asset_loaded"] is None and t["irrelevant_assets_loaded"] is None and t["gold_ranks"] == []

    def test_bad_and_huge_lines_are_skipped(self, tmp_path: Path) -> None:
        """Unparseable lines and lines over the cap are skipped, the rest still parsed."""
        path = tmp_path / "t.jsonl"
        with open(path, "w") as fh:
            fh.write("not json\n")
            fh.write(json.dumps({"type": "text", "part": {"text": "x" * (5 * 1024 * 1024)}}) + "\n")
            fh.write(json.dumps(bash("akm search hello", "1. skill:hello-file\n", ts=9)) + "\n")
        assert analyse_cell(TASK, path, None, None)["gold_ranks"] == [1]

    def test_no_sources(self) -> None:
        """Nothing recorded: source None, counts 0, nothing judged as true."""
        t = analyse_cell(TASK, None, None, None)
        assert t["source"] is None and t["correct_asset_loaded"] is False and t["searched_before_acting"] is None

    def test_agent_summary_fallback(self) -> None:
        """Without a transcript the adapter's akm summary is used; ordering-based fields stay None."""
        t = analyse_cell(TASK, None, None, {"searches": [{"query": "q"}], "shows": [GOLD], "feedback": []})
        assert t["source"] == "agent" and t["correct_asset_loaded"] is True and t["searched_before_acting"] is None

    def test_events_only(self, tmp_path: Path) -> None:
        """Only akm's events file: searches get their result refs from the event metadata."""
        events = tmp_path / "events.jsonl"
        events.write_text(
            json.dumps({"eventType": "search", "ref": None, "metadata": {"query": "q", "resultRefs": ["skill:a", GOLD]}}) + "\n"
            + json.dumps({"eventType": "show", "ref": GOLD, "metadata": {}}) + "\n"
        )
        t = analyse_cell(TASK, None, events, None)
        assert t["source"] == "akm_events" and t["gold_ranks"] == [2] and t["correct_asset_loaded"] is True


class TestRecordedTranscripts:
    """Streams recorded from the real opencode binary."""

    def analyse(self, name: str) -> dict[str, Any]:
        events = DATA / f"{name}.akm-events.jsonl"
        return analyse_cell(TASK, DATA / f"{name}.jsonl", events if events.exists() else None, None)

    def test_oracle(self) -> None:
        """search (gold at rank 2), show gold, write via the solution heredoc, positive feedback."""
        t = self.analyse("oracle-akm")
        assert [a["kind"] for a in t["actions"]] == ["search", "show", "write", "feedback"]
        assert t["gold_ranks"] == [2] and t["correct_asset_loaded"] is True
        assert t["feedback_polarity"] == "positive" and t["searched_before_acting"] is True
        assert t["time_to_first_search_ms"] == 0  # the oracle's very first tool call is the search
        assert t["time_to_first_correct_asset_ms"] == 800

    def test_idle(self) -> None:
        """No tool calls at all."""
        t = self.analyse("idle-akm")
        assert t["source"] == "transcript" and t["search_count"] == 0 and t["assets_loaded"] == []
        assert t["searched_before_acting"] is False and t["workspace_writes"] == 0
        assert failure_mode({"arm": "akm", "outcome": "fail", "trajectory": t}, GOLD) == "no_search"

    def test_wrong_asset(self) -> None:
        """Search misses the gold, a wrong asset is shown, negative feedback."""
        t = self.analyse("wrong-asset-akm")
        assert t["gold_ranks"] == [None] and t["assets_loaded"] == ["knowledge:file-formats"]
        assert t["irrelevant_assets_loaded"] == ["knowledge:file-formats"]
        assert t["feedback_polarity"] == "negative" and t["correct_asset_loaded"] is False
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
        from pytest_akmbench import report
        from tests.core.test_metrics import sample
        from tests.core.test_report import TS, inp

        samples = []
        for seed, (name, outcome) in enumerate((("oracle-akm", "pass"), ("idle-akm", "fail"), ("wrong-asset-akm", "fail")), 1):
            events = DATA / f"{name}.akm-events.jsonl"
            t = analyse_cell(TASK, DATA / f"{name}.jsonl", events if events.exists() else None, None)
            samples.append(sample(TASK.id, "akm", seed, outcome, trajectory=t))
        env = report.build(inp([TASK], samples, arms=("akm",)), timestamp=TS)
        assert env["trajectory"]["akm"]["correct_asset_loaded"] == pytest.approx(1 / 3)
        assert env["trajectory"]["akm"]["counts"]["feedback_negative"] == 1
        assert env["failure_modes"]["by_label"] == {"no_search": 1, "search_no_gold": 1}
        assert env["searchBridge"]["gold_rank_distribution"]["2"] == 1 and env["searchBridge"]["searches_observed"] == 2
        assert [r["asset_ref"] for r in env["perAsset"]["rows"]] == [GOLD, "knowledge:file-formats"]

    def test_analysis_never_raises(self) -> None:
        """A malformed adapter summary gives an unobserved trajectory with a warning, not an exception."""
        t = analyse_cell(TASK, None, None, {"searches": 5})
        assert t["source"] is None and t["warnings"][0].startswith("trajectory analysis failed: TypeError")
