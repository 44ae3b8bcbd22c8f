"""The providers file, every agent's way to its model: loading, validation, the credential
rules, the model choice's record and its ``{env:VAR}`` references (the README, "Models and
providers"). An agent renders the chosen entry into its own configuration; where the file is
found and which model runs are the agent's (its ``discovery`` and ``model`` modules).

A providers file is JSON::

    {"$schema": "...", "schemaVersion": 1, "defaultModel": "local/qwen3",
     "providers": {"local": {"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": "...",
                             "apiKey": "{env:LOCAL_API_KEY}"}, "models": {...}}}}

Each ``providers.<key>`` entry goes verbatim into the agent's provider configuration. Unlike the
reference: unknown top-level keys are errors; the ``sk-`` heuristic scans every string (and
key) of the whole file, not only ``providers``; env-ref names may be any case; a non-string
``defaultModel`` is an error; ``{env:VAR}`` references are collected so the adapter passes
exactly those variables to the agent (and refuses to run when one is unset).

Messages never contain a secret: a credential found by the heuristic is reported by its JSON
path only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..corpus.config import expand_path
from ..corpus.strict import LITERAL_KEY, DuplicateKey, loads_json
from ..errors import ConfigError

SCHEMA_VERSION = 1
FORBIDDEN_KEYS = ("plugin", "mcp", "permission", "disabled_providers", "small_model", "snapshot")
ALLOWED_KEYS = ("$schema", "schemaVersion", "defaultModel", "providers")
SCRIPTED_PREFIX = "scripted"
# The scripted model's policies, the names a ``scripted/<policy>`` model may give (docs/scripted.md);
# here, below every agent, so that any agent's model choice can check a name.
SCRIPTED_POLICIES = (
    "oracle",
    "shortcut",
    "idle",
    "hang",
    "error",
    "loop",
    "snoop",
    "learner",
    "lesson",
    "garbage",
    "needs-asset",
)
_ENV_REF = re.compile(r"\{env:([A-Za-z_][A-Za-z0-9_]*)\}")
_ENV_REF_WHOLE = re.compile(r"^\{env:([A-Za-z_][A-Za-z0-9_]*)\}$")
# Any sk-... token not glued to a preceding word (so "risk-free" or "task-name" pass): keys of
# every length, test keys included, look like this.
_SK = LITERAL_KEY  # one heuristic for every file: run configs use it too (corpus/config_fields.py)
# Header names that carry a credential; their values must come from {env:VAR}.
_CREDENTIAL_HEADER = re.compile(r"authorization|api[-_]?key|token|secret|password", re.IGNORECASE)
FIX_HINT = "pass --bench-providers FILE or add providers to the run config"
PROVIDERS_FILE = "providers file"


@dataclass(frozen=True, slots=True)
class ProvidersFile:
    """Validated provider entries: from a providers file, or from an agent's own configuration
    file (``kind``, its entries under ``block``). ``source`` is a path, or ``<config>: providers``
    for inline entries; ``ignored`` names the keys of an agent's file the run does not take."""

    source: str
    providers: Mapping[str, Any]
    default_model: str | None = None
    env_refs: frozenset[str] = frozenset()
    kind: str = PROVIDERS_FILE
    ignored: tuple[str, ...] = ()
    block: str = "providers"

    def env_refs_of(self, key: str) -> frozenset[str]:
        """The ``{env:VAR}`` names used by one provider entry."""
        entry = self.providers.get(key)
        return frozenset(_collect_env_refs(entry)) if entry is not None else frozenset()


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """The model of a run and where it and its provider came from."""

    model: str
    model_source: str
    provider_key: str
    providers: ProvidersFile | None = None
    provider_entry: Mapping[str, Any] | None = None
    env_vars: frozenset[str] = field(default_factory=frozenset)

    @property
    def scripted(self) -> bool:
        return self.provider_key == SCRIPTED_PREFIX

    @property
    def policy(self) -> str | None:
        return self.model.split("/", 1)[1] if self.scripted and "/" in self.model else None


def provider_key(model: str) -> str:
    """The provider part of a model id: up to the first ``/``."""
    return model.split("/", 1)[0]


# ---------------------------------------------------------------- validation


def load_providers_file(path: str | Path, *, what: str = PROVIDERS_FILE, hint: str = FIX_HINT) -> ProvidersFile:
    """Read and validate a providers file; a missing file is a usage error (``hint``: the fix)."""
    p = Path(path).expanduser()
    return validate_providers(read_json(p, what, hint), str(p.resolve()))


def read_json(p: Path, what: str, hint: str = FIX_HINT) -> Any:
    """A provider source's JSON, read strictly; every error names the file."""
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{p}: {what} not found; {hint}", usage=True) from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{p}: cannot read {what}: {err}") from err
    try:
        return loads_json(text)
    except json.JSONDecodeError as err:
        raise ConfigError(f"{p}: invalid JSON (line {err.lineno}, column {err.colno}): {err.msg}") from None
    except DuplicateKey as err:
        raise ConfigError(f"{p}: {err}") from None


def validate_providers(data: Any, source: str) -> ProvidersFile:
    """Validate parsed providers-file JSON; every error names ``source`` and the fix."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a JSON object with schemaVersion and providers")
    # The credential scan runs first and over everything, so a secret is never echoed back.
    scan_credentials(data, "", source)
    for key in data:
        if key in FORBIDDEN_KEYS:
            raise ConfigError(f"{source}: {key}: not allowed in a providers file (the bench controls it); remove it")
    for key in data:
        if key not in ALLOWED_KEYS:
            raise ConfigError(f"{source}: {key}: unknown top-level key; allowed: {', '.join(ALLOWED_KEYS)}")
    version = data.get("schemaVersion")
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise ConfigError(f"{source}: schemaVersion: must be {SCHEMA_VERSION}, got {json.dumps(version)}")
    return entries(data.get("providers"), data.get("defaultModel"), source, "providers", "defaultModel")


def entries(providers: Any, model: Any, source: str, field: str, model_field: str, **kind: Any) -> ProvidersFile:
    """The provider entries (under ``field``) and model of a providers file or an agent's own
    file, checked alike."""
    if not isinstance(providers, dict):
        raise ConfigError(f"{source}: {field}: must be an object keyed by provider name")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise ConfigError(f"{source}: {model_field}: must be a model id string like 'local/my-model'")
    for key, entry in providers.items():
        if not isinstance(entry, dict):
            raise ConfigError(f"{source}: {field}.{key}: must be an object (the agent's provider entry)")
        if key == SCRIPTED_PREFIX:
            raise ConfigError(
                f"{source}: {field}.{key}: the name 'scripted' is reserved for the built-in scripted model; rename it"
            )
        if "/" in key or not key:
            raise ConfigError(f"{source}: {field}.{key!r}: a provider name must be non-empty and contain no '/'")
    return ProvidersFile(
        source=source,
        providers=providers,
        default_model=model,
        env_refs=frozenset(_collect_env_refs(providers)),
        block=field,
        **kind,
    )


def scan_credentials(node: Any, path: str, source: str) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            sub = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and _SK.search(key):
                raise ConfigError(
                    f"{source}: credential heuristic triggered at a key under {path or 'the top level'!r}; "
                    f"reference it as {{env:NAME}} instead of a literal value"
                )
            if key == "apiKey" and isinstance(value, str):
                if not _ENV_REF_WHOLE.match(value):
                    raise ConfigError(
                        f"{source}: {sub}: must be an env-ref (e.g. {{env:MY_API_KEY}}), not a literal value"
                    )
                continue
            if key == "apiKey" and value is not None and not isinstance(value, str):
                raise ConfigError(f"{source}: {sub}: must be an env-ref string like {{env:MY_API_KEY}}")
            scan_credentials(value, sub, source)
            if key == "headers" and isinstance(value, dict):
                _scan_headers(value, sub, source)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            scan_credentials(value, f"{path}[{i}]", source)
    elif isinstance(node, str) and _SK.search(node):
        raise ConfigError(
            f"{source}: {path}: credential heuristic triggered (looks like an sk- API key); "
            f"reference it as {{env:NAME}} and export NAME instead"
        )


def _scan_headers(headers: dict[str, Any], path: str, source: str) -> None:
    for name, value in headers.items():
        if (
            isinstance(name, str)
            and _CREDENTIAL_HEADER.search(name)
            and not (isinstance(value, str) and _ENV_REF.search(value))
        ):
            raise ConfigError(
                f"{source}: {path}.{name}: a credential header must take its secret from an env-ref "
                f'(e.g. "Bearer {{env:MY_API_KEY}}"), not a literal value'
            )


def _collect_env_refs(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(key, str):
                found.update(_ENV_REF.findall(key))
            found |= _collect_env_refs(value)
    elif isinstance(node, list):
        for value in node:
            found |= _collect_env_refs(value)
    elif isinstance(node, str):
        found.update(_ENV_REF.findall(node))
    return found


def config_source(options: Mapping[str, Any]) -> ProvidersFile | None:
    """A run config's own provider source, as its options give it (``config_providers`` inline,
    ``config_providers_ref`` a file relative to ``config_path``), checked; None when it has none."""
    cfg = str(options.get("config_path") or "run config")
    base = Path(cfg).parent if options.get("config_path") else Path.cwd()
    if options.get("config_providers") is not None:
        wrapper: dict[str, Any] = {"schemaVersion": SCHEMA_VERSION, "providers": options["config_providers"]}
        if options.get("config_default_model") is not None:
            wrapper["defaultModel"] = options["config_default_model"]
        return validate_providers(wrapper, f"{cfg}: providers")
    ref = options.get("config_providers_ref")
    if ref:
        return load_providers_file(expand_path(ref, base, {}), what=f"providers file (providersRef in {cfg})")
    return None


# ---------------------------------------------------------------- environment references


def check_env_vars(choice: ModelChoice, env: Mapping[str, str]) -> dict[str, str]:
    """The ``{env:VAR}`` values the agent needs; a ConfigError names any that is unset."""
    missing = sorted(v for v in choice.env_vars if not env.get(v))
    if missing:
        src = choice.providers.source if choice.providers else "providers"
        block = choice.providers.block if choice.providers is not None else "providers"
        raise ConfigError(
            f"{src}: {block}.{choice.provider_key} references {{env:{missing[0]}}} but {missing[0]} is not set; "
            f"export it before running"
        )
    return {v: env[v] for v in sorted(choice.env_vars)}


def resolve_env_refs(node: Any, values: Mapping[str, str]) -> Any:
    """A copy of ``node`` with every ``{env:VAR}`` of ``values`` replaced by its value.

    The harness resolves the provider's URL with the real values for the model forwarder and the
    entry with placeholders for the cell's config (the agent's page in docs/, "Configuration"), so
    neither the variables nor their values are in the agent's environment or its files.
    """
    if isinstance(node, str):
        return _ENV_REF.sub(lambda m: values.get(m.group(1), m.group(0)), node)
    if isinstance(node, dict):
        return {resolve_env_refs(k, values): resolve_env_refs(v, values) for k, v in node.items()}
    if isinstance(node, list):
        return [resolve_env_refs(v, values) for v in node]
    return node


def secret_values(providers: ProvidersFile | None, env: Mapping[str, str]) -> list[str]:
    """The values of every variable the providers file references: what no stored text may hold."""
    if providers is None:
        return []
    return sorted({env[name] for name in providers.env_refs if env.get(name)})
