"""opencode's side of the providers (the README, "Models and providers"): the standard opencode
config (``opencode.json``) as a provider source beside the providers file, whose parsing and
credential rules are every agent's (``agents/providers.py``); the fix opencode's messages name.
How a chosen entry becomes a cell's ``opencode.json`` is :mod:`config`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .providers import ProvidersFile, entries, read_json, scan_credentials, validate_providers

FIX_HINT = (
    "pass --bench-providers FILE or --bench-opencode-config FILE, set BENCH_OPENCODE_CONFIG, or add "
    "providers or opencodeConfig to the run config"
)
OPENCODE_CONFIG = "opencode config"
# Of a standard opencode config a run takes the provider entries and the model; every other
# key (permissions, plugins, MCP servers, instructions, ...) is the harness's to set per cell.
OPENCODE_TAKEN = ("$schema", "provider", "model")
# Providers whose models are reached only through the cloud: a run names its own entry for them.
CLOUD_PREFIXES = (
    "anthropic",
    "openai",
    "openrouter",
    "opencode",
    "google",
    "amazon",
    "azure",
    "vertex",
    "bedrock",
    "mistral",
    "groq",
    "together",
    "fireworks",
)


def load_opencode_config(path: str | Path, *, what: str = OPENCODE_CONFIG) -> ProvidersFile:
    """Read and validate a standard opencode config (``opencode.json``)."""
    p = Path(path).expanduser()
    return validate_opencode_config(read_json(p, what, FIX_HINT), str(p.resolve()))


def load_provider_source(path: str | Path, *, what: str) -> ProvidersFile:
    """Either shape, told apart by content: a ``provider`` block (or no ``schemaVersion`` and no
    ``providers``) is a standard opencode config, anything else a providers file."""
    p = Path(path).expanduser()
    data = read_json(p, what, FIX_HINT)
    if is_opencode_config(data):
        return validate_opencode_config(data, str(p.resolve()))
    return validate_providers(data, str(p.resolve()))


def is_opencode_config(data: Any) -> bool:
    return isinstance(data, dict) and ("provider" in data or not {"schemaVersion", "providers"} & set(data))


def validate_opencode_config(data: Any, source: str) -> ProvidersFile:
    """Validate a standard opencode config: its ``provider`` block under the providers file's
    credential rules (keys only as ``{env:VAR}``), and its ``model``."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a JSON object (an opencode config with a provider block)")
    scan_credentials(data, "", source)
    return entries(
        data.get("provider", {}),
        data.get("model"),
        source,
        "provider",
        "model",
        kind=OPENCODE_CONFIG,
        ignored=tuple(sorted(k for k in data if k not in OPENCODE_TAKEN)),
    )
