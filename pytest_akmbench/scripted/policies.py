"""The scripts of the scripted model: what each policy answers at each turn of a cell. They
read only the neutral :class:`Turn` (the tool outputs by call id, the turn number, the prompt),
never a protocol's messages, and answer with neutral :class:`Action`\\ s (docs/scripted.md).

Policies (the model name is ``scripted/<policy>``):

``oracle``
    akm arm: ``akm search <keywords>`` (the words as separate arguments, as akm-bench's prompt
    shows it), ``akm show <gold ref>`` (when the task has one; the ref as the search output
    printed it, else the corpus's ref in the akm line's syntax), the
    task's ``solution/solve.sh`` run through the shell tool (its text, fed to ``bash`` on a
    heredoc, with cwd = the workspace), ``akm feedback <gold_ref> --positive``, then a final
    answer. Other arms: the solution and the final answer only. The final answer is the output
    of the solution's tool call, as the agent returned it, so regex tasks see what solve.sh
    printed.
``shortcut`` the oracle without akm on every arm: the solution and the final answer, so its
           akm cells pass while skipping the lookup a workflow spec asks for.
``idle``   answers with text at once, no tools.
``hang``   accepts the request and never answers until the server stops.
``error``  the wire's failure, a 5xx the agent retries fast (chat: HTTP 500 with
           ``retry-after-ms: 50``), then it gives up.
``loop``   calls a harmless, always different shell command forever.
``learner`` fails a task until the stash holds a lesson on its gold asset (the evolve track).
``lesson``, ``garbage``  stand in for akm's own LLM (``akm distill``): a valid lesson, or prose
           akm's lint refuses.
``snoop``  tries to read what a cell must never see (the solution, the verifier, the stash
           fixture, other cells, the store, the user's home) and answers with what it read;
           see :mod:`.snoop`. It shows whether the cell's sandbox holds.
``needs-asset``  akm arm: search, show the first hits, apply the solution only when the gold
           asset was among them; every other arm answers at once and fails (the attribute
           track's tests: masking the gold asset makes the task fail).
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from ..agents.providers import SCRIPTED_POLICIES
from ..cell import akm
from ..cell.prompts import search_words
from ..corpus.tasks import Task
from . import snoop
from .wire import Action, Turn

POLICIES = SCRIPTED_POLICIES  # the names live below every agent: agents/providers.py
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


def next_action(cell: ScriptedCell, request: Turn) -> Action:
    """The policy's action at this request (the server asks only on requests offering tools)."""
    turn = request.turn
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
        return needs_asset_action(cell, request)
    plan = learner_plan(cell, request) if cell.policy == "learner" else plan_of(cell)
    if cell.policy == "learner" and turn >= len(plan) and not any(a.description == APPLY for a in plan):
        return Action("text", text=GIVE_UP)
    if turn < len(plan):
        action = plan[turn]
        if "{ref}" in action.command:
            ref = _quote(_gold_ref(cell, request))
            return Action(action.kind, command=action.command.replace("{ref}", ref), description=action.description)
        return action
    return Action("text", text=_final_answer(request, plan))


def _gold_ref(cell: ScriptedCell, request: Turn) -> str:
    """The gold asset's ref as the search printed it, like an agent copying it from the output;
    the corpus's ref in the installed akm's syntax when the search did not list it."""
    gold = cell.task.gold_ref if cell.task else None
    assert gold is not None
    searched = request.outputs[0].text if request.outputs else ""
    hits = akm.search_refs(searched) or []
    return next((ref for ref in hits if akm.same_asset(ref, gold)), akm.format_ref(gold, cell.akm_line or "0.7"))


def _quote(text: str) -> str:
    return shlex.quote(text)


def _search(task: Task) -> str:
    """``akm search`` with the task's keywords as separate words, as akm-bench's prompt shows it
    (akm then searches the first word; docs/akm.md, "Query forms")."""
    return "akm search " + " ".join(_quote(w) for w in search_words(task))


def _final_answer(request: Turn, plan: list[Action]) -> str:
    """The output of the solution's tool call (the last tool output for a commands plan)."""
    target = None
    for i, action in enumerate(plan):
        if action.description == APPLY:
            target = f"call_{i}"
    if target is None:
        text = request.outputs[-1].text if request.outputs else ""
    else:
        text = outputs_by_call(request).get(target, "")
    text = text.strip()
    if not text or text == "(no output)":
        return "Done."
    return text


def outputs_by_call(request: Turn) -> dict[str, str]:
    """The tool outputs by the call id the server gave each call (``call_<turn>``)."""
    return {out.call_id: out.text for out in request.outputs}


# ---------------------------------------------------------------- the evolve track's policies


def lesson_ref(gold: str, line: str) -> str:
    """The ref akm's ``distill`` gives the lesson it draws from ``gold`` (``skill:x`` becomes
    ``lesson:skill-x-lesson``), in the syntax of akm ``line``."""
    key = akm.ref_key(gold)
    slug = "-".join(key) if key else gold
    slug = re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]+", "-", slug.lower())).strip("-")
    return akm.format_ref(f"lesson:{slug}-lesson", line)


def learner_plan(cell: ScriptedCell, request: Turn) -> list[Action]:
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
    outputs = outputs_by_call(request)
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


def akm_llm_reply(policy: str, prompt: str) -> str:
    """What the scripted model answers to akm's own LLM calls: ``lesson`` answers each of akm's
    proposal prompts in the shape akm's validation accepts, ``garbage`` answers every one with
    prose that no parser or lint accepts, so nothing can be proposed. The prompts it knows:
    akm 0.7's ``distill`` (a lesson file), akm 0.7's ``reflect`` (sent through the harness's
    agent bridge: a JSON revision), akm 0.9's ``improve`` reflect (its framed revision) and
    0.9's quality judge (a JSON score)."""
    if policy == "garbage":
        return GARBAGE_TEXT
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


def needs_asset_action(cell: ScriptedCell, request: Turn) -> Action:
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
    turn = request.turn
    if turn == 0:
        return Action("tool", command=_search(task), description="Search the akm stash")
    tool_msgs = [out.text for out in request.outputs]
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
