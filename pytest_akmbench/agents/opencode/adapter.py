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
  stops the whole process tree through ``request.procs`` on a budget.

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
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...cell.rundir import hide_akm
from ...errors import ConfigError
from ...store.scrub import Scrubber
from ...system.procs import is_executable
from ..base import AgentRequest, AgentResult, Limits, SessionInfo
from . import agentlog
from .events import EventStream
from .preflight import check_provider
from .providers import (
    SCRIPTED_PREFIX,
    ModelChoice,
    ProvidersFile,
    check_env_vars,
    check_model,
    discover_providers,
    provider_key,
    resolve_env_refs,
    resolve_model,
    secret_values,
)
from .scripted import ScriptedModel

OPENCODE_VERSION = "1.18.33"
PLATFORM_PACKAGE = "opencode-linux-x64"
INSTALL_HINT = (
    f"install it: mkdir -p .tools && cd .tools && echo '{{\"private\":true}}' > package.json && "
    f"npm install {PLATFORM_PACKAGE}@{OPENCODE_VERSION}; or set AKMBENCH_OPENCODE / pass --bench-opencode PATH"
)
RG_HINT = "install ripgrep: pip install ripgrep==14.1.0 (or apt-get install ripgrep)"
SCHEMA_URL = "https://opencode.ai/config.json"
HUNG_AFTER_S = 20.0
OFFLINE_ENV = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE_PROMPT": "1",
    "OPENCODE_DISABLE_EXTERNAL_SKILLS": "1",
    "OPENCODE_DISABLE_PROJECT_CONFIG": "1",
    "npm_config_registry": "http://127.0.0.1:9/",
}
PERMISSION = {
    "bash": "allow",
    "edit": "allow",
    "write": "allow",
    "read": "allow",
    "glob": "allow",
    "grep": "allow",
    "list": "allow",
    "todowrite": "allow",
    "webfetch": "allow",
    "task": "allow",
    "skill": "allow",
}


# ---------------------------------------------------------------- locating tools


def locate_opencode(options: Mapping[str, Any], env: Mapping[str, str] | None = None) -> Path:
    """Explicit option, then $AKMBENCH_OPENCODE, then <rootdir>/.tools/..., then PATH."""
    env = os.environ if env is None else env
    explicit = options.get("opencode")
    if explicit:
        path = Path(str(explicit)).expanduser()
        if not is_executable(path):
            raise ConfigError(
                f"{path}: opencode binary not found or not executable (--bench-opencode); {INSTALL_HINT}", usage=True
            )
        return path.resolve()
    from_env = env.get("AKMBENCH_OPENCODE")
    if from_env:
        path = Path(from_env).expanduser()
        if not is_executable(path):
            raise ConfigError(
                f"{path}: opencode binary not found or not executable (AKMBENCH_OPENCODE); {INSTALL_HINT}", usage=True
            )
        return path.resolve()
    rootdir = Path(str(options.get("rootdir") or Path.cwd()))
    local = rootdir / ".tools" / "node_modules" / PLATFORM_PACKAGE / "bin" / "opencode"
    if is_executable(local):
        return local.resolve()
    found = shutil.which("opencode")
    if found:
        return Path(found).resolve()
    raise ConfigError(f"opencode not found (looked in {local} and on PATH); {INSTALL_HINT}", usage=True)


def locate_rg() -> Path:
    """The ripgrep binary; the pip wheel's (next to this Python) wins over pyenv-style shims."""
    candidates = [Path(sys.executable).parent / "rg", Path(sys.prefix) / "bin" / "rg"]
    found = shutil.which("rg")
    if found:
        candidates.append(Path(found))
    for path in candidates:
        if is_executable(path):
            try:
                with open(path, "rb") as fh:
                    if fh.read(4) != b"\x7fELF" and "shims" in path.parts:
                        continue
            except OSError:
                continue
            return path.resolve()
    raise ConfigError(
        f"rg (ripgrep) not found on PATH; opencode's grep/glob tools need it offline; {RG_HINT}", usage=True
    )


def read_version(binary: Path, timeout_s: float = 60.0) -> str:
    """``opencode --version`` run with a throwaway HOME (even --version creates XDG dirs)."""
    home = Path(tempfile.mkdtemp(prefix="akmbench-opencode-version-"))
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local/state"),
        "PATH": os.environ.get("PATH", os.defpath),
        **OFFLINE_ENV,
    }
    try:
        proc = subprocess.run(
            [str(binary), "--version"],
            env=env,
            capture_output=True,
            timeout=timeout_s,
            start_new_session=True,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise ConfigError(f"{binary}: cannot run opencode --version: {err}; {INSTALL_HINT}") from err
    finally:
        shutil.rmtree(home, ignore_errors=True)
    lines = proc.stdout.decode("utf-8", "replace").strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = proc.stderr.decode("utf-8", "replace").strip()[-300:]
        raise ConfigError(f"{binary}: opencode --version failed (exit {proc.returncode}): {tail}; {INSTALL_HINT}")
    return lines[-1].strip()


# ---------------------------------------------------------------- the adapter


class OpencodeAgent:
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
        self._secret_env = check_env_vars(choice, env)
        self.secrets = secret_values(choice.providers, env)
        self._scrub = Scrubber(self.secrets)
        self.version = read_version(self.binary)
        if choice.scripted and self.scripted is None:
            self.scripted = ScriptedModel()
            self.scripted.start()

    def stop(self) -> None:
        if self.scripted is not None:
            self.scripted.stop()
            self.scripted = None

    # ------------------------------------------------------------ one cell

    def run(self, request: AgentRequest) -> AgentResult:
        if self.binary is None or self.choice is None or self.rg is None:
            return AgentResult(error="opencode adapter used before start()")
        model = request.model or self.choice.model
        if model != self.choice.model:
            return AgentResult(error=f"model {model!r} differs from the session's {self.choice.model!r}")
        workspace = request.workspace.resolve()
        cfg_dir = request.run_dir.resolve() / "opencode"
        try:
            cfg_dir.relative_to(workspace)
            inside = True
        except ValueError:
            inside = workspace.is_relative_to(cfg_dir)
        if inside:
            return AgentResult(error=f"{cfg_dir}: opencode config dir must not be inside or above the workspace")
        cfg_dir.mkdir(parents=True, exist_ok=True)
        warnings: list[str] = []
        token = uuid.uuid4().hex
        if self.choice.scripted:
            if self.scripted is None:
                return AgentResult(error="scripted model server is not running")
            base_url = self.scripted.register(
                token,
                self.choice.policy or "idle",
                request.task,
                request.arm,
                request.run_dir,
                akm_line=request.akm_line,
            )
        else:
            base_url = None
        config_path = cfg_dir / "opencode.json"
        try:
            config = self._config(model, base_url, request.limits.wall_s)
            fd = os.open(config_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(config, fh, indent=2)
            os.chmod(config_path, 0o600)
            env = self._env(request, cfg_dir, config_path, warnings)
            result = self._spawn_and_watch(request, model, env, cfg_dir, warnings)
        finally:
            if self._secret_env and config_path.exists():
                # A kept run dir (--bench-keep-runs) must not hold the resolved keys.
                config_path.write_text(
                    json.dumps(self._config(model, base_url, request.limits.wall_s, resolve=False), indent=2),
                    encoding="utf-8",
                )
            stderr_log = cfg_dir / "stderr.log"
            if self._scrub and stderr_log.exists():
                stderr_log.write_bytes(self._scrub.bytes(stderr_log.read_bytes()))
            if self.scripted is not None and base_url is not None:
                self.scripted_totals[str(request.run_dir)] = self.scripted.totals(token)
                self.scripted.unregister(token)
        if result.error is not None:  # a harness error: keep opencode's own log, which the run dir takes along
            kept = agentlog.keep(request.run_dir, request.transcript, self._scrub)
            result.error += f"; opencode's log: {kept}" if kept else ""
        return result

    def preflight(self) -> str:
        """One minimal request to the model through the provider entry the cells will get."""
        assert self.choice is not None
        return check_provider(self.choice, self._env_source)

    def _config(self, model: str, base_url: str | None, wall_s: float, *, resolve: bool = True) -> dict[str, Any]:
        assert self.choice is not None
        config: dict[str, Any] = {
            "$schema": SCHEMA_URL,
            "model": model,
            "small_model": model,
            "plugin": [],
            "snapshot": False,
            "share": "disabled",
            "autoupdate": False,
            "permission": dict(PERMISSION),
        }
        if base_url is not None:
            timeout_ms = int(min(60000, max(1000, wall_s * 1000)))
            policy = self.choice.policy or "idle"
            config["provider"] = {
                "scripted": {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "Scripted",
                    "options": {
                        "baseURL": base_url,
                        "apiKey": "scripted",
                        "headerTimeout": timeout_ms,
                        "chunkTimeout": timeout_ms,
                    },
                    "models": {
                        policy: {
                            "name": f"Scripted {policy}",
                            "tool_call": True,
                            "limit": {"context": 100000, "output": 4096},
                        }
                    },
                }
            }
        elif self.choice.provider_entry is not None:
            # Resolved here, into the 0600 config, rather than passed as environment variables:
            # every tool command the agent runs inherits opencode's environment.
            entry = resolve_env_refs(self.choice.provider_entry, self._secret_env if resolve else {})
            config["provider"] = {self.choice.provider_key: entry}
        return config

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
        self, request: AgentRequest, model: str, env: dict[str, str], cfg_dir: Path, warnings: list[str]
    ) -> AgentResult:
        assert self.binary is not None
        prompt_path = cfg_dir / "prompt.txt"
        prompt_path.write_text(request.prompt, encoding="utf-8")
        stderr_path = cfg_dir / "stderr.log"
        stream = EventStream(request.transcript)
        argv = [str(self.binary), "run", "--format", "json", "--model", model, "--title", "akmbench"]
        if request.sandbox is not None:  # opencode, rg and (akm arm) akm must run inside it
            request.sandbox.expose_tools(self.binary, self.rg)  # akm (akm arm) is exposed by the runner
        started = time.monotonic()
        with open(prompt_path, "rb") as stdin, open(stderr_path, "wb") as stderr:
            try:
                proc = request.procs.spawn(
                    argv,
                    cwd=request.workspace,
                    env=env,
                    stdin=stdin,
                    stdout=subprocess.PIPE,
                    stderr=stderr,
                )
            except OSError as err:
                stream.close()
                return AgentResult(error=f"cannot start opencode ({self.binary}): {err}")
        budget, idle = self._watch(proc, stream, request, started)
        elapsed = time.monotonic() - started
        stderr_text = self._scrub.text(_tail(stderr_path))
        _stream_warnings(stream, stderr_text, warnings)
        result = _result(request, proc.returncode, stream, warnings)
        if budget is not None:
            _over_budget(result, budget, idle, elapsed, request.limits, stream)
            return result
        result.error = _failure(stream, proc.returncode, stderr_text)
        if result.error is None and not stream.measured:
            warnings.append("opencode reported no step_finish event: tokens not measured")
        return result

    def _watch(
        self, proc: subprocess.Popen[bytes], stream: EventStream, request: AgentRequest, started: float
    ) -> tuple[str | None, float]:
        """Feed opencode's stdout to the stream until it ends or a budget is hit; then stop it.
        Returns (the budget hit or None, seconds since the last agent event)."""
        lines: queue.Queue[bool] = queue.Queue()

        def read() -> None:
            assert proc.stdout is not None
            try:
                for line in iter(proc.stdout.readline, b""):
                    stream.feed(self._scrub.bytes(line))
                    lines.put(True)
            except (OSError, ValueError):
                pass
            lines.put(False)

        reader = threading.Thread(target=read, name="akmbench-opencode-reader", daemon=True)
        reader.start()
        deadline = started + request.limits.wall_s
        budget, eof = _until_end(proc, stream, lines, request.limits, deadline)
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
        return budget, idle


def _until_end(
    proc: subprocess.Popen[bytes], stream: EventStream, lines: queue.Queue[bool], limits: Limits, deadline: float
) -> tuple[str | None, bool]:
    """Wait for the end of opencode's output, a budget or its exit: (budget hit, output ended)."""
    exited_at: float | None = None
    while True:
        now = time.monotonic()
        if now >= deadline:
            return "wall", False
        try:
            item = lines.get(timeout=min(0.25, deadline - now))
        except queue.Empty:
            item = None
        if item is False:
            return None, True
        if item:
            if limits.tokens is not None and stream.tokens["total"] > limits.tokens:
                return "tokens", False
            if (
                limits.turns is not None
                and stream.turns >= limits.turns
                and stream.last_finish_reason not in (None, "stop", "length", "content-filter")
                and stream.turns > 0
            ):
                return "turns", False
        if proc.poll() is not None:
            # opencode exited; give the reader a moment to drain stdout (a leaked child
            # holding the pipe must not keep us here).
            exited_at = exited_at or time.monotonic()
            if time.monotonic() - exited_at > 2.0:
                return None, False


def _stream_warnings(stream: EventStream, stderr_text: str, warnings: list[str]) -> None:
    warnings.extend(stream.warnings)
    for rejection in stream.permission_rejections:
        warnings.append(f"permission auto-rejected: {rejection}")
    if "auto-rejecting" in stderr_text and not stream.permission_rejections:
        warnings.append("permission auto-rejected (see opencode stderr)")
    if stream.bad_lines:
        warnings.append(f"{stream.bad_lines} non-JSON line(s) on opencode stdout")


def _result(request: AgentRequest, returncode: int | None, stream: EventStream, warnings: list[str]) -> AgentResult:
    return AgentResult(
        final_text=stream.final_text,
        exit_code=returncode,
        tokens=dict(stream.tokens) if stream.measured else None,
        token_measurement="measured" if stream.measured else "missing",
        cost_usd=stream.cost if stream.measured else None,
        turns=stream.turns,
        tool_calls=stream.tool_calls,
        transcript_written=request.transcript.is_file() and stream.bytes_written > 0,
        akm={k: list(v) for k, v in stream.akm.items()},
        warnings=warnings,
    )


def _over_budget(
    result: AgentResult, budget: str, idle: float, elapsed: float, limits: Limits, stream: EventStream
) -> None:
    """Mark the budget hit, tagged ``hung`` (no agent event for a while) or ``confused``."""
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
        result.warnings.append(
            f"token budget of {limits.tokens} exceeded: {stream.tokens['total']} tokens after {stream.turns} turn(s)"
        )
    else:
        result.warnings.append(f"turn budget of {limits.turns} reached with the agent still calling tools")


def _failure(stream: EventStream, returncode: int | None, stderr_text: str) -> str | None:
    """Why the run failed on opencode's or the provider's side, or None."""
    if stream.errors and (stream.errors_after_last_step or returncode not in (0, None)):
        err = stream.errors[-1]
        status = f" (HTTP {err['statusCode']})" if err.get("statusCode") else ""
        name = f"{err['name']}: " if err.get("name") else ""
        return f"provider error: {name}{err['message']}{status}"
    if returncode not in (0, None):
        return (
            f"opencode exited with status {returncode} without an error event; "
            f"stderr: {stderr_text[-500:].strip() or '(empty)'}"
        )
    return None


def choose_model(model: str | None, options: Mapping[str, Any], env: Mapping[str, str] | None = None) -> ModelChoice:
    """The session's model and provider from ``session.model`` and the adapter options.

    ``options["providers"]`` may be a :class:`ProvidersFile`, a path (``--bench-providers``)
    or absent; ``opencode_config`` is a ``--bench-opencode-config`` path; the other discovery
    inputs come from ``config_providers``, ``config_providers_ref``, ``config_opencode``,
    ``config_opencode_ref``, ``config_default_model`` and ``config_path``. A scripted model
    needs no providers, so discovery is skipped for it unless a file was named explicitly.
    """
    env = options.get("env") or (os.environ if env is None else env)
    given = options.get("providers")
    providers: ProvidersFile | None = given if isinstance(given, ProvidersFile) else None
    scripted_model = bool(model) and provider_key(str(model)) == SCRIPTED_PREFIX
    if providers is None and (given or options.get("opencode_config") or not scripted_model):
        providers = discover_providers(
            explicit=given if isinstance(given, (str, os.PathLike)) and str(given) else None,
            explicit_opencode=options.get("opencode_config") or None,
            env=env,
            config_providers=options.get("config_providers"),
            config_default_model=options.get("config_default_model"),
            config_providers_ref=options.get("config_providers_ref"),
            config_opencode=options.get("config_opencode"),
            config_opencode_ref=options.get("config_opencode_ref"),
            config_path=options.get("config_path"),
        )
    if model:
        chosen, source = model, "--bench-model"
    else:
        chosen, source = resolve_model(
            env=env, config_default_model=options.get("config_default_model"), providers=providers
        )
    return check_model(chosen, source, providers)


def _link(link: Path, target: Path) -> None:
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(target)


def _tail(path: Path, limit: int = 8192) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - limit))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


def agents() -> list[Any]:
    """The adapters this module contributes (hooked up by the plugin)."""
    return [OpencodeAgent()]
