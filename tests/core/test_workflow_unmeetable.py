"""Workflow steps no trace can meet are refused when the spec loads, not scored as a violation
of every run (issue 29, item 8; docs/corpus.md, "Workflow specs").

The refusal is checked against an independent search: for every required step ``E before X`` and
``E after X`` over the whole event vocabulary, some trace holding both events in an order a
cell can really produce satisfies the step exactly when the spec loads.
"""

from __future__ import annotations

from itertools import permutations
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_akmbench.cell.workflow import RunFacts, evaluate
from pytest_akmbench.cli.validate import validate
from pytest_akmbench.corpus.workflows import EVENTS, Step, WorkflowSpec, load_spec, unmeetable
from pytest_akmbench.errors import CorpusError
from tests.support.corpus import standard_corpus, write_task

HARNESS = ("agent_started", "agent_finished", "verifier_run")
AGENT = tuple(e for e in EVENTS if e not in HARNESS)
SCORING = {"required": 0.6, "forbidden": 0.2, "evidence": 0.2}
# akm-bench's own akm-feedback-after-use spec: with it a perfect oracle cell scored 0.70.
FEEDBACK_AFTER_VERIFIER: dict[str, Any] = {
    "id": "feedback-after-use",
    "title": "Feedback after use",
    "applies_to": {"arms": ["akm"], "outcomes": ["pass"]},
    "required_sequence": [
        {"event": "agent_started"},
        {"event": "akm_show", "before": "verifier_run"},
        {"event": "verifier_run", "before": "akm_feedback"},
        {"event": "akm_feedback", "polarity": "positive", "before": "agent_finished"},
        {"event": "agent_finished"},
    ],
    "scoring": SCORING,
}


def real_traces(a: str, b: str) -> list[list[dict[str, Any]]]:
    """Every trace a cell can produce holding ``a`` and ``b`` (each agent event up to twice):
    the harness's brackets around the agent's events, first_workspace_write right before the
    first workspace_write (cell/workflow_trace.py)."""
    wanted = [e if e != "first_workspace_write" else "workspace_write" for e in (a, b) if e in AGENT]
    out = []
    for order in set(permutations(wanted + wanted)):
        # feedback says what the verifier found (a pass), or the polarity rule would fail it
        agent = [{"event": e, **({"polarity": "positive"} if e == "akm_feedback" else {})} for e in order]
        first = next((i for i, e in enumerate(order) if e == "workspace_write"), None)
        if first is not None:
            agent.insert(first, {"event": "first_workspace_write"})
        out.append([{"event": "agent_started"}, *agent, {"event": "agent_finished"}, {"event": "verifier_run"}])
    return out


def satisfiable(step: Step) -> bool:
    other = step.before or step.after
    assert other is not None
    spec = WorkflowSpec(id="s", title="s", path=Path("s.yaml"), digest="", required=(step,))
    facts = RunFacts(arm="akm", domain="d", outcome="pass", gold_ref=None)
    return any(
        evaluate(spec, {"events": events}, facts)["status"] == "pass" for events in real_traces(step.event, other)
    )


@pytest.mark.parametrize("order", ["before", "after"])
def test_an_order_is_refused_exactly_when_no_real_trace_meets_it(order: str) -> None:
    wrong = []
    for event in EVENTS:
        for other in EVENTS:
            step = Step(event, **{order: other})
            if (unmeetable(step) is None) != satisfiable(step):
                wrong.append(f"{event} {order} {other}: refused={unmeetable(step) is not None}")
    assert wrong == []


def test_a_filtered_step_after_its_own_event_is_meetable() -> None:
    """A positive feedback after an earlier (negative) one can happen: the step loads."""
    step = Step("akm_feedback", after="akm_feedback", polarity="positive")
    assert unmeetable(step) is None


def write(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize(
    ("step", "field", "why"),
    [
        (
            {"event": "verifier_run", "before": "akm_feedback"},
            "before",
            "the verifier runs once the agent has finished",
        ),
        ({"event": "akm_search", "after": "agent_finished"}, "after", "the verifier runs once the agent has finished"),
        ({"event": "agent_finished", "after": "verifier_run"}, "after", "in this order"),
        ({"event": "workspace_write", "before": "first_workspace_write"}, "before", "is the first workspace_write"),
        ({"event": "akm_show", "before": "akm_show"}, "before", "first match"),
        ({"event": "verifier_run", "min_count": 2}, "min_count", "holds it once at most"),
        ({"event": "akm_show", "polarity": "positive"}, "polarity", "only akm_feedback has one"),
        ({"event": "test_run", "ref_must_equal": "gold_ref"}, "ref_must_equal", "only akm_show and akm_feedback"),
    ],
)
def test_an_unmeetable_step_is_one_line_naming_file_step_and_why(
    tmp_path: Path, step: dict[str, Any], field: str, why: str
) -> None:
    data = {"id": "s", "title": "S", "required_sequence": [{"event": "agent_started"}, step], "scoring": SCORING}
    with pytest.raises(CorpusError) as err:
        load_spec(write(tmp_path, data))
    message = str(err.value)
    assert message.startswith(f"{tmp_path / 's.yaml'}: required_sequence[1].{field}: ") and why in message
    assert "can never" in message and "\n" not in message


def test_forbidding_what_every_trace_holds_is_refused(tmp_path: Path) -> None:
    data = {"id": "s", "title": "S", "required_sequence": [{"event": "akm_search"}], "scoring": SCORING}
    data["forbidden"] = [{"event": "akm_proposal_accept"}, {"event": "agent_finished"}]
    with pytest.raises(CorpusError, match=r"s\.yaml: forbidden\[1\]\.event: forbidding agent_finished can never"):
        load_spec(write(tmp_path, data))
    data["forbidden"] = [{"event": "akm_feedback", "before": "verifier_run"}]  # an agent's act: it can abstain
    assert load_spec(write(tmp_path, data)).forbidden[0].event == "akm_feedback"


def test_validate_lists_the_refused_spec(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The spec with which a perfect oracle cell scored 0.70 stops at validate, naming the step."""
    tasks, stashes = standard_corpus(tmp_path)
    (tasks.parent / "workflows").mkdir()
    write(tasks.parent / "workflows", FEEDBACK_AFTER_VERIFIER)
    write_task(tasks, "alpha/with-spec", extra={"expected_workflows": ["feedback-after-use"]})
    assert validate(tasks, stashes, []) == 1
    out = capsys.readouterr().out
    assert (
        f"{tasks.parent / 'workflows' / 's.yaml'}: required_sequence[2].before: verifier_run can never come "
        "before akm_feedback: the verifier runs once the agent has finished"
    ) in out


def test_a_forbidden_step_that_fires_on_every_required_event_is_refused(tmp_path: Path) -> None:
    """akm-bench's feedback specs also forbid `akm_feedback before: verifier_run` beside a required
    akm_feedback: every feedback comes before the verifier, so no run could meet both."""
    data = {"id": "s", "title": "S", "scoring": SCORING}
    data["required_sequence"] = [{"event": "akm_show"}, {"event": "akm_feedback", "polarity": "positive"}]
    data["forbidden"] = [{"event": "akm_feedback", "before": "verifier_run"}]
    with pytest.raises(CorpusError) as err:
        load_spec(write(tmp_path, data))
    assert str(err.value) == (
        f"{tmp_path / 's.yaml'}: forbidden[0]: forbids every akm_feedback (each comes before verifier_run in a "
        "trace the verifier judged), which required_sequence[1] requires: no run can meet both"
    )
    data["forbidden"] = [{"event": "akm_feedback", "polarity": "negative"}]  # the other polarity: meetable
    assert load_spec(write(tmp_path, data)).forbidden[0].polarity == "negative"


def test_a_forbidden_polarity_forbids_only_that_polarity(tmp_path: Path) -> None:
    """akm-bench's akm-negative-feedback-on-failure without its unmeetable step: negative feedback
    on a failed run passes it; its `forbidden: akm_feedback polarity: positive` fired on any
    feedback, so no run could pass it."""
    data = {
        "id": "neg",
        "title": "Negative feedback on failure",
        "applies_to": {"arms": ["akm"], "outcomes": ["fail"]},
        "required_sequence": [
            {"event": "agent_started"},
            {"event": "akm_show", "before": "verifier_run"},
            {"event": "akm_feedback", "polarity": "negative", "before": "agent_finished"},
            {"event": "agent_finished"},
        ],
        "forbidden": [{"event": "akm_feedback", "polarity": "positive"}],
        "scoring": {"required": 0.5, "forbidden": 0.3, "evidence": 0.2},
    }
    spec = load_spec(write(tmp_path, data))
    facts = RunFacts(arm="akm", domain="d", outcome="fail", gold_ref="skill:x")
    show = {"event": "akm_show", "ref": "skill:x"}
    negative = {"event": "akm_feedback", "ref": "skill:x", "polarity": "negative"}
    positive = {**negative, "polarity": "positive"}

    def check(*agent: dict[str, Any]) -> dict[str, Any]:
        events = [{"event": "agent_started"}, *agent, {"event": "agent_finished"}, {"event": "verifier_run"}]
        return evaluate(spec, {"events": events}, facts)

    good = check(show, negative)
    assert good["status"] == "pass" and good["score"] == 1.0 and good["violations"] == []
    bad = check(show, negative, positive)
    assert [v["code"] for v in bad["violations"]] == ["forbidden_event"]
    assert bad["violations"][0]["message"] == "forbidden: akm_feedback (positive)"
