"""The opencode agent adapter: runs the real ``opencode run --format json`` for one cell.

Recipe (docs/opencode.md, all verified against opencode 1.18.33):

* A per-cell ``opencode.json`` (mode 0600) in ``<run_dir>/opencode/``, a sibling of the
  workspace, never inside it or its parents; ``$schema`` set so opencode does not rewrite it,
  ``snapshot: false``, ``share: "disabled"``, ``autoupdate: false``, ``plugin: []``, tools
  allowed, and exactly one provider block: the selected provider from the providers file,
  verbatim, or the built-in scripted model with a per-cell base URL.
* The environment starts from ``request.env`` (the runner's private HOME and XDG dirs, and on
  the akm arm only akm's variables and the akm executable on PATH; the user's HOME is never
  inherited, so ``~/.config/opencode`` cannot leak in), adds the ``OPENCODE_*`` switches that
  keep opencode offline and self-contained, a per-cell ``bin`` dir with ``rg``, and exactly the
  variables the selected provider references as ``{env:VAR}`` (and nothing else of the user's
  environment).
* opencode runs in a new session with the prompt on stdin (then EOF). Its stdout events are
  parsed live by :mod:`events`; the main thread enforces the wall, token and turn budgets and
  stops the whole process tree through ``request.procs`` on a budget (agents/watching.py).

Arm isolation: on every arm but ``akm`` no ``AKM_*`` variable reaches opencode and no ``akm``
executable is on PATH (directories of PATH that hold one are dropped, with a warning).

Project instructions decision: ``OPENCODE_DISABLE_PROJECT_CONFIG=1`` is set on **every** arm.
It stops opencode from reading ``opencode.json`` files found by walking up from the
workspace (a stale one in a parent directory would override our config, docs/opencode.md) and
also from loading ``AGENTS.md``/``CLAUDE.md``/``CONTEXT.md`` project instructions. So a
workspace ``AGENTS.md`` that mentions akm (as akm 0.7.0's corpus does) can never reach the
control arm; the arms differ only by their prompt, PATH and stash. Tasks must therefore put
everything the agent needs in ``README.md`` (our shipped workspaces do, and never mention
akm). ``OPENCODE_DISABLE_CLAUDE_CODE_PROMPT=1`` and ``OPENCODE_DISABLE_EXTERNAL_SKILLS=1``
keep ``~/.claude`` and external skills out too.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ...cell.rundir import hide_akm
from ...scripted import ScriptedModel
from ...store.scrub import Scrubber
from ...system.forwarder import TurnGate
from ..base import Agent, AgentRequest, AgentResult, SessionInfo, Tool
from ..boundary import with_inside
from ..cellstart import cell_route, cell_scripted, endpoint, idle_token, keys, known_version
from ..discovery import CONFIG_SOURCES, discover_providers
from ..model import choice_digest, choose_model
from ..preflight import check_provider
from ..providers import ModelChoice
from ..transcript import TranscriptItem
from ..watching import over_budget, tail, turn_gate, watch
from . import agentlog, doctor
from .binaries import (
    INSTALLED,
    OFFLINE_ENV,
    OPENCODE_VERSION,
    PLATFORM_PACKAGE,
    locate_opencode,
    locate_rg,
    read_version,
)
from .config import cell_config
from .events import EventStream
from .transcript import read_transcript
from .watch import agent_result, failure, stream_warnings

# Names the tests and the docs reach through the adapter (doctor asks OpencodeAgent, agents/opencode/doctor.py).
__all__ = ["OpencodeAgent", "agents", "choose_model", "locate_opencode", "locate_rg", "read_version"]

# ---------------------------------------------------------------- the adapter


class OpencodeAgent(Agent):
    """The ``opencode`` adapter. Session options it reads:

    ``opencode`` (binary path), ``akm`` (akm executable), ``rootdir`` (for ``.tools/``),
    ``model_choice`` (a :class:`ModelChoice`), else ``providers`` (a :class:`ProvidersFile`
    or the ``--bench-providers`` path), ``opencode_config`` plus ``config_providers``,
    ``config_providers_ref``, ``config_opencode``, ``config_opencode_ref``,
    ``config_default_model``, ``config_path`` (see :func:`choose_model`); ``env`` (where
    ``{env:VAR}`` values and BENCH_* variables are read; default ``os.environ``).
    """

    name = "opencode"

    def __init__(self) -> None:
        self.version = "unknown"
        self.binary: Path | None = None
        self.rg: Path | None = None
        self.choice: ModelChoice | None = None
        self.model: str | None = None
        self.scripted: ScriptedModel | None = None
        self.scripted_totals: dict[str, dict[str, int]] = {}
        self._secret_env: dict[str, str] = {}
        self._placeholders: dict[str, str] = {}  # {env:VAR} -> what the cell's config holds instead
        self._swaps: dict[str, str] = {}  # placeholder -> the value the forwarder puts back
        self._boundary: dict[str, Any] = {}
        self._env_source: Mapping[str, str] = os.environ
        self.secrets: list[str] = []  # the harness scrubs these from everything it stores
        self.warnings: list[str] = []  # for the run's terminal and report
        self._scrub = Scrubber()

    # ------------------------------------------------------------ session

    def start(self, session: SessionInfo) -> None:
        options = session.options
        self.binary = locate_opencode(options)
        self.rg = locate_rg()
        choice = options.get("model_choice")
        if not isinstance(choice, ModelChoice):
            choice = choose_model(session.model, options)
        self.choice = choice
        self.model = choice.model
        if choice.providers is not None and choice.providers.ignored:
            self.warnings.append(
                f"{choice.providers.source}: {', '.join(choice.providers.ignored)}: not used; from an opencode config a "
                "run takes only provider and model (each cell's opencode config is the harness's own)"
            )
        env = options.get("env") or os.environ
        self._env_source = env
        # Where the preflight looks from inside a cell (agents/boundary.py).
        self._boundary = {k: options.get(k) for k in ("sandbox", "network", "sandbox_ro", "work_root")}
        found = keys(choice, env)
        self._secret_env, self._placeholders, self._swaps = found.values, found.placeholders, found.swaps
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

    def check_providers(self, options: Mapping[str, Any]) -> None:
        """The run config's source, its opencode config too (the discovery chain's run-config step)."""
        discover_providers(env={}, **{key: options.get(key) for key in CONFIG_SOURCES})

    def install(self) -> list[Tool]:
        return [Tool("opencode", PLATFORM_PACKAGE, OPENCODE_VERSION, INSTALLED, read_version)]

    def doctor_tools(self, options: Mapping[str, Any]) -> list[tuple[str, Callable[[], str]]]:
        return doctor.tools(options)

    def doctor_model(self, model: str | None, options: Mapping[str, Any]) -> tuple[str, str]:
        return doctor.model_check(model, options)

    # ------------------------------------------------------------ one cell

    def run(self, request: AgentRequest) -> AgentResult:
        if self.binary is None or self.choice is None or self.rg is None:
            return AgentResult(error="opencode adapter used before start()")
        model = request.model or self.choice.model
        if model != self.choice.model:
            return AgentResult(error=f"model {model!r} differs from the session's {self.choice.model!r}")
        workspace = request.workspace.resolve()
        cfg_dir = request.run_dir.resolve() / "opencode"
        gate = turn_gate(request.limits, "/chat/completions")  # a turn: one step's request, with tools
        try:
            cfg_dir.relative_to(workspace)
            inside = True
        except ValueError:
            inside = workspace.is_relative_to(cfg_dir)
        if inside:
            return AgentResult(error=f"{cfg_dir}: opencode config dir must not be inside or above the workspace")
        cfg_dir.mkdir(parents=True, exist_ok=True)
        warnings: list[str] = []
        try:
            scripted = cell_scripted(self.choice, self.scripted)
            policy = self.choice.policy
            with cell_route(request, gate, scripted, policy, self._swaps, self.scripted_totals) as route:
                upstream, cell_path = self._endpoint(route.token)
                config = self._config(model, route.open(upstream) + cell_path, request.limits.wall_s)
                config_path = cfg_dir / "opencode.json"
                fd = os.open(config_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump(config, fh, indent=2)
                env = self._env(request, cfg_dir, config_path, warnings)
                result = self._spawn_and_watch(request, model, env, cfg_dir, warnings, gate)
        except (OSError, ValueError) as err:
            return AgentResult(error=f"cannot reach the model from the cell: {err}")
        if result.error is not None:  # a harness error: keep opencode's own log, which the run dir takes along
            kept = agentlog.keep(request.run_dir, request.transcript, self._scrub)
            result.error += f"; opencode's log: {kept}" if kept else ""
        return result

    def _endpoint(self, token: str) -> tuple[str, str]:
        """(the model's real base URL, the path and query of the base URL the cell is given)."""
        assert self.choice is not None
        return endpoint(self.choice, self.scripted, token, self._secret_env, self._placeholders)

    def preflight(self) -> str:
        """One minimal request to the model through the provider entry the cells will get, then
        opencode's start and the way to the model from inside a cell's sandbox."""
        assert self.choice is not None and self.binary is not None and self.rg is not None
        line = check_provider(self.choice, self._env_source)
        tools = [self.binary, self.rg]
        with idle_token(self.scripted) as token:
            return with_inside(line, self._boundary, tools, lambda: self._endpoint(token), self._swaps)

    def _config(self, model: str, base_url: str, wall_s: float) -> dict[str, Any]:
        assert self.choice is not None
        return cell_config(self.choice, self._placeholders, model, base_url, wall_s)

    def _env(self, request: AgentRequest, cfg_dir: Path, config_path: Path, warnings: list[str]) -> dict[str, str]:
        assert self.rg is not None and self.choice is not None
        env = {k: v for k, v in request.env.items() if not k.startswith("OPENCODE_")}
        if request.arm != "akm":
            env = {k: v for k, v in env.items() if not k.startswith("AKM_")}
        home = env.get("HOME")
        if not home:
            home = str(request.run_dir / "home")
            env["HOME"] = home
        for key, sub in (
            ("XDG_CONFIG_HOME", ".config"),
            ("XDG_DATA_HOME", ".local/share"),
            ("XDG_CACHE_HOME", ".cache"),
            ("XDG_STATE_HOME", ".local/state"),
        ):
            env.setdefault(key, str(Path(home) / sub))
        for key in ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
            Path(env[key]).mkdir(parents=True, exist_ok=True)
        env.update(OFFLINE_ENV)
        env["OPENCODE_CONFIG"] = str(config_path)
        if self.choice.scripted:
            env["OPENCODE_DISABLE_DEFAULT_PLUGINS"] = "1"
        bin_dir = cfg_dir / "bin"
        bin_dir.mkdir(exist_ok=True)
        _link(bin_dir / "rg", self.rg)
        entries = [e for e in (request.env.get("PATH") or os.defpath).split(os.pathsep) if e]
        if request.arm != "akm":
            entries = hide_akm(entries, bin_dir, request.run_dir, request.arm, warnings)
        env["PATH"] = os.pathsep.join([str(bin_dir), *entries])
        return env

    def _spawn_and_watch(
        self,
        request: AgentRequest,
        model: str,
        env: dict[str, str],
        cfg_dir: Path,
        warnings: list[str],
        gate: TurnGate,
    ) -> AgentResult:
        assert self.binary is not None and self.rg is not None
        prompt_path = cfg_dir / "prompt.txt"
        prompt_path.write_text(request.prompt, encoding="utf-8")
        stderr_path = cfg_dir / "stderr.log"
        stream = EventStream(request.transcript)
        argv = [str(self.binary), "run", "--format", "json", "--model", model, "--title", "akmbench"]
        if request.sandbox is not None:  # opencode, rg and (akm arm) akm must run inside it
            request.sandbox.expose_tools(self.binary, self.rg)  # akm (akm arm) is exposed by the runner
        started = time.monotonic()
        # opencode's events come over a socket, not a pipe: a tool command (the agent's, same uid)
        # can reopen a pipe through /proc/<pid>/fd/1 and write events of its own into the
        # transcript; a socket cannot be reopened that way.
        ours, theirs = socket.socketpair()
        with open(prompt_path, "rb") as stdin, open(stderr_path, "wb") as stderr, theirs:
            try:
                proc = request.procs.spawn(
                    argv,
                    cwd=request.workspace,
                    env=env,
                    stdin=stdin,
                    stdout=theirs.fileno(),
                    stderr=stderr,
                )
            except OSError as err:
                stream.close()
                ours.close()
                return AgentResult(error=f"cannot start opencode ({self.binary}): {err}")
        proc.stdout = ours.makefile("rb")
        try:
            budget, idle = watch(proc, stream, request, started, self._scrub, gate)
        finally:
            ours.close()
        elapsed = time.monotonic() - started
        stderr_text = self._scrub.text(tail(stderr_path, request.run_dir))
        stream_warnings(stream, stderr_text, warnings)
        result = agent_result(request, proc.returncode, stream, warnings)
        if budget is not None:
            over_budget(result, budget, idle, elapsed, request.limits, stream.turns)
            return result
        result.error = failure(stream, proc.returncode, stderr_text)
        if result.error is None and not stream.measured:
            warnings.append("opencode reported no step_finish event: tokens not measured")
        return result


def _link(link: Path, target: Path) -> None:
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(target)


def agents() -> list[Agent]:
    """The adapters this package offers (agents/registry.py finds them)."""
    return [OpencodeAgent()]
