"""The akm side of the evolve track's proposal step: feedback, proposal generation, the lint
verdict, accept or reject, and the re-index, each one akm command (docs/tracks.md, "evolve").

Which verbs generate proposals is read from the installed akm's own ``--help``: akm 0.7 has
``distill`` (a lesson from an asset and its feedback), ``reflect`` (a revision of the asset,
written by an agent CLI akm spawns) and ``proposal``; akm 0.9 folded distill and reflect into
``improve`` (its reflect process revises an asset with feedback; its distill only works on
memories) and ``proposal``. A proposal passes lint when akm's own validation says so: both
lines' ``proposal show`` print ``{"proposal", "validation": {"ok", "findings"}}`` (the
reference read other keys and so rejected every proposal). Pure: no pytest.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...cell import akm
from ...system.procs import ProcessTracker

TIMEOUT_S = 300.0


@dataclass(frozen=True, slots=True)
class AkmRunner:
    """akm commands against one evolving stash: its executable, environment and cwd."""

    info: akm.AkmInfo
    env: dict[str, str]
    llm_env: dict[str, str]  # the same, with the akm config that names the LLM endpoint
    cwd: Path
    procs: ProcessTracker

    def run(self, *args: str, llm: bool = False, done: Callable[[str], bool] | None = None) -> tuple[int, str]:
        code, output, timed_out = self.procs.run(
            [str(self.info.path), *args],
            cwd=self.cwd,
            env=self.llm_env if llm else self.env,
            timeout_s=TIMEOUT_S,
            done=done,
        )
        return (-1 if timed_out or code is None else code), output


def verbs(runner: AkmRunner) -> dict[str, bool]:
    """Which proposal verbs the installed akm lists in its help."""
    _, out = runner.run("--help")
    plain = re.sub(r"\x1b\[[0-9;]*m", "", out)
    words = set(re.findall(r"\b[a-z]+\b", plain))
    return {v: v in words for v in ("distill", "reflect", "improve", "proposal")}


def feedback(runner: AkmRunner, ref: str, signal: str) -> tuple[bool, str]:
    """``akm feedback <ref> --positive|--negative`` (0.9 wants a reason for a negative)."""
    args = ["feedback", akm.format_ref(ref, runner.info.line), f"--{signal}"]
    if signal == "negative":
        args += ["--reason", "the harness's verifier rejected a train-slice run"]
    code, out = runner.run(*args)
    return code == 0, out.strip()[-300:]


def distill(runner: AkmRunner, ref: str) -> dict[str, Any]:
    """``akm distill <ref>``: one lesson proposal from the asset and its feedback, or why not."""
    code, out = runner.run("distill", akm.format_ref(ref, runner.info.line), llm=True)
    data = _json(out)
    return {
        "ref": ref,
        "verb": "distill",
        "exit": code,
        "outcome": data.get("outcome") if code == 0 else "failed",
        "proposal_id": data.get("proposalId"),
        "message": None if code == 0 else _error_text(out),
    }


def reflect(runner: AkmRunner, ref: str) -> dict[str, Any]:
    """akm 0.7's ``akm reflect <ref>``: a revision of the asset from its feedback, written by
    the agent CLI akm's config names (the harness's bridge to akm's LLM), or why not."""
    code, out = runner.run("reflect", akm.format_ref(ref, runner.info.line), llm=True, done=_reflect_printed)
    data = _json(out)
    ok = code == 0 and data.get("ok") is not False
    proposal = data.get("proposal") if isinstance(data.get("proposal"), dict) else {}
    return {
        "ref": ref,
        "verb": "reflect",
        "exit": code,
        "outcome": "queued" if ok else "failed",
        "proposal_id": proposal.get("id"),
        "message": None if ok else _error_text(out),
    }


def _reflect_printed(output: str) -> bool:
    """Whether akm 0.7's reflect has printed its queued proposal, the last thing it does. It
    then lingers for its agent timeout (two minutes) on a stream-drain timer it never clears,
    so the step ends it here rather than wait (docs/tracks.md, "evolve")."""
    data = _json(output)
    return data.get("ok") is True and isinstance(data.get("proposal"), dict)


def improve(runner: AkmRunner, ref: str) -> dict[str, Any]:
    """akm 0.9's ``akm improve <ref>``: its processes (reflect, for a non-memory asset) queue
    proposals for the asset; the outcome is read from the run's own result (``actions``)."""
    timeout_ms = str(int(TIMEOUT_S * 1000) - 10_000)
    code, out = runner.run(
        "improve", akm.format_ref(ref, runner.info.line), "--json-to-stdout", "--timeout-ms", timeout_ms, llm=True
    )
    data = _json_doc(out, "actions")
    mine = [
        a
        for a in data.get("actions") or []
        if isinstance(a, dict) and akm.same_asset(str(a.get("ref")), ref) and isinstance(a.get("result"), dict)
    ]
    queued = [a["result"]["proposal"] for a in mine if isinstance(a["result"].get("proposal"), dict)]
    errors = [str(a["result"].get("error") or a.get("mode")) for a in mine if not a["result"].get("ok")]
    return {
        "ref": ref,
        "verb": "improve",
        "exit": code,
        "outcome": "queued" if queued else "failed",
        "proposal_id": queued[0].get("id") if queued else None,
        "processes": [str(a.get("mode")) for a in mine],
        "message": None
        if queued
        else "; ".join(errors) or (_error_text(out) if code != 0 else "improve queued no proposal for the asset"),
    }


def _json_flag(runner: AkmRunner) -> list[str]:
    """akm 0.7 prints JSON with ``--json``; 0.9 prints JSON by default and refuses the flag."""
    return ["--json"] if runner.info.line == "0.7" else []


def list_proposals(runner: AkmRunner) -> list[dict[str, Any]]:
    """The pending proposals: ``{id, target_ref, kind, source}``, read tolerantly (array or
    object); a 0.9 ref's bundle prefix (``stash//skills/x``) is dropped."""
    _, out = runner.run("proposal", "list", *_json_flag(runner))
    data = _json(out, want=(dict, list))
    raw = data.get("proposals", []) if isinstance(data, dict) else data
    rows = []
    for p in raw if isinstance(raw, list) else []:
        if not isinstance(p, dict):
            continue
        ref = p.get("target_ref") or p.get("targetRef") or p.get("ref")
        if not isinstance(p.get("id"), str) or not isinstance(ref, str):
            continue
        ref = ref.rsplit("//", 1)[-1]
        source = str(p.get("kind") or p.get("source") or "")
        kind = (
            "lesson"
            if source in ("lesson", "distill")
            else "revision"
            if source in ("revision", "reflect")
            else "unknown"
        )
        rows.append({"id": p["id"], "target_ref": ref, "kind": kind, "source": source or None})
    return rows


def lint(runner: AkmRunner, proposal_id: str) -> tuple[bool, str]:
    """Whether akm's own validation of the proposal passes, and its findings."""
    _, out = runner.run("proposal", "show", proposal_id, *_json_flag(runner))
    data = _json(out)
    validation = data.get("validation") if isinstance(data.get("validation"), dict) else {}
    lint_block = data.get("lint") if isinstance(data.get("lint"), dict) else {}
    passed = (
        validation.get("ok") is True
        or data.get("lint_pass") is True
        or data.get("lintPass") is True
        or lint_block.get("pass") is True
    )
    findings = validation.get("findings") or lint_block.get("issues") or []
    text = "; ".join(str(f.get("message", f)) if isinstance(f, dict) else str(f) for f in findings)
    return passed, text


def decide(runner: AkmRunner, proposal: dict[str, Any]) -> dict[str, Any]:
    """Accept a lint-clean proposal, reject any other; the proposal log's row."""
    passed, findings = lint(runner, proposal["id"])
    row = {**proposal, "lint_pass": passed, "findings": findings}
    if passed:
        code, out = runner.run("proposal", "accept", proposal["id"])
        row.update(
            decision="accept" if code == 0 else "reject",
            reason=None if code == 0 else f"accept failed: {_error_text(out)}",
        )
    else:
        reason = f"lint failed: {findings or 'lint failed'}"
        code, out = runner.run("proposal", "reject", proposal["id"], "--reason", reason)
        row.update(decision="reject", reason=reason if code == 0 else f"{reason}; reject failed: {_error_text(out)}")
    return row


def feedback_events(runner: AkmRunner) -> list[dict[str, Any]] | None:
    """Every feedback event the evolving stash's akm logged (None when its log is unreadable)."""
    argv = akm.log_argv(runner.info)
    if argv is None:
        events: list[dict[str, Any]] | None = akm.parse_events_file(akm.events_file(runner.env))
    else:
        code, out = runner.run(*argv[1:])
        events = akm.parse_log(out) if code == 0 else None
    return None if events is None else [e for e in events if e["kind"] == "feedback"]


def _json(output: str, want: tuple[type, ...] = (dict,)) -> Any:
    starts = [i for i in (output.find("{"), output.find("[")) if i >= 0]
    if not starts:
        return {}
    try:
        data = json.loads(output[min(starts) :])
    except ValueError:
        return {}
    return data if isinstance(data, want) else {}


def _json_doc(output: str, key: str) -> dict[str, Any]:
    """The JSON object holding ``key`` in output where akm's progress lines surround it."""
    decoder = json.JSONDecoder()
    for match in re.finditer(r"^\{", output, re.MULTILINE):
        try:
            data, _ = decoder.raw_decode(output, match.start())
        except ValueError:
            continue
        if isinstance(data, dict) and key in data:
            return data
    return {}


def _error_text(output: str) -> str:
    data = _json(output)
    text = data.get("error") or data.get("message") or output
    return " ".join(str(text).split())[-300:]
