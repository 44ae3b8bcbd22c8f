"""pytest wiring of the attribute track (docs/tracks.md): the plan from the base report, the
check that this run repeats the base's conditions, and the controller's attribute report.

The cells are ordinary akm cells with a ``mask`` (tracks/attribute/track.py), so collection,
``-k``/``-m``, xdist, resume from the store and Ctrl-C behave as in a utility run.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..cell.context import Cell
from ..errors import BenchError, ConfigError
from ..records import Sample
from ..report.envelope_types import AttributeEnvelope
from ..run.resume import StoredSamples
from ..tracks.attribute import core
from ..tracks.attribute import report as attribute_report
from ..tracks.attribute.track import AttributeTrack, Plan, providers

if TYPE_CHECKING:
    from .state import BenchState


def setup(config: pytest.Config, state: BenchState) -> AttributeTrack:
    """Turn a loaded bench state into an attribute run: the base's tasks, the akm arm only,
    the base's seeds unless --bench-seeds (or the config) says otherwise."""
    s = state.settings
    if s.base is None:
        raise ConfigError(
            "--bench-track attribute: needs --bench-base <report.json of a utility run> (or base in the run config)",
            usage=True,
        )
    if core.is_run_config(s.base):
        base = core.load_base(core.report_of_config(s.base, state.report_dir, state.corpus), s.base)
    else:
        base = core.load_base(s.base)
    present = {t.id: t for t in state.corpus.tasks}
    targets, loaded = core.plan(base, set(present), s.top)
    if not targets:
        raise ConfigError(
            f"--bench-base {s.base}: no valid akm run of the base loaded an asset of a task in "
            f"{s.tasks_root}; nothing to mask (run the utility track with the akm arm on this corpus first)"
        )
    masks: dict[str, list[str]] = {}
    for target in targets:
        for task_id in target.tasks:
            masks.setdefault(task_id, []).append(target.ref)
    tasks = [present[t] for t in sorted(masks)]
    seeds = s.seeds if "seeds" in s.origins else base.seeds
    state.arms, state.seeds = ("akm",), seeds
    state.tasks = tasks
    state.selected = {t.yaml_path: t for t in tasks}
    state.slice = "base"
    reference = core.reference_seeds(base, seeds)
    track = AttributeTrack()
    track.plan = Plan(base, tuple(targets), loaded, {k: tuple(v) for k, v in masks.items()}, reference)
    gone = sorted(set(base.task_ids) - set(present))
    if gone:
        state.warnings.append(f"{len(gone)} task(s) of the base are not in the corpus any more: {', '.join(gone[:5])}")
    return track


def plan_track(state: BenchState) -> AttributeTrack:
    """The attribute run's track."""
    assert isinstance(state.track, AttributeTrack)
    return state.track


def plan_of(state: BenchState) -> Plan:
    """The attribute run's plan, held by its track."""
    return plan_track(state).plan


def check_base(state: BenchState) -> None:
    """Masked runs are comparable to the base only under the same model, agent, budgets,
    prompt, task, stash and akm: this run's unmasked akm fingerprint of every task must be one
    the base's samples had. Otherwise a one-line ConfigError names what differs."""
    plan = plan_of(state)
    if not plan.base.fingerprints:
        if plan.base.model != state.model:
            raise ConfigError(_differs(plan.base.path, "model", state.model, plan.base.model))
    else:
        _check_fingerprints(state, plan)
    _check_providers(state, plan)


def providers_setup(state: BenchState) -> dict[str, Any]:
    """The digest of the provider/model configuration this run's agent is given (the
    report's ``provenance.providers``)."""
    return providers(state.context())


def _check_providers(state: BenchState, plan: Plan) -> None:
    """The reference dropped the providers on masked reruns, so here they must be the base
    run's. The fingerprints hold them only when a providers file gives the model (cell/context.py),
    and a base may have no fingerprints at all: the report's digest is checked in every case."""
    where, mine, theirs = f"--bench-base {plan.base.path}", providers_setup(state), plan.base.providers
    if theirs is None:
        raise ConfigError(
            f"{where}: the base report records no single provenance.providers (it was written before this "
            "check existed, or its samples ran under different providers); rerun its utility run to rewrite "
            "the report (its finished cells come from the store)"
        )
    if theirs.get("digest") != mine["digest"]:
        raise ConfigError(
            f"{where}: this run's providers differ from the base run's in provenance.providers.digest "
            f"({mine['digest']} for {mine['model']} from {mine['source'] or 'no providers file'} here, "
            f"{theirs.get('digest')} for {theirs.get('model')} from {theirs.get('source') or 'no providers file'} "
            "in the base); pass the base run's providers file (--bench-providers or the run config's providers)"
        )


def _check_fingerprints(state: BenchState, plan: Plan) -> None:
    stored: StoredSamples | None = None
    for task in state.tasks:
        # The task's plain akm cell, fingerprinted once in this process like every cell.
        probe = state.trial(Cell(task, "akm", 1))
        if probe.hash in plan.base.fingerprints:
            continue
        mine = probe.fingerprint
        stored = stored or StoredSamples.load(state.store_dir)
        runs = [r for r in plan.base.akm_runs if r["task_id"] == task.id]
        keys = [((task.id, "akm", r["seed"]), fp) for r in runs for fp in plan.base.fingerprints]
        theirs = next((r["fingerprint"] for r in stored.for_report(keys)), None)
        if theirs is None:
            raise ConfigError(
                f"--bench-base {plan.base.path}: this run's akm cells of {task.id} differ from the base run's "
                f"(model {state.model} here, {plan.base.model} in the base; the base's samples are not in "
                f"{state.store_dir}); rerun with the base's model, budgets, agent and akm, and its store"
            )
        field = next((k for k in sorted({*mine, *theirs}) if mine.get(k) != theirs.get(k)), "fingerprint")
        raise ConfigError(_differs(plan.base.path, field, mine.get(field), theirs.get(field), task.id))


def _differs(path: Path, field: str, mine: Any, theirs: Any, task: str | None = None) -> str:
    on = f" of {task}" if task else ""
    return (
        f"--bench-base {path}: this run's akm cells{on} differ from the base run's in {field} "
        f"({mine!r} here, {theirs!r} in the base); masked runs must repeat the base's model, budgets, "
        "agent, prompt, tasks and akm: pass the base run's options"
    )


class AttributeSession:
    """The controller's side of an attribute run: collect samples, write attribute.json/.md."""

    def __init__(self, state: BenchState, config: pytest.Config) -> None:
        self.state = state
        self.config = config
        self.samples: dict[tuple[str, str, int], Sample] = {}
        self.envelope: AttributeEnvelope | None = None
        self.paths: tuple[Path, Path, Path] | None = None
        self.error: str | None = None

    def add_node_ids(self, ids: list[str]) -> None:
        """The report covers the whole plan, whatever the workers collected."""

    def pytest_report_header(self) -> list[str]:
        plan = plan_of(self.state)
        refs = ", ".join(t.ref for t in plan.targets)
        again = f"s{plan.reference_seeds[0]}-s{plan.reference_seeds[-1]}" if plan.reference_seeds else "none"
        return [
            f"akmbench: attribute track, base {plan.base.path}: masking {len(plan.targets)} asset(s): {refs}; "
            f"unmasked reference reruns at seeds {again}"
        ]

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        sample = getattr(report, "akmbench_sample", None)
        if sample is not None:  # a masked cell or an unmasked reference cell (mask "")
            self.samples[(sample["task_id"], (sample.get("fingerprint") or {}).get("mask", ""), sample["seed"])] = (
                sample
            )

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if session.config.option.collectonly:
            return
        interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
        try:
            self.envelope = self.state.scrub.obj(plan_track(self.state).envelope(self.state, self.samples, interrupted))
            self.paths = attribute_report.write(self.state.report_dir, self.envelope)
        except (OSError, BenchError) as err:
            self.error = f"cannot write the attribute report to {self.state.report_dir}: {err}"
        finally:
            late = self.state.interrupts is not None and self.state.interrupts.drop()
        if late and not interrupted:
            session.exitstatus = pytest.ExitCode.INTERRUPTED
        elif interrupted:
            return
        elif self.error:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        elif self.envelope is not None and self.envelope["complete"]:
            # A masked cell that fails is the measurement, not a failure of the run.
            session.exitstatus = pytest.ExitCode.OK

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        tr = terminalreporter
        if self.error is None and self.envelope is None:
            return
        tr.write_sep("-", "akmbench attribute")
        if self.error is not None:
            tr.write_line(f"ERROR: akmbench: {self.error}", red=True)
            return
        assert self.envelope is not None and self.paths is not None
        tr.write_line(self.envelope["verdict"])
        tr.write_line(attribute_report.table(self.envelope))
        if not self.envelope["complete"]:
            tr.write_line("attribute report is INCOMPLETE: not every cell of the plan has a valid sample")
        tr.write_line(f"report: {self.paths[0]}")
        tr.write_line(f"summary: {self.paths[1]}")
        tr.write_line(f"page: {self.paths[2]}")
