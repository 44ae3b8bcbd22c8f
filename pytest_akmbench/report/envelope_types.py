"""The report envelope's shape: one TypedDict per block (docs/report.md).

The builders return these and the readers (markdown, page, gates, compare, verdict) take them;
schemas/report.schema.json lists the same fields, closed, for what reads report.json outside
Python. The rows of its lists are in report/envelope_rows.py; a block's deeper parts keyed by
task, asset or arm stay plain dicts here: their keys are data. An envelope read back from a file
is an :class:`Envelope` as far as a reader is concerned; compare checks what it uses
(report/compare/refusals.py).
"""

from __future__ import annotations

from typing import Any, TypedDict

from .envelope_rows import AttributionRow, IncompleteShard, RunRow, SoundnessRow


class AgentBlock(TypedDict):
    harness: str
    version: str
    model: str | None


class CorpusBlock(TypedDict):
    domains: int
    tasks: int
    slice: str
    seedsPerArm: int
    arms: list[str]
    selectedTaskIds: list[str]
    taskCorpusHash: str
    taskHashes: dict[str, str]
    fixtures: dict[str, Any]
    fixtureContentHash: str | None


# Keyed by arm (noakm, akm, and synthetic when it ran: null when the arm has no valid run),
# beside delta (akm - noakm with its paired comparison), akm_over_synthetic_lift and
# akm_over_synthetic_paired: readers index it by arm name, so it stays a dict (the schema closes it).
AggregateBlock = dict[str, Any]


class TrajectoryBlock(TypedDict):
    akm: dict[str, Any] | None


class FailureModes(TypedDict):
    by_label: dict[str, int]
    by_task: dict[str, dict[str, int]]


class TokenMeasurement(TypedDict):
    total_runs: int
    runs_with_measured_tokens: int
    runs_missing_measurement: int
    runs_unsupported_measurement: int
    coverage: float | None
    reliable: bool


class SpendTotals(TypedDict):
    runs: int
    runs_with_tokens: int
    runs_with_cost: int
    token_coverage: float | None
    cost_coverage: float | None
    tokens: dict[str, int | None]
    cost_usd: float | None
    tokens_per_run: float | None
    cost_per_run: float | None


class Efficiency(TypedDict):
    lift: float | None
    extra_tokens_per_run: float | None
    extra_cost_per_run: float | None
    token_tasks: int
    cost_tasks: int
    lift_per_1k_tokens: float | None
    lift_per_usd: float | None


class SpendCap(TypedDict):
    kind: str  # "usd" or "tokens"
    limit: float
    spent: float
    reached: bool
    not_run: int


class SpendBlock(TypedDict):
    by_arm: dict[str, SpendTotals]
    run: SpendTotals
    efficiency: dict[str, Efficiency]  # "akm_vs_noakm", "akm_vs_synthetic"
    cap: SpendCap | None


class FloorCoverage(TypedDict):
    floor: int
    seeds: int
    by_arm: dict[str, dict[str, int]]
    needs_deepening: list[dict[str, Any]]


class ProvenanceBlock(TypedDict):
    plugin_version: str
    python: str
    implementation: str
    platform: str
    host: str
    agent: dict[str, str]
    model: str | None
    opencode_version: str | None
    akm_version: Any  # a version, null, or the list of versions when the samples disagree
    akm_sha256: Any
    akm_search_mode: Any
    providers: Any  # the providers digest, null, or a list of them when the samples disagree
    prompt_versions: list[str]
    fingerprints: list[str]
    sandbox: str | None
    network: str | None
    samples_from_store: int
    store: str | None


class SoundnessBlock(TypedDict):
    tasks: int
    checked: int
    sound: int
    unchecked: list[str]
    by_task: list[SoundnessRow]


class WorkflowBlock(TypedDict):
    specs: list[str]
    digests: dict[str, str]
    total_checks: int
    applicable_checks: int
    overall_compliance: float | None
    overall_compliance_ci: dict[str, float] | None
    strict_pass_rate: float | None
    strict_pass_rate_ci: dict[str, float] | None
    partial_pass_rate: float | None
    fail_rate: float | None
    violation_count: int
    traces_truncated: int
    by_workflow: dict[str, dict[str, Any]]
    top_violations: list[dict[str, Any]]
    cross_tab: list[dict[str, Any]]
    reliability: dict[str, Any]


class ShardBlock(TypedDict):
    index: int
    of: int
    cells: int
    selected: int | None
    complete: bool


class _AdaptiveFields(TypedDict):
    design: str
    until: str
    method: str
    reference: str
    alpha: float
    spending: str
    futility: float
    conditional_power: float | None
    floor: int
    max_seeds: int
    looks: int
    stopping_reason: str | None
    decisive: bool
    direction: str | None
    lead_needed: int | None
    alpha_spent: float
    pairs: int
    akm_only: int
    noakm_only: int
    floor_lift: float | None
    floor_lift_tasks: int
    cells_used: int
    cells_max: int
    seeds_by_task: dict[str, int]
    history: list[dict[str, Any]]


class AdaptiveBlock(_AdaptiveFields, total=False):
    barrier_wait_s: float  # a live run's; the offline report cannot know it


class MergeBlock(TypedDict):
    stores: list[str]
    shards: int | None
    present: list[int]
    missing: list[int]
    incomplete: list[IncompleteShard]
    problems: list[str]


class GateResult(TypedDict):
    gate: str
    ok: bool
    observed: Any  # what the gate read: a number, the arms that regressed, the tasks, or null
    message: str


class _EnvelopeFields(TypedDict):
    schemaVersion: int
    track: str
    branch: str
    commit: str
    timestamp: str
    complete: bool
    agent: AgentBlock
    corpus: CorpusBlock
    aggregate: AggregateBlock
    trajectory: TrajectoryBlock
    failure_modes: FailureModes
    token_measurement: TokenMeasurement
    spend: SpendBlock
    tasks: list[dict[str, Any]]  # one row per task: id, each arm's figures, delta
    negative_transfer_count: int
    negative_transfer_severity: float
    negative_transfer_noise: dict[str, Any]
    top_regressed_tasks: list[dict[str, Any]]
    domain_level_deltas: list[dict[str, Any]]
    asset_regression_candidates: list[dict[str, Any]]
    corpus_coverage: dict[str, Any]
    warnings: list[str]
    tamper: list[dict[str, Any]]
    searchBridge: dict[str, Any]
    runs: list[RunRow]  # one row per reported sample
    perAsset: dict[str, Any]
    akm_overhead: dict[str, Any]
    flaky_tasks: list[dict[str, Any]]
    floor_coverage: FloorCoverage
    provenance: ProvenanceBlock
    soundness: SoundnessBlock | None
    verdict: str


class Envelope(_EnvelopeFields, total=False):
    """report.json of a utility run (docs/report.md). The optional blocks: ``workflow`` when a
    selected task has a workflow spec, ``baseline_by_task_id`` with a run config's baseline,
    ``gates`` with --bench-gate, ``shard``, ``adaptive`` and ``merge`` for those runs."""

    workflow: WorkflowBlock
    baseline_by_task_id: dict[str, float]
    gates: list[GateResult]
    shard: ShardBlock
    adaptive: AdaptiveBlock
    merge: MergeBlock


class EvolveEnvelope(TypedDict):
    """report.json of the evolve track (docs/report.md, "The evolve envelope"; its own schema,
    schemas/evolve-report.schema.json). Its blocks are built and read in tracks/evolve/report.py."""

    schemaVersion: int
    track: str
    timestamp: str
    agent: dict[str, Any]  # harness, model
    akm: dict[str, Any] | None  # version, line, sha256 of the akm the run found
    evolve_llm: str
    corpus: dict[str, Any]
    proposals: dict[str, Any]
    lessons: dict[str, Any]
    longitudinal: dict[str, Any]
    improvement: dict[str, Any]
    learning: dict[str, Any]
    phases: dict[str, Any]
    per_task: list[dict[str, Any]]
    feedback_integrity: dict[str, Any]
    leakage: dict[str, Any]
    warnings: list[str]
    verdict: str


class AttributionRef(TypedDict):
    seeds: list[int]
    rule: str


class AttributionBlock(TypedDict):
    maskingStrategy: str
    maskedRefs: list[str]
    top: int
    assets_loaded: int
    ranking: str
    reference: AttributionRef


class AttributeBase(TypedDict):
    path: str
    config: str | None
    model: str | None
    akm_version: str | None
    complete: bool
    providers: dict[str, Any] | None


class AttributeEnvelope(TypedDict):
    """attribute.json (docs/report.md, "The attribute envelope"; schemas/attribute.schema.json)."""

    schemaVersion: int
    track: str
    timestamp: str
    complete: bool
    agent: dict[str, Any]  # harness, version, model, providers
    base: AttributeBase
    attribution: AttributionBlock
    maskingStrategy: str
    runsPerformed: int
    referenceRunsPerformed: int
    attributions: list[AttributionRow]  # one row per masked asset
    warnings: list[str]
    verdict: str
