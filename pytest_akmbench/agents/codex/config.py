"""The config.toml a cell's Codex is given in its private CODEX_HOME (docs/codex.md,
"Configuration"): the harness's own, with exactly one model provider, the chosen provider's entry
or the scripted model's, reached through the forwarder; everything Codex would call besides the
model switched off."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..providers import ModelChoice, resolve_env_refs

PROVIDER_ID = "akmbench"
KEY_VAR = "AKMBENCH_CODEX_KEY"  # the variable Codex reads the provider's key from (env_key)
SCRIPTED_KEY = "scripted"
# Codex's features that start something besides the model at start-up or offer the model tools
# other than a shell: the plugin marketplace (a `git ls-remote` to github.com), remote plugins,
# apps, goals, memories, image generation, browser and computer use, hooks, the daemon, skill
# installs, tool suggestions, the model list fetch, the login shell snapshot (docs/codex.md,
# "Offline switches").
FEATURES_OFF = (
    "plugins",
    "remote_plugin",
    "plugin_sharing",
    "apps",
    "shell_snapshot",
    "goals",
    "image_generation",
    "in_app_updates",
    "browser_use",
    "computer_use",
    "hooks",
    "daemon_auto_start",
    "skill_search",
    "skill_mcp_dependency_install",
    "tool_suggest",
    "api_key_model_discovery",
    "view_image",
    "memories",
)
BASE: dict[str, Any] = {
    "approval_policy": "never",
    # The harness's bubblewrap is the sandbox; Codex's own (landlock, or its bwrap) would nest in it.
    "sandbox_mode": "danger-full-access",
    "check_for_update_on_startup": False,
    "web_search": "disabled",
    # No AGENTS.md of the workspace reaches the model: the arms differ only by prompt, PATH and stash.
    "project_doc_max_bytes": 0,
    "file_opener": "none",
    "analytics": {"enabled": False},
    "feedback": {"enabled": False},
    "history": {"persistence": "none"},
    "otel": {"exporter": "none", "trace_exporter": "none", "metrics_exporter": "none", "log_user_prompt": False},
    "agents": {"enabled": False},
    "features": {name: False for name in FEATURES_OFF},
    # Commands see the cell's environment, never the provider's key variable.
    "shell_environment_policy": {"inherit": "all", "exclude": [KEY_VAR]},
}


def model_id(model: str) -> str:
    """The model's name at its provider: ``scripted/oracle`` -> ``oracle``."""
    return model.split("/", 1)[1]


def cell_config(choice: ModelChoice, placeholders: Mapping[str, str], base_url: str) -> dict[str, Any]:
    """The config of one cell: ``base_url`` is the forwarder's, ``placeholders`` stand in for
    the provider's ``{env:VAR}`` values (the forwarder swaps the key back in)."""
    provider: dict[str, Any] = {
        "name": choice.provider_key,
        "base_url": base_url,
        "wire_api": "responses",
        "env_key": KEY_VAR,
    }
    if choice.scripted:
        # The error policy fails every request: a few fast retries, as opencode's, not Codex's five.
        provider |= {"request_max_retries": 1, "stream_max_retries": 1}
    else:
        options = resolve_env_refs((choice.provider_entry or {}).get("options") or {}, placeholders)
        headers = options.get("headers") or {}
        if headers:
            provider["http_headers"] = {str(k): str(v) for k, v in headers.items()}
    return {
        **BASE,
        "model": model_id(choice.model),
        "model_provider": PROVIDER_ID,
        "model_providers": {PROVIDER_ID: provider},
    }


def key_value(choice: ModelChoice, placeholders: Mapping[str, str]) -> str:
    """What the cell's :data:`KEY_VAR` holds: the placeholder of the entry's ``apiKey``."""
    if choice.scripted:
        return SCRIPTED_KEY
    key = ((choice.provider_entry or {}).get("options") or {}).get("apiKey")
    return str(resolve_env_refs(key, placeholders)) if key else SCRIPTED_KEY


def to_toml(config: Mapping[str, Any]) -> str:
    """``config`` as TOML: scalars and lists first, then each table (a JSON string is a valid
    TOML basic string)."""
    return "\n".join(_table(config, ())) + "\n"


def _table(table: Mapping[str, Any], path: tuple[str, ...]) -> list[str]:
    lines = [f"[{'.'.join(path)}]"] if path else []
    nested = [(k, v) for k, v in table.items() if isinstance(v, Mapping)]
    lines += [f"{_key(k)} = {_value(v)}" for k, v in table.items() if not isinstance(v, Mapping)]
    for key, sub in nested:
        lines += ["", *_table(sub, (*path, _key(key)))]
    return lines


def _key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() else json.dumps(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return json.dumps(str(value))
