"""The records every layer shares: arms, outcomes, and the typed shapes of samples and reports.

Plain typing only (no imports of the package, nothing at run time beyond ``typing``), so the
pytest entry point can use it while the bench is inert. The shapes are documented in
docs/report.md (the envelope) and docs/architecture.md (the sample).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, TypedDict, get_args

if TYPE_CHECKING:
    from collections.abc import Mapping

Arm = Literal["noakm", "akm", "synthetic"]
Outcome = Literal["pass", "fail", "budget_exceeded", "harness_error"]

# The version of the sample record: a stored line of another schema (a newer plugin's, a
# hand-made one) may mean something else by the same keys, and is never read as a Sample.
SAMPLE_SCHEMA = 1

# A cell of the matrix: (task id, arm, seed). A trial is a cell under one fingerprint.
CellKey = tuple[str, str, int]

ARMS: tuple[Arm, ...] = get_args(Arm)
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)
# harness_error attempts stay in the store but never count: they run again and are out of
# every pass-rate denominator.
VALID_OUTCOMES: frozenset[Outcome] = frozenset(("pass", "fail", "budget_exceeded"))


class Timing(TypedDict):
    """Milliseconds of a cell's phases."""

    setup: int
    agent: int
    verify: int
    total: int


class VerifierPart(TypedDict):
    kind: str
    exit_code: int  # -1 when the verifier did not run
    output_tail: str


class AgentPart(TypedDict):
    name: str
    version: str


class _SampleFields(TypedDict):
    schema: int
    task_id: str
    arm: str  # one of ARMS: a track's cells say what else they are in their own fields
    seed: int
    domain: str
    slice: str
    outcome: Outcome
    reason: str | None
    budget: str | None  # "tokens", "wall" or "turns" when a budget was hit
    budget_tag: str | None  # "hung" or "confused"
    tokens: dict[str, int] | None
    token_measurement: str
    cost_usd: float | None
    turns: int | None
    tool_calls: int | None
    wallclock_ms: int
    timing_ms: Timing
    verifier: VerifierPart
    final_text_tail: str
    akm: dict[str, Any] | None
    akm_setup: dict[str, Any] | None
    trajectory: dict[str, Any] | None
    workflow: dict[str, Any] | None  # the workflow checks of the cell (docs/report.md)
    transcript: str | None
    agent: AgentPart
    model: str | None
    providers: dict[str, Any] | None  # the agent's provider setup as a digest (no secrets)
    prompt_version: str
    fingerprint: dict[str, Any]
    fingerprint_hash: str
    run_id: str
    started_at: str
    finished_at: str
    warnings: list[str]
    tamper: list[str] | None  # what the agent left that could stand in for the verifier's tools


class Sample(_SampleFields, total=False):
    """One cell's record in the store (docs/architecture.md, "A sample"): made by the runner,
    appended once, read by resume, the report and compare.

    An evolve cell runs as the akm or synthetic arm: ``condition`` (pre, train, post, control,
    synthetic) and ``episode`` say which of the track's cells it is (docs/tracks.md, "evolve").
    ``from_store`` marks a sample a run reports without running it; it is never stored."""

    condition: str
    episode: int
    from_store: bool


def of_a_track(record: Mapping[str, Any]) -> bool:
    """Whether a stored record is a track's cell (evolve's), which a utility report never
    counts: its arm is a utility arm, but its ``condition`` says what else it is."""
    return "condition" in record
