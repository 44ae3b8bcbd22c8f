"""The rows of the envelopes' lists, one TypedDict each: a task's figures under an arm, a
reported run, a task's soundness result, a shard whose cells lack samples, a masked asset
(report/envelope_types.py has the blocks that hold them; docs/report.md documents every field)."""

from __future__ import annotations

from typing import Any, TypedDict


class TaskArmRow(TypedDict):
    """One task's figures under one arm (report/metrics.py ``per_task``): a ``tasks[]`` row's
    entry per arm, what the per-arm aggregate and the paired comparisons are made of."""

    pass_rate: float | None
    pass_at_1: int | None
    tokens_per_pass: float | None
    tokens_per_run: float | None
    wallclock_ms: float | None
    pass_rate_stdev: float | None
    budget_exceeded_count: int
    harness_error_count: int
    count: int
    valid_count: int
    runs_with_measured_tokens: int
    passes: int
    pass_rate_ci: dict[str, float] | None
    pass_at_k: dict[str, float | None]
    pass_hat_k: dict[str, float | None]
    flaky: bool
    floor_status: str


class RunTrajectory(TypedDict):
    """A ``runs[]`` row's trajectory: the observed run's figures (None when not observed)."""

    correct_asset_loaded: bool | None
    feedback_recorded: bool | None
    searched_before_acting: bool | None
    akm_answered: bool | None
    unconfirmed_events: int | None


class _RunKeys(TypedDict):
    task_id: str
    arm: str
    seed: int
    outcome: str


class RunRow(_RunKeys, total=False):
    """One ``runs[]`` row, a reported sample (report/envelope.py writes every field). A row read
    back from a report another version wrote (the attribute track's base) is checked for its
    keys only; the other fields may be missing there."""

    model: str | None
    tokens: dict[str, int] | None
    wallclock_ms: int | None
    verifier_exit_code: int
    trajectory: RunTrajectory
    assets_loaded: list[str] | None
    failure_mode: str | None
    token_measurement: str | None
    reason: str | None
    budget: str | None
    budget_tag: str | None
    cost_usd: float | None
    turns: int | None
    tool_calls: int | None
    transcript: str | None
    from_store: bool
    tamper: list[str] | None


class SoundnessRow(TypedDict):
    """A task's stored soundness result as the report shows it (a result stored before a
    field was recorded has it None)."""

    task_id: str
    sound: bool | None
    checks: dict[str, bool | None] | None
    problems: list[str] | None
    found_by: str | None
    akm_version: str | None
    checked_at: str | None


class IncompleteShard(TypedDict):
    """A shard a store recorded running whose own cells lack samples (run/merge.py)."""

    shard: int
    stores: list[str]
    cells: int
    without_sample: int
    unreadable_lines: int


class AttributionTask(TypedDict):
    """One task of an asset's row: the reference's and the masked runs' pass rates."""

    task_id: str
    base_pass_rate: float | None
    masked_pass_rate: float | None
    delta: float | None
    base_runs: int
    masked_runs: int
    masked_harness_errors: int


class _AttributionFields(TypedDict):
    asset_ref: str
    rank: int
    load_count: int
    load_count_passing: int
    loaded_on_tasks: list[str]
    base_pass_rate: float | None
    masked_pass_rate: float | None
    marginal_contribution: float | None
    paired_tasks: int
    masked_runs: int
    comparison: dict[str, Any] | None  # the paired comparison (report/lift.py), Holm over the assets
    per_task: list[AttributionTask]


class AttributionRow(_AttributionFields, total=False):
    """One masked asset's row of ``attributions`` (tracks/attribute/core.py, ``contribution``);
    ``significant`` is set once Holm has run over every asset's comparison."""

    significant: bool
