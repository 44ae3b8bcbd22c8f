"""Sentences the summary and the page share, so both say the same thing."""

from __future__ import annotations

from typing import Any

from ...stats.significance import ALPHA, min_paired_tasks, smallest_p


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


def _smallest_p_clause(n: int, family: int) -> str:
    holm = f" ({family} × {smallest_p(n):.3g}, Holm over {family} tests)" if family > 1 else ""
    return (
        f"with {n} paired task{'s' if n != 1 else ''} the exact test's smallest p is {smallest_p(n, family):.3g}{holm}"
    )


def too_few_paired_tasks(paired: dict[str, Any] | None) -> str:
    """Why a comparison over so few paired tasks can never be significant, or "" when it can (the
    verdict's clause): its smallest p, Holm-adjusted over ``holm_family``, and the fewest tasks
    that could be significant, both read off the test."""
    n = int((paired or {}).get("tasks") or 0)
    family = int((paired or {}).get("holm_family") or 1)
    if not n or smallest_p(n, family) < ALPHA:
        return ""
    return (
        f"{_smallest_p_clause(n, family)}, above 0.05, so no difference can be significant: that takes at least "
        f"{min_paired_tasks(family)} paired tasks"
    )


def few_paired_tasks(paired: dict[str, Any] | None) -> str:
    """Why the diamond may span the whole axis (report.html), by the verdict's rule
    (:func:`too_few_paired_tasks`): with n paired tasks the exact sign-flip test's smallest
    two-sided p is 2^(1-n), so below 6 tasks (7 with Holm over two) no difference is excluded."""
    n = int((paired or {}).get("tasks") or 0)
    family = int((paired or {}).get("holm_family") or 1)
    if not too_few_paired_tasks(paired):
        return ""
    clause = _smallest_p_clause(n, family)
    level = f"{100 * ((paired or {}).get('confidence') or 0.95):g}%"
    return (
        f" {clause[0].upper()}{clause[1:]}, above 0.05, so its {level} interval cannot exclude any difference: the "
        f"diamond spans the whole range whatever the tasks show ({min_paired_tasks(family)} paired tasks are the fewest "
        "that can)."
    )


def few_paired_assets(comparisons: list[dict[str, Any]]) -> str:
    """Beside the attribute verdict's "k of m masked assets matter": when no asset has enough
    paired tasks for its Holm-adjusted test ever to reach 0.05, say that the count cannot show
    an asset that matters; empty otherwise (docs/tracks.md, "attribute")."""
    tested = [c for c in comparisons if c.get("p_value") is not None]
    if not tested:
        return ""
    n, family = max(int(c["tasks"]) for c in tested), len(tested)
    if smallest_p(n, family) < ALPHA:
        return ""
    return (
        f" (none could: {_smallest_p_clause(n, family)}, above 0.05, so these tasks cannot show an asset that "
        f"matters; {min_paired_tasks(family)} paired tasks are the fewest that can)"
    )


def asset_cannot_matter(comparison: dict[str, Any] | None, comparisons: list[dict[str, Any]]) -> bool:
    """Whether an asset's Holm-adjusted p can never fall below 0.05: its own test's smallest p,
    or the family's (Holm multiplies the smallest p of all by the family size), is 0.05 or more."""
    tested = [c for c in comparisons if c.get("p_value") is not None]
    if comparison is None or comparison.get("p_value") is None or not tested:
        return False
    most = max(int(c["tasks"]) for c in tested)
    return max(smallest_p(int(comparison["tasks"])), smallest_p(most, len(tested))) >= ALPHA
