"""akm's lift per agent, side by side: several agents' utility reports on the same tasks
(docs/report.md, "Lift per agent").

Every agent is read from its own report envelope, so harness errors and budget_exceeded runs
count exactly as in that report: harness errors are out of every figure and counted on their own
(a lift is unreliable by the report's own rule, :func:`lift.unreliable`), budget_exceeded runs
are valid failures, counted. Only the tasks every agent ran (with the same task.yaml hash) count.

Per agent: each arm's pass rate with its interval over tasks (:func:`metrics.aggregate`) and the
paired akm − noakm lift with its interval (:func:`lift.compare_arms`, the verdict's own), Holm
over the agents. Whether the lifts differ: for each pair of agents, the paired sign-flip test on
the per-task differences of their lifts, tasks as the unit (:func:`interaction`), Holm over the
pairs; docs/report.md says why this test. Pure: no pytest.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from fractions import Fraction
from statistics import NormalDist
from typing import Any

from ..stats import significance
from . import lift, metrics
from .envelope_types import Envelope

ALPHA = significance.ALPHA
ARMS = ("noakm", "akm")
METHOD = "sign_flip_permutation_on_lift_differences"
_LIFT_KEYS = (
    "tasks",
    "tasks_unpaired",
    "delta",
    "low",
    "high",
    "confidence",
    "p_value",
    "p_value_holm",
    "holm_family",
    "significant",
    "exact",
    "wins",
    "losses",
    "ties",
    "harness_errors",
    "reliable",
    "unreliable_reason",
    "artefact_bounds",
)

Outcomes = list[bool]


def agent_name(envelope: Envelope) -> str:
    return str((envelope.get("agent") or {}).get("harness") or "<unknown>")


def shared_tasks(envelopes: Sequence[Envelope]) -> tuple[list[str], list[dict[str, str]]]:
    """The task ids every report ran with the same task.yaml hash (where reports have it), and
    the others with the reason each is left out."""
    ids = [{t["id"] for t in e.get("tasks") or [] if "id" in t} for e in envelopes]
    hashes = [(e.get("corpus") or {}).get("taskHashes") or {} for e in envelopes]
    shared, left = [], []
    for tid in sorted(set().union(*ids)):
        missing = [agent_name(e) for e, have in zip(envelopes, ids) if tid not in have]
        seen = {h[tid] for h in hashes if tid in h}
        if missing:
            left.append({"id": tid, "reason": "not run by " + ", ".join(missing)})
        elif len(seen) > 1:
            left.append({"id": tid, "reason": "its task.yaml differs between the reports"})
        else:
            shared.append(tid)
    return shared, left


def outcomes(row: dict[str, Any] | None) -> Outcomes:
    """A task's valid runs under one arm as pass indicators (passes first; the figures read only
    counts, so the order is immaterial); empty when the arm has no valid run of it."""
    if row is None or not row.get("valid_count"):
        return []
    return [True] * int(row["passes"]) + [False] * (int(row["valid_count"]) - int(row["passes"]))


def _arm(rows: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    agg = metrics.aggregate(rows)
    if agg is None:
        return None
    ci = agg["pass_rate_ci"] or {}
    return {
        "pass_rate": agg["pass_rate"],
        "low": ci.get("low"),
        "high": ci.get("high"),
        "tasks": agg["tasks"],
        "tasks_with_valid_runs": agg["tasks_with_valid_runs"],
        "runs": agg["runs"],
        "valid_runs": agg["valid_runs"],
        "passes": agg["passes"],
        "harness_errors": agg["harness_error_count"],
        "budget_exceeded": agg["budget_exceeded_count"],
    }


def _per_agent(envelope: Envelope, source: str, shared: list[str], resamples: int) -> tuple[dict[str, Any], Any]:
    """One agent's block, and its lift's Comparison (None without both arms) for Holm."""
    by_id = {t["id"]: t for t in envelope.get("tasks") or [] if "id" in t}
    rows = {arm: [by_id[tid].get(arm) for tid in shared] for arm in ARMS}
    agent = envelope.get("agent") or {}
    block: dict[str, Any] = {
        "agent": agent_name(envelope),
        "version": agent.get("version"),
        "model": agent.get("model"),
        "source": source,
        "complete": envelope.get("complete", True),
        "arms": {arm: _arm(rows[arm]) for arm in ARMS},
        "lift": None,
    }
    if any(block["arms"][arm] is None for arm in ARMS):
        return block, None
    akm, noakm = ([outcomes(r) for r in rows[arm]] for arm in ("akm", "noakm"))
    comparison = lift.compare_arms(("akm", "noakm"), rows["akm"], rows["noakm"], akm, noakm, resamples=resamples)
    return block, comparison


def _run_noise(sides: Sequence[Sequence[Outcomes]], alpha: float) -> float:
    """Half-width of a (1 − alpha) normal interval of a mean over tasks of ±(rate of each side)
    from the run noise inside the tasks alone (Agresti–Caffo per side), as the verdict widens its
    own (:func:`lift._run_noise`): here four sides per task, two per agent."""
    var = math.fsum(
        (sum(o) + 1) / (len(o) + 2) * (1 - (sum(o) + 1) / (len(o) + 2)) / (len(o) + 2) for task in sides for o in task
    )
    return NormalDist().inv_cdf(1 - alpha / 2) * math.sqrt(var) / len(sides)


def _rate(o: Outcomes) -> Fraction:
    return Fraction(sum(o), len(o))


def interaction(
    a: Sequence[tuple[Outcomes, Outcomes]],
    b: Sequence[tuple[Outcomes, Outcomes]],
    *,
    alpha: float = ALPHA,
    resamples: int = significance.RESAMPLES,
) -> dict[str, Any]:
    """Agent a's lift − agent b's lift over the tasks (one (akm, noakm) pair of outcome lists per
    task and agent, in the same task order); a task counts when both agents have valid runs on
    both arms. The statistic is the sum over tasks of e = (akm_a − noakm_a) − (akm_b − noakm_b),
    tested by sign flips of the e (:func:`significance.sign_flip_test`): the tasks are the
    clusters, each task's runs enter only through its e, so task-to-task spread, base rates and
    seeds per agent are in e's own spread. The interval is the test's inversion, widened to the
    run noise at the same level; ``significant`` when p < alpha and 0 is outside it."""
    kept = [(x, y) for x, y in zip(a, b) if all(x) and all(y)]
    diffs = [(_rate(xa) - _rate(xn)) - (_rate(ya) - _rate(yn)) for (xa, xn), (ya, yn) in kept]
    # e lies in [-2, 2] and the test clips its bounds to [-1, 1]: it runs on e / 2 (the sign-flip
    # test is scale-free: the same p), and its bounds are doubled back.
    test = significance.sign_flip_test([d / 2 for d in diffs], alpha=alpha, resamples=resamples)
    out: dict[str, Any] = {
        "tasks": len(kept),
        "delta": float(sum(diffs) / len(diffs)) if diffs else None,
        "low": None if test["low"] is None else 2 * test["low"],
        "high": None if test["high"] is None else 2 * test["high"],
        "confidence": 1 - alpha,
        "p_value": test["p_value"],
        "exact": test["exact"],
        "resamples": test["resamples"],
    }
    if diffs:
        half = _run_noise([[*x, *y] for x, y in kept], alpha)
        mean = out["delta"]
        out["low"] = max(-2.0, min(out["low"], mean - half))
        out["high"] = min(2.0, max(out["high"], mean + half))
    out["significant"] = _excludes(out, alpha)
    return out


def _excludes(block: dict[str, Any], level: float) -> bool:
    p, low, high = block["p_value"], block["low"], block["high"]
    return p is not None and p < level and low is not None and high is not None and not low <= 0.0 <= high


def _holm_levels(p_values: list[float], adjusted: list[float]) -> list[float]:
    """Each test's level at its Holm step: ALPHA / (k − min(rank, s)), s the first rank Holm
    cannot reject (as :func:`lift.adjust` sets the report's intervals)."""
    k = len(p_values)
    order = sorted(range(k), key=lambda i: p_values[i])
    stop = next((rank for rank, i in enumerate(order) if adjusted[i] >= ALPHA), k)
    levels = [ALPHA] * k
    for rank, i in enumerate(order):
        levels[i] = ALPHA / (k - min(rank, stop))
    return levels


def _pairs(
    blocks: list[dict[str, Any]], paired: list[list[tuple[Outcomes, Outcomes]] | None], resamples: int
) -> list[dict[str, Any]]:
    """Every pair of agents with a lift, tested (:func:`interaction`), Holm over the pairs: each
    pair's interval is the test's at its Holm step's level, as the report's lifts are
    (:func:`lift.adjust`), so it excludes 0 exactly when the adjusted p is below ALPHA (unless
    the run noise widened it over 0: then it is not significant)."""
    combos = [(i, j) for i, j in itertools.combinations(range(len(paired)), 2) if paired[i] and paired[j]]
    results = [interaction(paired[i], paired[j], resamples=resamples) for i, j in combos]  # type: ignore[arg-type]
    tested = [k for k, r in enumerate(results) if r["p_value"] is not None]
    raw = [results[k]["p_value"] for k in tested]
    adjusted = significance.holm(raw)
    for n, (k, level) in enumerate(zip(tested, _holm_levels(raw, adjusted))):
        if level != ALPHA:
            i, j = combos[k]
            results[k] = interaction(paired[i], paired[j], alpha=level, resamples=resamples)  # type: ignore[arg-type]
        results[k]["p_value_holm"] = adjusted[n]
        results[k]["significant"] = _excludes({**results[k], "p_value": adjusted[n]}, ALPHA)
    out = []
    for (i, j), r in zip(combos, results):
        r.setdefault("p_value_holm", r["p_value"])
        r["holm_family"] = len(tested)
        pair = (blocks[i], blocks[j])
        reasons = [f"{b['agent']}: {b['lift']['unreliable_reason']}" for b in pair if not b["lift"]["reliable"]]
        out.append(
            {
                "agents": [b["agent"] for b in pair],
                "lifts": [b["lift"]["delta"] for b in pair],
                **r,
                "reliable": not reasons,
                "unreliable_reason": "; ".join(reasons) or None,
            }
        )
    return out


def side_by_side(reports: Sequence[tuple[str, Envelope]], *, resamples: int = significance.RESAMPLES) -> dict[str, Any]:
    """The lift-per-agent document of ``reports`` ((source, envelope) each, one agent each)."""
    envelopes = [e for _, e in reports]
    shared, left = shared_tasks(envelopes)
    built = [_per_agent(e, source, shared, resamples) for source, e in reports]
    lift.adjust([c for _, c in built if c is not None])
    blocks, paired = [], []
    for (block, comparison), envelope in zip(built, envelopes):
        if comparison is not None:
            block["lift"] = {k: comparison[k] for k in _LIFT_KEYS}
        blocks.append(block)
        paired.append(_task_pairs(envelope, shared) if comparison is not None else None)
    pairs = _pairs(blocks, paired, resamples)
    tested = [p for p in pairs if p["p_value"] is not None]
    differ = None if not tested or not all(p["reliable"] for p in tested) else any(p["significant"] for p in tested)
    return {
        "schemaVersion": 1,
        "kind": "lift_per_agent",
        "agents": blocks,
        "tasks": {"shared": shared, "left_out": left},
        "interaction": {"method": METHOD, "alpha": ALPHA, "pairs": pairs, "differ": differ},
        "warnings": _warnings(blocks),
    }


def _task_pairs(envelope: Envelope, shared: list[str]) -> list[tuple[Outcomes, Outcomes]]:
    """Per shared task, (akm, noakm) valid outcomes of this agent."""
    by_id = {t["id"]: t for t in envelope.get("tasks") or [] if "id" in t}
    return [(outcomes(by_id[tid].get("akm")), outcomes(by_id[tid].get("noakm"))) for tid in shared]


def _warnings(blocks: list[dict[str, Any]]) -> list[str]:
    out = []
    for b in blocks:
        if b["lift"] is None:
            ran = [arm for arm in ARMS if b["arms"][arm] is not None]
            out.append(f"{b['agent']} ran {' and '.join(ran) or 'no arm'} on the shared tasks: no lift, not compared")
        if not b["complete"]:
            out.append(f"the report of {b['agent']} is incomplete: its figures cover only what ran")
    models = {b["model"] for b in blocks}
    if len(models) > 1:
        out.append(
            "the agents ran different models ("
            + ", ".join(f"{b['agent']} {b['model'] or '<unknown>'}" for b in blocks)
            + "): a difference in lift is the agent's and its model's together"
        )
    return out
