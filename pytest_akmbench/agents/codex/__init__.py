"""The Codex CLI agent: ``codex exec --json`` for one cell (docs/codex.md)."""
