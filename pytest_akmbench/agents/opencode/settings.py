"""opencode's own settings: rows of the settings table that this folder declares
(docs/configuration.md, "An agent's settings"). The plugin passes their values to the agent in
its start options, under the row's name (a run-config field: its attribute name)."""

from __future__ import annotations

from ...corpus.settings_table import Setting

_STR = {"type": "string"}
OWNER = "opencode"

SETTINGS = (
    Setting(
        "opencode_config",
        "Standard opencode config (opencode.json): its provider block and model are used instead of a providers file",
        "FILE",
        str,
        path=True,
        owner=OWNER,
    ),
    Setting("opencode", "The opencode executable", "PATH", str, path=True, owner=OWNER),
    Setting(
        "opencodeConfig",
        key="opencodeConfig",
        option=False,
        owner=OWNER,
        provider_source=True,
        attr="config_opencode",
        schema={"type": "object", "description": "providers inline, as a standard opencode config"},
    ),
    Setting(
        "opencodeConfigRef",
        key="opencodeConfigRef",
        option=False,
        owner=OWNER,
        provider_source=True,
        attr="config_opencode_ref",
        schema={**_STR, "description": "a standard opencode config (opencode.json)"},
    ),
)
