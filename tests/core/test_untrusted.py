"""Reading back what an agent could have replaced (system/untrusted.py): a planted link never
leads the harness to a file outside the cell."""

from __future__ import annotations

import os
from pathlib import Path

from pytest_akmbench.system.untrusted import read_inside


def test_a_regular_file_inside_is_read_whole_or_its_end(tmp_path: Path) -> None:
    (tmp_path / "log").write_bytes(b"0123456789")
    assert read_inside(tmp_path / "log", tmp_path, limit=100) == b"0123456789"
    assert read_inside(tmp_path / "log", tmp_path, limit=4) == b"0123"
    assert read_inside(tmp_path / "log", tmp_path, limit=4, tail=True) == b"6789"


def test_a_link_a_missing_file_or_a_directory_is_not_read(tmp_path: Path) -> None:
    cell, outside = tmp_path / "cell", tmp_path / "secret"
    cell.mkdir()
    outside.write_text("host secret\n")
    (cell / "log").symlink_to(outside)
    (cell / "dir").mkdir()
    (cell / "fifo").parent.mkdir(exist_ok=True)
    os.mkfifo(cell / "fifo")  # reading it would block the harness for ever
    for name in ("log", "missing", "dir", "fifo"):
        assert read_inside(cell / name, cell, limit=100) is None, name


def test_a_linked_directory_does_not_lead_out(tmp_path: Path) -> None:
    cell, elsewhere = tmp_path / "cell", tmp_path / "elsewhere"
    cell.mkdir()
    elsewhere.mkdir()
    (elsewhere / "log").write_text("host file\n")
    (cell / "logs").symlink_to(elsewhere)
    assert read_inside(cell / "logs" / "log", cell, limit=100) is None
