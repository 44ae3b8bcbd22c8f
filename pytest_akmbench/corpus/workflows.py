"""Workflow specs: what an agent is expected to do, as ordered steps over the events of its
trace (docs/corpus.md, "Workflow specs"). They live beside the tasks root in
``<corpus>/workflows/*.yaml``; every error names the file and the field and stops the load.

The format is akm-bench 0.7.0's, with one rule added: a step that can never be met by the trace
a cell has (an agent event required after the verifier, which runs once the agent is gone; the
verifier required before an agent event; a step counting what a trace holds once, more than
once) is refused here instead of being scored as a violation of every run (:func:`unmeetable`).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..errors import CorpusError
from .strict import load_yaml

# The trace vocabulary (docs/corpus.md, "Workflow specs").
EVENTS = (
    "agent_started",
    "akm_search",
    "akm_show",
    "akm_feedback",
    "akm_reflect",
    "akm_distill",
    "akm_propose",
    "akm_proposal_accept",
    "akm_workflow_start",
    "akm_workflow_next",
    "akm_workflow_complete",
    "akm_workflow_finish",
    "workspace_read",
    "workspace_write",
    "first_workspace_write",
    "test_run",
    "verifier_run",
    "agent_finished",
)
# The harness's own events bracket the agent's: nothing the agent does follows these two.
AFTER_AGENT = frozenset(("verifier_run", "agent_finished"))
# Where an event can sit in every trace (cell/workflow_trace.py): agent_started, then whatever
# the agent does (rank 1), then agent_finished, then verifier_run.
_RANK = {"agent_started": 0, "agent_finished": 2, "verifier_run": 3}
# Events a trace holds at most once; first_workspace_write sits right before the first write.
_ONCE = frozenset(("agent_started", "agent_finished", "verifier_run", "first_workspace_write"))
# The events that carry a ref: the akm calls that name an asset (cell/akm_calls.py).
_WITH_REF = frozenset(("akm_show", "akm_feedback"))
FLAGS = ("search_has_relevant_result", "task_has_tests")
ARMS = ("noakm", "akm", "synthetic")
OUTCOMES = ("pass", "fail", "budget_exceeded", "harness_error")
SCORING = ("required", "forbidden", "evidence")
# akm-bench's own names for the three weights; a spec may use either name of a weight, not both.
SCORING_NAMES = {f"{name}_steps_weight": name for name in ("required", "forbidden")} | {
    "evidence_quality_weight": "evidence"
}
MAX_BYTES = 1 << 20
_STEP_KEYS = frozenset(("event", "before", "after", "required_if", "min_count", "polarity", "ref_must_equal"))
_SPEC_KEYS = frozenset(
    ("id", "title", "description", "applies_to", "gold_ref", "required_sequence", "forbidden", "scoring")
)
_APPLIES_KEYS = frozenset(("arms", "task_domains", "outcomes", "requires_gold_ref", "min_repeated_failures"))


@dataclass(frozen=True, slots=True)
class Step:
    event: str
    before: str | None = None
    after: str | None = None
    required_if: str | None = None
    min_count: int = 1
    polarity: str | None = None
    ref_must_equal: str | None = None


@dataclass(frozen=True, slots=True)
class AppliesTo:
    """Filters; an empty tuple (or None) does not filter. ``arms`` defaults to the akm arm,
    the only arm akm-bench evaluated."""

    arms: tuple[str, ...] = ("akm",)
    task_domains: tuple[str, ...] = ()
    outcomes: tuple[str, ...] = ()
    requires_gold_ref: bool = False
    min_repeated_failures: int = 0


@dataclass(frozen=True, slots=True)
class WorkflowSpec:
    id: str
    title: str
    path: Path
    digest: str  # sha256 of the file: a changed spec changes the fingerprint of the cells it checks
    required: tuple[Step, ...]
    forbidden: tuple[Step, ...] = ()
    applies_to: AppliesTo = AppliesTo()
    gold_ref: str | None = None
    description: str | None = None
    weights: tuple[float, float, float] = (0.6, 0.2, 0.2)  # required, forbidden, evidence


def workflows_dir(tasks_root: Path) -> Path:
    """Where a corpus keeps its workflow specs: ``workflows/`` beside the tasks root."""
    return tasks_root.parent / "workflows"


def load_specs(directory: Path) -> tuple[WorkflowSpec, ...]:
    """Every ``*.yaml``/``*.yml`` spec directly in ``directory`` (none if it is absent), in file
    order; the first bad file raises a one-line CorpusError naming it and the field."""
    specs, errors = load_specs_lenient(directory)
    if errors:
        raise CorpusError(next(iter(errors.values())))
    return specs


def load_specs_lenient(directory: Path) -> tuple[tuple[WorkflowSpec, ...], dict[Path, str]]:
    """The good specs of ``directory`` and the error of each bad file, by path: ``validate``
    lists every bad spec, not only the first."""
    if not directory.is_dir():
        return (), {}
    specs: list[WorkflowSpec] = []
    errors: dict[Path, str] = {}
    seen: dict[str, Path] = {}
    root = directory.resolve()
    for path in sorted(p for p in directory.iterdir() if p.suffix in (".yaml", ".yml")):
        try:
            if not path.resolve().is_relative_to(root) or not path.is_file():
                raise CorpusError(f"{path}: workflow spec must be a regular file inside {directory}")
            spec = load_spec(path)
            if spec.id in seen:
                raise CorpusError(f"{path}: id: duplicate workflow id {spec.id!r}, also in {seen[spec.id]}")
        except CorpusError as err:
            errors[path] = str(err)
            continue
        seen[spec.id] = path
        specs.append(spec)
    return tuple(specs), errors


def load_spec(path: Path) -> WorkflowSpec:
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise CorpusError(f"{path}: cannot read: {err}") from err
    if len(raw) > MAX_BYTES:
        raise CorpusError(f"{path}: workflow spec larger than {MAX_BYTES} bytes")
    try:
        data = load_yaml(raw.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise CorpusError(f"{path}: invalid YAML: {str(err).splitlines()[0]}") from err
    if not isinstance(data, dict):
        raise CorpusError(f"{path}: expected a mapping of workflow fields")
    return _Reader(path, data).spec(hashlib.sha256(raw).hexdigest())


class _Reader:
    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path = path
        self.data = data

    def bad(self, key: str, why: str) -> CorpusError:
        return CorpusError(f"{self.path}: {key}: {why}")

    def spec(self, digest: str) -> WorkflowSpec:
        self._unknown(self.data, _SPEC_KEYS, "")
        for key in ("id", "title"):
            if not isinstance(self.data.get(key), str) or not self.data[key].strip():
                raise self.bad(key, "required non-empty string")
        required = self._steps("required_sequence", required=True)
        if not required:
            raise self.bad("required_sequence", "required non-empty list of steps")
        gold = self.data.get("gold_ref")
        if gold is not None and (not isinstance(gold, str) or ":" not in gold):
            raise self.bad("gold_ref", f"{gold!r} is not an asset ref (type:name)")
        description = self.data.get("description")
        if description is not None and not isinstance(description, str):
            raise self.bad("description", "must be a string")
        forbidden = self._steps("forbidden", required=False)
        clash = contradiction(required, forbidden)
        if clash is not None:
            raise self.bad(*clash)
        return WorkflowSpec(
            id=self.data["id"],
            title=self.data["title"],
            path=self.path,
            digest=digest,
            required=required,
            forbidden=forbidden,
            applies_to=self._applies(),
            gold_ref=gold,
            description=description,
            weights=self._weights(),
        )

    def _unknown(self, data: dict[str, Any], known: frozenset[str], prefix: str) -> None:
        unknown = sorted(str(k) for k in data if k not in known)
        if unknown:
            raise self.bad(prefix + unknown[0], f"unknown field; use one of {', '.join(sorted(known))}")

    def _steps(self, key: str, *, required: bool) -> tuple[Step, ...]:
        raw = self.data.get(key)
        if raw is None:
            return ()
        if not isinstance(raw, list):
            raise self.bad(key, "must be a list of steps")
        return tuple(self._step(f"{key}[{i}]", item, required) for i, item in enumerate(raw))

    def _event(self, key: str, value: Any) -> str:
        if value not in EVENTS:
            raise self.bad(key, f"unknown event {value!r}; use one of {', '.join(EVENTS)}")
        return str(value)

    def _step(self, key: str, item: Any, required: bool) -> Step:
        if not isinstance(item, dict):
            raise self.bad(key, "must be a mapping with an event")
        self._unknown(item, _STEP_KEYS, key + ".")
        event = self._event(f"{key}.event", item.get("event"))
        before = None if item.get("before") is None else self._event(f"{key}.before", item["before"])
        after = None if item.get("after") is None else self._event(f"{key}.after", item["after"])
        flag = item.get("required_if")
        if flag is not None and flag not in FLAGS:
            raise self.bad(f"{key}.required_if", f"{flag!r} is not one of {', '.join(FLAGS)}")
        count = item.get("min_count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise self.bad(f"{key}.min_count", f"must be an integer >= 1, got {count!r}")
        polarity = item.get("polarity")
        if polarity is not None and polarity not in ("positive", "negative"):
            raise self.bad(f"{key}.polarity", f"{polarity!r} is not positive or negative")
        ref = item.get("ref_must_equal")
        if ref is not None and ref != "gold_ref":
            raise self.bad(f"{key}.ref_must_equal", f"{ref!r} is not supported; use gold_ref")
        step = Step(event, before, after, flag, count, polarity, ref)
        problem = unmeetable(step) if required else _always_violated(step)
        if problem is not None:
            raise self.bad(f"{key}.{problem[0]}", problem[1])
        return step

    def _list(self, key: str, value: Any, allowed: tuple[str, ...] | None) -> tuple[str, ...]:
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(x, str) and x for x in value):
            raise self.bad(key, "must be a list of strings")
        for x in value:
            if allowed is not None and x not in allowed:
                raise self.bad(key, f"{x!r} is not one of {', '.join(allowed)}")
        return tuple(value)

    def _applies(self) -> AppliesTo:
        raw = self.data.get("applies_to")
        if raw is None:
            return AppliesTo()
        if not isinstance(raw, dict):
            raise self.bad("applies_to", "must be a mapping")
        self._unknown(raw, _APPLIES_KEYS, "applies_to.")
        needs_gold = raw.get("requires_gold_ref", False)
        if not isinstance(needs_gold, bool):
            raise self.bad("applies_to.requires_gold_ref", "must be true or false")
        repeated = raw.get("min_repeated_failures", 0)
        if isinstance(repeated, bool) or not isinstance(repeated, int) or repeated < 0:
            raise self.bad("applies_to.min_repeated_failures", "must be an integer >= 0")
        arms = self._list("applies_to.arms", raw.get("arms"), ARMS)
        return AppliesTo(
            arms=arms or ("akm",),
            task_domains=self._list("applies_to.task_domains", raw.get("task_domains"), None),
            outcomes=self._list("applies_to.outcomes", raw.get("outcomes"), OUTCOMES),
            requires_gold_ref=needs_gold,
            min_repeated_failures=repeated,
        )

    def _weights(self) -> tuple[float, float, float]:
        raw = self.data.get("scoring")
        if not isinstance(raw, dict):
            raise self.bad("scoring", f"required mapping of {', '.join(SCORING)} weights summing to 1")
        self._unknown(raw, frozenset((*SCORING, *SCORING_NAMES)), "scoring.")
        weights: list[float] = []
        for name in SCORING:
            given = [k for k in (name, *(a for a, n in SCORING_NAMES.items() if n == name)) if k in raw]
            if len(given) > 1:
                raise self.bad(f"scoring.{given[1]}", f"the same weight as scoring.{given[0]}; give one of them")
            key = given[0] if given else name
            w = raw.get(key)
            if isinstance(w, bool) or not isinstance(w, (int, float)) or not 0 <= w <= 1:
                raise self.bad(f"scoring.{key}", f"must be a number in [0, 1], got {w!r}")
            weights.append(float(w))
        if not math.isclose(sum(weights), 1.0, abs_tol=1e-6):
            raise self.bad("scoring", f"weights sum to {sum(weights):g}; they must sum to 1")
        return weights[0], weights[1], weights[2]


def unmeetable(step: Step) -> tuple[str, str] | None:
    """(field, why) when no trace can satisfy a required step: the order every trace has
    (agent_started, the agent's events, agent_finished, verifier_run) contradicts its
    ``before``/``after``, it counts an event a trace holds once more than once, or it filters on
    a ref or a polarity its event never carries. Scored, it would be a violation of every run."""
    e, rank = step.event, _RANK.get(step.event, 1)
    if step.before is not None and (
        e == step.before or rank > _RANK.get(step.before, 1) or _just_before(step.before, e)
    ):
        return "before", f"{e} can never come before {step.before}{_why(e, step.before)}"
    filtered = step.polarity is not None or step.ref_must_equal is not None  # a later one of e may match
    if step.after is not None and (
        (e == step.after and not filtered) or rank < _RANK.get(step.after, 1) or _just_before(e, step.after)
    ):
        return "after", f"{e} can never come after {step.after}{_why(step.after, e)}"
    if step.min_count > 1 and e in _ONCE:
        return "min_count", f"{e} can never occur {step.min_count} times: a trace holds it once at most"
    if step.polarity is not None and e != "akm_feedback":
        return "polarity", f"{e} can never have a polarity: only akm_feedback has one"
    if step.ref_must_equal is not None and e not in _WITH_REF:
        return "ref_must_equal", f"{e} can never name the gold asset: only akm_show and akm_feedback name an asset"
    return None


def _just_before(first: str, then: str) -> bool:
    """first_workspace_write is put right before the first workspace_write."""
    return (first, then) == ("first_workspace_write", "workspace_write")


def _why(late: str, early: str) -> str:
    if late == early:
        return ": a step's order is that of its first match, which no later one of the same event precedes"
    if late in AFTER_AGENT and early not in AFTER_AGENT:
        return ": the verifier runs once the agent has finished"
    if "first_workspace_write" in (late, early) and "workspace_write" in (late, early):
        return ": first_workspace_write is the first workspace_write"
    return ": every trace has agent_started, the agent's events, agent_finished, verifier_run in this order"


def _always_violated(step: Step) -> tuple[str, str] | None:
    """(field, why) when a forbidden step fires on every run the verifier judged: a plain
    ``agent_started``, ``agent_finished`` or ``verifier_run`` is in each such trace."""
    if step.event in _RANK and step.before is None and step.after is None:
        return "event", f"forbidding {step.event} can never be met: every trace the verifier judged holds it"
    return None


def contradiction(required: tuple[Step, ...], forbidden: tuple[Step, ...]) -> tuple[str, str] | None:
    """(field, why) when a forbidden step fires on every occurrence of an event a required step
    (one without ``required_if``) asks for: e.g. akm-bench's ``forbidden: akm_feedback before:
    verifier_run`` beside a required akm_feedback, while every feedback comes before the verifier."""
    for i, f in enumerate(forbidden):
        if not _forbids_every(f):
            continue
        for j, r in enumerate(required):
            if r.event == f.event and r.required_if is None and f.polarity in (None, r.polarity):
                order = (
                    f" {'before ' + f.before if f.before else 'after ' + str(f.after)}" if f.before or f.after else ""
                )
                return (
                    f"forbidden[{i}]",
                    f"forbids every {f.event} (each comes{order} in a trace the verifier judged), which "
                    f"required_sequence[{j}] requires: no run can meet both",
                )
    return None


def _forbids_every(step: Step) -> bool:
    """Whether a forbidden step fires on any occurrence of its event in a trace the verifier
    judged: no order, or an order every such trace gives it against an event it always holds."""
    rank = _RANK.get(step.event, 1)
    if step.before is not None:
        return step.before in _RANK and rank < _RANK[step.before]
    if step.after is not None:
        return step.after in _RANK and rank > _RANK[step.after]
    return True


def for_task(specs: tuple[WorkflowSpec, ...], domain: str, expected: tuple[str, ...]) -> tuple[WorkflowSpec, ...]:
    """The specs that can apply to a task: those it lists in ``expected_workflows`` when it lists
    any, otherwise those whose ``applies_to.task_domains`` admits its domain."""
    if expected:
        return tuple(s for s in specs if s.id in expected)
    return tuple(s for s in specs if not s.applies_to.task_domains or domain in s.applies_to.task_domains)
