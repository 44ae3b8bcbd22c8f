"""Where the Codex binary is, and which Codex version is installed (docs/codex.md).

``@openai/codex`` on npm is a Node launcher; the agent itself is the native binary of the platform
package, which the harness runs directly (no Node in the cell). Beside it, ``codex-path/`` holds
the ``rg`` Codex puts first on its commands' PATH.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..locate import Binary, install_hint
from ..version import version_output

CODEX_VERSION = "0.171.0"
NPM_PACKAGE = "@openai/codex"
PLATFORM_PACKAGE = "@openai/codex-linux-x64"
TARGET = "x86_64-unknown-linux-musl"
# The platform package alone, under the name @openai/codex's launcher gives it (an npm alias of
# @openai/codex@<version>-linux-x64): no Node launcher, as opencode's platform package.
NPM_SPEC = f"{PLATFORM_PACKAGE}@npm:{NPM_PACKAGE}@{CODEX_VERSION}-linux-x64"
INSTALLED = f"node_modules/{PLATFORM_PACKAGE}/vendor/{TARGET}/bin/codex"  # under .tools/
INSTALL_HINT = install_hint(f"{NPM_PACKAGE}@{CODEX_VERSION}", "set AKMBENCH_CODEX to the codex binary")
CODEX = Binary("codex", "codex", "AKMBENCH_CODEX", INSTALLED, INSTALL_HINT)


def local_binary(rootdir: Path) -> Path:
    """The binary of the project at ``rootdir`` (its ``.tools/``)."""
    return CODEX.under(rootdir / ".tools")


def locate_codex(options: Mapping[str, Any], env: Mapping[str, str] | None = None) -> Path:
    """The ``codex`` option, then $AKMBENCH_CODEX, then <rootdir>/.tools/..., then PATH."""
    return CODEX.locate(options, env)


def read_version(binary: Path, timeout_s: float = 60.0) -> str:
    """``codex --version`` ("codex-cli 0.171.0") as its version, run with a throwaway home."""
    out = version_output(
        binary, "codex", lambda home: {"HOME": str(home), "CODEX_HOME": str(home)}, INSTALL_HINT, timeout_s
    )
    return out.strip().splitlines()[-1].strip().removeprefix("codex-cli").strip()
