"""Reading an agent transcript (pytest_akmbench.cell.transcript): the line cap at its edges.
How the events become akm calls, writes and a trajectory is in test_trajectory.py."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_akmbench.cell.transcript import LINE_CAP, iter_json_lines

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
