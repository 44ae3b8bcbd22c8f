"""The Codex CLI agent adapter: runs the real ``codex exec --json`` for one cell.

Recipe (docs/codex.md, all verified against Codex 0.171.0):

* A private ``CODEX_HOME`` per cell in ``<run_dir>/codex/home``, a sibling of the workspace,
  holding the harness's ``config.toml`` (mode 0600, :mod:`config`): one model provider (the
  chosen provider's entry, or the scripted model's) at the forwarder's base URL, Codex's own
  sandbox and approvals off (the harness's bubblewrap is the sandbox), and everything Codex would
  contact besides the model switched off. ``--strict-config`` refuses a key this Codex does not
  know, so a renamed switch fails the cell instead of silently turning back on.
* The environment starts from ``request.env`` (the runner's private HOME and XDG dirs; on the
  akm arm only akm's variables and the akm executable on PATH), adds ``CODEX_HOME`` and the
  provider key's variable, holding a placeholder the forwarder swaps for the key.
* Codex runs in the workspace (``-C``) with the prompt on stdin; its stdout events come over a
  socket (a tool command could reopen a pipe through /proc and forge events) and are parsed live
  by :mod:`events`; agents/watching.py (with :mod:`watch`'s session log) enforces the budgets and
  stops the whole process tree through ``request.procs``. Codex starts each command in a new
  session (``setsid``): the harness's tracker and subreaper still find it (docs/codex.md,
  "Processes").

Arm isolation as opencode's: on every arm but ``akm`` no ``AKM_*`` variable reaches Codex and no
``akm`` executable is on PATH.
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
from ..boundary import with_inside
from ..cellstart import cell_route, cell_scripted, endpoint, idle_token, keys, known_version
from ..model import choice_digest, choose_model
from ..providers import ModelChoice
from ..transcript import TranscriptItem
from ..watching import over_budget, tail, turn_gate, watch
from . import doctor
from .binaries import CODEX_VERSION, INSTALLED, NPM_PACKAGE, PLATFORM_PACKAGE, locate_codex, read_version
from .config import KEY_VAR, cell_config, key_value, to_toml
from .events import EventStream
from .preflight import check_responses
from .transcript import read_transcript
from .watch import Progress, Rollout, agent_result, failure

ARGV = ("exec", "--json", "--strict-config", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox")


class CodexAgent(Agent):
    """The ``codex`` adapter. Session options it reads: ``codex`` (binary path), ``rootdir`` (for
    ``.tools/``), and the model and providers options every agent reads (the same
    providers file and credential rules: agents/model.py)."""

    name = "codex"

    def __init__(self) -> None:
        self.version = "unknown"
        self.binary: Path | None = None
        self.choice: ModelChoice | None = None
        self.model: str | None = None
        self.scripted: ScriptedModel | None = None
        self.scripted_totals: dict[str, dict[str, int]] = {}
        self._secret_env: dict[str, str] = {}
        self._placeholders: dict[str, str] = {}
        self._swaps: dict[str, str] = {}
        self._boundary: dict[str, Any] = {}
        self._env_source: Mapping[str, str] = os.environ
        self.secrets: list[str] = []
        self.warnings: list[str] = []
        self._scrub = Scrubber()

    def start(self, session: SessionInfo) -> None:
        options = session.options
        self.binary = locate_codex(options)
        choice = options.get("model_choice")
        self.choice = (
            choice if isinstance(choice, ModelChoice) else choose_model(session.model, options, agent=self.name)
        )
        self.model = self.choice.model
        env = options.get("env") or os.environ
        self._env_source = env
        self._boundary = {k: options.get(k) for k in ("sandbox", "network", "sandbox_ro", "work_root")}
        found = keys(self.choice, env)
        self._secret_env, self._placeholders, self._swaps = found.values, found.placeholders, found.swaps
        self.secrets, self._scrub = found.secrets, found.scrub
        self.version = known_version(options, self.binary, read_version)
        if self.choice.scripted and self.scripted is None:
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
        # npm's version of the platform package is the CLI's with the platform, under an alias
        # of @openai/codex (binaries.NPM_SPEC); its probe reads the binary's own version so.
        return [
            Tool(
                "codex",
                f"{PLATFORM_PACKAGE}@npm:{NPM_PACKAGE}",
                f"{CODEX_VERSION}-linux-x64",
                INSTALLED,
                lambda binary: f"{read_version(binary)}-linux-x64",
            )
        ]

    def doctor_tools(self, options: Mapping[str, Any]) -> list[tuple[str, Callable[[], str]]]:
        return doctor.tools(options)

    def doctor_model(self, model: str | None, options: Mapping[str, Any]) -> tuple[str, str] | None:
        return doctor.model_check(model, options)

    def run(self, request: AgentRequest) -> AgentResult:
        if self.binary is None or self.choice is None:
            return AgentResult(error="codex adapter used before start()")
        if (request.model or self.choice.model) != self.choice.model:
            return AgentResult(error=f"model {request.model!r} differs from the session's {self.choice.model!r}")
        workspace = request.workspace.resolve()
        cfg_dir = request.run_dir.resolve() / "codex"
        if cfg_dir.is_relative_to(workspace) or workspace.is_relative_to(cfg_dir):
            return AgentResult(error=f"{cfg_dir}: codex config dir must not be inside or above the workspace")
        home = cfg_dir / "home"
        home.mkdir(parents=True, exist_ok=True)
        warnings: list[str] = []
        gate = turn_gate(request.limits, "/responses")  # a turn: one Responses request
        try:
            scripted = cell_scripted(self.choice, self.scripted)
            policy = self.choice.policy
            with cell_route(request, gate, scripted, policy, self._swaps, self.scripted_totals) as route:
                upstream, cell_path = self._endpoint(route.token)
                base_url = route.open(upstream) + cell_path
                fd = os.open(home / "config.toml", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    fh.write(to_toml(cell_config(self.choice, self._placeholders, base_url)))
                env = self._env(request, cfg_dir, home, warnings)
                return self._spawn_and_watch(request, env, cfg_dir, home, warnings, gate)
        except (OSError, ValueError) as err:
            return AgentResult(error=f"cannot reach the model from the cell: {err}")

    def _endpoint(self, token: str) -> tuple[str, str]:
        """(the model's real base URL, the path of the base URL the cell is given)."""
        assert self.choice is not None
        return endpoint(self.choice, self.scripted, token, self._secret_env, self._placeholders)

    def preflight(self) -> str:
        """The model answers the harness; then Codex starts, and reaches the model, inside a cell's sandbox."""
        assert self.choice is not None and self.binary is not None
        line = check_responses(self.choice, self._env_source)
        with idle_token(self.scripted) as token:
            return with_inside(line, self._boundary, [self.binary], lambda: self._endpoint(token), self._swaps, "codex")

    def _env(self, request: AgentRequest, cfg_dir: Path, home: Path, warnings: list[str]) -> dict[str, str]:
        assert self.choice is not None
        env = {k: v for k, v in request.env.items() if not k.startswith(("CODEX_", "OPENAI_", "OPENCODE_"))}
        if request.arm != "akm":
            env = {k: v for k, v in env.items() if not k.startswith("AKM_")}
        env.setdefault("HOME", str(request.run_dir / "home"))
        Path(env["HOME"]).mkdir(parents=True, exist_ok=True)
        env["CODEX_HOME"] = str(home)
        env[KEY_VAR] = key_value(self.choice, self._placeholders)
        entries = [e for e in (request.env.get("PATH") or os.defpath).split(os.pathsep) if e]
        if request.arm != "akm":
            bin_dir = cfg_dir / "bin"
            bin_dir.mkdir(exist_ok=True)
            entries = hide_akm(entries, bin_dir, request.run_dir, request.arm, warnings)
        env["PATH"] = os.pathsep.join(entries)
        return env

    def _spawn_and_watch(
        self,
        request: AgentRequest,
        env: dict[str, str],
        cfg_dir: Path,
        home: Path,
        warnings: list[str],
        gate: TurnGate,
    ) -> AgentResult:
        assert self.binary is not None
        prompt_path = cfg_dir / "prompt.txt"
        prompt_path.write_text(request.prompt, encoding="utf-8")
        stderr_path = cfg_dir / "stderr.log"
        stream = EventStream(request.transcript)
        rollout = Rollout(home)
        argv = [str(self.binary), *ARGV, "-C", str(request.workspace), "-"]
        if request.sandbox is not None:
            request.sandbox.expose_tools(self.binary)  # its package, with the rg Codex puts on PATH
        ours, theirs = socket.socketpair()
        with open(prompt_path, "rb") as stdin, open(stderr_path, "wb") as stderr, theirs:
            try:
                proc = request.procs.spawn(
                    argv, cwd=request.workspace, env=env, stdin=stdin, stdout=theirs.fileno(), stderr=stderr
                )
            except OSError as err:
                stream.close()
                ours.close()
                return AgentResult(error=f"cannot start codex ({self.binary}): {err}")
        proc.stdout = ours.makefile("rb")
        try:
            progress = Progress(stream, rollout)
            budget, idle = watch(proc, progress, request, stream.started_at, self._scrub, gate, rollout.poll)
        finally:
            ours.close()
        elapsed = time.monotonic() - stream.started_at
        stderr_text = self._scrub.text(tail(stderr_path, request.run_dir))
        result = agent_result(request, proc.returncode, stream, rollout, warnings)
        if budget is not None:
            over_budget(result, budget, idle, elapsed, request.limits, progress.turns)
            return result
        result.error = failure(stream, proc.returncode, stderr_text)
        if result.error is None and result.tokens is None:
            result.warnings.append("codex reported no usage: tokens not measured")
        return result


def agents() -> list[Agent]:
    """The adapters this package offers (agents/registry.py finds them)."""
    return [CodexAgent()]
