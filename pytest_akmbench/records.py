"""The records every layer shares: arms, outcomes, and the typed shapes of samples and reports.

Plain typing only (no imports of the package, nothing at run time beyond ``typing``), so the
pytest entry point can use it while the bench is inert. The shapes are documented in
docs/report.md (the envelope) and docs/architecture.md (the sample).
"""

from __future__ import annotations

from typing import Literal, get_args

Arm = Literal["noakm", "akm", "synthetic"]
Outcome = Literal["pass", "fail", "budget_exceeded", "harness_error"]

# A cell of the matrix: (task id, arm, seed). A trial is a cell under one fingerprint.
CellKey = tuple[str, str, int]

ARMS: tuple[Arm, ...] = get_args(Arm)
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)
# harness_error attempts stay in the store but never count: they run again and are out of
# every pass-rate denominator.
VALID_OUTCOMES: frozenset[Outcome] = frozenset(("pass", "fail", "budget_exceeded"))
