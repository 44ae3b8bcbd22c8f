"""Run configs (schema v1, docs/corpus.md) and the one resolved ``Settings`` of a bench run.

Every setting has four possible sources with a fixed precedence: command line, then the
run config file, then the ini file, then the default. Each value remembers where it came
from so an error can name it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .config_fields import PHASE2_FIELDS as PHASE2_FIELDS
from .config_fields import TRACKS as TRACKS
from .config_fields import run_config_problems as run_config_problems
from .settings_table import CORE, Table, default
from .settings_table import DEFAULT_FLOOR as DEFAULT_FLOOR
from .settings_table import parse_track as parse_track
from .strict import DuplicateKey, loads_json
from .values import parse_tasks

DEFAULT_SEEDS: int = default("seeds")
DEFAULT_BUDGET_TOKENS: int = default("budget_tokens")
DEFAULT_BUDGET_WALL_MS: int = default("budget_wall_ms")
DEFAULT_VERIFY_TIMEOUT_S: float = default("verify_timeout")


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


def load_run_config(path: Path, table: Table = CORE) -> RunConfig:
    """Read and validate a run config; an error names the file, the field and the fix.

    Only the first problem is raised (one line); ``validate`` lists them all
    (:func:`run_config_problems`). ``table``: the settings whose fields a config may hold (the
    whole table, agents' rows included, is ``agents/settings.py``'s).
    """
    data = read_run_config(path)
    problems = run_config_problems(data, path, table)
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


def config_options(cfg: RunConfig | None, table: Table = CORE) -> dict[str, Any]:
    """The run config's provider and model fields, as the agent adapter's discovery reads them;
    an agent's own run-config fields that are no option (rows of ``table`` it owns; an option's
    field is a layer of its resolved value) under their attribute names."""
    own = {
        row.field: cfg.get(str(row.key)) if cfg else None
        for row in table.fields
        if row.owner != "bench" and not row.option
    }
    return {
        "config_providers": cfg.get("providers") if cfg else None,
        "config_providers_ref": cfg.get("providersRef") if cfg else None,
        **own,
        "config_default_model": cfg.default_model if cfg else None,
        "config_path": str(cfg.path) if cfg else None,
    }


# ---------------------------------------------------------------- resolution


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a bench run needs, resolved once (CLI > config file > ini > default) and never
    changed after. Each attribute is a row of the settings table (``corpus/settings_table.py``),
    which gives its default, option, ini key and run-config field; here it only gets its type."""

    rootdir: Path
    tasks_root: Path
    stashes_root: Path
    config: RunConfig | None = None
    tasks: str | list[str] | None = None
    tasks_override: str | list[str] | None = None
    arms: tuple[str, ...] = default("arms")
    seeds: int = default("seeds")
    agent: str = default("agent")
    model: str | None = None
    providers: Path | None = None
    budget_tokens: int = default("budget_tokens")
    budget_wall_ms: int = default("budget_wall_ms")
    budget_turns: int | None = None
    verify_timeout: float = default("verify_timeout")
    parallel: int | None = None
    force_parallel: bool = default("force_parallel")
    store: Path | None = None
    report: Path | None = None
    tmp: Path | None = None
    akm: Path | None = None
    keep_runs: bool = default("keep_runs")
    fresh: bool = default("fresh")
    soundness: bool = default("soundness")
    baseline: Path | None = None
    gates: tuple[str, ...] = default("gates")
    floor: int = default("floor")
    sandbox: str = default("sandbox")  # auto | bwrap | none: asked for; the mode used is the run's state
    sandbox_ro: tuple[Path, ...] = default("sandbox_ro")
    network: str = default("network")
    track: str = default("track")
    base: Path | None = None
    top: int = default("top")
    evolve_episodes: int = default("evolve_episodes")
    evolve_llm: str | None = None
    shard: str | None = None  # K/N as given; store/shards.py parses it
    until: str | None = None
    max_seeds: int | None = None
    budget_usd: float | None = None
    budget_run_tokens: int | None = None
    origins: Mapping[str, str] = field(default_factory=dict)
    # The agents' own settings (rows an agent's folder declares), by name: passed on to the agent.
    agent_settings: Mapping[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.config.name if self.config else "adhoc"


def resolve(
    *,
    rootdir: Path,
    cli: Mapping[str, Any],
    ini: Mapping[str, Any],
    config: RunConfig | None,
    tasks_root: Path,
    stashes_root: Path,
    cwd: Path,
    table: Table = CORE,
) -> Settings:
    """Merge the layers. ``cli`` and ``ini`` hold raw values keyed by setting name (None = unset).

    Relative paths from the command line resolve against ``cwd``, from the ini against
    ``rootdir``, from the config file against the file's directory.
    """
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for row in table.resolved:
        layers: list[tuple[str, Any, Path]] = [(row.option_flag, cli.get(row.name), cwd)]
        if config is not None and row.key is not None and row.layered:
            layers.append((f"{config.path}: {row.key}", config.get(row.key), config.path.parent))
        layers.append((f"ini {row.dest}", ini.get(row.name), rootdir))
        for origin, raw, base in layers:
            if raw is None or raw == "":
                continue
            try:
                value = row.parse(raw)  # type: ignore[misc]  # resolved rows have one
            except ValueError as err:
                raise ConfigError(f"{origin}: {err}") from None
            if row.path and row.many:
                value = tuple(_existing(expand_path(v, base), origin) for v in value)
            elif row.path:
                value = expand_path(value, base)
            values[row.field] = value
            origins[row.field] = origin
            break
    if config is not None and config.get("tasks") is not None:
        values["tasks_override"] = values.pop("tasks", None)
        values["tasks"] = parse_tasks(config.get("tasks"))
    agents = {row.field for row in table.resolved if row.owner != "bench"}
    return Settings(
        rootdir=rootdir,
        tasks_root=tasks_root,
        stashes_root=stashes_root,
        config=config,
        origins=origins,
        agent_settings={k: v for k, v in values.items() if k in agents},
        **{k: v for k, v in values.items() if k not in agents},
    )


def _existing(path: Path, origin: str) -> Path:
    if not path.exists():
        raise ConfigError(f"{origin}: {path} does not exist; give a file or directory the sandboxed agent may read")
    return path


def agent_options(settings: Settings, agent: str, table: Table) -> dict[str, Any]:
    """What an agent is given of the settings: the providers file, the run config's provider and
    model fields, and its own settings (the rows of ``table`` it owns; a path as text), with
    where each came from (``origins``) for an agent that weighs one source against another."""
    own = [row.field for row in table.resolved if row.owner == agent]
    given = {name: settings.agent_settings.get(name) for name in own}
    return {
        "providers": settings.providers and str(settings.providers),
        **{name: str(v) if isinstance(v, Path) else v for name, v in given.items()},
        **config_options(settings.config, table),
        "origins": {name: settings.origins[name] for name in ("providers", *own) if name in settings.origins},
    }


def run_caps(settings: Settings) -> dict[str, Any]:
    """The run-level budgets set explicitly (anywhere but the defaults): they cap every task's own."""
    return {
        "cap_tokens": settings.budget_tokens if "budget_tokens" in settings.origins else None,
        "cap_wall_ms": settings.budget_wall_ms if "budget_wall_ms" in settings.origins else None,
    }
