"""Where the Claude Code binary is, which version it is, and the switches that keep it offline
(docs/claude-code.md)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...errors import ConfigError
from ...system.procs import is_executable
from ..version import version_output

CLAUDE_VERSION = "2.1.332"
# The platform package alone: its tarball carries the native binary, and nothing runs at install
# (the umbrella package @anthropic-ai/claude-code only picks one of these in a postinstall).
PLATFORM_PACKAGE = "@anthropic-ai/claude-code-linux-x64"
INSTALLED = f"node_modules/{PLATFORM_PACKAGE}/claude"  # under a project's .tools/, where install-tools puts it
INSTALL_HINT = (
    f"install it into the project with `python -m pytest_akmbench install-tools` ({PLATFORM_PACKAGE}@{CLAUDE_VERSION} "
    "from npm into .tools/); or pass --bench-claude PATH (or set AKMBENCH_CLAUDE)"
)
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


def locate_claude(options: Mapping[str, Any], env: Mapping[str, str] | None = None) -> Path:
    """``--bench-claude`` (its settings row), then $AKMBENCH_CLAUDE, then <rootdir>/.tools/...,
    then ``claude`` on PATH."""
    env = os.environ if env is None else env
    for given, where in ((options.get("claude"), "--bench-claude"), (env.get("AKMBENCH_CLAUDE"), "AKMBENCH_CLAUDE")):
        if given:
            path = Path(str(given)).expanduser()
            if not is_executable(path):
                raise ConfigError(
                    f"{path}: claude binary not found or not executable ({where}); {INSTALL_HINT}", usage=True
                )
            return path.resolve()
    rootdir = Path(str(options.get("rootdir") or Path.cwd()))
    local = installed(rootdir / ".tools")
    if is_executable(local):
        return local.resolve()
    found = shutil.which("claude")
    if found:
        return Path(found).resolve()
    raise ConfigError(f"claude not found (looked in {local} and on PATH); {INSTALL_HINT}", usage=True)


def installed(tools: Path) -> Path:
    """Where install-tools puts the binary under ``tools``."""
    return tools / INSTALLED


def read_version(binary: Path, timeout_s: float = 60.0) -> str:
    """The version ``claude --version`` prints (``2.1.332 (Claude Code)``), run with a throwaway
    HOME and config dir so nothing of the user's is read or written."""

    def home_env(home: Path) -> dict[str, str]:
        return {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / "config"), **OFFLINE_ENV}

    return version_output(binary, "claude", home_env, INSTALL_HINT, timeout_s).split()[0]
