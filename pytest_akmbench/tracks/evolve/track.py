"""The evolve track behind the Track protocol: its items, their order, each condition's
context and fingerprint, and the proposal steps the store holds (docs/tracks.md, "evolve").

The pytest side (plugin/evolve.py) runs the items; everything here reads the run and its store.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ...cell.context import Cell, RunContext
from ...cell.trial import Trial
from ...corpus.tasks import Task
from ...records import Sample
from ...report.envelope_types import EvolveEnvelope
from ..track import ItemSpec, Run, Track
from . import core, report


class EvolveTrack(Track):
    """The evolve run of this process: its plans and the context of each condition."""

    name = "evolve"
    supports = frozenset()

    def __init__(self, state: Run) -> None:
        self.state = state
        self.plans: dict[str, core.DomainPlan] = {}  # by domain, once planned
        self.llm = ""  # akm's LLM
        self.episodes = state.settings.evolve_episodes
        # Each cell's trial, fingerprinted once in this process: the item, the next step's
        # inputs and the session's report ask for it. A condition's context differs from the
        # run's only in its stash (``context``), so the stash completes the key.
        self._trials: dict[tuple[str, str, int, int, Path], Trial] = {}

    def prepare(self, plans: list[core.DomainPlan], llm: str) -> None:
        self.plans = {p.domain: p for p in plans}
        self.llm = llm

    @classmethod
    def check_selection(cls, tasks: Sequence[Task]) -> None:
        core.plan(tasks)  # every domain needs train and eval tasks

    def conditions(self) -> list[tuple[str, int]]:
        """Every (condition, episode) of the run: pre once, train and post in each episode,
        control and synthetic once."""
        per_episode = [(c, e) for e in range(1, self.episodes + 1) for c in ("train", "post")]
        return [("pre", 1), *per_episode, ("control", 1), ("synthetic", 1)]

    def items(self, task: Task, run: Run) -> Iterator[ItemSpec]:
        """The task's items: its cells per condition and seed, and the domain's step on its
        first train task."""
        plan = self.plans[task.domain]
        for cond, episode in self.conditions():
            if (cond == "train") == (task.slice == "train"):
                for seed in range(1, run.seeds + 1):
                    yield ItemSpec("evolve", f"{core.episode_label(cond, episode)}-s{seed}", data=(cond, seed, episode))
        if task is plan.train[0]:
            for episode in range(1, self.episodes + 1):
                yield ItemSpec("evolve", core.episode_label("proposals", episode), data=("proposals", 0, episode))

    def rank(self, cond: str, episode: int) -> tuple[int, int]:
        """An item's place in the run: pre first; then train, proposals, post of each episode
        in turn; control and synthetic last."""
        key = core.RANK.get("propose" if cond == "proposals" else cond, 9)
        return (0 if cond == "pre" else episode if cond in ("train", "proposals", "post") else self.episodes + 1), key

    def context(self, cond: str, domain: str, episode: int = 1) -> tuple[RunContext, bool]:
        """The run context of a condition, and whether it can run: post cells run on their
        episode's evolved stash, a later episode's train cells on the previous one's; those
        wait for the proposal step they depend on."""
        ctx = self.state.context()
        after = episode if cond == "post" else episode - 1 if cond == "train" else 0
        if after < 1:
            return ctx, True
        directory, record = self.step(domain, after)
        if directory is None or record is None:
            return ctx, False
        return dataclasses.replace(ctx, stashes_root=directory / "evolved", _hashes={}), True

    def trial(self, task: Task, cond: str, seed: int, ctx: RunContext, episode: int = 1) -> Trial:
        """A condition's cell as a trial (cell/trial.py): stored under the condition's label, its
        fingerprint naming the track, the condition and a later episode."""
        key = (task.id, cond, seed, episode, ctx.stashes_root)
        if key not in self._trials:
            self._trials[key] = self._trial(task, cond, seed, ctx, episode)
        return self._trials[key]

    def _trial(self, task: Task, cond: str, seed: int, ctx: RunContext, episode: int) -> Trial:
        extra: dict[str, Any] = {"track": "evolve", "condition": cond}
        if episode > 1:
            extra["episode"] = episode
        # Stored under the arm it ran as, with its condition and episode (records.py); an older
        # store holds it under evolve-<condition>.
        marks = {"condition": cond, "episode": episode}
        cell = Cell(task, core.run_arm(cond), seed)
        return Trial.of(cell, ctx, extra, marks=marks, legacy=core.arm_label(cond, episode))

    def stored(self, task: Task, cond: str, seed: int, ctx: RunContext, episode: int = 1) -> Sample | None:
        trial = self.trial(task, cond, seed, ctx, episode)
        index, legacy = self.state.stored(), trial.legacy_key
        return index.done(trial.key, trial.hash) or (index.done(legacy, trial.hash) if legacy else None)

    def train_samples(
        self, plan: core.DomainPlan, episode: int, ctx: RunContext | None = None
    ) -> tuple[list[Sample], int]:
        """The valid train samples of an episode the store holds for the plan (its train cells
        ran in ``ctx`` when given), and how many were wanted."""
        self.state.stored().refresh()
        ctx, ready = (ctx, True) if ctx is not None else self.context("train", plan.domain, episode)
        wanted = [(t, s) for t in plan.train for s in range(1, self.state.seeds + 1)]
        found = [self.stored(t, "train", s, ctx, episode) for t, s in wanted] if ready else []
        return [f for f in found if f is not None], len(wanted)

    def inputs(self, domain: str, episode: int) -> tuple[dict[str, Any], Path, list[Sample], int] | None:
        """An episode's step inputs, the stash it starts from (the fixtures, or the previous
        episode's evolved stash), its train samples and how many were wanted; None while the
        previous episode's step has not run."""
        plan = self.plans[domain]
        start = self.state.settings.stashes_root
        previous = None
        if episode > 1:
            directory, record = self.step(domain, episode - 1)
            if directory is None or record is None:
                return None
            start, previous = directory / "evolved", directory.name
        ctx = dataclasses.replace(self.state.context(), stashes_root=start, _hashes={}) if previous else None
        samples, wanted = self.train_samples(plan, episode, ctx)
        assert self.state.akm is not None
        inputs = core.step_input(plan, samples, self.state.akm, self.llm, start)
        if episode > 1:
            inputs.update(episode=episode, previous=previous)
        return inputs, start, samples, wanted

    def step(self, domain: str, episode: int = 1) -> tuple[Path | None, dict[str, Any] | None]:
        """An episode's proposal step: its directory and record (None if not run)."""
        found = self.inputs(domain, episode)
        if found is None:
            return None, None
        directory = core.step_dir(self.state.store_dir, domain, found[0])
        return directory, core.load_step(directory)

    def envelope(self, agent: dict[str, Any]) -> EvolveEnvelope:
        """The evolve envelope from the store: every stored cell of the plan, every step."""
        state, track = self.state, self
        state.stored().refresh()
        samples: list[Sample] = []
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
                    for seed in range(1, state.seeds + 1):
                        found = track.stored(task, cond, seed, ctx, episode)
                        if found is not None:
                            samples.append(found)
        plans = list(track.plans.values())
        return report.build(
            samples,
            steps,
            eval_tasks=[t.id for p in plans for t in p.eval],
            train_tasks=[t.id for p in plans for t in p.train],
            domains=list(track.plans),
            seeds=state.seeds,
            agent=agent,
            akm_info=state.akm.as_dict() if state.akm else None,
            llm=track.llm,
            missing_steps=missing,
            episodes=track.episodes,
        )
