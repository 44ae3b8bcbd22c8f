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
from ..tracks import evolve_markdown, evolve_report

if TYPE_CHECKING:
    from .evolve import EvolveTrack


class EvolveSession:
    """The controller's end of an evolve run: the envelope and the summary from the store."""

    def __init__(self, track: EvolveTrack, config: pytest.Config) -> None:
        self.track = track
        self.config = config
        self.verdict: str | None = None
        self.paths: tuple[Path, Path] | None = None

    def add_node_ids(self, ids: list[str]) -> None:
        """Under xdist (plugin/xdist_hooks.py): the report covers the plan, not the node ids."""

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.config.option.collectonly:
            return
        try:
            envelope = self.envelope()
        except BenchError as err:
            self.verdict = f"evolve: no report: {err}"
            return
        self.paths = write(self.track.state.report_dir, envelope)
        self.verdict = envelope["verdict"]

    def envelope(self) -> EvolveEnvelope:
        state, track = self.track.state, self.track
        state.stored().refresh()
        samples: list[dict[str, Any]] = []
        steps: dict[str, dict[str, Any]] = {}
        missing: list[str] = []
        for domain, plan in track.plans.items():
            for episode in range(1, track.episodes + 1):
                _, record = track.step(domain, episode)
                if record is None:
                    missing.append(domain if episode == 1 else f"{domain} (episode {episode})")
                else:
                    steps[domain if episode == 1 else f"{domain}#e{episode}"] = record
            for cond, episode in track.conditions():
                ctx, ready = track.context(cond, domain, episode)
                if not ready:
                    continue  # the proposal step it depends on has not run: nothing can be stored
                for task in plan.train if cond == "train" else plan.eval:
                    for seed in range(1, state.settings.seeds + 1):
                        found = track.stored(task, cond, seed, ctx, episode)
                        if found is not None:
                            samples.append(found)
        plans = list(track.plans.values())
        return evolve_report.build(
            samples,
            steps,
            eval_tasks=[t.id for p in plans for t in p.eval],
            train_tasks=[t.id for p in plans for t in p.train],
            domains=list(track.plans),
            seeds=state.settings.seeds,
            agent={"harness": state.agent.name, "model": state.model},
            akm_info=state.akm.as_dict() if state.akm else None,
            llm=track.llm,
            missing_steps=missing,
            episodes=track.episodes,
        )

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
    for path, text in zip(out, (json.dumps(envelope, indent=2) + "\n", evolve_markdown.render(envelope))):
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    return out
