"""Parse a whole recorded opencode stream at once, as the adapter parses it line by line."""

from __future__ import annotations

from pathlib import Path

from pytest_akmbench.agents.opencode.events import EventStream


def parse_lines(lines: list[str] | list[bytes], transcript: Path | None = None) -> EventStream:
    stream = EventStream(transcript)
    for line in lines:
        stream.feed(line)
    stream.close()
    return stream
