"""The controller's end of an evolve run (``--bench-track evolve``): the envelope, from the
store, written as report.json and summary.md, and the verdict in the terminal summary
(docs/tracks.md, "evolve"; docs/report.md, "The evolve envelope")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import BenchError
from ..report.envelope_types import EvolveEnvelope
from ..store import atomic
from ..tracks.evolve import markdown
from ..tracks.evolve.track import EvolveTrack

if TYPE_CHECKING:
    from .state import BenchState


class EvolveSession:
    """The controller's end of an evolve run: the envelope and the summary from the store."""

    def __init__(self, state: BenchState, config: pytest.Config) -> None:
        assert isinstance(state.track, EvolveTrack)
        self.state, self.track = state, state.track
        self.config = config
        self.verdict: str | None = None
        self.paths: tuple[Path, Path] | None = None

    def add_node_ids(self, ids: list[str]) -> None:
        """Under xdist (plugin/xdist/workers.py): the report covers the plan, not the node ids."""

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.config.option.collectonly:
            return
        try:
            envelope = self.envelope()
        except BenchError as err:
            self.verdict = f"evolve: no report: {err}"
            return
        self.paths = write(self.state.report_dir, envelope)
        self.verdict = envelope["verdict"]

    def envelope(self) -> EvolveEnvelope:
        return self.track.envelope({"harness": self.state.agent.name, "model": self.state.model})

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.verdict is None:
            return
        if self.paths is not None:
            terminalreporter.write_line(f"akmbench: evolve report {self.paths[0]} (summary {self.paths[1]})")
        terminalreporter.write_line(self.verdict)


def write(directory: Path, envelope: EvolveEnvelope) -> tuple[Path, Path]:
    """report.json and summary.md of an evolve run, each written whole."""
    directory.mkdir(parents=True, exist_ok=True)
    out = (directory / "report.json", directory / "summary.md")
    for path, text in zip(out, (json.dumps(envelope, indent=2) + "\n", markdown.render(envelope))):
        atomic.write_text(path, text)
    return out
