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

from typing import Any

import pytest

from ..cell.trial import run_trial
from ..corpus.tasks import Task
from ..errors import BenchError
from ..store.claims import Claim
from ..system import lifecycle, procs
from ..tracks.evolve import core
from ..tracks.evolve.track import EvolveTrack
from ..tracks.track import ItemSpec
from .state import STATE_KEY, BenchState, register
from .trial import exit_interrupted, place, settle, unstored
from .xdist.schedulers import EvolveScheduler


def install(config: pytest.Config, state: BenchState) -> None:
    """Make this run an evolve run, once the run's features accepted the track: each domain's
    plan, akm's LLM, the items' order, its marker, its xdist scheduler."""
    assert isinstance(state.track, EvolveTrack)
    llm_value = state.settings.evolve_llm
    try:
        plans = core.plan(state.tasks)
        llm = "" if config.option.collectonly else core.llm_spec(llm_value, state.settings.model)
    except BenchError as err:
        raise pytest.UsageError(str(err)) from None
    state.track.prepare(plans, llm)
    register(config, state, EvolveHooks(state.track), "akmbench-evolve")
    config.addinivalue_line(
        "markers", "evolve(task, condition, seed, domain, episode): a cell or step of the evolve track"
    )
    if not hasattr(config, "workerinput") and config.pluginmanager.hasplugin("xdist"):
        register(config, state, EvolveScheduler(), "akmbench-evolve-xdist")


class EvolveHooks:
    """The evolve run's pytest hooks: the items' order, a stored item's status."""

    def __init__(self, track: EvolveTrack) -> None:
        self.track = track

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        items.sort(key=lambda item: self.track.rank(*item.stash.get(COND_KEY, ("", 0))))

    def pytest_report_teststatus(self, report: pytest.TestReport, config: pytest.Config) -> Any:
        stored = any(tuple(p) == ("from_store", "true") for p in report.user_properties)
        if stored and report.when == "call":
            if report.passed:
                return "passed", "p", ("PASSED (from store)", {"green": True})
            if report.failed:
                return "failed", "f", ("FAILED (from store)", {"red": True})
        return None


def run_step(
    track: EvolveTrack, domain: str, tracker: procs.ProcessTracker, episode: int
) -> tuple[dict[str, Any], bool]:
    """Run an episode's proposal step unless its record is stored; (record, from store)."""
    found = track.inputs(domain, episode)
    if found is None:
        pytest.fail(f"proposals: episode {episode - 1}'s proposal step of {domain} has not run", pytrace=False)
    inputs, start, samples, wanted = found
    if len(samples) < wanted:
        pytest.fail(
            f"proposals: {wanted - len(samples)} of {wanted} train cells of {domain} have no valid sample; "
            "run them first (they are ordered before this step)",
            pytrace=False,
        )
    directory = core.step_dir(track.state.store_dir, domain, inputs)
    claim = Claim(track.state.store_dir, f"evolve-step\0{directory.name}", owner=f"run {track.state.run_id}")
    claim.acquire()
    try:
        record = core.load_step(directory)
        if record is not None:
            return record, True
        assert track.state.akm is not None
        with core.llm_endpoint(track.llm) as url:
            record = core.run_step(
                track.plans[domain],
                samples,
                inputs,
                info=track.state.akm,
                stashes_root=start,
                directory=directory,
                llm_url=url,
                procs=tracker,
                episode=episode,
            )
        return record, False
    finally:
        claim.release()


COND_KEY = pytest.StashKey[tuple[str, int]]()


class EvolveItem(pytest.Item):
    """One evolve cell (a condition, a task, a seed) or a domain's proposal step."""

    task: Task
    cond: str
    seed: int
    episode: int

    @classmethod
    def build(cls, parent: pytest.File, task: Task, spec: ItemSpec) -> EvolveItem:
        cond, seed, episode = spec.data
        item = cls.from_parent(parent, name=spec.name)
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
        track = state.track
        assert isinstance(track, EvolveTrack)
        if lifecycle.is_interrupted(state.run_dir):
            exit_interrupted()
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
            record, stored = run_step(track, self.task.domain, tracker, self.episode)
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
        trial = track.trial(self.task, self.cond, self.seed, ctx, self.episode)
        ended = run_trial(trial, place(state, self.nodeid), tracker, state.scrub, state.interrupts)
        settle(self.session, ended)
        if ended.record is not None:
            self.user_properties.append(("from_store", "true"))
        sample = ended.record or ended.sample
        assert sample is not None
        self.user_properties.append(("outcome", sample["outcome"]))
        failed = unstored(ended)
        if failed is not None:
            pytest.fail(failed, pytrace=False)
        if sample["outcome"] == "harness_error":
            pytest.fail(f"harness error (not the agent's fault): {sample['reason']}", pytrace=False)
        if sample["outcome"] != "pass":
            pytest.fail(f"{sample['outcome']}: {sample['reason']}", pytrace=False)
