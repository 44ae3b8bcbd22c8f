"""Where akm helped or hurt: negative transfer (tasks where akm's pass rate fell below noakm's
beyond noise),
per-domain deltas, the assets regressed tasks loaded, and pass rates by memory ability and task
family (docs/report.md)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from ..corpus.tasks import MEMORY_ABILITIES, Task
from ..records import Sample
from ..stats import significance
from .akm_usage import counted
from .metrics import known_mean


def _counts(row: dict[str, Any] | None) -> tuple[int, int] | None:
    """(passes, valid runs) of an arm's per-task row, None when the arm has no valid run."""
    if not row or row.get("pass_rate") is None or not row.get("valid_count"):
        return None
    return int(row["passes"]), int(row["valid_count"])


def _tested(
    tasks_out: Sequence[dict[str, Any]],
) -> list[tuple[dict[str, Any], tuple[int, int, int, int], float, float]]:
    """Each task both arms measured, its (akm passes, runs, noakm passes, runs), the one-sided
    Fisher p that akm passes less often than noakm, and the smallest p its passes allow."""
    out = []
    for t in tasks_out:
        a, b = _counts(t.get("akm")), _counts(t.get("noakm"))
        if a is not None and b is not None:
            smallest = float(significance.split_odds(*a, *b)[0][1])
            out.append((t, (*a, *b), significance.fisher_lower(*a, *b), smallest))
    return out


def tarone_family(smallest: Sequence[float], alpha: float = significance.ALPHA) -> int:
    """Tarone's family size: the smallest K such that at most K tasks could reach p <= alpha/K at
    all. A task whose passes allow no p that small (1 pass in 10 runs can never look like a drop)
    cannot be a false claim, so it need not share alpha; a Bonferroni test at alpha/K over the
    tasks that can keep the chance of any false claim at alpha, as over every task
    (docs/report.md, "Negative transfer"). With 17 tasks × 5 seeds the best p is 1/252:
    Holm over all 17 could never reach it, Tarone's K usually can."""
    k = 1
    while sum(p <= alpha / k for p in smallest) > k:
        k += 1
    return k


def negative_transfer(tasks_out: Sequence[dict[str, Any]], domain_of: dict[str, str]) -> list[dict[str, Any]]:
    """Tasks where akm passes less often than noakm beyond noise: one-sided Fisher exact test per
    task at alpha / K, K being Tarone's family over the tasks both arms measured (docs/report.md,
    "Negative transfer"). A task merely below noakm is not listed: with 17 tasks × 5 seeds and no
    effect at all, about 6 are."""
    tested = _tested(tasks_out)
    family = tarone_family([x[3] for x in tested])
    regressed = []
    for t, _, p, smallest in tested:
        a, b = t["akm"]["pass_rate"], t["noakm"]["pass_rate"]
        if smallest <= significance.ALPHA / family and p <= significance.ALPHA / family:
            regressed.append(
                {
                    "task_id": t["id"],
                    "domain": domain_of[t["id"]],
                    "noakm_pass_rate": b,
                    "akm_pass_rate": a,
                    "delta": a - b,
                    "severity": b - a,
                    "p_value": p,
                    "p_value_adjusted": min(1.0, p * family),
                    "family": family,
                }
            )
    regressed.sort(key=lambda r: (-r["severity"], r["task_id"]))
    return regressed


def negative_transfer_noise(tasks_out: Sequence[dict[str, Any]], regressed: int) -> dict[str, Any]:
    """How many tasks are below noakm at all, and how many noise alone would put there: for each
    task, the chance that akm's rate falls below noakm's when its passes split between the arms at
    random (the same null as the test), summed; ``regressed`` is the count beyond noise."""
    tested = _tested(tasks_out)
    below = sum(t["akm"]["pass_rate"] < t["noakm"]["pass_rate"] for t, *_ in tested)
    expected = 0.0
    for _, (c_a, n_a, c_b, n_b), *_ in tested:
        t = c_a + c_b
        expected += float(sum(q for x, q in significance.split_odds(c_a, n_a, c_b, n_b) if x * n_b < (t - x) * n_a))
    return {
        "tasks_tested": len(tested),
        "tasks_below": below,
        "expected_below_by_chance": expected,
        "beyond_noise": regressed,
        "family": tarone_family([x[3] for x in tested]),
        "test": "one-sided Fisher exact test per task (akm passes less often than noakm) at 0.05/K, "
        "K = Tarone's count of the tasks whose passes could show a drop that small",
    }


def _arm_mean(rows: Sequence[dict[str, Any]], arm: str, key: str = "pass_rate") -> float | None:
    return known_mean((t.get(arm) or {}).get(key) for t in rows)


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def domain_level_deltas(
    tasks_out: Sequence[dict[str, Any]], domain_of: dict[str, str], regressed: set[str]
) -> list[dict[str, Any]]:
    """One row per domain (docs/report.md); an arm not run gives None, not 0."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for t in tasks_out:
        groups[domain_of[t["id"]]].append(t)
    out = []
    for domain in sorted(groups):
        rows = groups[domain]
        noakm, akm = _arm_mean(rows, "noakm"), _arm_mean(rows, "akm")
        out.append(
            {
                "domain": domain,
                "task_count": len(rows),
                "regression_count": sum(t["id"] in regressed for t in rows),
                "pass_rate_noakm": noakm,
                "pass_rate_akm": akm,
                "pass_rate_delta": _diff(akm, noakm),
                "tokens_per_pass_delta": _diff(
                    _arm_mean(rows, "akm", "tokens_per_pass"), _arm_mean(rows, "noakm", "tokens_per_pass")
                ),
                "wallclock_ms_delta": _diff(
                    _arm_mean(rows, "akm", "wallclock_ms"), _arm_mean(rows, "noakm", "wallclock_ms")
                ),
            }
        )
    return out


def asset_regression_candidates(akm_runs: Sequence[Sample], regressed: set[str]) -> list[dict[str, Any]]:
    """Assets loaded by akm-arm runs of regressed tasks (docs/report.md; harness errors excluded)."""
    tasks: dict[str, set[str]] = defaultdict(set)
    loads: dict[str, int] = defaultdict(int)
    for s in akm_runs:
        traj = counted(s)
        if traj is None or s["task_id"] not in regressed:
            continue
        for ref in traj["assets_loaded"]:
            tasks[ref].add(s["task_id"])
            loads[ref] += 1
    rows: list[dict[str, Any]] = [
        {
            "asset_ref": ref,
            "regressed_task_count": len(ids),
            "regressed_task_ids": sorted(ids),
            "total_load_count": loads[ref],
        }
        for ref, ids in tasks.items()
    ]
    rows.sort(key=lambda r: (-r["regressed_task_count"], -r["total_load_count"], r["asset_ref"]))
    return rows


def _compliance(ids: list[str], compliance: dict[str, float]) -> float | None:
    """The mean workflow compliance of the tasks that have one; None if none has."""
    have = [compliance[i] for i in ids if i in compliance]
    return sum(have) / len(have) if have else None


def corpus_coverage(
    tasks: Sequence[Task],
    tasks_out: Sequence[dict[str, Any]],
    compliance: dict[str, float] | None = None,
    regressed: set[str] | None = None,
) -> dict[str, Any]:
    """``corpus_coverage`` (docs/report.md); the inner ``coverage`` keys stay camelCase.
    ``compliance`` is each task's workflow compliance (report/workflow.py); ``regressed`` the
    tasks with negative transfer beyond noise (:func:`negative_transfer`)."""
    compliance = compliance or {}
    regressed = regressed or set()
    abilities = dict.fromkeys(("untagged", *MEMORY_ABILITIES), 0)
    families: dict[str, int] = {}
    untagged_family = 0
    for t in tasks:
        abilities[t.memory_ability or "untagged"] = abilities.get(t.memory_ability or "untagged", 0) + 1
        if t.task_family:
            families[t.task_family] = families.get(t.task_family, 0) + 1
        else:
            untagged_family += 1
    if untagged_family:
        families["untagged"] = untagged_family
    by_id = {t["id"]: t for t in tasks_out}

    def rows(attr: str) -> list[dict[str, Any]]:
        groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for t in tasks:
            value = getattr(t, attr)
            if value:
                groups[value].append(by_id[t.id])
        out = []
        for category in sorted(groups):
            g = groups[category]
            noakm, akm = _arm_mean(g, "noakm"), _arm_mean(g, "akm")
            out.append(
                {
                    "category": category,
                    "task_count": len(g),
                    "pass_rate_noakm": noakm,
                    "pass_rate_akm": akm,
                    "pass_rate_delta": _diff(akm, noakm),
                    "negative_transfer_count": sum(t["id"] in regressed for t in g),
                    "workflow_compliance": _compliance([t["id"] for t in g], compliance),
                }
            )
        return out

    return {
        "coverage": {"totalTasks": len(tasks), "memoryAbilityCounts": abilities, "taskFamilyCounts": families},
        "by_memory_ability": rows("memory_ability"),
        "by_task_family": rows("task_family"),
    }
