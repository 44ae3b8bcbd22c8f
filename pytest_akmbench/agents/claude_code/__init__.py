"""The Claude Code agent (docs/claude-code.md)."""
