"""Codex's own settings: rows of the settings table this folder declares (docs/configuration.md,
"An agent's settings"); the plugin passes their values to the agent in its start options."""

from __future__ import annotations

from ...corpus.settings_table import Setting

OWNER = "codex"

SETTINGS = (Setting("codex", "The Codex executable (its native binary)", "PATH", str, path=True, owner=OWNER),)
