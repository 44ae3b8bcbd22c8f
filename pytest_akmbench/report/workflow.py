"""The envelope's ``workflow`` block: the cells' workflow checks (:mod:`..cell.workflow`)
aggregated per workflow with intervals, the top violations with evidence, the cross-tab with
the task outcome and pass@k reliability (docs/report.md, "Workflow compliance").

Checks of harness-error runs never count, like the runs themselves. Rates over no applicable
check are ``null``, not 0. Tasks are the unit (the seeds of one task are correlated, and tasks
have different numbers of checks): every rate and score is the mean over tasks of each task's
mean over its checks, and its interval is :func:`stats.task_rate_interval` over the same
per-task means, so estimate and interval are of one estimand.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from ..corpus.tasks import Task
from ..records import Sample
from ..stats.intervals import task_rate_interval
from .envelope_types import WorkflowBlock

BUCKETS = ("pass", "partial", "fail")
TOP_CODES = 10
EVIDENCE_PER_CODE = 10


def spec_ids(tasks: Sequence[Task]) -> list[str]:
    """The workflow specs that can apply to the selected tasks, in spec file order."""
    seen: dict[str, tuple[str, str]] = {}
    for t in tasks:
        for s in t.workflows:
            seen.setdefault(s.id, (str(s.path), s.id))
    return [sid for sid in sorted(seen, key=lambda k: seen[k])]


def spec_digests(tasks: Sequence[Task]) -> dict[str, str]:
    """Each spec's digest (sha256 of its file): compare refuses to diff a workflow whose spec
    changed between two reports."""
    return {s.id: s.digest for t in tasks for s in t.workflows}


def _checks(runs: Sequence[Sample]) -> list[tuple[Sample, dict[str, Any]]]:
    """(run, check) pairs of the runs that count."""
    out: list[tuple[Sample, dict[str, Any]]] = []
    for run in runs:
        wf = run.get("workflow")
        if run.get("outcome") == "harness_error" or not isinstance(wf, dict):
            continue
        out.extend((run, c) for c in wf.get("checks") or [])
    return out


def _ci(values_by_task: dict[str, list[float]]) -> dict[str, float] | None:
    ci = task_rate_interval(_task_means(values_by_task))
    return None if ci is None else {"low": ci[0], "high": ci[1]}


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _task_means(values_by_task: dict[str, list[float]]) -> list[float]:
    return [sum(v) / len(v) for _, v in sorted(values_by_task.items()) if v]


def _task_mean(values_by_task: dict[str, list[float]]) -> float | None:
    """The mean over tasks of each task's mean: the estimand of :func:`_ci`."""
    return _mean(_task_means(values_by_task))


def _rates(applicable: list[tuple[Sample, dict[str, Any]]]) -> dict[str, float | None]:
    """The share of checks in each bucket, per task, averaged over tasks."""
    by_task: dict[str, dict[str, list[float]]] = {b: defaultdict(list) for b in BUCKETS}
    for r, c in applicable:
        for b in BUCKETS:
            by_task[b][r["task_id"]].append(float(c["status"] == b))
    return {b: _task_mean(by_task[b]) for b in BUCKETS}


def _per_task(
    applicable: list[tuple[Sample, dict[str, Any]]],
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Each task's check scores and pass indicators: tasks are the clusters of the intervals."""
    scores: dict[str, list[float]] = defaultdict(list)
    passes: dict[str, list[float]] = defaultdict(list)
    for r, c in applicable:
        scores[r["task_id"]].append(float(c["score"]))
        passes[r["task_id"]].append(float(c["status"] == "pass"))
    return scores, passes


def _by_workflow(ids: list[str], pairs: list[tuple[Sample, dict[str, Any]]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for wid in ids:
        mine = [(r, c) for r, c in pairs if c["workflow_id"] == wid]
        applicable = [(r, c) for r, c in mine if c["status"] != "not_applicable"]
        scores, passes = _per_task(applicable)
        rates = _rates(applicable)
        out[wid] = {
            "workflow_id": wid,
            "count": len(applicable),
            "total_checks": len(mine),
            "tasks": len(scores),
            "score": _task_mean(scores),
            "score_ci": _ci(scores),
            "pass_rate": rates["pass"],
            "pass_rate_ci": _ci(passes),
            "partial_rate": rates["partial"],
            "fail_rate": rates["fail"],
            "violation_count": sum(len(c.get("violations") or []) for _, c in applicable),
            # Per task (the clusters): what compare needs to test a change (report/compare/workflow.py).
            "per_task": [
                {"task_id": t, "checks": len(scores[t]), "passes": int(sum(passes[t])), "score": _mean(scores[t])}
                for t in sorted(scores)
            ],
        }
    return out


def _top_violations(pairs: list[tuple[Sample, dict[str, Any]]]) -> list[dict[str, Any]]:
    counts: dict[str, int] = defaultdict(int)
    evidence: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for run, check in pairs:
        for v in check.get("violations") or []:
            counts[v["code"]] += 1
            if len(evidence[v["code"]]) < EVIDENCE_PER_CODE:
                row = {
                    "task_id": run["task_id"],
                    "arm": run["arm"],
                    "seed": run["seed"],
                    "workflow_id": check["workflow_id"],
                }
                row.update({k: v[k] for k in ("message", "expected", "observed") if k in v})
                evidence[v["code"]].append(row)
    order = sorted(counts, key=lambda code: (-counts[code], code))[:TOP_CODES]
    return [{"code": code, "count": counts[code], "evidence": evidence[code]} for code in order]


def _cross_tab(runs: Sequence[Sample]) -> list[dict[str, Any]]:
    """Each run's worst workflow bucket (fail > partial > pass), by its task outcome."""
    rows: dict[str, dict[str, Any]] = {}
    for o in ("pass", "fail"):
        rows[o] = {"task_outcome": o, "pass": 0, "partial": 0, "fail": 0, "total": 0}
    for run in runs:
        wf = run.get("workflow")
        if run.get("outcome") == "harness_error" or not isinstance(wf, dict):
            continue
        statuses = {c["status"] for c in wf.get("checks") or []} - {"not_applicable"}
        if not statuses:
            continue
        worst = next(b for b in ("fail", "partial", "pass") if b in statuses)
        outcome = str(run.get("outcome") or "unknown")
        row = rows.setdefault(outcome, {"task_outcome": outcome, "pass": 0, "partial": 0, "fail": 0, "total": 0})
        row[worst] += 1
        row["total"] += 1
    return list(rows.values())


def _reliability(pairs: list[tuple[Sample, dict[str, Any]]], ids: list[str]) -> dict[str, Any]:
    groups: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for run, check in pairs:
        if check["status"] != "not_applicable":
            groups[(check["workflow_id"], run["task_id"])].append(check["status"] == "pass")
    by_workflow: dict[str, Any] = {}
    for wid in ids:
        mine = [v for (w, _), v in groups.items() if w == wid]
        if mine:
            by_workflow[wid] = {
                "workflow_id": wid,
                "pass_at_k": _mean([float(any(v)) for v in mine]),
                "pass_all_k": _mean([float(all(v)) for v in mine]),
                "tasks": len(mine),
                "k": max(len(v) for v in mine),
            }
    every = list(groups.values())
    corpus = {
        "pass_at_k": _mean([float(any(v)) for v in every]),
        "pass_all_k": _mean([float(all(v)) for v in every]),
        "groups": len(every),
        "tasks": len({t for _, t in groups}),
    }
    return {"by_workflow": by_workflow, "corpus": corpus}


def block(tasks: Sequence[Task], runs: Sequence[Sample]) -> WorkflowBlock | None:
    """The ``workflow`` block, or None when no selected task has a workflow spec."""
    ids = spec_ids(tasks)
    if not ids:
        return None
    pairs = _checks(runs)
    applicable = [(r, c) for r, c in pairs if c["status"] != "not_applicable"]
    scores, passes = _per_task(applicable)
    rates = _rates(applicable)
    digests = spec_digests(tasks)
    out: WorkflowBlock = {
        "specs": ids,
        "digests": {sid: digests[sid] for sid in ids},
        "total_checks": len(pairs),
        "applicable_checks": len(applicable),
        "overall_compliance": _task_mean(scores),
        "overall_compliance_ci": _ci(scores),
        "strict_pass_rate": rates["pass"],
        "strict_pass_rate_ci": _ci(passes),
        "partial_pass_rate": rates["partial"],
        "fail_rate": rates["fail"],
        "violation_count": sum(len(c.get("violations") or []) for _, c in applicable),
        "traces_truncated": sum(
            1 for r in runs if isinstance(wf := r.get("workflow"), dict) and wf.get("trace_truncated")
        ),
        "by_workflow": _by_workflow(ids, pairs),
        "top_violations": _top_violations(applicable),
        "cross_tab": _cross_tab(runs),
        "reliability": _reliability(pairs, ids),
    }
    return out


def per_task_compliance(runs: Sequence[Sample]) -> dict[str, float]:
    """Each task's mean score over its applicable checks (tasks without one are absent)."""
    scores: dict[str, list[float]] = defaultdict(list)
    for run, check in _checks(runs):
        if check["status"] != "not_applicable":
            scores[run["task_id"]].append(float(check["score"]))
    return {t: sum(v) / len(v) for t, v in scores.items()}
