"""Before the first cell: does the chosen model answer, with the credentials the agent will get?

One minimal request (a one-token chat completion, or an Anthropic message) goes to the provider
entry each cell's agent config will hold, its ``{env:VAR}`` references resolved the same way. A model that
cannot be reached or refuses the key stops the run with one line, before any cell spends its
budget on "Unexpected server error" (docs/opencode.md, "Preflight"). The scripted model needs no
check: the harness starts it itself.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import BenchError, ConfigError
from .model import choose_model, model_env_names
from .providers import ModelChoice, check_env_vars, resolve_env_refs

# Where the agents' own providers send a request when an entry gives no baseURL.
DEFAULT_BASE_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com/v1"}
ANTHROPIC_NPM = "@ai-sdk/anthropic"
TIMEOUT_S = 60.0  # a local server may load its model on the first request


def _where(choice: ModelChoice) -> str:
    if choice.providers is None:
        return "the providers"
    block = "provider" if choice.providers.kind == "opencode config" else "providers"
    return f"{block}.{choice.provider_key} in {choice.providers.source}"


def _request(choice: ModelChoice, entry: Mapping[str, Any], base: str) -> urllib.request.Request:
    """A one-token request in the provider's own dialect (OpenAI-compatible unless Anthropic's)."""
    options = entry.get("options") or {}
    headers = {str(k): str(v) for k, v in (options.get("headers") or {}).items()}
    headers["Content-Type"] = "application/json"
    model_id = choice.model.split("/", 1)[1]
    key = options.get("apiKey")
    body: dict[str, Any] = {"model": model_id, "max_tokens": 1, "messages": [{"role": "user", "content": "ping"}]}
    if entry.get("npm") == ANTHROPIC_NPM or (choice.provider_key == "anthropic" and not entry.get("npm")):
        url = base.rstrip("/") + "/messages"
        headers.setdefault("anthropic-version", "2023-06-01")
        if key:
            headers.setdefault("x-api-key", str(key))
    else:
        url = base.rstrip("/") + "/chat/completions"
        if key:
            headers.setdefault("Authorization", f"Bearer {key}")
    return urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")


def _message(err: urllib.error.HTTPError) -> str:
    try:
        data = json.loads(err.read() or b"{}")
    except (ValueError, OSError):
        return ""
    error = data.get("error") if isinstance(data, dict) else None
    text = error.get("message") if isinstance(error, dict) else error if isinstance(error, str) else None
    return f": {str(text)[:160]}" if text else ""


def check_provider(choice: ModelChoice, env: Mapping[str, str], timeout_s: float = TIMEOUT_S) -> str:
    """One line saying the model answered; a ConfigError naming what failed and the fix otherwise.

    No message holds a value of a referenced variable: URLs are named as written in the file.
    """
    if choice.scripted:
        return f"{choice.model}: built-in scripted model (no request needed)"
    if choice.provider_entry is None:
        raise ConfigError(
            f"preflight: model {choice.model!r}: no providers entry for {choice.provider_key!r}, so the agent gets "
            f"no credentials (a cell sees none of your environment's keys); add providers.{choice.provider_key} "
            f'with options.apiKey "{{env:VAR}}" to a providers file and pass --bench-providers FILE',
            usage=True,
        )
    values = check_env_vars(choice, env)
    written = (choice.provider_entry.get("options") or {}).get("baseURL") or DEFAULT_BASE_URLS.get(choice.provider_key)
    if not written:
        raise ConfigError(
            f"preflight: model {choice.model!r}: {_where(choice)} has no options.baseURL to send a request to; add it",
            usage=True,
        )
    entry = resolve_env_refs(dict(choice.provider_entry), values)
    base = str((entry.get("options") or {}).get("baseURL") or written)
    try:
        urllib.request.urlopen(_request(choice, entry, base), timeout=timeout_s).close()
    except urllib.error.HTTPError as err:
        if err.code in (401, 403):
            keys = ", ".join(sorted(choice.env_vars)) or "the apiKey"
            raise ConfigError(
                f"preflight: model {choice.model!r} at {written} refused the credentials (HTTP {err.code}"
                f"{_message(err)}); check {keys} ({_where(choice)})",
                usage=True,
            ) from None
        if err.code == 404 or err.code >= 500:
            raise ConfigError(
                f"preflight: model {choice.model!r} at {written} answered HTTP {err.code}{_message(err)}; check "
                f"options.baseURL and the model name in {_where(choice)}, or the server",
                usage=True,
            ) from None
        # 400, 422, 429 ...: the server is there and took the key; the request shape is ours.
        return f"{choice.model} at {written}: answers (HTTP {err.code} to a one-token request)"
    except (urllib.error.URLError, OSError, ValueError) as err:
        reason = getattr(err, "reason", err)
        raise ConfigError(
            f"preflight: model {choice.model!r} at {written} is unreachable ({reason}); start the server or fix "
            f"options.baseURL in {_where(choice)}",
            usage=True,
        ) from None
    return f"{choice.model} at {written}: answers"


def doctor_model(
    model: str | None,
    options: Mapping[str, Any],
    check: Callable[[ModelChoice, Mapping[str, str]], str],
    *,
    agent: str,
    env: Mapping[str, str],
) -> tuple[str, str]:
    """``doctor``'s model line for ``agent``: its preflight ``check`` of the model its run would
    choose (the line names the URL as written, so no value of a variable is printed)."""
    try:
        choice = choose_model(model, options, agent=agent)
    except BenchError as err:
        # A model someone asked for must work; with none chosen anywhere it is only a warning.
        asked = bool(
            model
            or any(env.get(name) for name in model_env_names(agent))
            or options.get("config_default_model")
            or options.get("providers")
            or options.get("opencode_config")
            or env.get("BENCH_OPENCODE_CONFIG")
        )
        return ("FAIL" if asked else "WARN"), str(err)
    try:
        return "PASS", check(choice, env)
    except BenchError as err:
        return "FAIL", str(err)
