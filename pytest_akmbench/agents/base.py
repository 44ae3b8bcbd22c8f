"""The agent adapter interface and the two agents that need no model: ``oracle`` and ``nop``.

An adapter turns one prepared cell (workspace, private HOME, prompt, limits) into an
``AgentResult``. It starts processes only through ``request.procs`` so the harness can
kill all of them when the cell ends, whatever happens. Adapters are found by name through
the plugin's ``pytest_akmbench_agents`` hook; the built-in ones use the same hook.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..corpus.tasks import Task
from ..system.procs import ProcessTracker
from .providers import config_source
from .transcript import TranscriptItem, no_transcript

if TYPE_CHECKING:
    from ..system.sandbox import Sandbox


@dataclass(frozen=True, slots=True)
class Limits:
    """The budgets in force for one cell; ``None`` means unlimited."""

    wall_s: float
    tokens: int | None = None
    turns: int | None = None


@dataclass(frozen=True, slots=True)
class Tool:
    """A pinned binary an agent runs, as ``install-tools`` puts it into a project's ``.tools/``:
    npm's ``package@version`` there, whose tarball carries ``binary`` (relative to ``.tools/``);
    ``probe`` reads the version an installed binary reports (raising ``BenchError``)."""

    name: str
    package: str
    version: str
    binary: str
    probe: Callable[[Path], str]


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


class Agent:
    """An agent adapter and what it declares to the harness; an adapter derives from it and sets
    what differs from these defaults (README, "Extending"). ``start`` raises
    ``ConfigError`` when the agent cannot run at all. An object a hook gives that does not derive
    from it is taken through :func:`as_agent`.
    """

    name: str = ""
    version: str = "unknown"
    uses_akm: bool = True  # False: it never calls akm, so a run with the akm arm needs none
    model: str | None = None  # the model it resolved itself at start; None: the run's --bench-model
    secrets: Sequence[str] = ()  # values the harness scrubs from everything it stores
    warnings: Sequence[str] = ()  # for the run's terminal and report, once started

    def start(self, session: SessionInfo) -> None:
        pass

    def run(self, request: AgentRequest) -> AgentResult:
        raise NotImplementedError(f"agent {self.name!r} has no run()")

    def stop(self) -> None:
        pass

    def preflight(self) -> str | None:
        """Before the first cell, on the controller: one line saying what works (raise
        ``ConfigError`` saying what does not), or None when there is nothing to check."""
        return None

    def provider_setup(self, model: str | None) -> dict[str, Any]:
        """What the agent is given to reach its model, as the digest every sample records."""
        return setup_digest(model, None, None, None)

    def read_transcript(self, path: Path) -> Iterable[TranscriptItem]:
        """The neutral events of the transcript the agent wrote to ``request.transcript``."""
        return no_transcript(path)

    def check_providers(self, options: Mapping[str, Any]) -> None:
        """``validate``'s check of a run config's own provider source (its options: the
        ``config_*`` fields, no environment, no user file); raises ``ConfigError``. The providers
        file is every agent's (``agents/providers.py``); an agent with a source of its own adds it."""
        config_source(options)

    def install(self) -> Sequence[Tool]:
        """The pinned binaries ``install-tools`` installs for this agent (none: it needs none, or
        the user installs it)."""
        return ()

    def doctor_tools(self, options: Mapping[str, Any]) -> list[tuple[str, Callable[[], str]]]:
        """``doctor``'s checks of what the agent needs installed: (name, a function giving the
        line, or raising ``BenchError`` when it is missing)."""
        return []

    def doctor_model(self, model: str | None, options: Mapping[str, Any]) -> tuple[str, str] | None:
        """``doctor``'s check that the model answers: (PASS/WARN/FAIL, the line), or None."""
        return None


class Adapted(Agent):
    """An agent a hook gave that does not derive from :class:`Agent`: what it declares is read
    from the attributes the README names, where it has them, when made and once started."""

    def __init__(self, agent: Any) -> None:
        self.agent = agent
        self.name = agent.name
        self._declared()

    def _declared(self) -> None:
        self.version = self.agent.version
        self.uses_akm = getattr(self.agent, "uses_akm", True)
        self.model = getattr(self.agent, "model", None)
        self.secrets = getattr(self.agent, "secrets", None) or ()
        self.warnings = getattr(self.agent, "warnings", None) or ()

    def start(self, session: SessionInfo) -> None:
        self.agent.start(session)
        self._declared()

    def run(self, request: AgentRequest) -> AgentResult:
        result: AgentResult = self.agent.run(request)
        return result

    def stop(self) -> None:
        self.agent.stop()

    def preflight(self) -> str | None:
        check = getattr(self.agent, "preflight", None)
        return check() if callable(check) else None

    def read_transcript(self, path: Path) -> Iterable[TranscriptItem]:
        read = getattr(self.agent, "read_transcript", None)
        return read(path) if callable(read) else no_transcript(path)


def as_agent(agent: Any) -> Agent:
    """``agent`` as the harness uses it: itself when it derives from :class:`Agent`."""
    return agent if isinstance(agent, Agent) else Adapted(agent)


def setup_digest(model: str | None, provider: str | None, entry: Any, source: str | None) -> dict[str, Any]:
    """What the agent is given to reach its model, as a digest: the model, the provider's name
    and its entry as written (credentials are ``{env:VAR}`` names there, never values, so the
    digest holds no secret). Two runs with one digest give the agent the same configuration."""
    given = json.dumps({"model": model, "provider": provider, "entry": entry}, sort_keys=True, default=str)
    return {
        "digest": hashlib.sha256(given.encode("utf-8")).hexdigest()[:16],
        "model": model,
        "provider": provider,
        "source": source,
    }


class NopAgent(Agent):
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


class OracleAgent(Agent):
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
