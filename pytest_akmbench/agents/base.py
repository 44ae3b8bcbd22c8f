"""The agent adapter interface and the two agents that need no model: ``oracle`` and ``nop``.

An adapter turns one prepared cell (workspace, private HOME, prompt, limits) into an
``AgentResult``. It starts processes only through ``request.procs`` so the harness can
kill all of them when the cell ends, whatever happens. Adapters are found by name through
the plugin's ``pytest_akmbench_agents`` hook; the built-in ones use the same hook.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..corpus.tasks import Task
from ..system.procs import ProcessTracker

if TYPE_CHECKING:
    from ..system.sandbox import Sandbox


@dataclass(frozen=True, slots=True)
class Limits:
    """The budgets in force for one cell; ``None`` means unlimited."""

    wall_s: float
    tokens: int | None = None
    turns: int | None = None


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """What an adapter may need once per session, before any cell runs."""

    model: str | None
    arms: tuple[str, ...]
    tasks: tuple[Task, ...]
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AgentRequest:
    """One cell, ready to run: the agent works in ``workspace`` and nowhere else."""

    task: Task
    arm: str
    seed: int
    workspace: Path
    run_dir: Path
    env: Mapping[str, str]
    prompt: str
    prompt_version: str
    limits: Limits
    transcript: Path
    procs: ProcessTracker
    stash_dir: Path | None = None
    model: str | None = None
    akm_line: str | None = None  # "0.7" or "0.9" on the akm arm when akm is installed
    # While the agent runs, request.procs starts everything inside this sandbox; an adapter
    # exposes the tools it runs with sandbox.expose_tools(...) before spawning them.
    sandbox: Sandbox | None = None


@dataclass(slots=True)
class AgentResult:
    """What the agent did. ``tokens is None`` means the tokens were not measured."""

    final_text: str = ""
    exit_code: int | None = None
    tokens: dict[str, int] | None = None
    token_measurement: str = "missing"
    cost_usd: float | None = None
    turns: int | None = None
    tool_calls: int | None = None
    budget: str | None = None
    budget_tag: str | None = None
    error: str | None = None
    transcript_written: bool = False
    akm: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)


class Agent(Protocol):
    """An agent adapter. ``start`` raises ``ConfigError`` when the agent cannot run at all.

    An adapter may set ``uses_akm = False`` when it never calls akm; otherwise a run with the akm
    arm refuses to start without a working akm.
    """

    name: str
    version: str

    def start(self, session: SessionInfo) -> None: ...

    def run(self, request: AgentRequest) -> AgentResult: ...

    def stop(self) -> None: ...


class NopAgent:
    """Does nothing: proves that an untouched workspace fails every verifier."""

    name = "nop"
    version = "1"
    uses_akm = False

    def start(self, session: SessionInfo) -> None:
        pass

    def run(self, request: AgentRequest) -> AgentResult:
        return AgentResult(exit_code=0, token_measurement="unsupported")

    def stop(self) -> None:
        pass


class OracleAgent:
    """Runs the task's ``solution/solve.sh`` in the workspace; its stdout is the final text."""

    name = "oracle"
    version = "1"
    uses_akm = False

    def start(self, session: SessionInfo) -> None:
        pass

    def run(self, request: AgentRequest) -> AgentResult:
        solve = request.task.solution
        if not solve.is_file():
            return AgentResult(error=f"oracle: {solve} not found; add solution/solve.sh to the task")
        if request.sandbox is not None:
            request.sandbox.expose(solve.parent)  # the oracle may read its own solution, nothing else
        started = time.monotonic()
        code, output, timed_out = request.procs.run(
            ["bash", str(solve)], cwd=request.workspace, env=request.env, timeout_s=request.limits.wall_s
        )
        if timed_out:
            return AgentResult(
                final_text=output,
                budget="wall",
                budget_tag="hung",
                token_measurement="unsupported",
                warnings=[f"solve.sh ran past the {time.monotonic() - started:.0f}s wall budget"],
            )
        return AgentResult(final_text=output, exit_code=code, token_measurement="unsupported")

    def stop(self) -> None:
        pass


def builtin_agents() -> list[Agent]:
    """The adapters shipped with the plugin (the opencode adapter registers itself too)."""
    return [NopAgent(), OracleAgent()]
