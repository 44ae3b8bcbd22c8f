"""What Claude Code is given to reach its model (docs/claude-code.md, "Configuration"): the run's
model choice (the same providers file, discovery and credential rules as opencode's,
agents/providers.py) read as an Anthropic Messages endpoint.

Claude Code speaks only Anthropic's Messages API, so a provider entry must be Anthropic's
(``npm: @ai-sdk/anthropic``, or the ``anthropic`` key with no ``npm``). Its ``options.baseURL``
ends in ``/v1`` as the AI SDK wants it; Claude Code appends ``/v1/messages`` itself, so the base
it is given stops before ``/v1``. The key (``options.apiKey``, always ``{env:VAR}``) and any
headers reach the cell only as placeholders, which the forwarder swaps for the values.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import ConfigError
from ..preflight import ANTHROPIC_NPM, DEFAULT_BASE_URLS
from ..providers import ModelChoice, resolve_env_refs

SCRIPTED_KEY = "scripted"  # what the scripted model's cells hold as their key


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where a cell's requests go: ``upstream`` (the real base, with the values) for the
    forwarder, ``cell_path`` (the base's path and query) after the forwarder's origin, ``key``
    and ``headers`` as the cell holds them (placeholders)."""

    upstream: str
    cell_path: str
    key: str
    headers: dict[str, str]


def check_anthropic(choice: ModelChoice) -> None:
    """A ConfigError unless Claude Code can speak to the chosen provider."""
    if choice.scripted:
        return
    entry = choice.provider_entry
    if entry is None:
        raise ConfigError(
            f"model {choice.model!r}: no providers entry for {choice.provider_key!r}, so claude-code gets no "
            f"credentials; add providers.{choice.provider_key} with npm {ANTHROPIC_NPM!r} and options.apiKey "
            '"{env:VAR}" to a providers file and pass --bench-providers FILE',
            usage=True,
        )
    npm = entry.get("npm")
    if npm != ANTHROPIC_NPM and not (choice.provider_key == "anthropic" and not npm):
        raise ConfigError(
            f"model {choice.model!r}: claude-code speaks only Anthropic's Messages API, and provider "
            f"{choice.provider_key!r} is {npm or 'not marked'} (npm); use an entry with npm {ANTHROPIC_NPM!r}",
            usage=True,
        )


def model_id(choice: ModelChoice) -> str:
    """The model name Claude Code sends: the part after the provider."""
    return choice.model.split("/", 1)[1]


def endpoint(choice: ModelChoice, values: Mapping[str, str], placeholders: Mapping[str, str]) -> Endpoint:
    """The provider entry's endpoint, resolved with the values for the forwarder and with the
    placeholders for the cell (a scripted cell's is the scripted server's; see :func:`scripted`)."""
    entry = dict(choice.provider_entry or {})
    options = entry.get("options") or {}
    written = options.get("baseURL") or DEFAULT_BASE_URLS.get(choice.provider_key)
    if not written:
        raise ConfigError(f"model {choice.model!r}: provider {choice.provider_key!r} has no options.baseURL")
    cell_options: dict[str, Any] = resolve_env_refs(options, placeholders)
    headers = {str(k): str(v) for k, v in (cell_options.get("headers") or {}).items()}
    return Endpoint(
        upstream=messages_base(resolve_env_refs(str(written), values)),
        cell_path=path_of(messages_base(resolve_env_refs(str(written), placeholders))),
        key=str(cell_options.get("apiKey") or ""),
        headers=headers,
    )


def scripted(base_url: str) -> Endpoint:
    """The scripted server's endpoint of one cell (its base URL ends in ``/v1``)."""
    base = messages_base(base_url)
    return Endpoint(upstream=base, cell_path=path_of(base), key=SCRIPTED_KEY, headers={})


def messages_base(url: str) -> str:
    """The base Claude Code appends ``/v1/messages`` to: the URL without a trailing ``/v1``."""
    url = url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def path_of(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return parts.path.rstrip("/") + (f"?{parts.query}" if parts.query else "")


def header_lines(headers: Mapping[str, str]) -> str:
    """Headers as ANTHROPIC_CUSTOM_HEADERS takes them: ``Name: value`` lines."""
    return "\n".join(f"{name}: {value}" for name, value in headers.items())
