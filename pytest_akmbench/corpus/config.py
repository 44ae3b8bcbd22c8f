"""Run configs (schema v1, docs/corpus.md) and the one resolved ``Settings`` of a bench run.

Every setting has four possible sources with a fixed precedence: command line, then the
run config file, then the ini file, then the default. Each value remembers where it came
from so an error can name it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..system.sandbox import parse_mode, parse_network
from .config_fields import PHASE2_FIELDS as PHASE2_FIELDS
from .config_fields import PROVIDER_FIELDS as PROVIDER_FIELDS
from .config_fields import TRACKS as TRACKS
from .config_fields import run_config_problems as run_config_problems
from .strict import DuplicateKey, loads_json
from .values import (
    budget_tokens,
    budget_turns,
    budget_wall_ms,
    parallel_count,
    parse_arms,
    parse_bool,
    parse_tasks,
    positive_int,
    seed_count,
    seeds_most,
    token_cap,
    until_choice,
    usd_cap,
    verify_timeout,
)

DEFAULT_SEEDS = 3
DEFAULT_FLOOR = 3
DEFAULT_BUDGET_TOKENS = 30000
DEFAULT_BUDGET_WALL_MS = 120000
DEFAULT_VERIFY_TIMEOUT_S = 120.0


@dataclass(frozen=True, slots=True)
class RunConfig:
    """A validated run-config file; absent fields are ``None``."""

    path: Path
    data: Mapping[str, Any]

    @property
    def name(self) -> str:
        return str(self.data.get("name") or self.path.stem)

    def get(self, key: str) -> Any:
        return self.data.get(key)

    @property
    def default_model(self) -> str | None:
        """``model`` (standalone akm-bench) or ``defaultModel`` (reference): one slot."""
        return self.data.get("model") or self.data.get("defaultModel")

    def warnings(self) -> list[str]:
        """What the file sets that this run will not use (each a whole line)."""
        unused = [key for key in PHASE2_FIELDS if key in self.data]
        if not unused:
            return []
        return [
            f"{self.path}: {', '.join(unused)}: evolve-track settings, unused by the utility track this run "
            "executes (accepted so the config loads unchanged)"
        ]

    def resolve_path(self, key: str) -> Path | None:
        """A path field after ``${VAR}``/``$VAR``/``~`` expansion, relative to the file's dir."""
        raw = self.data.get(key)
        return None if not raw else expand_path(raw, self.path.parent)


def corpus_near(config_path: Path) -> Path | None:
    """The project a run config belongs to: the nearest directory at or above the config file
    holding ``corpus/tasks``, so ``pytest --bench-config <project>/configs/x.json`` run from
    anywhere finds that project's corpus (docs/corpus.md, "Run configs")."""
    for folder in config_path.resolve().parents:
        if (folder / "corpus" / "tasks").is_dir():
            return folder / "corpus"
    return None


def in_file(config: str | Path | None, err: Exception) -> str:
    """``err`` naming the run config it came from (a selection error names only its field)."""
    text = str(err)
    return text if config is None or text.startswith(str(config)) else f"{config}: {text}"


def expand_path(raw: str | Path, base: Path, environ: Mapping[str, str] | None = None) -> Path:
    """Path expansion (docs/corpus.md, "Run configs"): ``${NAME}``, ``$NAME`` (unset: empty),
    ``~``, then relative to ``base``. Every path the harness reads from a config, an option or a
    variable goes through here, so all expand alike."""
    env = os.environ if environ is None else environ
    text = re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: env.get(m.group(1), ""), str(raw))
    text = re.sub(r"\$([A-Za-z_][A-Za-z0-9_]*)", lambda m: env.get(m.group(1), ""), text)
    if text == "~" or text.startswith("~/"):
        text = str(Path(env.get("HOME") or Path.home())) + text[1:]
    path = Path(text)
    return path if path.is_absolute() else (base / path)


def load_run_config(path: Path) -> RunConfig:
    """Read and validate a run config; an error names the file, the field and the fix.

    Only the first problem is raised (one line); ``validate`` lists them all
    (:func:`run_config_problems`).
    """
    data = read_run_config(path)
    problems = run_config_problems(data, path)
    if problems:
        more = len(problems) - 1
        tail = f" (and {more} more: python -m pytest_akmbench validate {path} lists them)" if more else ""
        raise ConfigError(problems[0] + tail)
    return RunConfig(path=path, data=data)


def read_run_config(path: Path) -> dict[str, Any]:
    """The parsed JSON object of a run config, unchecked."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: run config not found; check the --bench-config path", usage=True) from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(
            f"{path}: cannot read run config: {getattr(err, 'strerror', None) or err}", usage=True
        ) from err
    try:
        data = loads_json(text)
    except json.JSONDecodeError as err:
        raise ConfigError(f"{path}: invalid JSON at line {err.lineno} column {err.colno}: {err.msg}") from err
    except DuplicateKey as err:
        raise ConfigError(f"{path}: {err}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a run config is a JSON object, got {type(data).__name__}")
    return data


def config_options(cfg: RunConfig | None) -> dict[str, Any]:
    """The run config's provider and model fields, as the agent adapter's discovery reads them."""
    return {
        "config_providers": cfg.get("providers") if cfg else None,
        "config_providers_ref": cfg.get("providersRef") if cfg else None,
        "config_opencode": cfg.get("opencodeConfig") if cfg else None,
        "config_opencode_ref": cfg.get("opencodeConfigRef") if cfg else None,
        "config_default_model": cfg.default_model if cfg else None,
        "config_path": str(cfg.path) if cfg else None,
    }


# ---------------------------------------------------------------- resolution


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a bench run needs, resolved once (CLI > config file > ini > default)."""

    rootdir: Path
    tasks_root: Path
    stashes_root: Path
    config: RunConfig | None = None
    tasks: str | list[str] | None = None
    tasks_override: str | list[str] | None = None
    arms: tuple[str, ...] = ("noakm", "akm")
    seeds: int = DEFAULT_SEEDS
    agent: str = "opencode"
    model: str | None = None
    providers: Path | None = None
    opencode_config: Path | None = None
    budget_tokens: int = DEFAULT_BUDGET_TOKENS
    budget_wall_ms: int = DEFAULT_BUDGET_WALL_MS
    budget_turns: int | None = None
    verify_timeout: float = DEFAULT_VERIFY_TIMEOUT_S
    parallel: int | None = None
    force_parallel: bool = False
    store: Path | None = None
    report: Path | None = None
    tmp: Path | None = None
    akm: Path | None = None
    opencode: Path | None = None
    keep_runs: bool = False
    fresh: bool = False
    soundness: bool = False
    baseline: Path | None = None
    gates: tuple[str, ...] = ()
    floor: int = DEFAULT_FLOOR
    sandbox: str = "auto"  # auto | bwrap | none; after plugin setup, the mode actually used
    sandbox_ro: tuple[Path, ...] = ()
    network: str = "isolated"  # isolated | host: a sandboxed agent's network
    track: str = "utility"  # utility | attribute | evolve (docs/tracks.md)
    base: Path | None = None  # the attribute track's base report
    top: int = 5  # the attribute track's number of assets masked
    evolve_episodes: int = 1  # the evolve track's episodes (docs/tracks.md, "Episodes")
    until: str | None = None  # "decisive": adaptive seeds (docs/adaptive.md)
    max_seeds: int | None = None  # the most seeds of an adaptive run
    budget_usd: float | None = None  # the run's spend caps (README, "Spend caps")
    budget_run_tokens: int | None = None
    origins: Mapping[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.config.name if self.config else "adhoc"


def parse_track(raw: Any) -> str:
    if raw not in TRACKS:
        raise ValueError(f"must be one of {', '.join(TRACKS)}, got {raw!r}")
    return str(raw)


# Setting name -> (run-config field or None, parser).
_SPEC: dict[str, tuple[str | None, Callable[[Any], Any]]] = {
    "tasks": (None, parse_tasks),
    "arms": ("arms", parse_arms),
    "seeds": ("seeds", seed_count),
    "agent": ("agent", str),
    "model": (None, str),
    "providers": (None, str),
    "opencode_config": (None, str),
    "budget_tokens": ("budgetTokens", budget_tokens),
    "budget_wall_ms": ("budgetWallMs", budget_wall_ms),
    "budget_turns": ("budgetTurns", budget_turns),
    "verify_timeout": (None, verify_timeout),
    "parallel": ("parallel", parallel_count),
    "force_parallel": ("forceParallel", parse_bool),
    "akm": ("akm", str),
    "opencode": (None, str),
    "store": (None, str),
    "report": (None, str),
    "tmp": (None, str),
    "keep_runs": (None, parse_bool),
    "fresh": (None, parse_bool),
    "soundness": (None, parse_bool),
    "baseline": ("baseline", str),
    "floor": ("floor", positive_int),
    "sandbox": (None, parse_mode),
    "sandbox_ro": (None, lambda v: tuple(v) if isinstance(v, (list, tuple)) else (str(v),)),
    "network": (None, parse_network),
    "track": ("track", parse_track),
    "base": ("base", str),
    "top": (None, positive_int),
    "evolve_episodes": ("evolveEpisodes", positive_int),
    "until": ("until", until_choice),
    "max_seeds": ("maxSeeds", seeds_most),
    "budget_usd": ("budgetUsd", usd_cap),
    "budget_run_tokens": ("budgetRunTokens", token_cap),
}
_PATHS = ("providers", "opencode_config", "akm", "opencode", "store", "report", "tmp", "baseline", "base")


def resolve(
    *,
    rootdir: Path,
    cli: Mapping[str, Any],
    ini: Mapping[str, Any],
    config: RunConfig | None,
    tasks_root: Path,
    stashes_root: Path,
    cwd: Path,
) -> Settings:
    """Merge the layers. ``cli`` and ``ini`` hold raw values keyed by setting name (None = unset).

    Relative paths from the command line resolve against ``cwd``, from the ini against
    ``rootdir``, from the config file against the file's directory.
    """
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for name, (cfg_key, parse) in _SPEC.items():
        layers: list[tuple[str, Any, Path]] = [
            (f"--bench-{name.replace('_', '-')}" if name != "parallel" else "--parallel", cli.get(name), cwd)
        ]
        if config is not None and cfg_key is not None:
            layers.append((f"{config.path}: {cfg_key}", config.get(cfg_key), config.path.parent))
        layers.append((f"ini bench_{name}", ini.get(name), rootdir))
        for origin, raw, base in layers:
            if raw is None or raw == "":
                continue
            try:
                value = parse(raw)
            except ValueError as err:
                raise ConfigError(f"{origin}: {err}") from None
            if name in _PATHS:
                value = expand_path(value, base)
            elif name == "sandbox_ro":
                value = tuple(_existing(expand_path(v, base), origin) for v in value)
            values[name] = value
            origins[name] = origin
            break
    if config is not None and config.get("tasks") is not None:
        values["tasks_override"] = values.pop("tasks", None)
        values["tasks"] = parse_tasks(config.get("tasks"))
    return Settings(
        rootdir=rootdir,
        tasks_root=tasks_root,
        stashes_root=stashes_root,
        config=config,
        origins=origins,
        **values,
    )


def _existing(path: Path, origin: str) -> Path:
    if not path.exists():
        raise ConfigError(f"{origin}: {path} does not exist; give a file or directory the sandboxed agent may read")
    return path


def run_caps(settings: Settings) -> dict[str, Any]:
    """The run-level budgets set explicitly (anywhere but the defaults): they cap every task's own."""
    return {
        "cap_tokens": settings.budget_tokens if "budget_tokens" in settings.origins else None,
        "cap_wall_ms": settings.budget_wall_ms if "budget_wall_ms" in settings.origins else None,
    }
