"""What the agent actually did with akm in one cell, from its transcript and akm's own events.

The reference derived its trajectory from the *verifier's* stdout (its §14 items 1, 9, 10), so
most of its signals were empty or artefacts. Here the sources are, in order of preference:

1. the agent transcript (``opencode run --format json`` events, opencode.md §4): ordered
   ``tool_use`` parts give the akm commands the agent ran (``bash`` commands parsed with
   :func:`events.parse_akm_commands`), the refs each search returned (parsed from the tool
   output), the first workspace write, and millisecond timestamps;
2. the adapter's own akm summary (``AgentResult.akm``) when there is no transcript;
3. akm's events file (``{"eventType": "search|show|feedback", "ref", "metadata"}`` lines), which
   also confirms which ``show`` calls akm actually served and fills in feedback polarity.

Everything returned is plain builtins (it crosses xdist and lands in the sample store) and
bounded: at most :data:`MAX_ACTIONS` actions and :data:`MAX_RESULTS` refs per search. Files are
streamed line by line with a per-line cap, never read whole. Pure: no pytest.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .corpus import Task
from .events import _split_commands, _strip_prefix, parse_akm_commands

MAX_ACTIONS = 100
MAX_RESULTS = 10
LINE_CAP = 4 * 1024 * 1024
LOW_RANK = 5  # a gold rank above this is "low" (reference §6.6)

WRITE_TOOLS = frozenset(("write", "edit", "patch", "multiedit", "apply_patch"))
# Commands that change files whatever their arguments (their operands are workspace paths in
# practice; the agent's cwd is the workspace).
_WRITING_COMMANDS = frozenset(
    ("tee", "cp", "mv", "rm", "touch", "mkdir", "rmdir", "ln", "chmod", "truncate", "install", "patch", "rsync", "dd", "unzip", "tar")
)
_NOT_WORKSPACE = ("/dev/", "/tmp/", "/proc/")
_REDIRECT = re.compile(r"^(?:\d|&)?>>?\|?(.*)$")
_NUMBERED = re.compile(r"^\s*(\d{1,3})[.)]\s+[\"'`]?([^\s\"'`]+)")
_JSON_REF = re.compile(r'"ref"\s*:\s*"([^"]+)"')
_REF_LINE = re.compile(r"^\s*ref:\s*(\S+)", re.IGNORECASE)


def ref_matches(ref: str | None, gold: str | None) -> bool:
    """The reference's ref rule (§6.5): equal, origin-prefixed ``x//gold``, or ``gold/...``."""
    if not ref or not gold:
        return False
    return ref == gold or ref.endswith("//" + gold) or ref.startswith(gold + "/")


def iter_json_lines(path: Path, cap: int = LINE_CAP) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSON-lines file, streamed; lines longer than ``cap`` are skipped."""
    with open(path, "rb") as fh:
        while True:
            line = fh.readline(cap + 1)
            if not line:
                return
            if len(line) > cap and not line.endswith(b"\n"):
                while (rest := fh.readline(cap)) and not rest.endswith(b"\n"):
                    pass  # drain an over-long line without holding it
                continue
            try:
                obj = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue
            if isinstance(obj, dict):
                yield obj


def parse_search_results(output: str) -> list[str]:
    """Refs listed by an ``akm search``, in rank order (at most :data:`MAX_RESULTS`).

    Understands a numbered list (``1. skill:x  (score 3)``, akm's text output), JSON
    (``"ref": "skill:x"``) and ``ref: skill:x`` lines.
    """
    refs: list[str] = []
    for line in output.splitlines():
        found = [m.group(1) for m in _JSON_REF.finditer(line)]
        if not found:
            m = _NUMBERED.match(line) or _REF_LINE.match(line)
            if m:
                found = [m.group(m.lastindex or 1)]
        for ref in found:
            if ref not in refs:
                refs.append(ref)
            if len(refs) >= MAX_RESULTS:
                return refs
    return refs


def bash_writes_workspace(command: str) -> bool:
    """Best effort: does this shell command modify files in the workspace?

    Counted as a write: an output redirection (``>``/``>>``) to anything but ``/dev/``,
    ``/tmp/`` or ``/proc/`` paths or a file descriptor; ``tee``, ``cp``, ``mv``, ``rm``,
    ``touch``, ``mkdir`` and friends; ``sed -i``/``perl -i``; ``git apply|checkout|restore|rm|mv``.
    Commands inside a heredoc fed to ``bash``/``sh`` are seen too (lines are split).
    Not detected: writes done by programs (``python script.py``), which are not visible
    in the command text.
    """
    for words in _split_commands(command):
        words = _strip_prefix(words)
        for i, word in enumerate(words):
            m = _REDIRECT.match(word)
            if m and not word.startswith("<"):
                target = m.group(1) or (words[i + 1] if i + 1 < len(words) else "")
                if target and not target.startswith(("&", *_NOT_WORKSPACE)) and target != "/dev/null":
                    return True
        if not words:
            continue
        head = words[0].rsplit("/", 1)[-1]
        if head in _WRITING_COMMANDS:
            return True
        if head in ("sed", "perl") and any(w == "-i" or w.startswith("-i") or w.startswith("--in-place") for w in words[1:]):
            return True
        if head == "git" and len(words) > 1 and words[1] in ("apply", "checkout", "restore", "rm", "mv", "am"):
            return True
    return False


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _read_akm_events(path: Path) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for obj in iter_json_lines(path):
        kind = obj.get("eventType")
        if kind not in ("search", "show", "feedback"):
            continue
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        ref = obj.get("ref") if isinstance(obj.get("ref"), str) else meta.get("ref")
        events.append({"kind": kind, "ref": ref if isinstance(ref, str) else None, "metadata": meta})
        if len(events) >= 10 * MAX_ACTIONS:
            break
    return events


def _transcript_actions(path: Path, gold: str | None) -> tuple[list[dict[str, Any]], int | None, int]:
    """(ordered actions incl. the first workspace write, first event time in ms, write count)."""
    actions: list[dict[str, Any]] = []
    first_ts: int | None = None
    writes = 0
    for event in iter_json_lines(path):
        ts = _int(event.get("timestamp"))
        if first_ts is None and ts is not None:
            first_ts = ts
        if event.get("type") != "tool_use":
            continue
        part = event.get("part") if isinstance(event.get("part"), dict) else {}
        state = part.get("state") if isinstance(part.get("state"), dict) else {}
        inputs = state.get("input") if isinstance(state.get("input"), dict) else {}
        times = state.get("time") if isinstance(state.get("time"), dict) else {}
        at = _int(times.get("start")) or ts
        if at is not None and (first_ts is None or at < first_ts):
            first_ts = at  # opencode emits step_start after the tool has started
        ok = state.get("status") == "completed"
        output = state.get("output") if isinstance(state.get("output"), str) else ""
        tool = part.get("tool")
        if tool in WRITE_TOOLS:
            if ok:
                writes += 1
                _add_write(actions, tool, inputs.get("filePath"), at)
            continue
        command = inputs.get("command")
        if tool != "bash" or not isinstance(command, str):
            continue
        found = parse_akm_commands(command)
        searches = [d for v, d in found if v == "search"]
        for n, (verb, data) in enumerate(found):
            action: dict[str, Any] = {"kind": verb, "t_ms": at, "ok": ok}
            if verb == "search":
                action["query"] = data["query"]
                # One command's output cannot be split between several searches: only a lone
                # search gets its results; the others stay unknown (None), never invented.
                results = parse_search_results(output) if ok and len(searches) == 1 else None
                action["results"] = results
                action["gold_rank"] = _rank(results, gold)
            else:
                action["ref"] = data["ref"]
                if verb == "feedback":
                    action["polarity"] = data["polarity"]
                elif n == 0 or all(v != "show" for v, _ in found[:n]):
                    action["bytes"] = len(output.encode("utf-8", "replace"))
            if n == 0 and found:
                action["context_bytes"] = len(output.encode("utf-8", "replace"))
            actions.append(action)
        if ok and bash_writes_workspace(command):
            writes += 1
            _add_write(actions, "bash", None, at)
    return actions, first_ts, writes


def _add_write(actions: list[dict[str, Any]], tool: str, path: Any, at: int | None) -> None:
    # Consecutive writes collapse into the first, so the order of writes relative to akm
    # actions is kept while the list stays bounded by the number of akm actions.
    if not actions or actions[-1]["kind"] != "write":
        actions.append({"kind": "write", "tool": tool, "path": path if isinstance(path, str) else None, "t_ms": at})


def _rank(results: list[str] | None, gold: str | None) -> int | None:
    if results is None or gold is None:
        return None
    return next((i for i, ref in enumerate(results, 1) if ref_matches(ref, gold)), None)


def _agent_actions(akm: dict[str, Any], gold: str | None) -> list[dict[str, Any]]:
    actions: list[dict[str, Any]] = []
    for s in akm.get("searches") or []:
        query = s.get("query") if isinstance(s, dict) else str(s)
        actions.append({"kind": "search", "query": query, "results": None, "gold_rank": None, "ok": True})
    for ref in akm.get("shows") or []:
        actions.append({"kind": "show", "ref": ref, "ok": True})
    for f in akm.get("feedback") or []:
        if isinstance(f, dict):
            actions.append({"kind": "feedback", "ref": f.get("ref"), "polarity": f.get("polarity"), "ok": True})
    return actions


def _event_actions(events: list[dict[str, Any]], gold: str | None) -> list[dict[str, Any]]:
    actions: list[dict[str, Any]] = []
    for e in events:
        meta = e["metadata"]
        if e["kind"] == "search":
            raw = meta.get("resultRefs", meta.get("results"))
            results = [r for r in raw if isinstance(r, str)][:MAX_RESULTS] if isinstance(raw, list) else None
            query = meta.get("query")
            actions.append({"kind": "search", "query": query if isinstance(query, str) else None,
                            "results": results, "gold_rank": _rank(results, gold), "ok": True})
        elif e["kind"] == "show":
            actions.append({"kind": "show", "ref": e["ref"], "ok": True})
        else:
            actions.append({"kind": "feedback", "ref": e["ref"], "polarity": _polarity(meta), "ok": True})
    return actions


def _polarity(meta: dict[str, Any]) -> str | None:
    signal = meta.get("signal", meta.get("polarity"))
    return signal if signal in ("positive", "negative") else None


def analyse_cell(
    task: Task,
    transcript: Path | None,
    akm_events: Path | None,
    agent_akm: dict[str, Any] | None,
    *,
    agent_started_ms: int | None = None,
) -> dict[str, Any]:
    """The akm trajectory of one cell as plain data (see the module docstring for sources).

    ``agent_started_ms`` (epoch ms, optional) anchors the ``time_to_*`` figures at the agent's
    start; without it they are measured from the earliest time in the transcript (the agent's
    first step). Without a transcript they are None. Never raises: a fault in the analysis
    gives an unobserved trajectory (``source`` None) with a warning, so a sample is never lost.
    """
    try:
        return _analyse(task, transcript, akm_events, agent_akm, agent_started_ms)
    except Exception as err:  # noqa: BLE001 - the sample matters more than its trajectory
        empty = _analyse(task, None, None, None, None)
        empty["warnings"].append(f"trajectory analysis failed: {type(err).__name__}: {err}")
        return empty


def _analyse(
    task: Task,
    transcript: Path | None,
    akm_events: Path | None,
    agent_akm: dict[str, Any] | None,
    agent_started_ms: int | None,
) -> dict[str, Any]:
    gold = task.gold_ref
    warnings: list[str] = []
    events: list[dict[str, Any]] | None = None
    if akm_events is not None and akm_events.is_file():
        try:
            events = _read_akm_events(akm_events)
        except OSError as err:
            warnings.append(f"akm events unreadable: {err}")
    first_ts: int | None = None
    writes = 0
    source: str | None = None
    actions: list[dict[str, Any]] = []
    if transcript is not None and transcript.is_file():
        try:
            actions, first_ts, writes = _transcript_actions(transcript, gold)
            source = "transcript"
        except OSError as err:
            warnings.append(f"transcript unreadable: {err}")
    if source is None and agent_akm:
        actions, source = _agent_actions(agent_akm, gold), "agent"
    if source is None and events is not None:
        actions, source = _event_actions(events, gold), "akm_events"
    if source == "transcript" and events is not None:
        _reconcile(actions, events)

    akm_actions = [a for a in actions if a["kind"] != "write"]
    searches = [a for a in akm_actions if a["kind"] == "search"]
    shows = [a for a in akm_actions if a["kind"] == "show" and a.get("ok", True)]
    feedback = [a for a in akm_actions if a["kind"] == "feedback" and a.get("ok", True)]
    loaded: list[str] = []
    for a in shows:
        if a["ref"] and a["ref"] not in loaded:
            loaded.append(a["ref"])
    if source == "transcript" and events is not None:
        # A show akm served but the transcript did not reveal (e.g. run from a script).
        for e in events:
            if e["kind"] == "show" and e["ref"] and not any(ref_matches(e["ref"], r) or ref_matches(r, e["ref"]) for r in loaded):
                loaded.append(e["ref"])
    polarities = {a.get("polarity") for a in feedback} - {None}
    allowed = (gold,) + task.expected_transfer_from if gold else task.expected_transfer_from
    if allowed:
        irrelevant: list[str] | None = [r for r in loaded if not any(ref_matches(r, g) for g in allowed if g)]
    else:
        irrelevant = None  # nothing says which assets are relevant: do not judge
    searched_before: bool | None = None
    if source == "transcript":
        first_write = next((i for i, a in enumerate(actions) if a["kind"] == "write"), len(actions))
        searched_before = any(a["kind"] == "search" for a in actions[:first_write])
    anchor = agent_started_ms if agent_started_ms is not None else first_ts
    gold_show = next((a for a in shows if ref_matches(a["ref"], gold)), None)
    truncated = len(actions) > MAX_ACTIONS
    return {
        "source": source,
        "akm_events": events is not None,
        "actions": actions[:MAX_ACTIONS],
        "actions_truncated": truncated,
        "search_count": len(searches),
        "show_count": len(shows),
        "feedback_count": len(feedback),
        "positive_feedback_count": sum(a.get("polarity") == "positive" for a in feedback),
        "negative_feedback_count": sum(a.get("polarity") == "negative" for a in feedback),
        "gold_ranks": [a["gold_rank"] for a in searches if a.get("results") is not None] if gold else [],
        "assets_loaded": loaded,
        "correct_asset_loaded": None if gold is None else any(ref_matches(r, gold) for r in loaded),
        "feedback_recorded": bool(feedback),
        "feedback_polarity": ("mixed" if len(polarities) > 1 else next(iter(polarities))) if polarities else None,
        "searched_before_acting": searched_before,
        "workspace_writes": writes if source == "transcript" else None,
        "irrelevant_assets_loaded": irrelevant,
        "time_to_first_search_ms": _elapsed(searches[0].get("t_ms") if searches else None, anchor),
        "time_to_first_correct_asset_ms": _elapsed(gold_show.get("t_ms") if gold_show else None, anchor),
        "asset_bytes_loaded": sum(a.get("bytes", 0) for a in shows) if source == "transcript" else None,
        "context_bytes_loaded": sum(a.get("context_bytes", 0) for a in akm_actions) if source == "transcript" else None,
        "warnings": warnings,
    }


def _reconcile(actions: list[dict[str, Any]], events: list[dict[str, Any]]) -> None:
    """Let akm's events confirm shows and supply feedback polarity the command line lacked."""
    served = [e["ref"] for e in events if e["kind"] == "show" and e["ref"]]
    signals = {e["ref"]: _polarity(e["metadata"]) for e in events if e["kind"] == "feedback" and e["ref"]}
    for a in actions:
        if a["kind"] == "show":
            a["ok"] = a.get("ok", True) and any(ref_matches(r, a["ref"]) or ref_matches(a["ref"], r) for r in served)
        elif a["kind"] == "feedback" and a.get("polarity") is None:
            a["polarity"] = signals.get(a["ref"])


def _elapsed(at: int | None, anchor: int | None) -> int | None:
    if at is None or anchor is None or at < anchor:
        return None
    return at - anchor


# ---------------------------------------------------------------- failure modes

FAILURE_LABELS = (
    "no_search", "search_no_gold", "search_low_rank", "loaded_wrong", "loaded_ignored",
    "followed_wrong", "unrelated_bug", "hung", "confused", "budget_exceeded",
)


def failure_mode(sample: dict[str, Any], gold: str | None) -> str | None:
    """Why an akm-arm run did not pass, from its trajectory (reference §6.6, corrected).

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
        shown = next((i for i, a in enumerate(actions) if a["kind"] == "show" and a.get("ok", True) and ref_matches(a.get("ref"), gold)), None)
        if shown is not None and any(a["kind"] == "write" for a in actions[shown + 1:]):
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
