"""Claude Code's own settings: rows of the settings table that this folder declares
(docs/configuration.md, "An agent's settings"); the plugin passes their values to the agent in
its start options, under the row's name."""

from __future__ import annotations

from ...corpus.settings_table import Setting

SETTINGS = (Setting("claude", "The Claude Code executable", "PATH", str, path=True, owner="claude-code"),)
