"""Watching one agent run, for any agent whose output is a stream of lines: the lines fed to the
agent's own parser as they come, the wall and token budgets enforced, the process tree stopped
through the cell's tracker on a budget (docs/architecture.md, "Where to add").

An agent's parser only has to offer :class:`Stream`. The turn budget is enforced first at the
cell's forwarder (:func:`turn_gate`, docs/architecture.md "Isolation"): request N+1 is held there
and never reaches the model, and the watch ends at once. Each agent's notion of a turn differs,
so it says which requests are turns, and its parser still says when a run is over the budget (a
second line). An agent whose budgets show in a record besides its stdout (Codex's session log)
passes ``poll``, a look at that record: taken on every wake, the budgets then checked on every
wake too, not only on a new line.

The token budget is held at the forwarder too (:class:`CatchUp`): before turn k+1 goes out, the
watch is woken to look at the agent's record (Codex: polls its session log) until it shows k
turns, at most CATCH_UP_S, and the turn is held when their tokens are over the budget. So the
run stops after the same turn for every agent, however fast its model answers; the watch's own
token check stays as the second line (the last turn of a run has no next request).
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from ..store.scrub import Scrubber
from ..system.forwarder import TurnGate
from ..system.untrusted import read_inside
from .base import AgentRequest, AgentResult, Limits

HUNG_AFTER_S = 20.0  # no output for this long (or half the wall budget) at the wall: "hung"
DRAIN_S = 2.0  # after the agent exits, how long a leaked child holding its stdout may keep us
CATCH_UP_S = 5.0  # how long a held turn waits for the agent to print the turns it was answered
LOOK_S = 0.01  # while a turn waits for the record: how often the watch is woken to poll it


class Stream(Protocol):
    """An agent's live parser of its output lines."""

    def feed(self, line: bytes) -> object: ...

    def close(self) -> None: ...

    def idle_for(self) -> float: ...

    def total_tokens(self) -> int: ...

    def over_turns(self, limit: int) -> bool: ...

    @property
    def turns(self) -> int: ...


def turn_gate(limits: Limits, route: str) -> TurnGate:
    """The cell's turn budget at its forwarder, for an agent whose turn is one request to its
    model's ``route`` (the path's end, e.g. ``/chat/completions``) offering tools: a request
    without tools (a title, a side call on the small model) is no turn of the agent's run."""

    def is_turn(method: str, path: str, body: bytes) -> bool:
        if method != "POST" or not path.split("?", 1)[0].rstrip("/").endswith(route):
            return False
        try:
            tools = json.loads(body).get("tools")
        except (ValueError, UnicodeDecodeError, AttributeError):
            return False
        return isinstance(tools, list) and bool(tools)

    return TurnGate(limits.turns, is_turn)


def turns_held(gate: TurnGate | None, recorded: int) -> bool:
    """Whether to stop the agent for the budget the forwarder enforces (``gate.budget``): it
    holds a request past it and the run's own record has caught up with the turns answered. An
    agent may print a turn's end after it sent the next request (opencode does), and it can spend
    nothing while held; so the stop waits for that record, at most CATCH_UP_S (a token hold
    waited for it before holding)."""
    if gate is None or not gate.over.is_set():
        return False
    caught_up = recorded >= gate.turns or gate.budget == "tokens"
    return caught_up or time.monotonic() - gate.over_at >= CATCH_UP_S


class CatchUp:
    """The gate's ``spent`` for a token budget of ``limit``: before the forwarder forwards turn
    k+1, it wakes the watch until the agent's record shows k turns (at most CATCH_UP_S) and says
    whether their tokens are over the budget. Asked on a forwarder thread; the watch calls
    :meth:`looked` after each look at the record, and :meth:`end` when it stops watching."""

    def __init__(self, stream: Stream, lines: queue.Queue[bool | None], limit: int) -> None:
        self.stream = stream
        self.lines = lines
        self.limit = limit
        self.wanted = 0  # the turns a waiting request wants recorded
        self.ended = False
        self.cond = threading.Condition()

    def spent(self, answered: int) -> bool:
        deadline = time.monotonic() + CATCH_UP_S
        with self.cond:
            self.wanted = max(self.wanted, answered)
            while self.stream.turns < answered and not self.ended:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.lines.put(None)  # the watch wakes and looks (polls a record besides stdout)
                self.cond.wait(min(left, LOOK_S))
        return self.stream.total_tokens() > self.limit

    def looked(self) -> None:
        """The watch looked at the record: a waiting turn goes on once its turns are there
        (told only then, so a wait costs no more wakes than one per LOOK_S)."""
        with self.cond:
            if self.wanted and self.stream.turns >= self.wanted:
                self.cond.notify_all()

    def end(self) -> None:
        with self.cond:
            self.ended = True
            self.cond.notify_all()


def wake_on(gate: TurnGate | None, lines: queue.Queue[bool | None]) -> None:
    """Wake a watch's wait when the forwarder holds a request past the turn budget."""
    if gate is not None:
        gate.when_over(lambda: lines.put(None))


def watch(
    proc: subprocess.Popen[bytes],
    stream: Stream,
    request: AgentRequest,
    started: float,
    scrub: Scrubber,
    gate: TurnGate | None = None,
    poll: Callable[[], None] | None = None,
) -> tuple[str | None, float]:
    """Feed the agent's stdout to ``stream`` until it ends or a budget is hit; then stop it.
    Returns (the budget hit or None, seconds since the agent's last line)."""
    lines: queue.Queue[bool | None] = queue.Queue()
    wake_on(gate, lines)
    catch_up = None
    if gate is not None and request.limits.tokens is not None:
        catch_up = CatchUp(stream, lines, request.limits.tokens)
        gate.spent = catch_up.spent

    def read() -> None:
        assert proc.stdout is not None
        try:
            for line in iter(proc.stdout.readline, b""):
                stream.feed(scrub.bytes(line))
                lines.put(True)
        except (OSError, ValueError):
            pass
        lines.put(False)

    reader = threading.Thread(target=read, name="akmbench-agent-reader", daemon=True)
    reader.start()
    deadline = started + request.limits.wall_s
    try:
        budget, eof = until_end(proc, stream, lines, request.limits, deadline, gate, poll, catch_up)
    finally:
        if catch_up is not None:
            catch_up.end()
    idle = stream.idle_for()
    if budget is not None or not eof:
        request.procs.stop(proc)
    else:
        try:
            proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            budget = "wall"
            request.procs.stop(proc)
    reader.join(timeout=5)
    stream.close()
    if poll is not None:
        poll()
    return budget, idle


def until_end(
    proc: subprocess.Popen[bytes],
    stream: Stream,
    lines: queue.Queue[bool | None],
    limits: Limits,
    deadline: float,
    gate: TurnGate | None = None,
    poll: Callable[[], None] | None = None,
    catch_up: CatchUp | None = None,
) -> tuple[str | None, bool]:
    """Wait for the end of the agent's output, a budget or its exit: (budget hit, output ended)."""
    exited_at: float | None = None
    while True:
        now = time.monotonic()
        if now >= deadline:
            return "wall", False
        if poll is not None and gate is not None and gate.over.is_set():
            poll()  # the turns the agent was answered may show only in that record
        if gate is not None and turns_held(gate, stream.turns):
            return gate.budget, False
        try:
            item = lines.get(timeout=min(0.25, deadline - now))
        except queue.Empty:
            item = None
        if item is False:
            return None, True
        if poll is not None:
            poll()
        if catch_up is not None:
            catch_up.looked()
        if item or poll is not None:
            if limits.tokens is not None and stream.total_tokens() > limits.tokens:
                return "tokens", False
            if limits.turns is not None and stream.over_turns(limits.turns):
                return "turns", False
        if proc.poll() is not None:
            exited_at = exited_at or time.monotonic()
            if time.monotonic() - exited_at > DRAIN_S:
                return None, False


def over_budget(result: AgentResult, budget: str, idle: float, elapsed: float, limits: Limits, turns: int) -> None:
    """Mark the budget hit, tagged ``hung`` (no agent output for a while) or ``confused``."""
    result.budget = budget
    if budget == "wall":
        hung_after = min(HUNG_AFTER_S, 0.5 * limits.wall_s)
        result.budget_tag = "hung" if idle >= hung_after else "confused"
        result.warnings.append(
            f"wall budget of {limits.wall_s:g}s reached after {elapsed:.1f}s (no agent event for {idle:.1f}s)"
        )
        return
    result.budget_tag = "confused"
    if budget == "tokens":
        total = (result.tokens or {}).get("total", 0)
        result.warnings.append(f"token budget of {limits.tokens} exceeded: {total} tokens after {turns} turn(s)")
    else:
        result.warnings.append(f"turn budget of {limits.turns} reached with the agent still calling tools")


def tail(path: Path, root: Path, limit: int = 8192) -> str:
    """The end of a log the agent's sandbox could have replaced: only a regular file in ``root``."""
    return (read_inside(path, root, limit=limit, tail=True) or b"").decode("utf-8", "replace")
