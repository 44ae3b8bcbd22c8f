"""compare's workflow compliance: each workflow's compliance in the base and the current report,
the change and whether it is beyond noise (docs/report.md, "compare").

When both envelopes have a ``workflow`` block, every workflow in both is compared: its mean
check score (the compliance) and its strict pass rate, base and current, and their changes. The
test is the one compare applies to an arm's pass rate (:mod:`compare_stats`), on the strict
passes: the tasks both reports checked the workflow on are the strata (the clusters: a task's
seeds are correlated), its checks are permuted within each task, Holm's adjustment runs over the
workflows compared, and the interval of the mean per-task change is built on the same test at
its Holm step's level (it excludes 0 exactly when the change is beyond noise). The compliance score is a mean of fractions, which that exact test does not cover:
its change is shown beside each report's own task-cluster interval, not tested. A workflow in
one report only is named; a spec whose digest differs between the reports is refused (or, with
``--allow-workflow-mismatch``, warned about). Pure: no pytest.
"""

from __future__ import annotations

from typing import Any

from tabulate import tabulate

from ..envelope_types import Envelope, WorkflowBlock
from ..render.fmt import num, signed
from .stats import Strata, paired_changes

RULE = (
    "per workflow: strict pass rate (a check passed), stratified permutation test over the tasks both reports "
    "checked it on (checks permuted within each task), Holm-adjusted p < 0.05 over the workflows compared, the "
    "interval built on the same test at its Holm step's level; the "
    "compliance (mean check score) change is shown, not tested"
)


def _block(envelope: Envelope) -> WorkflowBlock | None:
    wf = envelope.get("workflow")
    return wf if isinstance(wf, dict) else None


def refusal(base: Envelope, head: Envelope, allow: bool, warnings: list[str]) -> dict[str, Any] | None:
    """The refusal when a workflow of both reports was checked against different specs; the
    allowed mismatch, and a report without digests, become warnings."""
    bw, hw = _block(base), _block(head)
    if bw is None or hw is None:
        return None
    bd, hd = bw.get("digests"), hw.get("digests")
    for name, digests in (("base", bd), ("current", hd)):
        if not isinstance(digests, dict):
            warnings.append(f"{name} report has no workflow.digests; proceeding without workflow-spec pin check")
    if not isinstance(bd, dict) or not isinstance(hd, dict):
        return None
    changed = sorted(w for w in set(bd) & set(hd) if bd[w] != hd[w])
    if not changed:
        return None
    first = changed[0]
    text = f'workflow spec digests differ for {", ".join(changed)} (base="{bd[first]}", current="{hd[first]}")'
    if allow:
        warnings.append(f"{text} — diff requested via --allow-workflow-mismatch")
        return None
    return {
        "ok": False,
        "reason": "workflow_mismatch",
        "message": f"{text}; use --allow-workflow-mismatch to diff anyway",
        "workflows": changed,
        "baseWorkflowDigests": {w: bd[w] for w in changed},
        "currentWorkflowDigests": {w: hd[w] for w in changed},
        "warnings": warnings,
    }


def _side(row: dict[str, Any]) -> dict[str, Any]:
    keys = ("score", "score_ci", "pass_rate", "pass_rate_ci", "count", "tasks")
    return {k: row.get(k) for k in keys}


def _strata(b: dict[str, Any], h: dict[str, Any]) -> tuple[Strata, bool]:
    """(current passes, checks, base passes, checks) per task checked in both; False when a
    report lacks the per-task counts (made before they were recorded)."""
    bt, ht = b.get("per_task"), h.get("per_task")
    if not isinstance(bt, list) or not isinstance(ht, list):
        return [], False
    base_by = {t["task_id"]: t for t in bt if t.get("checks")}
    strata = [
        (t["passes"], t["checks"], base_by[t["task_id"]]["passes"], base_by[t["task_id"]]["checks"])
        for t in sorted(ht, key=lambda t: t["task_id"])
        if t.get("checks") and t["task_id"] in base_by
    ]
    return strata, True


def _d(a: Any, b: Any) -> float | None:
    return None if a is None or b is None else a - b


def compare(base: Envelope, head: Envelope, warnings: list[str]) -> dict[str, Any] | None:
    """The ``workflow`` part of a comparison, or None unless both reports have a workflow block."""
    bw, hw = _block(base), _block(head)
    if bw is None or hw is None:
        if bw is not None or hw is not None:
            where = "base" if bw is not None else "current"
            warnings.append(f"only the {where} report has workflow compliance; not compared")
        return None
    bb, hb = bw.get("by_workflow") or {}, hw.get("by_workflow") or {}
    out: dict[str, Any] = {}
    ids = sorted(set(bb) & set(hb))
    family = []
    for wid in ids:
        strata, counted = _strata(bb[wid], hb[wid])
        if not counted:
            warnings.append(f"workflow {wid}: a report has no per-task checks (an older report); change not tested")
        family.append(strata)
    for wid, paired in zip(ids, paired_changes(family)):
        out[wid] = {
            "workflow_id": wid,
            "base": _side(bb[wid]),
            "current": _side(hb[wid]),
            "score_delta": _d(hb[wid].get("score"), bb[wid].get("score")),
            "pass_rate_delta": _d(hb[wid].get("pass_rate"), bb[wid].get("pass_rate")),
            "paired": paired,
            "beyond_noise": paired["significant"],
        }
    return {
        "rule": RULE,
        "by_workflow": out,
        "only_in_base": sorted(set(bb) - set(hb)),
        "only_in_current": sorted(set(hb) - set(bb)),
    }


def _interval(p: dict[str, Any]) -> str:
    if p["low"] is None:
        return "n/a"
    level = "" if abs(p["confidence"] - 0.95) < 1e-9 else f" at {100 * p['confidence']:.3g}%"
    return f"[{signed(p['low'])}, {signed(p['high'])}]{level}"


def markdown_lines(result: dict[str, Any]) -> list[str]:
    """The ``## Workflow compliance (current − base)`` section, or nothing."""
    wf = result.get("workflow")
    if not wf:
        return []
    rows = []
    for wid, c in wf["by_workflow"].items():
        p = c["paired"]
        rows.append(
            [
                wid,
                f"{num(c['base']['score'])} → {num(c['current']['score'])}",
                signed(c["score_delta"]),
                f"{num(c['base']['pass_rate'])} → {num(c['current']['pass_rate'])}",
                p["tasks"],
                signed(p["delta"]),
                _interval(p),
                "n/a" if p["p_value_holm"] is None else f"{p['p_value_holm']:.2g}",
                "yes" if c["beyond_noise"] else "no",
            ]
        )
    head = [
        "workflow",
        "compliance",
        "Δ",
        "strict pass",
        "tasks in both",
        "Δ strict (same tasks)",
        "CI (95%, or Holm's level)",
        "p (Holm)",
        "beyond noise",
    ]
    lines = ["", "## Workflow compliance (current − base)", ""]
    lines.append(tabulate(rows, head, tablefmt="github", disable_numparse=True) if rows else "no workflow in both")
    for key, where in (("only_in_base", "base"), ("only_in_current", "current")):
        if wf[key]:
            lines += ["", f"only in the {where} report: {', '.join(wf[key])}"]
    return lines + ["", f"workflow noise rule — {wf['rule']}"]
