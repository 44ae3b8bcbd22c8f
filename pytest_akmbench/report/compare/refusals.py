"""Whether two report envelopes may be compared at all (docs/report.md, "compare").

Refusals, in order: schema, track, agent, model, task corpus (hash, else selected ids), fixture
hash, workflow specs (:mod:`compare_workflow`); the last five can be overridden, which turns them
into warnings. Pure: no pytest.
"""

from __future__ import annotations

from typing import Any

from ..envelope_types import Envelope
from . import corpus_diff
from . import workflow as compare_workflow


def corpus_field(envelope: Envelope, key: str) -> Any:
    """``envelope["corpus"][key]``, None when either is missing."""
    return (envelope.get("corpus") or {}).get(key)


def _refuse(reason: str, message: str, warnings: list[str], **extra: Any) -> dict[str, Any]:
    return {"ok": False, "reason": reason, "message": message, **extra, "warnings": warnings}


def refusal(
    base: Envelope,
    head: Envelope,
    allow_model: bool,
    allow_corpus: bool,
    allow_fixture: bool,
    warnings: list[str],
    allow_workflow: bool = False,
    allow_agent: bool = False,
) -> dict[str, Any] | None:
    """The refusal to compare ``head`` with ``base``, or None; the mismatches the caller allowed,
    and the pins a report lacks, are appended to ``warnings``."""
    return (
        _format_refusal(base, head, warnings)
        or _agent_refusal(base, head, allow_agent, warnings)
        or _model_refusal(base, head, allow_model, warnings)
        or _corpus_refusal(base, head, allow_corpus, warnings)
        or _fixture_refusal(base, head, allow_fixture, warnings)
        or compare_workflow.refusal(base, head, allow_workflow, warnings)
    )


def _format_refusal(base: Envelope, head: Envelope, warnings: list[str]) -> dict[str, Any] | None:
    for name, envelope in (("base", base), ("current", head)):
        if envelope.get("schemaVersion") != 1:
            return _refuse(
                "schema_mismatch",
                f"{name} report has schemaVersion {envelope.get('schemaVersion')!r}; expected 1",
                warnings,
            )
    for name, envelope in (("base", base), ("current", head)):
        if envelope.get("track") != "utility":
            return _refuse(
                "track_mismatch",
                f"{name} report has track {envelope.get('track')!r}; only utility reports compare",
                warnings,
            )
    return None


def agent_of(envelope: Envelope) -> str:
    """The agent a report ran, as "name version" (its envelope's ``agent.harness`` and ``version``)."""
    agent = envelope.get("agent") or {}
    name, version = agent.get("harness") or "<unknown>", agent.get("version")
    return f"{name} {version}" if version else str(name)


def _agent_refusal(base: Envelope, head: Envelope, allow_agent: bool, warnings: list[str]) -> dict[str, Any] | None:
    """Two agents' reports measure two agents, not a change: refused unless allowed. Only the
    name counts; another version of the same agent is an ordinary comparison (docs/report.md)."""
    bn, hn = ((e.get("agent") or {}).get("harness") for e in (base, head))
    if bn == hn or bn is None or hn is None:
        return None
    both = f"base={agent_of(base)!r}, current={agent_of(head)!r}"
    if not allow_agent:
        return _refuse(
            "agent_mismatch",
            f"agents differ ({both}); use --allow-agent-mismatch to diff anyway",
            warnings,
            baseAgent=agent_of(base),
            currentAgent=agent_of(head),
        )
    warnings.append(
        f"agents differ ({both}) — diff requested via --allow-agent-mismatch: every change includes the agent's"
    )
    return None


def _model_refusal(base: Envelope, head: Envelope, allow_model: bool, warnings: list[str]) -> dict[str, Any] | None:
    bm = (base.get("agent") or {}).get("model") or "<unknown>"
    hm = (head.get("agent") or {}).get("model") or "<unknown>"
    if bm != hm:
        if not allow_model:
            return _refuse(
                "model_mismatch",
                f"models differ (base={bm!r}, current={hm!r}); use --allow-model-mismatch to diff anyway",
                warnings,
                baseModel=bm,
                currentModel=hm,
            )
        warnings.append(f"models differ (base={bm!r}, current={hm!r}) — diff requested via --allow-model-mismatch")
    return None


def _corpus_refusal(base: Envelope, head: Envelope, allow_corpus: bool, warnings: list[str]) -> dict[str, Any] | None:
    bh, hh = corpus_field(base, "taskCorpusHash"), corpus_field(head, "taskCorpusHash")
    bids, hids = corpus_field(base, "selectedTaskIds"), corpus_field(head, "selectedTaskIds")
    if bh and hh and bh != hh:
        if not allow_corpus:
            extra: dict[str, Any] = {"baseTaskCorpusHash": bh, "currentTaskCorpusHash": hh}
            diff = corpus_diff.differing(base, head)
            extra.update(diff)
            which = corpus_diff.describe(diff) or "the reports do not say which tasks"
            return _refuse(
                "corpus_mismatch",
                f'task corpus hashes differ (base="{bh}", current="{hh}"): {which}',
                warnings,
                **extra,
            )
        which = corpus_diff.describe(corpus_diff.differing(base, head))
        warnings.append(
            f'task corpus hashes differ (base="{bh}", current="{hh}"){": " + which if which else ""} — diff requested '
            "via --allow-corpus-mismatch"
        )
    elif not bh and not hh and isinstance(bids, list) and isinstance(hids, list) and set(bids) != set(hids):
        if not allow_corpus:
            return _refuse(
                "corpus_mismatch",
                "selected task IDs differ",
                warnings,
                onlyInBase=sorted(set(bids) - set(hids)),
                onlyInCurrent=sorted(set(hids) - set(bids)),
            )
        warnings.append("selected task IDs differ — diff requested via --allow-corpus-mismatch")
    for name, value in (("base", bh), ("current", hh)):
        if not value:
            warnings.append(f"{name} report has no corpus.taskCorpusHash; proceeding without task-corpus-pin check")
    return None


def _fixture_refusal(base: Envelope, head: Envelope, allow_fixture: bool, warnings: list[str]) -> dict[str, Any] | None:
    bf, hf = corpus_field(base, "fixtureContentHash"), corpus_field(head, "fixtureContentHash")
    if bf and hf and bf != hf:
        if not allow_fixture:
            return _refuse(
                "hash_mismatch",
                f'fixture-content hashes differ (base="{bf}", current="{hf}")',
                warnings,
                baseFixtureContentHash=bf,
                currentFixtureContentHash=hf,
            )
        warnings.append(
            f'fixture-content hashes differ (base="{bf}", current="{hf}") — diff requested via --allow-fixture-mismatch'
        )
    for name, value in (("base", bf), ("current", hf)):
        if not value:
            warnings.append(f"{name} report has no corpus.fixtureContentHash; proceeding without fixture-pin check")
    return None
