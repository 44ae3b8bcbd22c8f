"""Where the opencode and ripgrep binaries are, and which opencode version is installed
(docs/opencode.md)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...errors import ConfigError
from ...system.procs import is_executable
from ..locate import Binary, install_hint
from ..version import version_output

OPENCODE_VERSION = "1.18.33"
PLATFORM_PACKAGE = "opencode-linux-x64"
INSTALLED = f"node_modules/{PLATFORM_PACKAGE}/bin/opencode"  # under a project's .tools/, where install-tools puts it
INSTALL_HINT = install_hint(
    f"{PLATFORM_PACKAGE}@{OPENCODE_VERSION}", "set AKMBENCH_OPENCODE / pass --bench-opencode PATH"
)
OPENCODE = Binary("opencode", "opencode", "AKMBENCH_OPENCODE", INSTALLED, INSTALL_HINT)
RG_HINT = "install ripgrep: pip install ripgrep==14.1.0 (or apt-get install ripgrep)"
OFFLINE_ENV = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE_PROMPT": "1",
    "OPENCODE_DISABLE_EXTERNAL_SKILLS": "1",
    "OPENCODE_DISABLE_PROJECT_CONFIG": "1",
    "npm_config_registry": "http://127.0.0.1:9/",
}


def locate_opencode(options: Mapping[str, Any], env: Mapping[str, str] | None = None) -> Path:
    """Explicit option, then $AKMBENCH_OPENCODE, then <rootdir>/.tools/..., then PATH."""
    return OPENCODE.locate(options, env)


def locate_rg() -> Path:
    """The ripgrep binary; the pip wheel's (next to this Python) wins over pyenv-style shims."""
    candidates = [Path(sys.executable).parent / "rg", Path(sys.prefix) / "bin" / "rg"]
    found = shutil.which("rg")
    if found:
        candidates.append(Path(found))
    for path in candidates:
        if is_executable(path):
            try:
                with open(path, "rb") as fh:
                    if fh.read(4) != b"\x7fELF" and "shims" in path.parts:
                        continue
            except OSError:
                continue
            return path.resolve()
    raise ConfigError(
        f"rg (ripgrep) not found on PATH; opencode's grep/glob tools need it offline; {RG_HINT}", usage=True
    )


def read_version(binary: Path, timeout_s: float = 60.0) -> str:
    """``opencode --version`` run with a throwaway HOME (even --version creates XDG dirs)."""

    def home_env(home: Path) -> dict[str, str]:
        return {
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local/share"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_STATE_HOME": str(home / ".local/state"),
            **OFFLINE_ENV,
        }

    return version_output(binary, "opencode", home_env, INSTALL_HINT, timeout_s).strip().splitlines()[-1].strip()
