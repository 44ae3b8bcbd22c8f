"""Sentences the summary and the page share, so both say the same thing."""

from __future__ import annotations

from typing import Any

from . import significance


def trajectory_not_observed(counts: dict[str, Any]) -> str:
    """Why no akm-arm run has a trajectory: a run whose agent never ran (a harness error) is not
    observed, it is not a run that failed to use akm (docs/report.md, "Trajectory")."""
    runs, errors = counts["runs"], counts["harness_error_runs"]
    if runs and errors == runs:
        return (
            f"not observed: all {runs} akm-arm runs ended in harness_error, so the agent's use of akm "
            "was never measured (see the harness errors)"
        )
    text = (
        f"not observed: none of the {runs - errors} akm-arm runs the agent finished recorded a transcript or akm events"
    )
    return text + (f" ({errors} more were harness errors)" if errors else "")


def unconfirmed_akm_log(cells: list[dict[str, Any]], runs: int, limit: int = 10) -> str | None:
    """The akm-arm runs (of ``runs``) whose akm log held events no akm call of the agent accounts
    for, the first ``limit`` named; None when there are none (docs/akm.md, "akm's log,
    cross-checked")."""
    if not cells:
        return None
    named = ", ".join(f"{c['task_id']} s{c['seed']} ({c['unconfirmed_events']} events)" for c in cells[:limit])
    more = f" and {len(cells) - limit} more" if len(cells) > limit else ""
    return (
        f"akm log tampered or unconfirmed in {len(cells)} of {runs} akm-arm runs: {named}{more}; "
        "their akm log holds events no akm call of the agent accounts for, and those events got no credit"
    )


# What the paired sign-flip test rejects (docs/report.md, "How the numbers are tested").
SIGN_FLIP_NULL = (
    "the test's null is that each task's difference is symmetric about 0 (the arms exchangeable within "
    "the task), not merely that the mean difference is 0: per-task effects that average 0 but are skewed "
    "(many small gains, a few large losses) can be called significant more often than 2.5% each way"
)


def too_few_paired_tasks(paired: dict[str, Any] | None) -> str:
    """Why a comparison over so few paired tasks can never be significant, or "" when it can.
    The numbers come from the test: its smallest p on ``tasks`` deltas of one sign, and the fewest
    tasks whose smallest p, Holm-adjusted over ``holm_family`` comparisons, is below 0.05."""
    n = int((paired or {}).get("tasks") or 0)
    family = int((paired or {}).get("holm_family") or 1)
    need = significance.min_paired_tasks(family)
    if not n or n >= need:
        return ""
    smallest = significance.sign_flip_test([1] * n)["p_value"] or 1.0
    holm = f", which Holm over {family} comparisons makes {min(1.0, smallest * family):.3g}" if family > 1 else ""
    return (
        f"with {n} paired task{'s' if n != 1 else ''} the exact test's smallest p is {smallest:.3g}{holm}, above "
        f"0.05, so no difference can be significant: that takes at least {need} paired tasks"
    )


def few_paired_tasks(paired: dict[str, Any] | None) -> str:
    """Why the diamond may span the whole axis (report.html): :func:`too_few_paired_tasks`."""
    why = too_few_paired_tasks(paired)
    if not why:
        return ""
    return (
        f" {why[0].upper()}{why[1:]}; its interval cannot exclude any difference, so the diamond spans the "
        "whole range whatever the tasks show."
    )
