"""Where the Codex binary is, and which Codex version is installed (docs/codex.md).

``@openai/codex`` on npm is a Node launcher; the agent itself is the native binary of the platform
package, which the harness runs directly (no Node in the cell). Beside it, ``codex-path/`` holds
the ``rg`` Codex puts first on its commands' PATH.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...errors import ConfigError
from ...system.procs import is_executable
from ..version import version_output

CODEX_VERSION = "0.171.0"
NPM_PACKAGE = "@openai/codex"
PLATFORM_PACKAGE = "@openai/codex-linux-x64"
TARGET = "x86_64-unknown-linux-musl"
# The platform package alone, under the name @openai/codex's launcher gives it (an npm alias of
# @openai/codex@<version>-linux-x64): no Node launcher, as opencode's platform package.
NPM_SPEC = f"{PLATFORM_PACKAGE}@npm:{NPM_PACKAGE}@{CODEX_VERSION}-linux-x64"
INSTALLED = f"node_modules/{PLATFORM_PACKAGE}/vendor/{TARGET}/bin/codex"  # under .tools/
INSTALL_HINT = (
    f"install it into the project with `python -m pytest_akmbench install-tools` ({NPM_PACKAGE}@{CODEX_VERSION} "
    "from npm into .tools/); or set AKMBENCH_CODEX to the codex binary"
)


def binary_in(tools: Path) -> Path:
    """Where ``install-tools`` puts the native binary in a tools directory."""
    return tools / INSTALLED


def local_binary(rootdir: Path) -> Path:
    """The binary of the project at ``rootdir`` (its ``.tools/``)."""
    return binary_in(rootdir / ".tools")


def locate_codex(options: Mapping[str, Any], env: Mapping[str, str] | None = None) -> Path:
    """The ``codex`` option, then $AKMBENCH_CODEX, then <rootdir>/.tools/..., then PATH."""
    env = os.environ if env is None else env
    for given, where in ((options.get("codex"), "--bench-codex"), (env.get("AKMBENCH_CODEX"), "AKMBENCH_CODEX")):
        if given:
            path = Path(str(given)).expanduser()
            if not is_executable(path):
                raise ConfigError(
                    f"{path}: codex binary not found or not executable ({where}); {INSTALL_HINT}", usage=True
                )
            return path.resolve()
    local = local_binary(Path(str(options.get("rootdir") or Path.cwd())))
    if is_executable(local):
        return local.resolve()
    found = shutil.which("codex")
    if found:
        return Path(found).resolve()
    raise ConfigError(f"codex not found (looked in {local} and on PATH); {INSTALL_HINT}", usage=True)


def read_version(binary: Path, timeout_s: float = 60.0) -> str:
    """``codex --version`` ("codex-cli 0.171.0") as its version, run with a throwaway home."""
    out = version_output(
        binary, "codex", lambda home: {"HOME": str(home), "CODEX_HOME": str(home)}, INSTALL_HINT, timeout_s
    )
    return out.strip().splitlines()[-1].strip().removeprefix("codex-cli").strip()
