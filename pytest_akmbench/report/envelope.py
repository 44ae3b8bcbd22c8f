"""The report envelope (docs/report.md); the markdown lives in markdown.py.

The envelope is built from samples alone, in a fixed order (selection order of tasks, arms
noakm/synthetic/akm, seeds ascending), so a run with ``-n`` gives the same report as a
serial one apart from timestamps and timings. Keys beyond the reference's, and the rules
behind the intervals and the verdict, are described in docs/report.md.
"""

from __future__ import annotations

import subprocess
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, cast

from ..cell.trajectory import failure_mode
from ..corpus.tasks import Task, fixtures_stamp, task_corpus_hash
from . import akm_usage, lift, metrics, soundness, spend, transfer, workflow
from . import gates as gates_mod
from .compare import corpus_diff
from .envelope_types import AggregateBlock, CorpusBlock, Envelope, FloorCoverage, SpendCap, TokenMeasurement
from .provenance import provenance, tampering
from .render import notes
from .verdict import verdict

SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class ReportInput:
    """What a report is about: the selection, and the samples to summarise.

    ``floor`` is the reporting floor (valid samples per task × arm); ``provenance`` adds
    facts only the caller knows (e.g. ``akm_version``); ``gates`` are
    ``--bench-gate`` expressions evaluated into the envelope (paths relative to
    ``gates_base_dir``); ``baseline`` is a flat {task_id: pass_rate} map (docs/corpus.md, "Run configs").
    """

    tasks: list[Task]
    arms: tuple[str, ...]
    seeds: int
    slice: str
    stashes_root: Path
    samples: list[dict[str, Any]]
    model: str | None
    agent: str
    agent_version: str
    complete: bool = True
    warnings: list[str] = field(default_factory=list)
    baseline: dict[str, float] | None = None
    cwd: Path | None = None
    floor: int = metrics.DEFAULT_FLOOR
    provenance: dict[str, Any] | None = None
    gates: tuple[str, ...] = ()
    gates_base_dir: Path | None = None
    store_dir: Path | None = None
    spend_cap: SpendCap | None = None  # the run's spend cap and whether it stopped the run


def _git(args: list[str], cwd: Path | None) -> str:
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"


def ordered_arms(arms: tuple[str, ...]) -> list[str]:
    return [a for a in metrics.ARM_ORDER if a in arms]


Rows = dict[str, list[dict[str, Any] | None]]  # arm -> one per-task row (or None) per task
Outcomes = dict[str, list[list[bool]]]  # arm -> the valid runs' outcomes, per task


def build(inp: ReportInput, *, timestamp: str | None = None) -> Envelope:
    """The envelope for ``inp``; ``timestamp`` defaults to now."""
    arms = ordered_arms(inp.arms)
    gold_of = {t.id: t.gold_ref for t in inp.tasks}
    domain_of = {t.id: t.domain for t in inp.tasks}
    by_cell = _by_cell(inp, arms)
    tasks_out, rows_by_arm, outcomes_by_arm = _task_rows(inp, arms, by_cell)
    agg = _aggregate(arms, rows_by_arm, outcomes_by_arm)
    runs = [s for t in inp.tasks for a in arms for s in by_cell.get((t.id, a), [])]
    akm_runs = [s for s in runs if s["arm"] == "akm"]
    labels = {id(s): failure_mode(s, gold_of[s["task_id"]]) for s in akm_runs}
    regressed = transfer.negative_transfer(tasks_out, domain_of)
    regressed_ids = {r["task_id"] for r in regressed}
    floor = _floor_coverage(inp, arms, tasks_out)
    tm = metrics.token_measurement(runs)
    stopped = [str(spend.cap_text(inp.spend_cap))] if inp.spend_cap and inp.spend_cap["not_run"] else []
    warnings = stopped + list(inp.warnings) + _warnings(inp, runs, akm_runs, tm, floor)

    # A plain dict in the report's key order, typed once whole (the closed schema checks it).
    head: dict[str, Any] = {
        "schemaVersion": SCHEMA_VERSION,
        "track": "utility",
        "branch": _git(["rev-parse", "--abbrev-ref", "HEAD"], inp.cwd),
        "commit": _git(["rev-parse", "--short", "HEAD"], inp.cwd),
        "timestamp": timestamp or datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "complete": inp.complete,
        "agent": {"harness": inp.agent, "version": inp.agent_version, "model": inp.model},
        "corpus": _corpus(inp, arms),
        "aggregate": agg,
        "trajectory": {"akm": akm_usage.trajectory_aggregate(akm_runs) if "akm" in arms else None},
        "failure_modes": akm_usage.failure_modes([(s["task_id"], labels[id(s)]) for s in akm_runs]),
        "token_measurement": tm,
        "spend": spend.block(runs, arms, agg, inp.spend_cap),
        "tasks": tasks_out,
        "negative_transfer_count": len(regressed),
        "negative_transfer_severity": sum(r["severity"] for r in regressed),
        "negative_transfer_noise": transfer.negative_transfer_noise(tasks_out, len(regressed)),
        "top_regressed_tasks": regressed,
        "domain_level_deltas": transfer.domain_level_deltas(tasks_out, domain_of, regressed_ids),
        "asset_regression_candidates": transfer.asset_regression_candidates(akm_runs, regressed_ids),
        "corpus_coverage": transfer.corpus_coverage(
            inp.tasks, tasks_out, workflow.per_task_compliance(runs), regressed_ids
        ),
        "warnings": warnings,
        "tamper": tampering(runs),
        "searchBridge": akm_usage.search_bridge(akm_runs, gold_of),
        "runs": [_run_row(s, labels.get(id(s))) for s in runs],
    }
    _add_optional(head, inp, runs, warnings)
    head["perAsset"] = akm_usage.per_asset(akm_runs)
    head["akm_overhead"] = akm_usage.akm_overhead(akm_runs)
    head["flaky_tasks"] = _flaky(tasks_out, arms)
    head["floor_coverage"] = floor
    head["provenance"] = provenance(inp, runs)
    head["soundness"] = soundness.block(inp.tasks, inp.store_dir)
    envelope = cast("Envelope", head)  # all but the verdict, which reads the rest
    envelope["verdict"] = verdict(envelope)
    if inp.gates:
        envelope["gates"] = gates_mod.evaluate(envelope, list(inp.gates), inp.gates_base_dir or inp.cwd or Path.cwd())
    return envelope


def _add_optional(envelope: dict[str, Any], inp: ReportInput, runs: list[dict[str, Any]], warnings: list[str]) -> None:
    """The blocks between ``runs`` and ``perAsset`` that only some reports have."""
    wf = workflow.block(inp.tasks, runs)
    if wf is not None:  # only when a selected task has a workflow spec (docs/report.md)
        envelope["workflow"] = wf
        if wf["traces_truncated"]:
            warnings.append(f"workflow traces truncated: {wf['traces_truncated']} cell(s) checked on a prefix")
    if inp.baseline is not None:
        envelope["baseline_by_task_id"] = dict(inp.baseline)


def _by_cell(inp: ReportInput, arms: list[str]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """The samples of each (task, arm) of the selection, in task, arm and seed order."""
    arm_rank = {a: i for i, a in enumerate(arms)}
    order = {t.id: i for i, t in enumerate(inp.tasks)}
    by_cell: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for s in sorted(
        (s for s in inp.samples if s["task_id"] in order and s["arm"] in arm_rank),
        key=lambda s: (order[s["task_id"]], arm_rank[s["arm"]], s["seed"]),
    ):
        by_cell[(s["task_id"], s["arm"])].append(s)
    return by_cell


def _task_rows(
    inp: ReportInput, arms: list[str], by_cell: dict[tuple[str, str], list[dict[str, Any]]]
) -> tuple[list[dict[str, Any]], Rows, Outcomes]:
    """The ``tasks[]`` entries, and each arm's per-task rows and outcomes for the aggregates."""
    tasks_out: list[dict[str, Any]] = []
    rows_by_arm: Rows = {a: [] for a in metrics.ARM_ORDER}
    outcomes_by_arm: Outcomes = {a: [] for a in metrics.ARM_ORDER}
    for task in inp.tasks:
        entry: dict[str, Any] = {"id": task.id}
        for arm in ("noakm", "akm", "synthetic"):
            runs = by_cell.get((task.id, arm), [])
            row = metrics.per_task(runs, seeds=inp.seeds, floor=inp.floor) if arm in arms else None
            rows_by_arm[arm].append(row)
            outcomes_by_arm[arm].append(metrics.valid_outcomes(runs) if row is not None else [])
            if arm != "synthetic" or "synthetic" in arms:
                entry[arm] = row
        entry["delta"] = metrics.delta(entry["akm"], entry["noakm"])
        tasks_out.append(entry)
    return tasks_out, rows_by_arm, outcomes_by_arm


def _aggregate(arms: list[str], rows_by_arm: Rows, outcomes_by_arm: Outcomes) -> AggregateBlock:
    """Per-arm aggregates and the paired comparisons akm - noakm and akm - synthetic."""
    agg: AggregateBlock = {
        "noakm": metrics.aggregate(rows_by_arm["noakm"]),
        "akm": metrics.aggregate(rows_by_arm["akm"]),
        "delta": None,
    }
    comparisons: list[dict[str, Any]] = []

    def paired(b: str) -> dict[str, Any]:
        block = lift.compare_arms(
            ("akm", b), rows_by_arm["akm"], rows_by_arm[b], outcomes_by_arm["akm"], outcomes_by_arm[b]
        )
        comparisons.append(block)
        return block

    # Deltas, intervals and tests of a comparison all use the tasks both arms have valid runs for.
    if agg["akm"] is not None and agg["noakm"] is not None:
        agg["delta"] = {**lift.delta(rows_by_arm["akm"], rows_by_arm["noakm"]), "paired": paired("noakm")}
    if "synthetic" in arms:
        agg["synthetic"] = metrics.aggregate(rows_by_arm["synthetic"])
        both = agg["akm"] is not None and agg["synthetic"] is not None
        agg["akm_over_synthetic_lift"] = (
            lift.delta(rows_by_arm["akm"], rows_by_arm["synthetic"])["pass_rate"] if both else None
        )
        if both:
            agg["akm_over_synthetic_paired"] = paired("synthetic")
    lift.adjust(comparisons)  # Holm over every comparison this report tests
    return agg


def _corpus(inp: ReportInput, arms: list[str]) -> CorpusBlock:
    fixtures, fixture_hash = fixtures_stamp(inp.tasks, inp.stashes_root)
    return {
        "domains": len({t.domain for t in inp.tasks}),
        "tasks": len(inp.tasks),
        "slice": inp.slice,
        "seedsPerArm": inp.seeds,
        "arms": arms,
        "selectedTaskIds": sorted(t.id for t in inp.tasks),
        "taskCorpusHash": task_corpus_hash(inp.tasks),
        "taskHashes": corpus_diff.task_hashes(inp.tasks),
        "fixtures": fixtures,
        "fixtureContentHash": fixture_hash,
    }


def _flaky(tasks_out: list[dict[str, Any]], arms: list[str]) -> list[dict[str, Any]]:
    return [
        {
            "task_id": t["id"],
            "arm": arm,
            "pass_rate": t[arm]["pass_rate"],
            "passes": t[arm]["passes"],
            "valid_count": t[arm]["valid_count"],
            "pass_rate_stdev": t[arm]["pass_rate_stdev"],
        }
        for t in tasks_out
        for arm in arms
        if t.get(arm) and t[arm]["flaky"]
    ]


def _floor_coverage(inp: ReportInput, arms: list[str], tasks_out: list[dict[str, Any]]) -> FloorCoverage:
    by_arm: dict[str, dict[str, int]] = {}
    needs: list[dict[str, Any]] = []
    for arm in arms:
        counts = {"cells": 0, "covered": 0, "partial": 0, "missing": 0}
        for t in tasks_out:
            row = t.get(arm)
            valid = row["valid_count"] if row else 0
            status = metrics.floor_status(valid, inp.floor)
            counts["cells"] += 1
            counts[status] += 1
            if status != "covered":
                needs.append(
                    {
                        "task_id": t["id"],
                        "arm": arm,
                        "valid": valid,
                        "status": status,
                        "samples_needed": inp.floor - valid,
                    }
                )
        by_arm[arm] = counts
    return {"floor": inp.floor, "seeds": inp.seeds, "by_arm": by_arm, "needs_deepening": needs}


def _warnings(
    inp: ReportInput,
    runs: list[dict[str, Any]],
    akm_runs: list[dict[str, Any]],
    tm: TokenMeasurement,
    floor: FloorCoverage,
) -> list[str]:
    out: list[str] = []
    if runs and not tm["reliable"] and tm["runs_missing_measurement"]:
        out.append(
            f"token measurement incomplete: {tm['runs_missing_measurement']} of {tm['total_runs']} runs lack "
            f"measured token usage; token figures reflect only the {tm['runs_with_measured_tokens']} measured runs."
        )
    errors = sum(s["outcome"] == "harness_error" for s in runs)
    if errors:
        out.append(
            f"{errors} of {len(runs)} runs ended in harness_error; they are excluded from pass rates and counted apart."
        )
    below = [n for n in floor["needs_deepening"]]
    if below:
        cells = sum(a["cells"] for a in floor["by_arm"].values())
        partial = sum(n["status"] == "partial" for n in below)
        out.append(
            f"{len(below)} of {cells} task×arm cells are below the reporting floor of {inp.floor} valid samples "
            f"({partial} partial, {len(below) - partial} missing); see floor_coverage.needs_deepening."
        )
    ran = [s for s in akm_runs if s["outcome"] != "harness_error"]
    unobserved = sum(akm_usage.observed(s) is None for s in ran)
    if unobserved:
        out.append(
            f"akm trajectory not observed for {unobserved} of {len(ran)} akm-arm runs (agent {inp.agent}); "
            "trajectory, failure_modes, searchBridge, perAsset and akm_overhead cover only the observed runs."
        )
    tampered = tampering(runs)
    if tampered:
        named = ", ".join(f"{t['task_id']}[{t['arm']}-s{t['seed']}] ({t['what'][0]})" for t in tampered[:3])
        out.append(
            f"tamper suspected in {len(tampered)} of {len(runs)} runs: {named}"
            + (", …" if len(tampered) > 3 else "")
            + "; the verifier ran from the harness's own tools, so what was planted was not used (see tamper[])."
        )
    unconfirmed = notes.unconfirmed_akm_log(akm_usage.unconfirmed_cells(akm_runs), len(akm_runs))
    if unconfirmed:
        out.append(unconfirmed + " (see trajectory.akm.unconfirmed_cells and docs/akm.md).")
    silent = sum((akm_usage.observed(s) or {}).get("akm_answered") is False for s in ran)
    if silent:
        out.append(
            f"akm never answered in {silent} of {len(ran)} akm-arm runs: every akm call the agent made failed "
            "(see runs[].trajectory.akm_answered); those runs measured the agent without a working treatment."
        )
    return out


def _run_row(s: dict[str, Any], label: str | None) -> dict[str, Any]:
    """A ``runs[]`` row: the reference's fields first, then what it left out (docs/report.md)."""
    traj = akm_usage.observed(s)
    return {
        "task_id": s["task_id"],
        "arm": s["arm"],
        "seed": s["seed"],
        "model": s.get("model"),
        "outcome": s["outcome"],
        "tokens": s.get("tokens"),
        "wallclock_ms": s.get("wallclock_ms"),
        "verifier_exit_code": (s.get("verifier") or {}).get("exit_code", -1),
        "trajectory": {
            "correct_asset_loaded": traj["correct_asset_loaded"] if traj else None,
            "feedback_recorded": traj["feedback_recorded"] if traj else None,
            "searched_before_acting": traj["searched_before_acting"] if traj else None,
            "akm_answered": traj.get("akm_answered") if traj else None,
            # Not only of observed runs: a log no transcript confirms is the point of the figure.
            "unconfirmed_events": (s.get("trajectory") or {}).get("unconfirmed_events"),
        },
        "assets_loaded": list(traj["assets_loaded"]) if traj else None,
        "failure_mode": label,
        "token_measurement": s.get("token_measurement"),
        "reason": s.get("reason"),
        "budget": s.get("budget"),
        "budget_tag": s.get("budget_tag"),
        "cost_usd": s.get("cost_usd"),
        "turns": s.get("turns"),
        "tool_calls": s.get("tool_calls"),
        "transcript": s.get("transcript"),
        "from_store": bool(s.get("from_store", False)),
        "tamper": s.get("tamper") or None,
    }
