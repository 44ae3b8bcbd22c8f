"""A cell's workflow trace: the ordered events of the agent's run that workflow specs are
checked against (docs/corpus.md, "Workflow specs").

akm-bench built its trace from akm's event log alone, so workspace writes, reads, test runs and
feedback polarity never appeared in it and several of its specs could never pass. Here the
trace comes from the agent's transcript (:mod:`transcript`): every akm call that did not fail,
with its ref, search results and feedback flag, every workspace read and write, every test run,
bracketed by the harness's ``agent_started``, ``agent_finished`` and, when the verifier ran,
``verifier_run``. Pure: no pytest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..agents.transcript import TranscriptReader
from .shell import commands
from .transcript import Transcript

MAX_EVENTS = 4096
_AKM_EVENTS = {
    "search": "akm_search",
    "show": "akm_show",
    "feedback": "akm_feedback",
    "reflect": "akm_reflect",
    "distill": "akm_distill",
    "propose": "akm_propose",
}
_SUBCOMMANDS = {
    ("workflow", "start"): "akm_workflow_start",
    ("workflow", "next"): "akm_workflow_next",
    ("workflow", "complete"): "akm_workflow_complete",
    ("workflow", "finish"): "akm_workflow_finish",
    ("proposal", "accept"): "akm_proposal_accept",
}
_TEST_RUNNERS = frozenset(("pytest", "py.test", "tox", "nox"))


def akm_event(call: dict[str, Any]) -> str | None:
    """The trace event of one akm call read from a transcript, or None if it has none."""
    if call["kind"] in _AKM_EVENTS:
        return _AKM_EVENTS[call["kind"]]
    args = call.get("args") or []
    return _SUBCOMMANDS.get((call["kind"], args[0])) if args else None


def runs_tests(command: str) -> bool:
    """Whether a shell command runs a test suite (pytest, ``python -m pytest``, ``make test``,
    ``npm test``, ``go test``, ``cargo test``, ``bash verify.sh``)."""
    for c in commands(command):
        words, name = c.words, c.name
        if name in _TEST_RUNNERS:
            return True
        if name.startswith("python") and words[1:3] == ["-m", "pytest"]:
            return True
        if name in ("make", "npm", "go", "cargo", "yarn", "pnpm") and "test" in words[1:3]:
            return True
        if name in ("bash", "sh") and any(w.endswith("verify.sh") for w in words[1:2]):
            return True
    return False


def build_trace(transcript: Path | None, verifier_exit: int | None, reader: TranscriptReader) -> dict[str, Any]:
    """``{"events": [...], "truncated": bool, "source": "transcript" | None}``; each event is
    ``{"event", "t_ms", "ref"?, "results"?, "polarity"?, "exit"?}`` in run order. ``reader`` is
    the agent's own (``Agent.read_transcript``). Without a readable transcript the agent's part
    is empty (``source`` None)."""
    seen = Transcript()
    source = None
    if transcript is not None and transcript.is_file():
        try:
            seen.read(transcript, reader)
            source = "transcript"
        except OSError:
            seen = Transcript()
    agent: list[dict[str, Any]] = []
    for call in seen.calls:
        name = akm_event(call)
        if name is None or call["ok"] is False:
            continue  # a call akm refused did not happen
        event: dict[str, Any] = {"event": name, "t_ms": call["t_ms"]}
        for key in ("ref", "polarity", "results"):
            if call.get(key) is not None:
                event[key] = call[key]
        agent.append(event)
    for write in seen.writes:
        agent.append({"event": "workspace_write", "t_ms": write["t_ms"], "path": write["path"]})
    for tool in seen.tools:
        if tool.kind == "read" and tool.ok:
            agent.append({"event": "workspace_read", "t_ms": tool.start_ms})
        elif tool.kind == "run-shell" and tool.command and runs_tests(tool.command):
            agent.append({"event": "test_run", "t_ms": tool.start_ms, "ok": tool.ok})
    # Stable: events of one tool call keep the order they were found in.
    agent.sort(key=lambda e: (e["t_ms"] is None, e["t_ms"] or 0))
    first_write = next((i for i, e in enumerate(agent) if e["event"] == "workspace_write"), None)
    if first_write is not None:
        agent.insert(first_write, {"event": "first_workspace_write", "t_ms": agent[first_write]["t_ms"]})
    events = [{"event": "agent_started", "t_ms": None}, *agent, {"event": "agent_finished", "t_ms": None}]
    if verifier_exit is not None:  # None: the verifier did not run (a budget, a harness error)
        events.append({"event": "verifier_run", "t_ms": None, "exit": verifier_exit})
    truncated = len(events) > MAX_EVENTS
    return {"events": events[:MAX_EVENTS], "truncated": truncated, "source": source}
