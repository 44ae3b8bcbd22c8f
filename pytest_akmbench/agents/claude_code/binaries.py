"""Where the Claude Code binary is, which version it is, and the switches that keep it offline
(docs/claude-code.md)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..locate import Binary, install_hint
from ..version import version_output

CLAUDE_VERSION = "2.1.332"
# The platform package alone: its tarball carries the native binary, and nothing runs at install
# (the umbrella package @anthropic-ai/claude-code only picks one of these in a postinstall).
PLATFORM_PACKAGE = "@anthropic-ai/claude-code-linux-x64"
INSTALLED = f"node_modules/{PLATFORM_PACKAGE}/claude"  # under a project's .tools/, where install-tools puts it
INSTALL_HINT = install_hint(f"{PLATFORM_PACKAGE}@{CLAUDE_VERSION}", "pass --bench-claude PATH (or set AKMBENCH_CLAUDE)")
# Everything Claude Code would fetch besides the model (docs/claude-code.md, "Offline").
OFFLINE_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_UPDATES": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_GROWTHBOOK": "1",
    "CLAUDE_CODE_DISABLE_FEATURE_FLAGS": "1",
    "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1",
    "CLAUDE_CODE_DISABLE_CLAUDE_MDS": "1",
    "CLAUDE_CODE_DISABLE_WEB_FETCH": "1",
    "DISABLE_INSTALLATION_CHECKS": "1",
    "npm_config_registry": "http://127.0.0.1:9/",
}
CLAUDE = Binary("claude", "claude", "AKMBENCH_CLAUDE", INSTALLED, INSTALL_HINT)


def locate_claude(options: Mapping[str, Any], env: Mapping[str, str] | None = None) -> Path:
    """``--bench-claude`` (its settings row), then $AKMBENCH_CLAUDE, then <rootdir>/.tools/...,
    then ``claude`` on PATH."""
    return CLAUDE.locate(options, env)


def installed(tools: Path) -> Path:
    """Where install-tools puts the binary under ``tools``."""
    return CLAUDE.under(tools)


def read_version(binary: Path, timeout_s: float = 60.0) -> str:
    """The version ``claude --version`` prints (``2.1.332 (Claude Code)``), run with a throwaway
    HOME and config dir so nothing of the user's is read or written."""

    def home_env(home: Path) -> dict[str, str]:
        return {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / "config"), **OFFLINE_ENV}

    return version_output(binary, "claude", home_env, INSTALL_HINT, timeout_s).split()[0]
