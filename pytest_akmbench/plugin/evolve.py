"""pytest wiring of the evolve track (``--bench-track evolve``): its items, their order, the
proposal step, and the evolve report at the end (docs/tracks.md, "evolve").

Every cell and every proposal step is one pytest item, so ``-k``, ``-m``, ``--co``, ``-x``,
xdist and resume behave as for utility cells. Order: collection sorts pre and train first,
then each domain's proposal step, then post, control and synthetic. Under xdist the run's
scheduler makes a domain's train cells, its proposal step and its post cells one work unit, so
one worker runs them in that order; pre, control and synthetic cells depend on nothing and
spread over the workers.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from ..cell.context import Cell, RunContext, cell_fingerprint
from ..cell.runner import run_cell
from ..corpus.tasks import Task
from ..errors import BenchError
from ..records import Sample
from ..store.claims import Claim
from ..store.samples import SampleStore, fingerprint_hash
from ..system import lifecycle, procs
from ..tracks import evolve as core
from .evolve_session import EvolveSession
from .state import STATE_KEY, BenchState

TRACKS = ("utility", "attribute", "evolve")


def install(config: pytest.Config, state: BenchState) -> None:
    """Make this run an evolve run: the track object, its marker, its xdist scheduler."""
    llm_value = config.getoption("bench_evolve_llm", None) or config.getini("bench_evolve_llm") or None
    try:
        plans = core.plan(state.tasks)
        llm = "" if config.option.collectonly else core.llm_spec(llm_value, state.settings.model)
    except BenchError as err:
        raise pytest.UsageError(str(err)) from None
    track = EvolveTrack(state, plans, llm)
    state.track = track
    config.pluginmanager.register(track, "akmbench-evolve")
    config.addinivalue_line(
        "markers", "evolve(task, condition, seed, domain, episode): a cell or step of the evolve track"
    )
    if not hasattr(config, "workerinput") and config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_Scheduling(), "akmbench-evolve-xdist")


class _Scheduling:
    """Under xdist, a domain's train cells, its proposal step and its post cells are one work
    unit: one worker runs them in collection order. (``xdist_group`` cannot do it with pytest 9,
    whose node ids ignore the suffix xdist writes.)"""

    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

        class EvolveScheduling(LoadScopeScheduling):  # type: ignore[misc]
            def _split_scope(self, nodeid: str) -> str:
                return scope(nodeid)

        return EvolveScheduling(config, log)


_CHAIN = re.compile(r"(train|post)(-e\d+)?-s\d+|proposals(-e\d+)?")


def scope(nodeid: str) -> str:
    """The work unit of an item: ``evolve-<domain>`` for the chain that depends on the proposal
    steps (``<domain>/<task>/task.yaml::train-s1``, ``::proposals``, ``::post-s2``, and a later
    episode's ``::train-e2-s1``, ``::proposals-e2``, ``::post-e2-s1``), else itself."""
    path, _, name = nodeid.partition("::")
    if _CHAIN.fullmatch(name):
        return "evolve-" + Path(path).parent.parent.name
    return nodeid


class EvolveTrack:
    """The evolve run of this process: its plans and the context of each condition."""

    def __init__(self, state: BenchState, plans: list[core.DomainPlan], llm: str) -> None:
        self.state = state
        self.plans = {p.domain: p for p in plans}
        self.llm = llm
        self.episodes = state.settings.evolve_episodes

    def conditions(self) -> list[tuple[str, int]]:
        """Every (condition, episode) of the run: pre once, train and post in each episode,
        control and synthetic once."""
        per_episode = [(c, e) for e in range(1, self.episodes + 1) for c in ("train", "post")]
        return [("pre", 1), *per_episode, ("control", 1), ("synthetic", 1)]

    # ------------------------------------------------------------ collection

    def collect(self, parent: pytest.File, task: Task) -> Iterator[pytest.Item]:
        """The task's items: its cells per condition and seed, and the domain's step on its
        first train task."""
        plan = self.plans[task.domain]
        for cond, episode in self.conditions():
            if (cond == "train") == (task.slice == "train"):
                for seed in range(1, self.state.settings.seeds + 1):
                    yield EvolveItem.build(parent, task, cond, seed, episode)
        if task is plan.train[0]:
            for episode in range(1, self.episodes + 1):
                yield EvolveItem.build(parent, task, "proposals", 0, episode)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        def rank(item: pytest.Item) -> tuple[int, int]:
            cond, episode = item.stash.get(COND_KEY, ("", 0))
            key = core.RANK.get("propose" if cond == "proposals" else cond, 9)
            # pre first; then train, proposals, post of each episode in turn; control, synthetic last
            return (
                0 if cond == "pre" else episode if cond in ("train", "proposals", "post") else self.episodes + 1
            ), key

        items.sort(key=rank)

    def pytest_report_teststatus(self, report: pytest.TestReport, config: pytest.Config) -> Any:
        stored = any(tuple(p) == ("from_store", "true") for p in report.user_properties)
        if stored and report.when == "call":
            if report.passed:
                return "passed", "p", ("PASSED (from store)", {"green": True})
            if report.failed:
                return "failed", "f", ("FAILED (from store)", {"red": True})
        return None

    # ------------------------------------------------------------ contexts and samples

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

    def fingerprint(self, cell: Cell, cond: str, ctx: RunContext, episode: int = 1) -> dict[str, Any]:
        fp = {**cell_fingerprint(cell, ctx), "track": "evolve", "condition": cond}
        return fp if episode <= 1 else {**fp, "episode": episode}

    def stored(self, task: Task, cond: str, seed: int, ctx: RunContext, episode: int = 1) -> dict[str, Any] | None:
        cell = Cell(task, core.run_arm(cond), seed)
        index = self.state.stored()
        fp = fingerprint_hash(self.fingerprint(cell, cond, ctx, episode))
        # A store written before samples had a condition field holds it under evolve-<condition>.
        legacy = (task.id, core.arm_label(cond, episode), seed)
        return index.done((task.id, cell.arm, seed), fp) or index.done(legacy, fp)

    def train_samples(
        self, plan: core.DomainPlan, episode: int, ctx: RunContext | None = None
    ) -> tuple[list[dict[str, Any]], int]:
        """The valid train samples of an episode the store holds for the plan (its train cells
        ran in ``ctx`` when given), and how many were wanted."""
        self.state.stored().refresh()
        ctx, ready = (ctx, True) if ctx is not None else self.context("train", plan.domain, episode)
        wanted = [(t, s) for t in plan.train for s in range(1, self.state.settings.seeds + 1)]
        found = [self.stored(t, "train", s, ctx, episode) for t, s in wanted] if ready else []
        return [f for f in found if f is not None], len(wanted)

    def _inputs(self, domain: str, episode: int) -> tuple[dict[str, Any], Path, list[dict[str, Any]], int] | None:
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
        found = self._inputs(domain, episode)
        if found is None:
            return None, None
        directory = core.step_dir(self.state.store_dir, domain, found[0])
        return directory, core.load_step(directory)

    def run_step(self, domain: str, tracker: procs.ProcessTracker, episode: int) -> tuple[dict[str, Any], bool]:
        """Run an episode's proposal step unless its record is stored; (record, from store)."""
        found = self._inputs(domain, episode)
        if found is None:
            pytest.fail(f"proposals: episode {episode - 1}'s proposal step of {domain} has not run", pytrace=False)
        inputs, start, samples, wanted = found
        if len(samples) < wanted:
            pytest.fail(
                f"proposals: {wanted - len(samples)} of {wanted} train cells of {domain} have no valid sample; "
                "run them first (they are ordered before this step)",
                pytrace=False,
            )
        directory = core.step_dir(self.state.store_dir, domain, inputs)
        claim = Claim(self.state.store_dir, f"evolve-step\0{directory.name}", owner=f"run {self.state.run_id}")
        claim.acquire()
        try:
            record = core.load_step(directory)
            if record is not None:
                return record, True
            assert self.state.akm is not None
            with core.llm_endpoint(self.llm) as url:
                record = core.run_step(
                    self.plans[domain],
                    samples,
                    inputs,
                    info=self.state.akm,
                    stashes_root=start,
                    directory=directory,
                    llm_url=url,
                    procs=tracker,
                    episode=episode,
                )
            return record, False
        finally:
            claim.release()

    def session(self, config: pytest.Config) -> EvolveSession:
        return EvolveSession(self, config)


COND_KEY = pytest.StashKey[tuple[str, int]]()


class EvolveItem(pytest.Item):
    """One evolve cell (a condition, a task, a seed) or a domain's proposal step."""

    task: Task
    cond: str
    seed: int
    episode: int

    @classmethod
    def build(cls, parent: pytest.File, task: Task, cond: str, seed: int, episode: int = 1) -> EvolveItem:
        label = core.episode_label(cond, episode)
        item = cls.from_parent(parent, name=label if cond == "proposals" else f"{label}-s{seed}")
        item.task, item.cond, item.seed, item.episode = task, cond, seed, episode
        item.stash[COND_KEY] = (cond, episode)
        item.add_marker(
            pytest.mark.evolve(task=task.id, condition=cond, seed=seed, domain=task.domain, episode=episode)
        )
        item.extra_keyword_matches.update({task.id, task.domain, cond})
        return item

    def reportinfo(self) -> tuple[Any, int | None, str]:
        episode = f" (episode {self.episode})" if self.episode > 1 else ""
        what = (
            f"proposal step of {self.task.domain}{episode}"
            if self.cond == "proposals"
            else f"{self.cond} {self.task.id}[s{self.seed}]{episode}"
        )
        return self.path, 0, f"evolve: {what}"

    def runtest(self) -> None:
        state: BenchState = self.config.stash[STATE_KEY]
        track: EvolveTrack = state.track
        if lifecycle.is_interrupted(state.run_dir):
            pytest.exit(
                "akmbench: the run was interrupted; no further cell starts", returncode=pytest.ExitCode.INTERRUPTED
            )
        tracker = procs.ProcessTracker(f"{state.run_id}/{self.nodeid}")
        try:
            if self.cond == "proposals":
                self._step(track, tracker)
            else:
                self._cell(state, track, tracker)
        finally:
            tracker.kill_all()

    def _step(self, track: EvolveTrack, tracker: procs.ProcessTracker) -> None:
        try:
            record, stored = track.run_step(self.task.domain, tracker, self.episode)
        except BenchError as err:
            pytest.fail(f"proposals: {err}", pytrace=False)
        except Exception as err:  # an akm that broke mid-step: the step's own error, one line
            pytest.fail(f"proposals: {type(err).__name__}: {err}", pytrace=False)
        self.user_properties.append(("from_store", str(stored).lower()))
        parts = record["fixtures"].values()
        if not all(p["leakage"]["ok"] for p in parts):
            pytest.fail("proposals: leakage: the evolving stash logged feedback no train run gave", pytrace=False)

    def _cell(self, state: BenchState, track: EvolveTrack, tracker: procs.ProcessTracker) -> None:
        ctx, ready = track.context(self.cond, self.task.domain, self.episode)
        if not ready:
            step = "proposal step" if self.episode <= 1 or self.cond == "post" else "previous episode's proposal step"
            pytest.fail(f"harness error: the {step} of {self.task.domain} has not run; run it first", pytrace=False)
        cell = Cell(self.task, core.run_arm(self.cond), self.seed)
        fp = track.fingerprint(cell, self.cond, ctx, self.episode)
        label = core.arm_label(self.cond, self.episode)
        key = f"{self.task.id}\0{label}\0{self.seed}\0{fingerprint_hash(fp)}"
        claim = Claim(state.store_dir, key, owner=f"run {state.run_id} (pid {os.getpid()})")
        claim.acquire()
        try:
            state.stored().refresh()
            sample: Mapping[str, Any] | None = track.stored(self.task, self.cond, self.seed, ctx, self.episode)
            if sample is None:
                ran = run_cell(cell, ctx, tracker)
                if state.interrupts is not None:
                    state.interrupts.hold()  # a Ctrl-C now waits until the sample is stored and reported
                fresh: Sample = state.scrub.obj(core.mark(ran, self.cond, self.episode, fp))
                SampleStore(state.store_dir).append(fresh)
                sample = fresh
            else:
                self.user_properties.append(("from_store", "true"))
        finally:
            claim.release()
        self.user_properties.append(("outcome", sample["outcome"]))
        if sample["outcome"] == "harness_error":
            pytest.fail(f"harness error (not the agent's fault): {sample['reason']}", pytrace=False)
        if sample["outcome"] != "pass":
            pytest.fail(f"{sample['outcome']}: {sample['reason']}", pytrace=False)
