"""The opencode.json a cell's opencode is given (docs/opencode.md): the harness's own, with
exactly one provider block, the chosen provider's entry or the scripted model's."""

from __future__ import annotations

from typing import Any

from ..providers import ModelChoice, resolve_env_refs

SCHEMA_URL = "https://opencode.ai/config.json"
PERMISSION = {
    "bash": "allow",
    "edit": "allow",
    "write": "allow",
    "read": "allow",
    "glob": "allow",
    "grep": "allow",
    "list": "allow",
    "todowrite": "allow",
    "webfetch": "allow",
    "task": "allow",
    "skill": "allow",
}


def cell_config(
    choice: ModelChoice, placeholders: dict[str, str], model: str, base_url: str, wall_s: float
) -> dict[str, Any]:
    """The config of one cell: ``base_url`` is the forwarder's, ``placeholders`` stand in for
    the provider's ``{env:VAR}`` values."""
    config: dict[str, Any] = {
        "$schema": SCHEMA_URL,
        "model": model,
        "small_model": model,
        "plugin": [],
        "snapshot": False,
        "share": "disabled",
        "autoupdate": False,
        "permission": dict(PERMISSION),
    }
    if choice.scripted:
        timeout_ms = int(min(60000, max(1000, wall_s * 1000)))
        policy = choice.policy or "idle"
        config["provider"] = {
            "scripted": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Scripted",
                "options": {
                    "baseURL": base_url,
                    "apiKey": "scripted",
                    "headerTimeout": timeout_ms,
                    "chunkTimeout": timeout_ms,
                },
                "models": {
                    policy: {
                        "name": f"Scripted {policy}",
                        "tool_call": True,
                        "limit": {"context": 100000, "output": 4096},
                    }
                },
            }
        }
    else:
        # The entry as written, its {env:VAR} values replaced by placeholders and its base URL
        # by the forwarder's: no key, and no other value of the user's environment, in the cell.
        entry = resolve_env_refs(choice.provider_entry or {}, placeholders)
        entry["options"] = {**(entry.get("options") or {}), "baseURL": base_url}
        config["provider"] = {choice.provider_key: entry}
    return config
