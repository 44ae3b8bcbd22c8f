"""Where akm helped or hurt: negative transfer (tasks where akm's pass rate fell below noakm's),
per-domain deltas, the assets regressed tasks loaded, and pass rates by memory ability and task
family (docs/report.md)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from ..corpus.tasks import MEMORY_ABILITIES, Task
from .akm_usage import counted
from .metrics import Sample, known_mean


def negative_transfer(tasks_out: Sequence[dict[str, Any]], domain_of: dict[str, str]) -> list[dict[str, Any]]:
    """Tasks where akm's pass rate is strictly below noakm's (both arms measured)."""
    regressed = []
    for t in tasks_out:
        a, b = (t.get("akm") or {}).get("pass_rate"), (t.get("noakm") or {}).get("pass_rate")
        if a is not None and b is not None and a < b:
            regressed.append(
                {
                    "task_id": t["id"],
                    "domain": domain_of[t["id"]],
                    "noakm_pass_rate": b,
                    "akm_pass_rate": a,
                    "delta": a - b,
                    "severity": b - a,
                }
            )
    regressed.sort(key=lambda r: (-r["severity"], r["task_id"]))
    return regressed


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
    tasks: Sequence[Task], tasks_out: Sequence[dict[str, Any]], compliance: dict[str, float] | None = None
) -> dict[str, Any]:
    """``corpus_coverage`` (docs/report.md); the inner ``coverage`` keys stay camelCase.
    ``compliance`` is each task's workflow compliance (report/workflow.py)."""
    compliance = compliance or {}
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
                    "negative_transfer_count": sum(
                        1
                        for t in g
                        if (t.get("akm") or {}).get("pass_rate") is not None
                        and (t.get("noakm") or {}).get("pass_rate") is not None
                        and t["akm"]["pass_rate"] < t["noakm"]["pass_rate"]
                    ),
                    "workflow_compliance": _compliance([t["id"] for t in g], compliance),
                }
            )
        return out

    return {
        "coverage": {"totalTasks": len(tasks), "memoryAbilityCounts": abilities, "taskFamilyCounts": families},
        "by_memory_ability": rows("memory_ability"),
        "by_task_family": rows("task_family"),
    }
