"""Reading an agent transcript (pytest_akmbench.cell.transcript): the line cap at its edges.
How the events become akm calls, writes and a trajectory is in test_trajectory.py."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_akmbench.agents.opencode.transcript import read_transcript
from pytest_akmbench.agents.transcript import LINE_CAP, iter_json_lines
from pytest_akmbench.cell.transcript import Transcript

CAP = 40  # the cap under test, small so its edges are cheap to build; LINE_CAP is 4 MiB


def line_of(size: int, n: int = 0) -> bytes:
    """A JSON object of exactly ``size`` bytes (without its newline)."""
    text = json.dumps({"n": n, "pad": ""}, separators=(",", ":")).encode()
    return text[:-2] + b"x" * (size - len(text)) + b'"}'


class TestLineCap:
    def test_a_line_of_exactly_the_cap_is_read_one_byte_more_is_not(self, tmp_path: Path) -> None:
        """An event of up to ``cap`` bytes (its newline aside) is read; a longer one is skipped
        whole, and the lines after it are read as they are."""
        path = tmp_path / "t.jsonl"
        path.write_bytes(b"\n".join([line_of(CAP, 1), line_of(CAP + 1, 2), line_of(CAP, 3), line_of(20, 4)]) + b"\n")
        assert [len(line_of(CAP)), len(line_of(20))] == [CAP, 20]
        assert [e["n"] for e in iter_json_lines(path, cap=CAP)] == [1, 3, 4]

    def test_a_last_line_without_a_newline_is_read_up_to_the_cap(self, tmp_path: Path) -> None:
        """A transcript cut short (the agent killed mid-write) ends without a newline: its last
        event is still read when it is whole and within the cap."""
        path = tmp_path / "t.jsonl"
        path.write_bytes(line_of(20, 1) + b"\n" + line_of(CAP, 2))
        assert [e["n"] for e in iter_json_lines(path, cap=CAP)] == [1, 2]
        path.write_bytes(line_of(20, 1) + b"\n" + line_of(CAP + 1, 2))
        assert [e["n"] for e in iter_json_lines(path, cap=CAP)] == [1]

    def test_an_over_long_line_is_dropped_whole_not_read_in_pieces(self, tmp_path: Path) -> None:
        """A huge tool output line is skipped entirely: no piece of it is read as an event of
        its own, even where a piece would parse as one."""
        inner = line_of(CAP + 1, 9)  # exactly the size the reader takes at a time
        head = b'{"x":['.ljust(CAP + 1)  # JSON allows the padding spaces
        path = tmp_path / "t.jsonl"
        path.write_bytes(head + inner + b"]}\n" + line_of(20, 1) + b"\n")
        assert json.loads(head + inner + b"]}")["x"][0]["n"] == 9  # the line is one valid event
        assert [e["n"] for e in iter_json_lines(path, cap=CAP)] == [1]

    def test_the_default_cap_is_four_mebibytes(self, tmp_path: Path) -> None:
        path = tmp_path / "t.jsonl"
        path.write_bytes(line_of(LINE_CAP, 1) + b"\n" + line_of(LINE_CAP + 1, 2) + b"\n" + line_of(20, 3) + b"\n")
        assert LINE_CAP == 4 * 1024 * 1024
        assert [e["n"] for e in iter_json_lines(path)] == [1, 3]

    def test_an_over_long_line_is_never_held_whole(self, tmp_path: Path) -> None:
        """A tool that printed tens of megabytes on one line costs the reader a few times the
        cap in memory, not the line's size."""
        import tracemalloc

        path = tmp_path / "t.jsonl"
        path.write_bytes(line_of(24 * 1024 * 1024, 1) + b"\n" + line_of(20, 2) + b"\n")
        tracemalloc.start()
        try:
            events = [e["n"] for e in iter_json_lines(path, cap=1024 * 1024)]
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert events == [2]
        assert peak < 8 * 1024 * 1024  # about 4 MiB: the pieces of the cap in flight


def tool_use(command: str, output: object, **state: object) -> dict:
    return {
        "type": "tool_use",
        "part": {
            "tool": "bash",
            "state": {"status": "completed", "input": {"command": command}, "output": output, **state},
        },
    }


def read(tmp_path: Path, *events: object) -> Transcript:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    transcript = Transcript()
    transcript.read(path, read_transcript)
    return transcript


class TestOddEvents:
    """opencode's events as the reader must take them from any version: a field of the wrong
    type reads as missing, and never costs the calls around it."""

    def test_parts_that_are_not_objects_are_skipped(self, tmp_path: Path) -> None:
        t = read(
            tmp_path,
            {"type": "tool_use", "part": "oops"},
            {"type": "tool_use", "part": {"tool": "bash", "state": ["x"]}},
            tool_use("akm show skill:x", "abc", metadata={"exit": 0}, time={"start": 5, "end": 6}),
        )
        assert t.calls == [
            {
                "kind": "show",
                "t_ms": 5,
                "ok": True,
                "exit": 0,
                "t_end": 6,
                "ref": "skill:x",
                "polarity": None,
                "bytes": 3,
            }
        ]
        assert [tool.ok for tool in t.tools] == [False, False, True]

    def test_times_and_exit_codes_that_are_not_numbers_are_unknown(self, tmp_path: Path) -> None:
        """A timestamp given as a string, an exit status given as ``true``, no start time: each
        is unknown (None), not a number made of it, and the call still counts."""
        t = read(
            tmp_path,
            {**tool_use("akm show skill:x", "abcd", metadata={"exit": True}, time={}), "timestamp": "7"},
        )
        assert t.first_ts is None
        assert t.calls == [
            {
                "kind": "show",
                "t_ms": None,
                "ok": True,
                "exit": None,
                "t_end": None,
                "ref": "skill:x",
                "polarity": None,
                "bytes": 4,
            }
        ]

    def test_akm_context_is_the_output_of_akm_calls_only(self, tmp_path: Path) -> None:
        assert read(tmp_path, tool_use("ls", "a b c")).context_bytes == 0
        assert read(tmp_path, tool_use("ls", "a b c"), tool_use("akm show skill:x", "é")).context_bytes == 2


class TestCalls:
    def test_a_compound_command_gives_each_call_its_query_but_no_status_or_results(self, tmp_path: Path) -> None:
        """The exit status and output of ``a && b`` are the last command's: only a lone call
        carries them, and only a lone search that succeeded has results (at most 10). A search
        keeps its query either way."""
        hits = json.dumps({"hits": [{"ref": f"skill:s{i}"} for i in range(12)]})
        t = read(
            tmp_path,
            tool_use('akm search "hello file" && akm show skill:x', hits, metadata={"exit": 0}, time={"start": 3}),
            tool_use("akm search hello", hits, metadata={"exit": 0}, time={"start": 5}),
            tool_use("akm search again", hits, metadata={"exit": 1}, time={"start": 7}),
        )
        assert t.calls == [
            {"kind": "search", "t_ms": 3, "ok": True, "exit": None, "t_end": 3, "query": "hello file", "results": None},
            {"kind": "show", "t_ms": 3, "ok": True, "exit": None, "t_end": 3, "ref": "skill:x", "polarity": None},
            {
                "kind": "search",
                "t_ms": 5,
                "ok": True,
                "exit": 0,
                "t_end": 5,
                "query": "hello",
                "results": [f"skill:s{i}" for i in range(10)],
            },
            {"kind": "search", "t_ms": 7, "ok": False, "exit": 1, "t_end": 7, "query": "again", "results": None},
        ]

    def test_workspace_writes_name_their_tool(self, tmp_path: Path) -> None:
        """A write enters the trajectory as an action naming the tool that made it: bash (its
        path unknown) or the edit tool with its file."""
        edit = {
            "type": "tool_use",
            "part": {
                "tool": "write",
                "state": {"status": "completed", "input": {"filePath": "a.txt"}, "time": {"start": 10, "end": 11}},
            },
        }
        t = read(tmp_path, tool_use("echo hi > out.txt", "", metadata={"exit": 0}, time={"start": 8, "end": 9}), edit)
        assert t.writes == [
            {"kind": "write", "tool": "bash", "path": None, "t_ms": 9},
            {"kind": "write", "tool": "write", "path": "a.txt", "t_ms": 11},
        ]

    def test_the_first_time_is_the_earliest_tool_start(self, tmp_path: Path) -> None:
        """opencode stamps a tool's event after the tool started: its start time counts."""
        t = read(tmp_path, {**tool_use("ls", "a", time={"start": 50, "end": 60}), "timestamp": 100})
        assert t.first_ts == 50

    def test_an_output_that_is_not_text_counts_as_empty(self, tmp_path: Path) -> None:
        t = read(tmp_path, tool_use("akm show skill:x", None, metadata={"exit": 0}))
        assert (t.calls[0]["bytes"], t.context_bytes) == (0, 0)

    def test_a_tool_without_its_own_times_takes_the_events(self, tmp_path: Path) -> None:
        """An event whose tool state has no start time (an older opencode, a cut event) is
        placed at the event's own timestamp: its call and its write keep a time in the trajectory."""
        t = read(
            tmp_path,
            {**tool_use("akm show skill:x", "abc", metadata={"exit": 0}), "timestamp": 70},
            {**tool_use("echo hi > out.txt", "", metadata={"exit": 0}), "timestamp": 80},
        )
        assert [(c["kind"], c["t_ms"]) for c in t.calls] == [("show", 70)]
        assert [(w["tool"], w["t_ms"]) for w in t.writes] == [("bash", 80)]
        assert [tool.start_ms for tool in t.tools] == [70, 80]

    def test_a_written_path_that_is_not_text_is_unknown(self, tmp_path: Path) -> None:
        """An edit tool's ``filePath`` of the wrong type reads as missing (None), as every odd
        field does: the trajectory never carries a number or a list as a file name."""
        edits = [
            {
                "type": "tool_use",
                "part": {"tool": "edit", "state": {"status": "completed", "input": {"filePath": path}}},
            }
            for path in (5, ["a.txt"], "b.txt")
        ]
        t = read(tmp_path, *edits)
        assert [w["path"] for w in t.writes] == [None, None, "b.txt"]
