"""Before the first cell: does the chosen model answer Codex's protocol, with the credentials
Codex will get? One minimal OpenAI Responses request (``POST {baseURL}/responses``) to the
provider entry the cells' config.toml is made from, its ``{env:VAR}`` references resolved as for
opencode; a model that cannot be reached, refuses the key or has no Responses endpoint stops the
run with one line (docs/codex.md, "Preflight"). The scripted model needs no check."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping

from ...errors import ConfigError
from ..preflight import DEFAULT_BASE_URLS, TIMEOUT_S
from ..providers import ModelChoice, check_env_vars, resolve_env_refs
from .config import model_id


def check_responses(choice: ModelChoice, env: Mapping[str, str], timeout_s: float = TIMEOUT_S) -> str:
    """One line saying the model answered; a ConfigError naming what failed otherwise. No
    message holds a value of a referenced variable: the URL is named as written."""
    if choice.scripted:
        return f"{choice.model}: built-in scripted model (no request needed)"
    entry = choice.provider_entry
    where = f"providers.{choice.provider_key}" + (f" in {choice.providers.source}" if choice.providers else "")
    if entry is None:
        raise ConfigError(
            f"preflight: model {choice.model!r}: no providers entry for {choice.provider_key!r}, so Codex gets no "
            f'credentials; add {where.split(" in ")[0]} with options.baseURL and options.apiKey "{{env:VAR}}"',
            usage=True,
        )
    written = (entry.get("options") or {}).get("baseURL") or DEFAULT_BASE_URLS.get(choice.provider_key)
    if not written:
        raise ConfigError(f"preflight: model {choice.model!r}: {where} has no options.baseURL; add it", usage=True)
    options = resolve_env_refs(dict(entry.get("options") or {}), check_env_vars(choice, env))
    headers = {str(k): str(v) for k, v in (options.get("headers") or {}).items()}
    headers["Content-Type"] = "application/json"
    if options.get("apiKey"):
        headers.setdefault("Authorization", f"Bearer {options['apiKey']}")
    body = {"model": model_id(choice.model), "input": "ping", "max_output_tokens": 16, "stream": False}
    url = str(options.get("baseURL") or written).rstrip("/") + "/responses"
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        urllib.request.urlopen(request, timeout=timeout_s).close()
    except urllib.error.HTTPError as err:
        if err.code in (401, 403):
            keys = ", ".join(sorted(choice.env_vars)) or "the apiKey"
            raise ConfigError(
                f"preflight: model {choice.model!r} at {written} refused the credentials (HTTP {err.code}); "
                f"check {keys} ({where})",
                usage=True,
            ) from None
        if err.code == 404 or err.code >= 500:
            raise ConfigError(
                f"preflight: model {choice.model!r} at {written} answered HTTP {err.code} to {written}/responses; "
                f"Codex speaks only the OpenAI Responses API: check options.baseURL and the model in {where}",
                usage=True,
            ) from None
        return f"{choice.model} at {written}: answers (HTTP {err.code} to a minimal Responses request)"
    except (urllib.error.URLError, OSError, ValueError) as err:
        reason = getattr(err, "reason", err)
        raise ConfigError(
            f"preflight: model {choice.model!r} at {written} is unreachable ({reason}); start the server or fix "
            f"options.baseURL in {where}",
            usage=True,
        ) from None
    return f"{choice.model} at {written}: answers the Responses API"
