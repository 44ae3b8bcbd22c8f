"""The suite's own order under xdist (tests/support/schedule.py): the longest tests first."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tests.support.schedule import LONGEST_FIRST, longest_first

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Node:
    nodeid: str


def test_listed_tests_come_first_in_the_lists_order_and_the_rest_keep_theirs() -> None:
    items = [Node(n) for n in ("a::x", "b::slow", "a::y", "c::slowest", "c::z")]
    order = longest_first(items, ("c::slowest", "b::slow", "gone::renamed"))
    assert [items[i].nodeid for i in order] == ["c::slowest", "b::slow", "a::x", "a::y", "c::z"]


def test_every_listed_test_exists() -> None:
    """A renamed test would quietly lose its early start: each id names a test in its file."""
    for nodeid in LONGEST_FIRST:
        path, *scopes = re.sub(r"\[.*\]$", "", nodeid).split("::")
        text = (ROOT / path).read_text()
        assert all(re.search(rf"^\s*(def|class) {re.escape(s)}\b", text, re.M) for s in scopes), nodeid
