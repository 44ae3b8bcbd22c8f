"""Compare two report envelopes: refuse what is not comparable, say what changed beyond noise.

Refusals (docs/report.md, "compare") are in :mod:`compare_refusals`; the markdown in
:mod:`compare_markdown`; the command line in :mod:`pytest_akmbench.cli.compare`.
Unlike the reference, every arm that ran in both reports is compared, not only akm, and each
change carries a verdict on noise (docs/report.md, "compare"). Both reports ran the same tasks,
so the question is whether *these* tasks changed, and the runs of a task are the unit:

* per arm, aggregate: a stratified permutation test of "every task has the same pass
  probability in both reports" (runs permuted within each task), on the mean per-task change;
  it is exact whatever the number of runs of each task on each side (e.g. 3 seeds vs 5).
  Holm's adjustment runs over the arms compared;
* per task: Fisher's exact test on passes / valid runs, Holm over every task of every arm.

Pure: no pytest.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from . import corpus_diff, metrics, significance, stats
from .compare_refusals import corpus_field, refusal

FLAT = 0.005
NOISE_RULE = (
    "aggregate: stratified permutation test over the tasks both reports ran (runs permuted within each task), "
    "Holm-adjusted p < 0.05 over the arms compared; per task: Fisher exact test, Holm-adjusted p < 0.05 over "
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


def arm_ran(envelope: dict[str, Any], arm: str) -> bool:
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


def _change_interval(strata: list[tuple[int, int, int, int]], delta: float) -> tuple[float, float]:
    """95% normal interval of the mean per-task change, with Agresti–Caffo variances per side
    (passes + 1 over runs + 2), so tasks at 0/n or n/n still carry their run noise."""
    var = math.fsum(
        ((c + 1) / (n + 2)) * (1 - (c + 1) / (n + 2)) / (n + 2)
        for ch, nh, cb, nb in strata
        for c, n in ((ch, nh), (cb, nb))
    )
    half = stats.Z_95 * math.sqrt(var) / len(strata)
    return max(-1.0, delta - half), min(1.0, delta + half)


def _compare_arm(base: dict[str, Any], head: dict[str, Any], arm: str) -> dict[str, Any]:
    ba, ha = base["aggregate"][arm], head["aggregate"][arm]
    btasks = {t["id"]: t.get(arm) for t in base.get("tasks") or [] if "id" in t}
    htasks = {t["id"]: t.get(arm) for t in head.get("tasks") or [] if "id" in t}
    per_task, strata = _per_task(btasks, htasks)
    aggregate_delta = _d(ha.get("pass_rate"), ba.get("pass_rate"))
    return {
        "base": {"pass_rate": ba.get("pass_rate"), "pass_rate_ci": ba.get("pass_rate_ci"), "tasks": ba.get("tasks")},
        "current": {"pass_rate": ha.get("pass_rate"), "pass_rate_ci": ha.get("pass_rate_ci"), "tasks": ha.get("tasks")},
        "pass_rate_delta": aggregate_delta,
        "pass_rate_sign": sign(aggregate_delta, True, FLAT),
        "tokens_per_pass_delta": _d(ha.get("tokens_per_pass"), ba.get("tokens_per_pass")),
        "tokens_per_pass_sign": sign(_d(ha.get("tokens_per_pass"), ba.get("tokens_per_pass")), False),
        "wallclock_ms_delta": _d(ha.get("wallclock_ms"), ba.get("wallclock_ms")),
        "wallclock_ms_sign": sign(_d(ha.get("wallclock_ms"), ba.get("wallclock_ms")), False),
        "paired": _paired(strata),
        "beyond_noise": False,  # set by compare() after Holm over the arms
        "perTask": per_task,
    }


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


def _paired(strata: list[tuple[int, int, int, int]]) -> dict[str, Any]:
    """The arm's change over the tasks in both reports: mean per-task delta, its interval and
    the stratified permutation test (Holm's adjustment is set later, over the arms)."""
    test = significance.stratified_permutation_test(strata)
    delta = math.fsum(h / nh - b / nb for h, nh, b, nb in strata) / len(strata) if strata else None
    low, high = _change_interval(strata, delta) if delta is not None else (None, None)
    return {
        "tasks": len(strata),
        "delta": delta,
        "low": low,
        "high": high,
        "wins": sum(h * nb > b * nh for h, nh, b, nb in strata),
        "losses": sum(h * nb < b * nh for h, nh, b, nb in strata),
        "ties": sum(h * nb == b * nh for h, nh, b, nb in strata),
        "p_value": test["p_value"],
        "p_value_holm": test["p_value"],
        "holm_family": 1,
        "significant": False,
        "method": "stratified_permutation",
        "exact": test["exact"],
        "iterations": test["resamples"],
        "seed": significance.SEED,
        "unequal_runs": any(nh != nb for _, nh, _, nb in strata),
    }


def _holm(items: list[dict[str, Any]], flag: str) -> None:
    """Holm over the items that were tested; ``flag`` becomes adjusted p < alpha (and, for an
    aggregate, its interval excluding 0, so a verdict never contradicts the interval shown)."""
    tested = [i for i in items if i["p_value"] is not None]
    for item, p in zip(tested, significance.holm([i["p_value"] for i in tested])):
        item["p_value_holm"] = p
        item[flag] = p < significance.ALPHA and not (item.get("low", 1.0) <= 0.0 <= item.get("high", 1.0))


def _ci(counts: tuple[int, int] | None) -> dict[str, float] | None:
    if not counts:
        return None
    pair = stats.wilson_interval(*counts)
    return None if pair is None else {"low": pair[0], "high": pair[1]}


def compare(
    base: dict[str, Any],
    head: dict[str, Any],
    *,
    allow_model_mismatch: bool = False,
    allow_corpus_mismatch: bool = False,
    allow_fixture_mismatch: bool = False,
) -> dict[str, Any]:
    """The comparison of ``head`` (current) against ``base``; ``ok`` False means refused."""
    warnings: list[str] = []
    refused = refusal(base, head, allow_model_mismatch, allow_corpus_mismatch, allow_fixture_mismatch, warnings)
    if refused is not None:
        return refused
    warnings += [w for w in (corpus_diff.incomplete("base", base), corpus_diff.incomplete("current", head)) if w]
    arms = [a for a in metrics.ARM_ORDER if arm_ran(base, a) and arm_ran(head, a)]
    for arm in metrics.ARM_ORDER:
        if arm_ran(base, arm) != arm_ran(head, arm):
            where = "base" if arm_ran(base, arm) else "current"
            warnings.append(f"arm {arm} ran only in the {where} report; not compared")
    compared = {arm: _compare_arm(base, head, arm) for arm in arms}
    _holm([c["paired"] for c in compared.values()], "significant")
    for c in compared.values():
        c["paired"]["holm_family"] = sum(x["paired"]["p_value"] is not None for x in compared.values())
        c["beyond_noise"] = c["paired"]["significant"]
    tasks = [t for c in compared.values() for t in c["perTask"]]
    _holm(tasks, "beyond_noise")
    _warn_unequal_runs(base, head, compared, warnings)
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
    _add_reference_shape(result, base, head, compared)
    return result


def _warn_unequal_runs(
    base: dict[str, Any], head: dict[str, Any], compared: dict[str, dict[str, Any]], warnings: list[str]
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
    result: dict[str, Any], base: dict[str, Any], head: dict[str, Any], compared: dict[str, dict[str, Any]]
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


def load_report(path: Path) -> dict[str, Any]:
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
    return data
