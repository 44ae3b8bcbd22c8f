"""The Claude Code agent adapter: runs the real ``claude -p`` for one cell (docs/claude-code.md).

* Every cell gets its own ``CLAUDE_CONFIG_DIR`` in ``<run_dir>/claude/`` (a sibling of the
  workspace) and the runner's private HOME: nothing of the user's ``~/.claude`` or
  ``~/.claude.json`` is read or written. ``--bare`` (no hooks, plugins sync, CLAUDE.md
  discovery or keychain; the key only from ``ANTHROPIC_API_KEY``), ``--setting-sources user``
  (the private config dir's, so no ``.claude/`` of the workspace) and ``--strict-mcp-config``
  (no MCP server) keep the arms equal but for their prompt, PATH and stash.
* The model is reached only through the cell's forwarder: ``ANTHROPIC_BASE_URL`` is its origin
  with the endpoint's path, ``ANTHROPIC_API_KEY`` a placeholder the forwarder swaps for the key.
  The offline switches of :data:`binaries.OFFLINE_ENV` turn off everything else it would fetch.
* The prompt goes on stdin; ``stream-json`` lines come over a socket (a tool command could reopen
  a pipe through /proc and write lines of its own) and are parsed live by :mod:`events`; the
  wall and token budgets are the harness's (agents/watching.py), the turn budget Claude Code's own
  ``--max-turns``. Claude Code starts each Bash command in a session of its own: the cell's
  process tracker finds them by its marker (docs/claude-code.md, "Processes").
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ...cell.rundir import hide_akm
from ...scripted.server import ScriptedModel
from ...store.scrub import Scrubber
from ...system.forwarder import TurnGate
from ..base import Agent, AgentRequest, AgentResult, SessionInfo, Tool
from ..cellstart import cell_route, idle_token, keys, known_version
from ..model import choice_digest, choose_model
from ..providers import ModelChoice
from ..transcript import TranscriptItem
from ..watching import over_budget, turn_gate, watch
from . import doctor, provider
from .binaries import CLAUDE_VERSION, INSTALLED, OFFLINE_ENV, PLATFORM_PACKAGE, locate_claude, read_version
from .cell import outcome, preflight_line
from .events import ClaudeStream
from .transcript import read_transcript

__all__ = ["ClaudeCodeAgent", "agents"]


class ClaudeCodeAgent(Agent):
    """The ``claude-code`` adapter. Session options: ``rootdir`` (for ``.tools/``), the model
    choice's (see agents/model.py ``choose_model``), ``env``, ``version`` and the
    sandbox's (``sandbox``, ``network``, ``sandbox_ro``, ``work_root``) for the preflight."""

    name = "claude-code"

    def __init__(self) -> None:
        self.version = "unknown"
        self.binary: Path | None = None
        self.choice: ModelChoice | None = None
        self.model: str | None = None
        self.scripted: ScriptedModel | None = None
        self.scripted_totals: dict[str, dict[str, int]] = {}
        self._values: dict[str, str] = {}
        self._placeholders: dict[str, str] = {}
        self._swaps: dict[str, str] = {}
        self._options: Mapping[str, Any] = {}
        self._env_source: Mapping[str, str] = os.environ
        self.secrets: list[str] = []
        self.warnings: list[str] = []
        self._scrub = Scrubber()

    def start(self, session: SessionInfo) -> None:
        options = session.options
        self._options = options
        self.binary = locate_claude(options)
        choice = options.get("model_choice")
        choice = choice if isinstance(choice, ModelChoice) else choose_model(session.model, options, agent=self.name)
        provider.check_anthropic(choice)
        self.choice, self.model = choice, choice.model
        env = options.get("env") or os.environ
        self._env_source = env
        found = keys(choice, env)
        self._values, self._placeholders, self._swaps = found.values, found.placeholders, found.swaps
        self.secrets, self._scrub = found.secrets, found.scrub
        self.version = known_version(options, self.binary, read_version)
        if choice.scripted and self.scripted is None:
            self.scripted = ScriptedModel()
            self.scripted.start()

    def stop(self) -> None:
        if self.scripted is not None:
            self.scripted.stop()
            self.scripted = None

    def provider_setup(self, model: str | None) -> dict[str, Any]:
        return super().provider_setup(model) if self.choice is None else choice_digest(self.choice)

    def read_transcript(self, path: Path) -> Iterator[TranscriptItem]:
        return read_transcript(path)

    def install(self) -> list[Tool]:
        return [Tool("claude-code", PLATFORM_PACKAGE, CLAUDE_VERSION, INSTALLED, read_version)]

    def doctor_tools(self, options: Mapping[str, Any]) -> list[tuple[str, Callable[[], str]]]:
        return doctor.tools(options)

    def doctor_model(self, model: str | None, options: Mapping[str, Any]) -> tuple[str, str] | None:
        return doctor.model_check(model, options)

    def preflight(self) -> str:
        assert self.choice is not None and self.binary is not None
        with idle_token(self.scripted) as token:
            return preflight_line(
                self.choice, self._env_source, self._endpoint(token), self._swaps, self.binary, self._options
            )

    # ------------------------------------------------------------ one cell

    def run(self, request: AgentRequest) -> AgentResult:
        if self.binary is None or self.choice is None:
            return AgentResult(error="claude-code adapter used before start()")
        model = request.model or self.choice.model
        if model != self.choice.model:
            return AgentResult(error=f"model {model!r} differs from the session's {self.choice.model!r}")
        cfg_dir = request.run_dir.resolve() / "claude"
        if cfg_dir.is_relative_to(request.workspace.resolve()):
            return AgentResult(error=f"{cfg_dir}: Claude Code's config dir must not be inside the workspace")
        (cfg_dir / "config").mkdir(parents=True, exist_ok=True)
        scripted, policy = self.scripted, self.choice.policy
        gate = turn_gate(request.limits, "/messages")  # a turn: one Messages request offering tools
        try:
            with cell_route(request, gate, scripted, policy, self._swaps, self.scripted_totals) as route:
                point = self._endpoint(route.token)
                origin = route.open(point.upstream)
                warnings: list[str] = []
                env = self._env(request, cfg_dir, origin + point.cell_path, point, warnings)
                return self._spawn_and_watch(request, env, cfg_dir, warnings, gate)
        except (OSError, ValueError) as err:
            return AgentResult(error=f"cannot reach the model from the cell: {err}")

    def _endpoint(self, token: str) -> provider.Endpoint:
        assert self.choice is not None
        if self.scripted is not None:
            return provider.scripted(self.scripted.base_url(token))
        return provider.endpoint(self.choice, self._values, self._placeholders)

    def _env(
        self, request: AgentRequest, cfg_dir: Path, base_url: str, point: provider.Endpoint, warnings: list[str]
    ) -> dict[str, str]:
        assert self.choice is not None
        env = {k: v for k, v in request.env.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
        if request.arm != "akm":
            env = {k: v for k, v in env.items() if not k.startswith("AKM_")}
        env.setdefault("HOME", str(request.run_dir / "home"))
        Path(env["HOME"]).mkdir(parents=True, exist_ok=True)
        env.update(OFFLINE_ENV)
        model = provider.model_id(self.choice)
        env.update(
            CLAUDE_CONFIG_DIR=str(cfg_dir / "config"),
            ANTHROPIC_BASE_URL=base_url,
            ANTHROPIC_API_KEY=point.key,
            # A side call on the small model goes to the cell's one model, through the same route.
            ANTHROPIC_SMALL_FAST_MODEL=model,
            ANTHROPIC_DEFAULT_HAIKU_MODEL=model,
        )
        if self.scripted is not None:
            # The scripted model's failures are final: Claude Code's own backoff (minutes) would
            # only run the cell into its wall budget.
            env["CLAUDE_CODE_MAX_RETRIES"] = "1"
        if point.headers:
            env["ANTHROPIC_CUSTOM_HEADERS"] = provider.header_lines(point.headers)
        if os.geteuid() == 0 and (request.sandbox is None or request.sandbox.mode == "none"):
            # Claude Code refuses to skip permissions as root unless told it is in a sandbox: the
            # harness's cell is that sandbox (a sandboxed cell runs as an unprivileged uid anyway).
            env["IS_SANDBOX"] = "1"
        entries = [e for e in (request.env.get("PATH") or os.defpath).split(os.pathsep) if e]
        if request.arm != "akm":
            bin_dir = cfg_dir / "bin"
            bin_dir.mkdir(exist_ok=True)
            entries = [str(bin_dir), *hide_akm(entries, bin_dir, request.run_dir, request.arm, warnings)]
        env["PATH"] = os.pathsep.join(entries)
        return env

    def _argv(self, request: AgentRequest) -> list[str]:
        assert self.binary is not None and self.choice is not None
        argv = [str(self.binary), "-p", "--output-format", "stream-json", "--verbose", "--bare"]
        argv += ["--dangerously-skip-permissions", "--setting-sources", "user", "--strict-mcp-config"]
        argv += ["--model", provider.model_id(self.choice)]
        if request.limits.turns is not None:
            argv += ["--max-turns", str(request.limits.turns)]
        return argv

    def _spawn_and_watch(
        self, request: AgentRequest, env: dict[str, str], cfg_dir: Path, warnings: list[str], gate: TurnGate
    ) -> AgentResult:
        assert self.binary is not None
        prompt_path = cfg_dir / "prompt.txt"
        prompt_path.write_text(request.prompt, encoding="utf-8")
        stderr_path = cfg_dir / "stderr.log"
        stream = ClaudeStream(request.transcript)
        if request.sandbox is not None:
            request.sandbox.expose_tools(self.binary)
        started = time.monotonic()
        ours, theirs = socket.socketpair()
        with open(prompt_path, "rb") as stdin, open(stderr_path, "wb") as stderr, theirs:
            try:
                proc = request.procs.spawn(
                    self._argv(request),
                    cwd=request.workspace,
                    env=env,
                    stdin=stdin,
                    stdout=theirs.fileno(),
                    stderr=stderr,
                )
            except OSError as err:
                stream.close()
                ours.close()
                return AgentResult(error=f"cannot start claude ({self.binary}): {err}")
        proc.stdout = ours.makefile("rb")
        try:
            budget, idle = watch(proc, stream, request, started, self._scrub, gate)
        finally:
            ours.close()
        result = outcome(request, proc.returncode, stream, stderr_path, self._scrub, warnings)
        if self.scripted is not None:
            # Claude Code prices a model it does not know at a default rate; the scripted one is free.
            result.cost_usd = 0.0
        if budget is not None:  # the harness stopped it: how it then exited is no error of its own
            result.error = None
            over_budget(result, budget, idle, time.monotonic() - started, request.limits, stream.turns)
        return result


def agents() -> list[Agent]:
    """The adapters this package offers (agents/registry.py finds them)."""
    return [ClaudeCodeAgent()]
