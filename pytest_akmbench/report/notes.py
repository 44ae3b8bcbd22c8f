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
