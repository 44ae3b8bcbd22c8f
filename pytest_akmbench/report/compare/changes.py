"""Compare two report envelopes: refuse what is not comparable, say what changed beyond noise.

Refusals (docs/report.md, "compare") are in :mod:`compare_refusals`; the markdown in
:mod:`compare_markdown`; the command line in :mod:`pytest_akmbench.cli.compare`.
Workflow compliance, when both reports have it, is compared per workflow in
:mod:`compare_workflow`. Unlike the reference, every arm that ran in both reports is compared, not only akm, and each
change carries a verdict on noise (docs/report.md, "compare"). Both reports ran the same tasks,
so the question is whether *these* tasks changed, and the runs of a task are the unit:

* per arm, aggregate: a stratified permutation test of "every task has the same pass
  probability in both reports" (runs permuted within each task), on the mean per-task change;
  it is exact whatever the number of runs of each task on each side (e.g. 3 seeds vs 5).
  Holm's adjustment runs over the arms compared, and each arm's interval is built on the same
  test at its Holm step's level, so it excludes 0 exactly when the change is beyond noise
  (:mod:`compare_stats`);
* per task: Fisher's exact test on passes / valid runs, Holm over every task of every arm.

Pure: no pytest.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

from ...stats import intervals as stats
from ...stats import significance
from .. import metrics
from ..envelope_types import Envelope
from . import corpus_diff
from . import workflow as compare_workflow
from .refusals import agent_of, corpus_field, refusal
from .stats import Strata, holm_flag, paired_changes

FLAT = 0.005
NOISE_RULE = (
    "aggregate: stratified permutation test over the tasks both reports ran (runs permuted within each task), "
    "Holm-adjusted p < 0.05 over the arms compared, the interval built on the same test at the level of its Holm "
    "step (it excludes 0 exactly when the change is beyond noise); per task: Fisher exact test, Holm-adjusted p < 0.05 over "
    "every task compared"
)


def _counts(row: dict[str, Any] | None) -> tuple[int, int] | None:
    """(passes, valid runs) of a per-task row; reference envelopes only have rate × count."""
    if not isinstance(row, dict) or row.get("pass_rate") is None:
        return None
    n = row.get("valid_count", row.get("count"))
    if not isinstance(n, int) or n <= 0:
        return None
    c = row.get("passes")
    if not isinstance(c, int):
        c = round(row["pass_rate"] * n)
    return max(0, min(c, n)), n


def arm_ran(envelope: Envelope, arm: str) -> bool:
    """True when the report has a measured pass rate for ``arm`` (a zeroed reference arm is not)."""
    agg = (envelope.get("aggregate") or {}).get(arm)
    if not isinstance(agg, dict) or agg.get("pass_rate") is None:
        return False
    return any(_counts(t.get(arm)) for t in envelope.get("tasks") or []) or not envelope.get("tasks")


def sign(delta: float | None, higher_is_better: bool, flat: float = 0.0) -> str:
    """``improve``, ``regress`` or ``flat`` (a change of at most ``flat`` either way)."""
    if delta is None or abs(delta) <= flat:
        return "flat"
    return "improve" if (delta > 0) == higher_is_better else "regress"


def _d(a: Any, b: Any) -> float | None:
    return None if a is None or b is None else a - b


def _compare_arm(base: Envelope, head: Envelope, arm: str) -> tuple[dict[str, Any], Strata]:
    """The arm's comparison (its ``paired`` change is set over the family of arms) and its strata."""
    ba, ha = base["aggregate"][arm], head["aggregate"][arm]
    btasks = {t["id"]: t.get(arm) for t in base.get("tasks") or [] if "id" in t}
    htasks = {t["id"]: t.get(arm) for t in head.get("tasks") or [] if "id" in t}
    per_task, strata = _per_task(btasks, htasks)
    aggregate_delta = _d(ha.get("pass_rate"), ba.get("pass_rate"))
    comparison = {
        "base": {"pass_rate": ba.get("pass_rate"), "pass_rate_ci": ba.get("pass_rate_ci"), "tasks": ba.get("tasks")},
        "current": {"pass_rate": ha.get("pass_rate"), "pass_rate_ci": ha.get("pass_rate_ci"), "tasks": ha.get("tasks")},
        "pass_rate_delta": aggregate_delta,
        "pass_rate_sign": sign(aggregate_delta, True, FLAT),
        "tokens_per_pass_delta": _d(ha.get("tokens_per_pass"), ba.get("tokens_per_pass")),
        "tokens_per_pass_sign": sign(_d(ha.get("tokens_per_pass"), ba.get("tokens_per_pass")), False),
        "wallclock_ms_delta": _d(ha.get("wallclock_ms"), ba.get("wallclock_ms")),
        "wallclock_ms_sign": sign(_d(ha.get("wallclock_ms"), ba.get("wallclock_ms")), False),
        "paired": None,  # set by compare() with Holm over the arms
        "beyond_noise": False,
        "perTask": per_task,
    }
    return comparison, strata


def _per_task(
    btasks: dict[str, Any], htasks: dict[str, Any]
) -> tuple[list[dict[str, Any]], list[tuple[int, int, int, int]]]:
    """The per-task rows of one arm (outer join of the two reports), and the (passes, runs) of
    current and base of every task in both."""
    per_task = []
    strata: list[tuple[int, int, int, int]] = []
    for tid in sorted(set(btasks) | set(htasks)):
        bc, hc = _counts(btasks.get(tid)), _counts(htasks.get(tid))
        if bc is None and hc is None:
            continue
        per_task.append(_task_row(tid, bc, hc))
        if bc and hc:
            strata.append((*hc, *bc))
    return per_task, strata


def _task_row(tid: str, bc: tuple[int, int] | None, hc: tuple[int, int] | None) -> dict[str, Any]:
    presence = "both" if bc and hc else "base-only" if bc else "current-only"
    row: dict[str, Any] = {
        "id": tid,
        "presence": presence,
        "base_pass_rate": bc[0] / bc[1] if bc else None,
        "current_pass_rate": hc[0] / hc[1] if hc else None,
        "base_ci": _ci(bc),
        "current_ci": _ci(hc),
        "base_runs": bc[1] if bc else None,
        "current_runs": hc[1] if hc else None,
    }
    row["delta"] = _d(row["current_pass_rate"], row["base_pass_rate"])
    row["sign"] = sign(row["delta"], True, FLAT)
    row["p_value"] = significance.fisher_exact(*hc, *bc) if bc and hc else None
    row["p_value_holm"] = row["p_value"]
    row["beyond_noise"] = False  # set by compare() after Holm over every task
    return row


def _ci(counts: tuple[int, int] | None) -> dict[str, float] | None:
    if not counts:
        return None
    pair = stats.wilson_interval(*counts)
    return None if pair is None else {"low": pair[0], "high": pair[1]}


def compare(
    base: Envelope,
    head: Envelope,
    *,
    allow_model_mismatch: bool = False,
    allow_corpus_mismatch: bool = False,
    allow_fixture_mismatch: bool = False,
    allow_workflow_mismatch: bool = False,
    allow_agent_mismatch: bool = False,
) -> dict[str, Any]:
    """The comparison of ``head`` (current) against ``base``; ``ok`` False means refused."""
    warnings: list[str] = []
    refused = refusal(
        base,
        head,
        allow_model_mismatch,
        allow_corpus_mismatch,
        allow_fixture_mismatch,
        warnings,
        allow_workflow_mismatch,
        allow_agent_mismatch,
    )
    if refused is not None:
        return refused
    warnings += [w for w in (corpus_diff.incomplete("base", base), corpus_diff.incomplete("current", head)) if w]
    arms = [a for a in metrics.ARM_ORDER if arm_ran(base, a) and arm_ran(head, a)]
    for arm in metrics.ARM_ORDER:
        if arm_ran(base, arm) != arm_ran(head, arm):
            where = "base" if arm_ran(base, arm) else "current"
            warnings.append(f"arm {arm} ran only in the {where} report; not compared")
    built = [_compare_arm(base, head, arm) for arm in arms]
    compared = {arm: c for arm, (c, _) in zip(arms, built)}
    for (c, _), change in zip(built, paired_changes([s for _, s in built])):
        c["paired"], c["beyond_noise"] = change, change["significant"]
    tasks = [t for c in compared.values() for t in c["perTask"]]
    holm_flag(tasks, "beyond_noise")
    _warn_unequal_runs(base, head, compared, warnings)
    if "akm" in compared:
        _warn_other_akm(base, head, warnings)
    result: dict[str, Any] = {
        "ok": True,
        "baseModel": (base.get("agent") or {}).get("model"),
        "currentModel": (head.get("agent") or {}).get("model"),
        "baseFixtureContentHash": corpus_field(base, "fixtureContentHash"),
        "currentFixtureContentHash": corpus_field(head, "fixtureContentHash"),
        "warnings": warnings,
        "noise_rule": NOISE_RULE,
        "per_task_family": sum(t["p_value"] is not None for t in tasks),
        "arms": compared,
    }
    if (base.get("agent") or {}).get("harness") != (head.get("agent") or {}).get("harness"):
        result["baseAgent"], result["currentAgent"] = agent_of(base), agent_of(head)  # only when they differ
    workflows = compare_workflow.compare(base, head, warnings)
    if workflows is not None:  # only when both reports have workflow compliance
        result["workflow"] = workflows
    _add_reference_shape(result, base, head, compared)
    return result


def _warn_other_akm(base: Envelope, head: Envelope, warnings: list[str]) -> None:
    """The akm each report's akm arm ran, as its samples recorded it (the provenance): when they
    differ, the akm arm's change is akm's as much as the agent's."""
    ran = [
        ((e.get("provenance") or {}).get("akm_version"), (e.get("provenance") or {}).get("akm_sha256"))
        for e in (base, head)
    ]
    if None in (ran[0][0], ran[1][0]) or ran[0] == ran[1]:
        return
    (bv, bsha), (hv, hsha) = ran
    what = (
        f"akm {bv} in base, {hv} in current"
        if bv != hv
        else f"akm {bv} built twice (sha256 {str(bsha)[:12]} in base, {str(hsha)[:12]} in current)"
    )
    warnings.append(f"the akm arm ran {what}: its change includes akm's own")


def _warn_unequal_runs(
    base: Envelope, head: Envelope, compared: dict[str, dict[str, Any]], warnings: list[str]
) -> None:
    bs, hs = corpus_field(base, "seedsPerArm"), corpus_field(head, "seedsPerArm")
    if bs != hs or any(c["paired"]["unequal_runs"] for c in compared.values()):
        counts = (
            f"seeds per arm: base {bs}, current {hs}" if bs != hs else "some tasks have different numbers of valid runs"
        )
        warnings.append(
            f"the reports differ in runs per task ({counts}): per-task rates are not equally precise; "
            "the tests use each task's own runs (stratified permutation, Fisher exact), which stays valid"
        )


def _add_reference_shape(
    result: dict[str, Any], base: Envelope, head: Envelope, compared: dict[str, dict[str, Any]]
) -> None:
    """The lift in each report and its change, and the reference's akm-only ``aggregate``."""
    bl, hl = ((e.get("aggregate") or {}).get("delta") or {} for e in (base, head))
    if (
        "akm" in compared
        and "noakm" in compared
        and bl.get("pass_rate") is not None
        and hl.get("pass_rate") is not None
    ):
        result["lift"] = {
            "base": bl["pass_rate"],
            "current": hl["pass_rate"],
            "change": hl["pass_rate"] - bl["pass_rate"],
        }
    if "akm" in compared:  # the reference's akm-only shape, for tools that read it
        c = compared["akm"]
        result["aggregate"] = {
            "passRateDelta": c["pass_rate_delta"],
            "passRateSign": c["pass_rate_sign"],
            "tokensPerPassDelta": c["tokens_per_pass_delta"],
            "tokensPerPassSign": c["tokens_per_pass_sign"],
            "wallclockMsDelta": c["wallclock_ms_delta"],
            "wallclockMsSign": c["wallclock_ms_sign"],
        }


def load_report(path: Path) -> Envelope:
    """Read a report; ValueError with a one-line message naming the file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ValueError(f"cannot read {path}: {err.strerror or err}") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not UTF-8 text") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path} is not valid JSON: {err.msg} at line {err.lineno}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a report (expected a JSON object)")
    # A report read back is taken as an envelope; compare's refusals check what it uses.
    return cast("Envelope", data)
