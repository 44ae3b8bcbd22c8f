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
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..cell.context import Cell, RunContext, cell_fingerprint
from ..cell.runner import run_cell
from ..corpus.tasks import Task
from ..errors import BenchError
from ..store.claims import Claim
from ..store.samples import SampleStore, fingerprint_hash
from ..system import lifecycle, procs
from ..tracks import evolve as core
from ..tracks import evolve_markdown, evolve_report
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
    config.addinivalue_line("markers", "evolve(task, condition, seed, domain): a cell or step of the evolve track")
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


def scope(nodeid: str) -> str:
    """The work unit of an item: ``evolve-<domain>`` for the chain that depends on the proposal
    step (``<domain>/<task>/task.yaml::train-s1``, ``::proposals``, ``::post-s2``), else itself."""
    path, _, name = nodeid.partition("::")
    if name == "proposals" or name.rsplit("-s", 1)[0] in ("train", "post"):
        return "evolve-" + Path(path).parent.parent.name
    return nodeid


class EvolveTrack:
    """The evolve run of this process: its plans and the context of each condition."""

    def __init__(self, state: BenchState, plans: list[core.DomainPlan], llm: str) -> None:
        self.state = state
        self.plans = {p.domain: p for p in plans}
        self.llm = llm

    # ------------------------------------------------------------ collection

    def collect(self, parent: pytest.File, task: Task) -> Iterator[pytest.Item]:
        """The task's items: its cells per condition and seed, and the domain's step on its
        first train task."""
        plan = self.plans[task.domain]
        conditions = ("train",) if task.slice == "train" else core.EVAL_CONDITIONS
        for cond in conditions:
            for seed in range(1, self.state.settings.seeds + 1):
                yield EvolveItem.build(parent, task, cond, seed)
        if task is plan.train[0]:
            yield EvolveItem.build(parent, task, "proposals", 0)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        def rank(item: pytest.Item) -> int:
            cond = item.stash.get(COND_KEY, None)
            return core.RANK.get("propose" if cond == "proposals" else cond or "", 9)

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

    def context(self, cond: str, domain: str) -> tuple[RunContext, dict[str, Any] | None]:
        """The run context of a condition: post cells run on the evolved stash."""
        ctx = self.state.context()
        if cond != "post":
            return ctx, None
        directory, record = self.step(domain)
        if record is None:
            return ctx, None
        return dataclasses.replace(ctx, stashes_root=directory / "evolved", _hashes={}), record

    def fingerprint(self, cell: Cell, cond: str, ctx: RunContext) -> dict[str, Any]:
        return {**cell_fingerprint(cell, ctx), "track": "evolve", "condition": cond}

    def stored(self, task: Task, cond: str, seed: int, ctx: RunContext) -> dict[str, Any] | None:
        cell = Cell(task, core.run_arm(cond), seed)
        index = self.state.stored()
        return index.done((task.id, core.arm_label(cond), seed), fingerprint_hash(self.fingerprint(cell, cond, ctx)))

    def train_samples(self, plan: core.DomainPlan) -> tuple[list[dict[str, Any]], int]:
        """The valid train samples the store holds for the plan, and how many were wanted."""
        self.state.stored().refresh()
        ctx = self.state.context()
        wanted = [(t, s) for t in plan.train for s in range(1, self.state.settings.seeds + 1)]
        found = [self.stored(t, "train", s, ctx) for t, s in wanted]
        return [f for f in found if f is not None], len(wanted)

    def step(self, domain: str) -> tuple[Path, dict[str, Any] | None]:
        """The domain's current proposal step: its directory and record (None if not run)."""
        plan = self.plans[domain]
        samples, _ = self.train_samples(plan)
        akm_info = self.state.akm
        assert akm_info is not None
        inputs = core.step_input(plan, samples, akm_info, self.llm, self.state.settings.stashes_root)
        directory = core.step_dir(self.state.store_dir, domain, inputs)
        return directory, core.load_step(directory)

    def run_step(self, domain: str, tracker: procs.ProcessTracker) -> tuple[dict[str, Any], bool]:
        """Run the domain's proposal step unless its record is stored; (record, from store)."""
        plan = self.plans[domain]
        samples, wanted = self.train_samples(plan)
        if len(samples) < wanted:
            pytest.fail(
                f"proposals: {wanted - len(samples)} of {wanted} train cells of {domain} have no valid sample; "
                "run them first (they are ordered before this step)",
                pytrace=False,
            )
        akm_info = self.state.akm
        assert akm_info is not None
        inputs = core.step_input(plan, samples, akm_info, self.llm, self.state.settings.stashes_root)
        directory = core.step_dir(self.state.store_dir, domain, inputs)
        claim = Claim(self.state.store_dir, f"evolve-step\0{directory.name}", owner=f"run {self.state.run_id}")
        claim.acquire()
        try:
            record = core.load_step(directory)
            if record is not None:
                return record, True
            with core.llm_endpoint(self.llm) as url:
                record = core.run_step(
                    plan,
                    samples,
                    inputs,
                    info=akm_info,
                    stashes_root=self.state.settings.stashes_root,
                    directory=directory,
                    llm_url=url,
                    procs=tracker,
                )
            return record, False
        finally:
            claim.release()

    def session(self, config: pytest.Config) -> EvolveSession:
        return EvolveSession(self, config)


COND_KEY = pytest.StashKey[str]()


class EvolveItem(pytest.Item):
    """One evolve cell (a condition, a task, a seed) or a domain's proposal step."""

    task: Task
    cond: str
    seed: int

    @classmethod
    def build(cls, parent: pytest.File, task: Task, cond: str, seed: int) -> EvolveItem:
        name = "proposals" if cond == "proposals" else f"{cond}-s{seed}"
        item = cls.from_parent(parent, name=name)
        item.task, item.cond, item.seed = task, cond, seed
        item.stash[COND_KEY] = cond
        item.add_marker(pytest.mark.evolve(task=task.id, condition=cond, seed=seed, domain=task.domain))
        item.extra_keyword_matches.update({task.id, task.domain, cond})
        return item

    def reportinfo(self) -> tuple[Any, int | None, str]:
        what = (
            f"proposal step of {self.task.domain}"
            if self.cond == "proposals"
            else f"{self.cond} {self.task.id}[s{self.seed}]"
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
            record, stored = track.run_step(self.task.domain, tracker)
        except BenchError as err:
            pytest.fail(f"proposals: {err}", pytrace=False)
        except Exception as err:  # an akm that broke mid-step: the step's own error, one line
            pytest.fail(f"proposals: {type(err).__name__}: {err}", pytrace=False)
        self.user_properties.append(("from_store", str(stored).lower()))
        parts = record["fixtures"].values()
        if not all(p["leakage"]["ok"] for p in parts):
            pytest.fail("proposals: leakage: the evolving stash logged feedback no train run gave", pytrace=False)

    def _cell(self, state: BenchState, track: EvolveTrack, tracker: procs.ProcessTracker) -> None:
        ctx, record = track.context(self.cond, self.task.domain)
        if self.cond == "post" and record is None:
            pytest.fail(
                f"harness error: the proposal step of {self.task.domain} has not run; run it first", pytrace=False
            )
        cell = Cell(self.task, core.run_arm(self.cond), self.seed)
        fp = track.fingerprint(cell, self.cond, ctx)
        key = f"{self.task.id}\0{core.arm_label(self.cond)}\0{self.seed}\0{fingerprint_hash(fp)}"
        claim = Claim(state.store_dir, key, owner=f"run {state.run_id} (pid {os.getpid()})")
        claim.acquire()
        try:
            state.stored().refresh()
            sample = track.stored(self.task, self.cond, self.seed, ctx)
            if sample is None:
                sample = run_cell(cell, ctx, tracker)
                if state.interrupts is not None:
                    state.interrupts.hold()  # a Ctrl-C now waits until the sample is stored and reported
                sample.update(arm=core.arm_label(self.cond), fingerprint=fp, fingerprint_hash=fingerprint_hash(fp))
                sample = state.scrub.obj(sample)
                SampleStore(state.store_dir).append(sample)
            else:
                self.user_properties.append(("from_store", "true"))
        finally:
            claim.release()
        self.user_properties.append(("outcome", sample["outcome"]))
        if sample["outcome"] == "harness_error":
            pytest.fail(f"harness error (not the agent's fault): {sample['reason']}", pytrace=False)
        if sample["outcome"] != "pass":
            pytest.fail(f"{sample['outcome']}: {sample['reason']}", pytrace=False)


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

    def envelope(self) -> dict[str, Any]:
        state, track = self.track.state, self.track
        state.stored().refresh()
        samples: list[dict[str, Any]] = []
        steps: dict[str, dict[str, Any]] = {}
        missing: list[str] = []
        for domain, plan in track.plans.items():
            _, record = track.step(domain)
            if record is None:
                missing.append(domain)
            else:
                steps[domain] = record
            for cond in ("train", *core.EVAL_CONDITIONS):
                ctx, _ = track.context(cond, domain)
                tasks = plan.train if cond == "train" else plan.eval
                for task in tasks:
                    for seed in range(1, state.settings.seeds + 1):
                        found = track.stored(task, cond, seed, ctx) if (cond != "post" or record) else None
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
        )

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.verdict is None:
            return
        if self.paths is not None:
            terminalreporter.write_line(f"akmbench: evolve report {self.paths[0]} (summary {self.paths[1]})")
        terminalreporter.write_line(self.verdict)


def write(directory: Path, envelope: dict[str, Any]) -> tuple[Path, Path]:
    """report.json and summary.md of an evolve run, each written whole."""
    directory.mkdir(parents=True, exist_ok=True)
    out = (directory / "report.json", directory / "summary.md")
    for path, text in zip(out, (json.dumps(envelope, indent=2) + "\n", evolve_markdown.render(envelope))):
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    return out
