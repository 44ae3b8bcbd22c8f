"""Where a run's provider entries come from: the first source of the discovery chain that
applies (the README, "Models and providers")."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..corpus.config import expand_path
from ..errors import ConfigError
from .providers import SCHEMA_VERSION, ProvidersFile, load_providers_file, validate_providers
from .sources import (
    FIX_HINT,
    OPENCODE_CONFIG,
    load_opencode_config,
    load_provider_source,
    validate_opencode_config,
)

# The run config's fields the discovery reads (their names in the start options).
CONFIG_SOURCES: tuple[str, ...] = ("config_providers", "config_providers_ref", "config_opencode")
CONFIG_SOURCES += ("config_opencode_ref", "config_default_model", "config_path")


def default_providers_path(env: Mapping[str, str]) -> Path:
    """``${XDG_CONFIG_HOME:-~/.config}/akm/bench-providers.json`` (read only, never written)."""
    xdg = env.get("XDG_CONFIG_HOME") or ""
    base = Path(xdg) if xdg else Path(env.get("HOME") or Path.home()) / ".config"
    return base / "akm" / "bench-providers.json"


def discover_providers(
    *,
    explicit: str | Path | None = None,
    explicit_opencode: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    config_providers: Any = None,
    config_default_model: str | None = None,
    config_providers_ref: str | None = None,
    config_opencode: Any = None,
    config_opencode_ref: str | None = None,
    config_path: str | Path | None = None,
    cwd: Path | None = None,
) -> ProvidersFile | None:
    """The first provider source that applies, or ``None`` when there is none.

    Order: the one named on the command line or in the ini (``--bench-providers`` for a
    providers file, ``--bench-opencode-config`` for a standard opencode config; not both), then
    ``BENCH_OPENCODE_CONFIG`` (either shape, told apart by content), then the run config's
    ``providers``/``providersRef``/``opencodeConfig``/``opencodeConfigRef`` (refs relative to
    the config file), then the user default ``${XDG_CONFIG_HOME:-~/.config}/akm/bench-providers.json``
    only if it exists.
    """
    env = os.environ if env is None else env
    cwd = cwd or Path.cwd()
    named = _named_source(explicit, explicit_opencode, env, cwd)
    if named is not None:
        return named
    from_config = _run_config_source(
        config_path,
        cwd,
        env,
        providers=config_providers,
        default_model=config_default_model,
        providers_ref=config_providers_ref,
        opencode=config_opencode,
        opencode_ref=config_opencode_ref,
    )
    if from_config is not None:
        return from_config
    default = default_providers_path(env)
    if default.is_file():
        return load_providers_file(default, hint=FIX_HINT)
    return None


def _named_source(
    explicit: str | Path | None, explicit_opencode: str | Path | None, env: Mapping[str, str], cwd: Path
) -> ProvidersFile | None:
    """The file an option (``--bench-providers``, ``--bench-opencode-config``) or
    ``BENCH_OPENCODE_CONFIG`` names, relative to the working directory."""
    if explicit and explicit_opencode:
        raise ConfigError("--bench-providers and --bench-opencode-config both name the providers; give one", usage=True)
    if explicit:
        return _expect(
            load_provider_source(expand_path(explicit, cwd, env), what="providers file (--bench-providers)"),
            "providers file",
            "--bench-opencode-config",
        )
    if explicit_opencode:
        return _expect(
            load_provider_source(
                expand_path(explicit_opencode, cwd, env), what="opencode config (--bench-opencode-config)"
            ),
            OPENCODE_CONFIG,
            "--bench-providers",
        )
    from_env = env.get("BENCH_OPENCODE_CONFIG") or ""
    if from_env:
        return load_provider_source(expand_path(from_env, cwd, env), what="BENCH_OPENCODE_CONFIG file")
    return None


def _run_config_source(
    config_path: str | Path | None,
    cwd: Path,
    env: Mapping[str, str],
    *,
    providers: Any,
    default_model: str | None,
    providers_ref: str | None,
    opencode: Any,
    opencode_ref: str | None,
) -> ProvidersFile | None:
    """The run config's inline entries or the file it refers to (refs relative to the config)."""
    cfg = str(config_path) if config_path else "run config"
    base = Path(config_path).parent if config_path else cwd
    if providers is not None:
        wrapper: dict[str, Any] = {"schemaVersion": SCHEMA_VERSION, "providers": providers}
        if default_model is not None:
            wrapper["defaultModel"] = default_model
        return validate_providers(wrapper, f"{cfg}: providers")
    if providers_ref:
        return load_providers_file(
            expand_path(providers_ref, base, env), what=f"providers file (providersRef in {cfg})", hint=FIX_HINT
        )
    if opencode is not None:
        return validate_opencode_config(opencode, f"{cfg}: opencodeConfig")
    if opencode_ref:
        return load_opencode_config(
            expand_path(opencode_ref, base, env), what=f"opencode config (opencodeConfigRef in {cfg})"
        )
    return None


def _expect(found: ProvidersFile, kind: str, other_option: str) -> ProvidersFile:
    if found.kind != kind:
        raise ConfigError(
            f"{found.source}: this is a{'n' if found.kind[0] in 'aeiou' else ''} {found.kind}, "
            f"not a{'n' if kind[0] in 'aeiou' else ''} {kind}; pass it with {other_option}",
            usage=True,
        )
    return found
