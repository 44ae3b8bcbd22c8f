"""Sentences the summary and the page share, so both say the same thing."""

from __future__ import annotations

from typing import Any


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


def few_paired_tasks(paired: dict[str, Any] | None) -> str:
    """Why the diamond may span the whole axis: with n paired tasks the exact sign-flip test's
    smallest two-sided p is 2^(1-n), so below 6 tasks no difference is excluded at 95%."""
    n = int((paired or {}).get("tasks") or 0)
    if not n or 2.0 ** (1 - n) < 0.05:
        return ""
    return (
        f" With {n} paired task{'s' if n != 1 else ''} the exact test's smallest p is {2.0 ** (1 - n):.3g}, above "
        "0.05, so its 95% interval cannot exclude any difference: the diamond spans the whole range whatever the "
        "tasks show (6 paired tasks are the fewest that can)."
    )
