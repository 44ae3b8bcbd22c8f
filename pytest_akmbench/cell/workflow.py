"""The workflow evaluator: one cell's trace (:mod:`workflow_trace`) checked against each workflow
spec that can apply to its task, giving one check per spec that the sample stores
(docs/report.md, "Workflow compliance").

The rules are akm-bench 0.7.0's (required steps with counts, refs and order; forbidden steps;
feedback polarity against the outcome; the gold asset; a weighted score and a status), read on a
trace that holds what the agent really did. Where akm-bench's rule could not be met or judged
nothing, the rule here says what the user expects instead: polarity is judged only on runs the
verifier decided (pass or fail), and a step with a ref and an order checks both. Pure: no pytest.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..agents.transcript import TranscriptReader
from ..corpus.tasks import Task
from ..corpus.workflows import Step, WorkflowSpec
from .akm import same_asset
from .workflow_trace import build_trace

MAX_VIOLATIONS = 32
MAX_TEXT = 200
STATUSES = ("pass", "partial", "fail", "not_applicable")


@dataclass(frozen=True, slots=True)
class RunFacts:
    """What a check needs to know of the run besides its trace."""

    arm: str
    domain: str
    outcome: str
    gold_ref: str | None
    task_has_tests: bool = False
    repeated_failures: int = 0


def applies(spec: WorkflowSpec, run: RunFacts) -> bool:
    a = spec.applies_to
    return (
        run.arm in a.arms
        and (not a.task_domains or run.domain in a.task_domains)
        and (not a.outcomes or run.outcome in a.outcomes)
        and (not a.requires_gold_ref or (spec.gold_ref or run.gold_ref) is not None)
        and run.repeated_failures >= a.min_repeated_failures
    )


def _clip(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def _violation(code: str, message: str, expected: str | None = None, observed: str | None = None) -> dict[str, Any]:
    v: dict[str, Any] = {"code": code, "message": _clip(message)}
    if expected is not None:
        v["expected"] = _clip(expected)
    if observed is not None:
        v["observed"] = _clip(observed)
    return v


def _first(events: list[dict[str, Any]], name: str) -> int | None:
    return next((i for i, e in enumerate(events) if e["event"] == name), None)


def _observed(events: list[dict[str, Any]]) -> str:
    names = [e["event"] for e in events if e["event"] not in ("agent_started", "agent_finished")]
    return " → ".join(names[:12]) + (" …" if len(names) > 12 else "") if names else "(no agent events)"


def _required(step: Step, events: list[dict[str, Any]], gold: str | None) -> tuple[list[dict[str, Any]], int]:
    """The violations of one required step, and how many trace events it matched."""
    matching = [
        i for i, e in enumerate(events) if e["event"] == step.event and (step.polarity in (None, e.get("polarity")))
    ]
    what = step.event + (f" ({step.polarity})" if step.polarity else "")
    if len(matching) < step.min_count:
        return [
            _violation(
                "missing_required_event",
                f"{what} occurred {len(matching)} time(s), at least {step.min_count} required",
                expected=f"{what} ×{step.min_count}",
                observed=_observed(events),
            )
        ], len(matching)
    if step.ref_must_equal is not None:
        if gold is None:
            return [_violation("missing_evidence", f"{what} must name the gold asset, but the task has no gold_ref")], 0
        refs = [str(events[i].get("ref")) for i in matching]
        matching = [i for i in matching if same_asset(events[i].get("ref"), gold)]
        if not matching:
            return [
                _violation(
                    "irrelevant_asset_loaded",
                    f"{what} never named the gold asset",
                    expected=gold,
                    observed=", ".join(refs),
                )
            ], 0
    found: list[dict[str, Any]] = []
    for other, earlier in ((step.before, True), (step.after, False)):
        x = None if other is None else _first(events, other)
        if x is None:
            continue
        if (earlier and matching[0] >= x) or (not earlier and matching[0] <= x):
            order = "before" if earlier else "after"
            found.append(
                _violation(
                    "wrong_order",
                    f"{what} must come {order} {other}",
                    expected=f"{step.event} {order} {other}",
                    observed=_observed(events),
                )
            )
    return found, len(matching)


def _forbidden(step: Step, events: list[dict[str, Any]]) -> dict[str, Any] | None:
    # A polarity narrows what is forbidden (akm-bench's ``akm_feedback polarity: positive`` on a
    # failed run), as it narrows what a required step counts.
    first = next(
        (i for i, e in enumerate(events) if e["event"] == step.event and step.polarity in (None, e.get("polarity"))),
        None,
    )
    if first is None:
        return None
    if step.before is not None:
        x = _first(events, step.before)
        if x is None or first > x:
            return None
        rule = f"{step.event} before {step.before}"
    elif step.after is not None:
        x = _first(events, step.after)
        if x is None or first < x:
            return None
        rule = f"{step.event} after {step.after}"
    else:
        rule = step.event
    rule += f" ({step.polarity})" if step.polarity else ""
    code = "forbidden_event"
    if step.event == "akm_reflect" and step.before == "akm_feedback":
        code = "reflection_without_failure"
    elif step.event == "akm_proposal_accept":
        code = "proposal_accepted_without_validation"
    elif step.event == "akm_feedback" and step.before == "verifier_run":
        code = "late_feedback"
    return _violation(code, f"forbidden: {rule}", expected=f"no {rule}", observed=_observed(events))


def _polarity_ok(events: list[dict[str, Any]], outcome: str) -> bool:
    """Feedback, if any, says what the verifier found: negative on a fail, positive on a pass.
    Other outcomes were decided by no verifier, so any feedback is accepted."""
    feedback = [e.get("polarity") for e in events if e["event"] == "akm_feedback"]
    if not feedback or outcome not in ("pass", "fail"):
        return True
    return ("negative" if outcome == "fail" else "positive") in feedback


def _polarity_violation(events: list[dict[str, Any]], outcome: str) -> dict[str, Any]:
    return _violation(
        "wrong_feedback_polarity",
        f"feedback does not match the outcome ({outcome})",
        expected="negative" if outcome == "fail" else "positive",
        observed=", ".join(str(e.get("polarity")) for e in events if e["event"] == "akm_feedback"),
    )


def evaluate(spec: WorkflowSpec, trace: dict[str, Any], run: RunFacts) -> dict[str, Any]:
    """One check: the spec's status, score, counts, violations and evidence on one trace."""
    if not applies(spec, run):
        return {"workflow_id": spec.id, "status": "not_applicable", "score": 0.0}
    events: list[dict[str, Any]] = trace["events"]
    gold = spec.gold_ref or run.gold_ref
    flags = {
        "search_has_relevant_result": gold is not None
        and any(same_asset(r, gold) for e in events if e["event"] == "akm_search" for r in e.get("results") or []),
        "task_has_tests": run.task_has_tests,
    }
    violations: list[dict[str, Any]] = []
    passed = total = matched = 0
    wants_gold = spec.gold_ref is not None  # or a counted step that must name it
    for step in spec.required:
        if step.required_if is not None and not flags[step.required_if]:
            continue
        wants_gold = wants_gold or step.ref_must_equal is not None
        total += 1
        found, n = _required(step, events, gold)
        matched += n
        passed += not found
        violations += found
    forbidden = [v for v in (_forbidden(s, events) for s in spec.forbidden) if v is not None]
    violations += forbidden
    polarity_ok = _polarity_ok(events, run.outcome)
    if not polarity_ok:
        violations.append(_polarity_violation(events, run.outcome))
    gold_loaded = (
        None if gold is None else any(e["event"] == "akm_show" and same_asset(e.get("ref"), gold) for e in events)
    )
    if gold_loaded is False and wants_gold and not any(v["code"] == "irrelevant_asset_loaded" for v in violations):
        violations.append(_violation("irrelevant_asset_loaded", "the gold asset was never shown", expected=gold))
    evidence = [float(polarity_ok), float(any(e["event"] == "verifier_run" for e in events))]
    if gold_loaded is not None:
        evidence.append(float(gold_loaded))
    w_req, w_forb, w_ev = spec.weights
    n_forb = len(spec.forbidden)
    score = (
        w_req * (passed / total if total else 1.0)
        + w_forb * ((n_forb - len(forbidden)) / n_forb if n_forb else 1.0)
        + w_ev * sum(evidence) / len(evidence)
    )
    return {
        "workflow_id": spec.id,
        "status": _status(passed, total, bool(violations)),
        "score": min(1.0, max(0.0, score)),
        "required_passed": passed,
        "required_total": total,
        "violations": violations[:MAX_VIOLATIONS],
        "evidence": {
            "matched_events": matched,
            "feedback_recorded": any(e["event"] == "akm_feedback" for e in events),
            "gold_asset_loaded": gold_loaded,
            "trace_truncated": bool(trace.get("truncated")),
        },
    }


def _status(passed: int, total: int, violated: bool) -> str:
    if total == 0:
        return "partial" if violated else "pass"
    if passed == total and not violated:
        return "pass"
    return "fail" if passed == 0 else "partial"


def has_tests(task: Task) -> bool:
    tests = task.task_dir / "tests"
    return task.verifier == "pytest" or (tests.is_dir() and any(p.suffix in (".py", ".sh") for p in tests.iterdir()))


def check_cell(
    task: Task, arm: str, outcome: str, transcript: Path | None, verifier_exit: int | None, reader: TranscriptReader
) -> dict[str, Any] | None:
    """The sample's ``workflow`` field: every spec that can apply to the task checked on the
    cell's trace (None when none can), the transcript read by the agent's ``reader``. Never
    raises: a fault gives no checks and a warning."""
    if not task.workflows:
        return None
    try:
        trace = build_trace(transcript, verifier_exit, reader)
        run = RunFacts(arm, task.domain, outcome, task.gold_ref, has_tests(task))
        checks = [evaluate(spec, trace, run) for spec in task.workflows]
    except Exception as err:
        return {"checks": [], "trace_events": 0, "trace_truncated": False, "warning": f"workflow check failed: {err}"}
    return {
        "checks": checks,
        "trace_source": trace["source"],
        "trace_events": len(trace["events"]),
        "trace_truncated": trace["truncated"],
    }
