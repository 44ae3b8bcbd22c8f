"""Which model a run uses and where its provider entry comes from, for every agent (the README,
"Models and providers"): the same discovery, variables and checks; only the agent's name in the
messages and opencode's older variable differ."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError
from .base import setup_digest
from .discovery import discover_providers
from .providers import SCRIPTED_POLICIES, SCRIPTED_PREFIX, ModelChoice, ProvidersFile, provider_key
from .sources import CLOUD_PREFIXES, FIX_HINT, OPENCODE_CONFIG

# The variable every agent reads for its model, after --bench-model.
MODEL_ENV = "BENCH_MODEL"
# An agent's own variable, read before MODEL_ENV: opencode's predates the other agents.
AGENT_MODEL_ENV = {"opencode": "BENCH_OPENCODE_MODEL"}


def model_env_names(agent: str) -> tuple[str, ...]:
    """The variables ``agent`` reads for its model, in order: its own (if any), then ``BENCH_MODEL``."""
    own = AGENT_MODEL_ENV.get(agent)
    return (own, MODEL_ENV) if own else (MODEL_ENV,)


def choose_model(
    model: str | None, options: Mapping[str, Any], env: Mapping[str, str] | None = None, *, agent: str = "opencode"
) -> ModelChoice:
    """``agent``'s model and provider from ``session.model`` and the adapter options.

    ``options["providers"]`` may be a :class:`ProvidersFile`, a path (``--bench-providers``)
    or absent; ``opencode_config`` is a ``--bench-opencode-config`` path; the other discovery
    inputs come from ``config_providers``, ``config_providers_ref``, ``config_opencode``,
    ``config_opencode_ref``, ``config_default_model`` and ``config_path``. A scripted model
    needs no providers, so discovery is skipped for it unless a file was named explicitly.
    """
    env = options.get("env") or (os.environ if env is None else env)
    options = named_files(options)
    given = options.get("providers")
    providers: ProvidersFile | None = given if isinstance(given, ProvidersFile) else None
    scripted_model = bool(model) and provider_key(str(model)) == SCRIPTED_PREFIX
    if providers is None and (given or options.get("opencode_config") or not scripted_model):
        providers = discover_providers(
            explicit=str(given) if isinstance(given, (str, os.PathLike)) and str(given) else None,
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
            env=env, config_default_model=options.get("config_default_model"), providers=providers, agent=agent
        )
    return check_model(chosen, source, providers)


def named_files(options: Mapping[str, Any]) -> Mapping[str, Any]:
    """--bench-providers / --bench-opencode-config: the command line beats the ini; both on the
    same layer reach discovery, which refuses them (``origins``: where each setting came from)."""
    origins = options.get("origins") or {}
    if not (options.get("providers") and options.get("opencode_config") and origins):
        return options
    on_cli = {name: str(origins.get(name, "")).startswith("--") for name in ("providers", "opencode_config")}
    if on_cli["providers"] == on_cli["opencode_config"]:
        return options
    return {**options, "opencode_config" if on_cli["providers"] else "providers": None}


def resolve_model(
    *,
    cli_model: str | None = None,
    env: Mapping[str, str] | None = None,
    config_default_model: str | None = None,
    providers: ProvidersFile | None = None,
    agent: str = "opencode",
) -> tuple[str, str]:
    """(model, where it came from): CLI > the agent's variables (:func:`model_env_names`) > run
    config ``model`` or ``defaultModel`` > the providers file's ``defaultModel`` or the opencode
    config's ``model``."""
    env = os.environ if env is None else env
    names = model_env_names(agent)
    for value, where in (
        (cli_model, "--bench-model"),
        *((env.get(name), name) for name in names),
        (config_default_model, "run config model"),
        (providers.default_model if providers else None, _model_field(providers)),
    ):
        if value and value.strip():
            return value.strip(), where
    raise ConfigError(
        f"no model chosen for {agent}; pass --bench-model PROVIDER/MODEL, set {' or '.join(names)}, or set model in the run "
        "config or the opencode config (defaultModel in a providers file); scripted/oracle runs offline without providers",
        usage=True,
    )


def _model_field(providers: ProvidersFile | None) -> str:
    if providers is None:
        return ""
    return f"{providers.source} {'model' if providers.kind == OPENCODE_CONFIG else 'defaultModel'}"


def check_model(model: str, model_source: str, providers: ProvidersFile | None) -> ModelChoice:
    """Check the model's provider exists: built-in scripted, in the providers, or a cloud prefix."""
    if not model or model.startswith("/") or model.endswith("/") or "/" not in model:
        raise ConfigError(
            f"{model_source}: model {model!r} must look like PROVIDER/MODEL (e.g. local/qwen3 or scripted/oracle)"
        )
    key = provider_key(model)
    if key == SCRIPTED_PREFIX:
        policy = model.split("/", 1)[1]
        if policy not in SCRIPTED_POLICIES:
            raise ConfigError(
                f"{model_source}: unknown scripted policy {policy!r}; use one of "
                + ", ".join(f"scripted/{p}" for p in SCRIPTED_POLICIES)
            )
        return ModelChoice(model=model, model_source=model_source, provider_key=key)
    if providers is not None and key in providers.providers:
        return ModelChoice(
            model=model,
            model_source=model_source,
            provider_key=key,
            providers=providers,
            provider_entry=providers.providers[key],
            env_vars=providers.env_refs_of(key),
        )
    if key in CLOUD_PREFIXES:
        return ModelChoice(model=model, model_source=model_source, provider_key=key, providers=providers)
    where = f"which is not in {providers.source}" if providers is not None else "but no providers file was found"
    block = "provider" if providers is not None and providers.kind == OPENCODE_CONFIG else "providers"
    raise ConfigError(
        f"{model_source}: model {model!r} uses provider {key!r}, {where}; add {block}.{key} "
        f"to the {providers.kind if providers is not None else 'providers file'}, or {FIX_HINT}",
        usage=providers is None,
    )


def describe(choice: ModelChoice) -> dict[str, Any]:
    """A report-safe summary: names only, never a value of an env var."""
    return {
        "model": choice.model,
        "model_source": choice.model_source,
        "provider": choice.provider_key,
        "providers_source": choice.providers.source if choice.providers else None,
        "providers_kind": choice.providers.kind if choice.providers else None,
        "env_vars": sorted(choice.env_vars),
    }


def choice_digest(choice: ModelChoice) -> dict[str, Any]:
    """:func:`setup_digest` of a model choice; the scripted model's entry is the harness's own
    (its port changes every run), so only its name counts."""
    source = choice.providers.source if choice.providers is not None and choice.provider_entry is not None else None
    return setup_digest(choice.model, choice.provider_key, choice.provider_entry, source)
