"""The scripts of the scripted model: what each policy answers at each turn of a cell (the
policies are listed in :mod:`scripted`)."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...cell import akm
from ...cell.prompts import search_words
from ...corpus.tasks import Task
from . import snoop

POLICIES = (
    "oracle",
    "shortcut",
    "idle",
    "hang",
    "error",
    "loop",
    "snoop",
    "learner",
    "lesson",
    "garbage",
    "needs-asset",
)
# The policies that stand in for akm's own LLM (distill, reflect, improve), not for the agent.
AKM_LLM_POLICIES = ("lesson", "garbage")
IDLE_TEXT = "I have looked at the task and will not change anything."
HEREDOC = "AKMBENCH_SOLVE_EOF"
APPLY = "Apply the solution"
SHOW = "Show the matching asset"
GIVE_UP = "No lesson on this asset yet; I could not work out the task."
GARBAGE_TEXT = "Looks fine to me, nothing to learn here."
# The section a revised asset gains from the scripted ``lesson`` model (akm reflect or improve).
LESSON_HEADING = "## Lesson from feedback"


@dataclass
class ScriptedCell:
    """A registered cell: its policy, its task and arm, and what the server reported to it."""

    policy: str
    task: Task | None
    arm: str
    run_dir: Path | None
    commands: list[str] | None = None
    akm_line: str | None = None
    # The Authorization headers the cell's requests carried (tests: the forwarder adds the key).
    authorization: set[str] = field(default_factory=set)
    totals: dict[str, int] = field(
        default_factory=lambda: {
            "requests": 0,
            "title_requests": 0,
            "errors": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "input": 0,
            "output": 0,
            "reasoning": 0,
            "cache_read": 0,
            "cache_write": 0,
            "total": 0,
        }
    )


@dataclass
class Action:
    """What the model does at one turn: call bash, answer with text, hang or fail."""

    kind: str  # "tool" | "text" | "hang" | "error"
    command: str = ""
    description: str = ""
    text: str = ""


def plan_of(cell: ScriptedCell) -> list[Action]:
    """The tool-call turns of an oracle cell, in order (the final answer follows them)."""
    if cell.commands is not None:
        return [Action("tool", command=c, description="scripted command") for c in cell.commands]
    task = cell.task
    assert task is not None
    if cell.policy == "snoop":
        return [Action("tool", command=snoop.command(task, cell.run_dir), description="Look around")]
    actions: list[Action] = []
    on_akm = cell.arm == "akm" and cell.policy != "shortcut"  # shortcut: the solution, never akm
    if on_akm:
        actions.append(Action("tool", command=_search(task), description="Search the akm stash"))
        if task.gold_ref:
            actions.append(Action("tool", command="akm show {ref}", description=SHOW))
    script = task.solution.read_text(encoding="utf-8") if task.solution.is_file() else "echo 'no solve.sh'; exit 1\n"
    if not script.endswith("\n"):
        script += "\n"
    actions.append(Action("tool", command=f"bash <<'{HEREDOC}'\n{script}{HEREDOC}", description=APPLY))
    if on_akm and task.gold_ref:
        actions.append(Action("tool", command="akm feedback {ref} --positive", description="Record feedback"))
    return actions


def next_action(cell: ScriptedCell, messages: list[dict[str, Any]], turn: int) -> Action:
    if cell.policy == "idle":
        return Action("text", text=IDLE_TEXT)
    if cell.policy == "hang":
        return Action("hang")
    if cell.policy == "error":
        return Action("error")
    if cell.policy == "loop":
        return Action("tool", command=f"echo 'still working, step {turn}'", description=f"Check step {turn}")
    if cell.policy in AKM_LLM_POLICIES or (cell.policy == "learner" and cell.task is None):
        return Action("text", text=IDLE_TEXT)
    if cell.policy == "needs-asset":
        return needs_asset_action(cell, messages, turn)
    plan = learner_plan(cell, messages) if cell.policy == "learner" else plan_of(cell)
    if cell.policy == "learner" and turn >= len(plan) and not any(a.description == APPLY for a in plan):
        return Action("text", text=GIVE_UP)
    if turn < len(plan):
        action = plan[turn]
        if "{ref}" in action.command:
            ref = _quote(_gold_ref(cell, messages))
            return Action(action.kind, command=action.command.replace("{ref}", ref), description=action.description)
        return action
    return Action("text", text=_final_answer(messages, plan))


def _gold_ref(cell: ScriptedCell, messages: list[dict[str, Any]]) -> str:
    """The gold asset's ref as the search printed it, like an agent copying it from the output;
    the corpus's ref in the installed akm's syntax when the search did not list it."""
    gold = cell.task.gold_ref if cell.task else None
    assert gold is not None
    searched = next((content_text(m.get("content")) for m in messages if m.get("role") == "tool"), "")
    hits = akm.search_refs(searched) or []
    return next((ref for ref in hits if akm.same_asset(ref, gold)), akm.format_ref(gold, cell.akm_line or "0.7"))


def _quote(text: str) -> str:
    return shlex.quote(text)


def _search(task: Task) -> str:
    """``akm search`` with the task's keywords as separate words, as akm-bench's prompt shows it
    (akm then searches the first word; docs/akm.md, "Query forms")."""
    return "akm search " + " ".join(_quote(w) for w in search_words(task))


def _final_answer(messages: list[dict[str, Any]], plan: list[Action]) -> str:
    """The output of the solution's tool call (the last tool message for a commands plan)."""
    target = None
    for i, action in enumerate(plan):
        if action.description == APPLY:
            target = f"call_{i}"
    outputs = {m.get("tool_call_id"): content_text(m.get("content")) for m in messages if m.get("role") == "tool"}
    if target is None:
        tool_msgs = [m for m in messages if m.get("role") == "tool"]
        text = content_text(tool_msgs[-1].get("content")) if tool_msgs else ""
    else:
        text = outputs.get(target, "")
    text = text.strip()
    if not text or text == "(no output)":
        return "Done."
    return text


def content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


# ---------------------------------------------------------------- the evolve track's policies


def lesson_ref(gold: str, line: str) -> str:
    """The ref akm's ``distill`` gives the lesson it draws from ``gold`` (``skill:x`` becomes
    ``lesson:skill-x-lesson``), in the syntax of akm ``line``."""
    key = akm.ref_key(gold)
    slug = "-".join(key) if key else gold
    slug = re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]+", "-", slug.lower())).strip("-")
    return akm.format_ref(f"lesson:{slug}-lesson", line)


def learner_plan(cell: ScriptedCell, messages: list[dict[str, Any]]) -> list[Action]:
    """``learner``: an agent that solves a task only once the stash holds a lesson on its gold
    asset. On the akm arm it searches, shows the gold asset and then the lesson akm's distill
    would have made of it; with the lesson (or a revised gold asset carrying a lesson section,
    as akm's reflect and improve write it) it runs the solution and gives positive feedback,
    without it negative feedback and gives up. Other arms, and tasks without a gold asset, give
    up. The evolve track's tests use it: train cells fail until a proposal is accepted."""
    task = cell.task
    assert task is not None
    if cell.arm != "akm" or not task.gold_ref:
        return []
    line = cell.akm_line or "0.7"
    lesson = _quote(lesson_ref(task.gold_ref, line))
    plan = [
        Action("tool", command=_search(task), description="Search the akm stash"),
        Action("tool", command="akm show {ref}", description=SHOW),
        Action("tool", command=f"akm show {lesson}", description="Look for a lesson on it"),
    ]
    outputs = {m.get("tool_call_id"): content_text(m.get("content")) for m in messages if m.get("role") == "tool"}
    if "call_2" not in outputs:
        return plan
    # A lesson asset (akm 0.7's distill) or a lesson section in the gold asset itself (a reflect
    # or improve revision) teaches the task.
    if '"content"' in outputs["call_2"] or LESSON_HEADING in outputs.get("call_1", ""):
        script = task.solution.read_text(encoding="utf-8") if task.solution.is_file() else "exit 1\n"
        script += "" if script.endswith("\n") else "\n"
        plan.append(Action("tool", command=f"bash <<'{HEREDOC}'\n{script}{HEREDOC}", description=APPLY))
        plan.append(Action("tool", command="akm feedback {ref} --positive", description="Record feedback"))
    else:
        reason = _quote("no lesson for this asset")
        plan.append(
            Action("tool", command=f"akm feedback {{ref}} --negative --reason {reason}", description="Record feedback")
        )
    return plan


def akm_llm_reply(policy: str, messages: list[dict[str, Any]]) -> str:
    """What the scripted model answers to akm's own LLM calls: ``lesson`` answers each of akm's
    proposal prompts in the shape akm's validation accepts, ``garbage`` answers every one with
    prose that no parser or lint accepts, so nothing can be proposed. The prompts it knows:
    akm 0.7's ``distill`` (a lesson file), akm 0.7's ``reflect`` (sent through the harness's
    agent bridge: a JSON revision), akm 0.9's ``improve`` reflect (its framed revision) and
    0.9's quality judge (a JSON score)."""
    if policy == "garbage":
        return GARBAGE_TEXT
    prompt = "\n".join(content_text(m.get("content")) for m in messages if m.get("role") == "user")
    negatives = prompt.count('"negative"') + prompt.count("[negative]")
    if "AKM_REFLECT_CONTENT_BEGIN" in prompt:
        ref, body = _reflect_input(prompt)
        patch = json.dumps({"description": None, "when_to_use": f"Before working on a task that needs {ref}"})
        return (
            "AKM_REFLECT_CONFIDENCE: 0.9\n"
            f"AKM_REFLECT_FRONTMATTER_PATCH: {patch}\n"
            f"AKM_REFLECT_CONTENT_BEGIN\n{_with_lesson(body, ref, negatives)}AKM_REFLECT_CONTENT_END\n"
        )
    if '"score"' in prompt and "Return ONLY valid JSON" in prompt:
        return json.dumps({"score": 4.5, "reason": "The revision addresses the feedback and keeps every fact."})
    if 'Shape: {"ref"' in prompt:
        ref, body = _reflect_input(prompt)
        return json.dumps({"ref": ref, "content": _with_lesson(body, ref, negatives)})
    match = re.search(r"^Asset ref: (\S+)", prompt, re.MULTILINE)
    ref = match.group(1) if match else "the asset"
    return (
        "---\n"
        f"description: Lesson on {ref}, drawn from {negatives} failed attempts\n"
        f"when_to_use: Before working on a task that needs {ref}\n"
        "---\n"
        f"Read {ref} in full and follow its procedure step by step; the failed attempts skipped it.\n"
    )


# A reflect prompt's asset ends where akm's next section starts (the asset holds fences itself).
_ASSET_END = re.compile(r"\n```\n\n(?=Recent feedback|Schema / lint hints|Produce a single proposal)")


def _reflect_input(prompt: str) -> tuple[str, str]:
    """The target ref of a reflect prompt and the asset it quotes (0.7 keeps the front matter in
    the revision, 0.9 wants the body alone and merges the front matter itself)."""
    match = re.search(r"^Target ref: (\S+)", prompt, re.MULTILINE)
    ref = match.group(1) if match else "the asset"
    head = "Current asset content (verbatim):\n\n```\n"
    start = prompt.find(head)
    if start < 0:
        return ref, f"# {ref}\n"
    start += len(head)
    end = _ASSET_END.search(prompt, start)
    asset = prompt[start : end.start() if end else len(prompt)].strip("\n") + "\n"
    if "AKM_REFLECT_CONTENT_BEGIN" in prompt and asset.startswith("---"):
        asset = asset.split("---", 2)[2].lstrip("\n")
    return ref, asset


def _with_lesson(body: str, ref: str, negatives: int) -> str:
    """The asset with a lesson section appended: what the ``learner`` agent looks for."""
    return (
        f"{body.rstrip()}\n\n{LESSON_HEADING}\n\n"
        f"{negatives} failed attempts skipped {ref}: read it in full and follow its procedure step by step.\n"
    )


NEEDS_ASSET_SHOWS = 3  # the search hits the needs-asset policy reads
NO_ASSET_TEXT = "The stash has nothing on this task and I cannot solve it without it."


def needs_asset_action(cell: ScriptedCell, messages: list[dict[str, Any]], turn: int) -> Action:
    """The ``needs-asset`` policy: an agent that can solve a task only with its gold asset.

    akm arm: search the task's keywords, show each of the first hits, then apply the solution
    only if the gold asset was among them; otherwise (and on every other arm) answer without
    changing anything, so the verifier fails. Masking the gold asset makes its cells fail,
    masking another hit changes nothing: the attribute track's decisive and distractor assets.
    """
    task = cell.task
    assert task is not None
    if cell.arm != "akm":
        return Action("text", text=NO_ASSET_TEXT)
    if turn == 0:
        return Action("tool", command=_search(task), description="Search the akm stash")
    tool_msgs = [content_text(m.get("content")) for m in messages if m.get("role") == "tool"]
    hits = (akm.search_refs(tool_msgs[0]) or [])[:NEEDS_ASSET_SHOWS] if tool_msgs else []
    if turn <= len(hits):
        return Action("tool", command=f"akm show {_quote(hits[turn - 1])}", description=SHOW)
    found = bool(task.gold_ref) and any(akm.same_asset(ref, task.gold_ref) for ref in hits)
    if turn == len(hits) + 1 and found:
        script = task.solution.read_text(encoding="utf-8") if task.solution.is_file() else "exit 1\n"
        script += "" if script.endswith("\n") else "\n"
        return Action("tool", command=f"bash <<'{HEREDOC}'\n{script}{HEREDOC}", description="Apply the solution")
    if not found:
        return Action("text", text=NO_ASSET_TEXT)
    text = tool_msgs[-1].strip() if tool_msgs else ""
    return Action("text", text=text if text and text != "(no output)" else "Done.")
