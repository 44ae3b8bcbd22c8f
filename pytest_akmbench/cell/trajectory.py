"""What the agent actually did with akm in one cell, from its transcript and akm's own log.

The reference derived its trajectory from the *verifier's* stdout, so most of its signals were
empty or artefacts. Here two sources are combined:

1. **akm's own event log** (see :func:`akm.read_events`) is the ground truth of what akm
   *served*: every search with its query and ranked results, every show, every feedback with
   its signal. A call akm refused (an unknown ref, a usage error) leaves no event.
2. **The agent transcript**, read by the agent's own reader into neutral tool events
   (``agents/transcript.py``), gives the order of things, the workspace writes, and every akm
   call the agent *attempted*, found by reading each shell command as a shell would
   (:mod:`shell`), with the tool's exit status.
   Without akm's log (an akm that keeps none) it is the only source of akm operations: a call
   counts only when its command did not fail.

akm's log lies in the cell's run dir, where the agent can write, so it is evidence only where
the transcript backs it (:func:`akm_evidence.cross_check`): each event needs an akm call the
agent made that akm logs such an event for (a search of the same query, a show or feedback of
the same asset), at the time of that call; each call stands for one event. Events no call
stands for get no credit and are counted (``unconfirmed_events``) and warned about: akm's log
was tampered with, or akm ran where the transcript cannot see it (docs/akm.md, "akm's log,
cross-checked").

Only the adapter's own summary (``AgentResult.akm``) is used when there is no transcript; with
akm's log it stands in for the transcript's calls (without times), and without either akm's
log is not credited at all. Everything returned is plain builtins (it crosses xdist and lands
in the sample store) and bounded: at most :data:`MAX_ACTIONS` actions and
:data:`transcript.MAX_RESULTS` refs per search. The transcript is read by :mod:`transcript`.
Pure: no pytest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..agents.transcript import TranscriptReader
from ..corpus.tasks import Task
from ..records import Sample
from . import akm
from .akm_evidence import cross_check, describe
from .transcript import Transcript, cap_refs

MAX_ACTIONS = 100
LOW_RANK = 5  # a gold rank above this is "low" (docs/report.md, "Failure modes")
AKM_VERBS = ("search", "show", "feedback")


def ref_matches(ref: str | None, gold: str | None) -> bool:
    """Whether ``ref`` names the gold asset, in either akm's ref syntax (see :func:`akm.same_asset`)."""
    return akm.same_asset(ref, gold)


def _from_events(matched: list[tuple[dict[str, Any], dict[str, Any]]], gold: str | None) -> list[dict[str, Any]]:
    """akm operations as akm logged them; a show's size is its call's output when that call ran
    akm alone."""
    ops: list[dict[str, Any]] = []
    for e, call in matched:
        if e["kind"] == "search":
            ops.append(
                {
                    "kind": "search",
                    "query": e["query"],
                    "results": cap_refs(e["results"]),
                    "hit_count": e["hit_count"],
                    "gold_rank": _rank(e["results"], gold),
                    "t_ms": e["t_ms"],
                    "ok": True,
                }
            )
        elif e["kind"] == "show":
            ops.append(
                {
                    "kind": "show",
                    "ref": e["ref"],
                    "t_ms": e["t_ms"],
                    "ok": True,
                    "bytes": call.get("bytes") if call["kind"] == "show" else None,
                }
            )
        else:
            ops.append({"kind": "feedback", "ref": e["ref"], "polarity": e["signal"], "t_ms": e["t_ms"], "ok": True})
    return ops


def _from_calls(calls: list[dict[str, Any]], gold: str | None) -> list[dict[str, Any]]:
    ops = []
    for c in calls:
        if c["kind"] in AKM_VERBS and c["ok"] is not False:
            op = {k: v for k, v in c.items() if k not in ("exit", "t_end")}
            if c["kind"] == "search":
                op["hit_count"] = None if c["results"] is None else len(c["results"])
                op["gold_rank"] = _rank(c["results"], gold)
            ops.append(op)
    return ops


def _agent_calls(summary: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The akm calls an adapter's summary reports, as untimed calls of unknown status."""
    return [{**op, "ok": None} for op in (_from_agent(summary) if summary else [])]


def _from_agent(summary: dict[str, Any]) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = []
    for s in summary.get("searches") or []:
        query = s.get("query") if isinstance(s, dict) else str(s)
        ops.append(
            {
                "kind": "search",
                "query": query,
                "results": None,
                "hit_count": None,
                "gold_rank": None,
                "t_ms": None,
                "ok": True,
            }
        )
    for ref in summary.get("shows") or []:
        ops.append({"kind": "show", "ref": ref, "t_ms": None, "ok": True})
    for f in summary.get("feedback") or []:
        if isinstance(f, dict):
            ops.append(
                {"kind": "feedback", "ref": f.get("ref"), "polarity": f.get("polarity"), "t_ms": None, "ok": True}
            )
    return ops


def _rank(results: list[str] | None, gold: str | None) -> int | None:
    if results is None or gold is None:
        return None
    return next((i for i, ref in enumerate(results, 1) if ref_matches(ref, gold)), None)


def liveness(calls: list[dict[str, Any]], events: list[dict[str, Any]] | None) -> tuple[bool | None, str | None]:
    """(did akm answer at least once, why the treatment looks broken or None).

    ``None`` answered when the agent never called akm. Broken: every call failed and at least
    one failed the way only a broken akm fails (exit 70, 78, 126, 127 or a signal); an agent
    asking for a ref that is not there (exit 1 or 2) is the agent's doing, not akm's.
    """
    if events:
        return True, None
    if not calls:
        return None, None
    if any(c["ok"] for c in calls):
        return True, None
    if any(c["ok"] is None for c in calls):
        return None, None
    broken = [
        c["exit"]
        for c in calls
        if c["exit"] is not None and (c["exit"] in akm.BROKEN_EXITS or c["exit"] < 0 or c["exit"] > 128)
    ]
    if broken:
        return False, f"akm never answered: {len(calls)} akm call(s), all failed (exit {broken[-1]})"
    return False, None


def analyse_cell(
    task: Task,
    transcript: Path | None,
    akm_events: list[dict[str, Any]] | None,
    agent_akm: dict[str, Any] | None,
    *,
    reader: TranscriptReader,
    agent_started_ms: int | None = None,
) -> dict[str, Any]:
    """The akm trajectory of one cell as plain data (see the module docstring for sources).

    ``reader`` reads ``transcript`` (the agent's own, ``Agent.read_transcript``). ``akm_events`` are akm's own normalised events (``None`` when akm keeps no readable log).
    ``agent_started_ms`` (epoch ms) anchors the ``time_to_*`` figures; without it they are
    measured from the earliest time in the transcript. Never raises: a fault in the analysis
    gives an unobserved trajectory (``source`` None) with a warning, so a sample is never lost.
    """
    try:
        return _analyse(task, transcript, reader, akm_events, agent_akm, agent_started_ms)
    except Exception as err:
        empty = _analyse(task, None, reader, None, None, None)
        empty["warnings"].append(f"trajectory analysis failed: {type(err).__name__}: {err}")
        return empty


def _analyse(
    task: Task,
    transcript: Path | None,
    reader: TranscriptReader,
    events: list[dict[str, Any]] | None,
    agent_akm: dict[str, Any] | None,
    agent_started_ms: int | None,
) -> dict[str, Any]:
    warnings: list[str] = []
    seen = Transcript()
    source: str | None = None
    if transcript is not None and transcript.is_file():
        try:
            seen.read(transcript, reader)
            source = "transcript"
        except OSError as err:
            warnings.append(f"transcript unreadable: {err}")
    unconfirmed: list[dict[str, Any]] | None = None
    if events is not None:
        if source is None and agent_akm:
            source, calls, where = "akm_events", _agent_calls(agent_akm), "the agent's own account of its calls"
        else:
            calls, where = seen.calls, "the transcript"
        matched, unconfirmed = cross_check(events, calls)
        ops, events = _from_events(matched, task.gold_ref), [e for e, _ in matched]
        if unconfirmed and source is None:
            warnings.append(
                f"no transcript: the {len(unconfirmed)} akm event(s) in akm's log cannot be checked against the "
                "agent's akm calls (akm log unconfirmed); none credited, and the trajectory is not observed"
            )
        elif unconfirmed:
            warnings.append(
                f"{len(unconfirmed)} akm event(s) in akm's log match no akm call in {where} "
                f"(akm log tampered or unconfirmed): {describe(unconfirmed)}; none credited"
            )
        served = {id(c) for _, c in matched}
        missing = sum(1 for c in seen.calls if c["ok"] and c["kind"] in AKM_VERBS and id(c) not in served)
        if missing:
            warnings.append(f"{missing} akm call(s) the transcript shows succeeding are not in akm's log")
    elif source == "transcript":
        ops = _from_calls(seen.calls, task.gold_ref)
    elif agent_akm:
        ops, source = _from_agent(agent_akm), "agent"
    else:
        ops = []
    actions: list[dict[str, Any]] = []
    for action in sorted([*ops, *seen.writes], key=lambda a: (a["t_ms"] is None, a["t_ms"] or 0)):
        if not (action["kind"] == "write" and actions and actions[-1]["kind"] == "write"):
            actions.append(action)  # consecutive writes collapse into the first
    failed = [c for c in seen.calls if c["ok"] is False]
    actions.extend(
        {"kind": c["kind"], "t_ms": c["t_ms"], "ok": False, "exit": c["exit"]}
        for c in failed
        if c["kind"] in AKM_VERBS and len(actions) < MAX_ACTIONS
    )
    answered, broken = liveness(seen.calls, events)
    trajectory = _summary(task, source, events is not None, ops, actions, seen, answered, broken, agent_started_ms)
    trajectory["unconfirmed_events"] = None if unconfirmed is None else len(unconfirmed)
    trajectory["warnings"] = warnings
    return trajectory


def _summary(
    task: Task,
    source: str | None,
    have_events: bool,
    ops: list[dict[str, Any]],
    actions: list[dict[str, Any]],
    seen: Transcript,
    answered: bool | None,
    broken: str | None,
    agent_started_ms: int | None,
) -> dict[str, Any]:
    """The trajectory's figures, in the order the sample stores them (the caller adds
    ``unconfirmed_events`` and ``warnings``)."""
    gold = task.gold_ref
    searches = [a for a in ops if a["kind"] == "search"]
    shows = [a for a in ops if a["kind"] == "show"]
    feedback = [a for a in ops if a["kind"] == "feedback"]
    loaded = _loaded_assets(shows)
    observed = source == "transcript"  # only a transcript shows writes, failed calls and sizes
    anchor = agent_started_ms if agent_started_ms is not None else seen.first_ts
    gold_show = next((a for a in shows if ref_matches(a["ref"], gold)), None)
    sizes = [a["bytes"] for a in shows if a.get("bytes") is not None]
    attempted = seen.calls
    return {
        "source": source,
        "akm_events": have_events,
        "actions": actions[:MAX_ACTIONS],
        "actions_truncated": len(actions) > MAX_ACTIONS,
        "search_count": len(searches),
        "show_count": len(shows),
        "feedback_count": len(feedback),
        "positive_feedback_count": sum(a.get("polarity") == "positive" for a in feedback),
        "negative_feedback_count": sum(a.get("polarity") == "negative" for a in feedback),
        "searches_with_hits": sum(1 for a in searches if a.get("hit_count")),
        "gold_ranks": [a["gold_rank"] for a in searches if a.get("results") is not None] if gold else [],
        "assets_loaded": loaded,
        "correct_asset_loaded": None if gold is None else any(ref_matches(r, gold) for r in loaded),
        "feedback_recorded": bool(feedback),
        "feedback_polarity": _feedback_polarity(feedback),
        "searched_before_acting": _searched_before_acting(seen, searches) if observed else None,
        "workspace_writes": len(seen.writes) if observed else None,
        "irrelevant_assets_loaded": _irrelevant_assets(task, loaded),
        "akm_calls": len(attempted) if observed else None,
        "akm_calls_failed": sum(c["ok"] is False for c in attempted) if observed else None,
        "akm_answered": answered,
        "akm_broken": broken,
        "time_to_first_search_ms": _elapsed(searches[0]["t_ms"] if searches else None, anchor),
        "time_to_first_correct_asset_ms": _elapsed(gold_show["t_ms"] if gold_show else None, anchor),
        "asset_bytes_loaded": sum(sizes) if observed else None,
        "context_bytes_loaded": seen.context_bytes if observed else None,
    }


def _loaded_assets(shows: list[dict[str, Any]]) -> list[str]:
    """The assets shown, each once (two refs of one asset in either syntax are one)."""
    loaded: list[str] = []
    for a in shows:
        if a["ref"] and not any(akm.same_asset(a["ref"], r) and akm.same_asset(r, a["ref"]) for r in loaded):
            loaded.append(a["ref"])
    return loaded


def _feedback_polarity(feedback: list[dict[str, Any]]) -> str | None:
    """``positive``, ``negative``, ``mixed``, or None without feedback."""
    polarities = {a.get("polarity") for a in feedback} - {None}
    if not polarities:
        return None
    return "mixed" if len(polarities) > 1 else next(iter(polarities))


def _irrelevant_assets(task: Task, loaded: list[str]) -> list[str] | None:
    """The loaded assets that are neither the gold one nor one the task expects transfer from;
    None when the task names none."""
    gold = task.gold_ref
    allowed = (gold,) + task.expected_transfer_from if gold else task.expected_transfer_from
    if not allowed:
        return None
    return [r for r in loaded if not any(ref_matches(r, g) for g in allowed if g)]


def _searched_before_acting(seen: Transcript, searches: list[dict[str, Any]]) -> bool:
    """Whether a search came before the first workspace write (or there was no write)."""
    first_write = min((w["t_ms"] for w in seen.writes if w["t_ms"] is not None), default=None)
    return any(s["t_ms"] is not None and (first_write is None or s["t_ms"] < first_write) for s in searches)


def _elapsed(at: int | None, anchor: int | None) -> int | None:
    if at is None or anchor is None or at < anchor:
        return None
    return at - anchor


# ---------------------------------------------------------------- failure modes

FAILURE_LABELS = (
    "no_search",
    "search_no_gold",
    "search_low_rank",
    "loaded_wrong",
    "loaded_ignored",
    "followed_wrong",
    "unrelated_bug",
    "hung",
    "confused",
    "budget_exceeded",
)


def failure_mode(sample: Sample, gold: str | None) -> str | None:
    """Why an akm-arm run did not pass, from its trajectory (docs/report.md, "Failure modes").

    ``budget_exceeded`` runs get their budget tag (``hung``/``confused``, else
    ``budget_exceeded``). ``fail`` runs with a trajectory, first rule wins: no search →
    ``no_search``; no gold ref → ``unrelated_bug``; gold shown → ``followed_wrong`` if the
    agent wrote to the workspace after first showing it, else ``loaded_ignored``; every search
    with known results missed the gold → ``search_no_gold``; best rank > 5 →
    ``search_low_rank``; another asset shown → ``loaded_wrong``; else ``unrelated_bug``. Passing runs, harness errors,
    other arms and runs without a trajectory get None (never a guess).
    """
    if sample.get("arm") != "akm":
        return None
    outcome = sample.get("outcome")
    if outcome == "budget_exceeded":
        tag = sample.get("budget_tag")
        return tag if tag in ("hung", "confused") else "budget_exceeded"
    traj = sample.get("trajectory")
    if outcome != "fail" or not isinstance(traj, dict) or traj.get("source") is None:
        return None
    if not traj.get("search_count"):
        return "no_search"
    if gold is None:
        return "unrelated_bug"
    if traj.get("correct_asset_loaded"):
        actions = traj.get("actions") or []
        shown = next(
            (
                i
                for i, a in enumerate(actions)
                if a["kind"] == "show" and a.get("ok", True) and ref_matches(a.get("ref"), gold)
            ),
            None,
        )
        if shown is not None and any(a["kind"] == "write" for a in actions[shown + 1 :]):
            return "followed_wrong"
        return "loaded_ignored"
    ranks = list(traj.get("gold_ranks") or [])
    known = [r for r in ranks if r is not None]
    if ranks and not known:
        return "search_no_gold"
    if known and min(known) > LOW_RANK:
        return "search_low_rank"
    if traj.get("assets_loaded"):
        return "loaded_wrong"
    return "unrelated_bug"
