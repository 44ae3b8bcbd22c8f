"""Where an agent's binary is, searched as every agent searches it: the agent's option (its
settings row, ``--bench-<option>``), its ``AKMBENCH_`` variable, the project's ``.tools/`` (where
``install-tools`` puts it), then PATH; a named binary that is not there is an error, never a
fall-through, and every error ends with the agent's install hint."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..system.procs import is_executable


def install_hint(package: str, otherwise: str) -> str:
    """The hint an agent's binary errors end with: ``install-tools`` puts ``package`` (name@version)
    into the project's ``.tools/``; ``otherwise`` says how to name a binary of one's own."""
    return (
        f"install it into the project with `python -m pytest_akmbench install-tools` ({package} from npm into "
        f".tools/); or {otherwise}"
    )


@dataclass(frozen=True)
class Binary:
    """One agent's binary: its ``name`` on PATH and in messages, the ``option`` of its settings
    row, its ``variable``, where it is ``installed`` under ``.tools/``, and the install ``hint``."""

    name: str
    option: str
    variable: str
    installed: str
    hint: str

    def under(self, tools: Path) -> Path:
        """Where ``install-tools`` puts the binary in the tools directory ``tools``."""
        return tools / self.installed

    def local(self, options: Mapping[str, Any]) -> Path:
        """The binary of the project at the options' rootdir (by default the working directory)."""
        return self.under(Path(str(options.get("rootdir") or Path.cwd())) / ".tools")

    def locate(self, options: Mapping[str, Any], env: Mapping[str, str] | None = None) -> Path:
        """The option, then the variable, then the project's ``.tools/``, then PATH."""
        env = os.environ if env is None else env
        named = ((options.get(self.option), f"--bench-{self.option}"), (env.get(self.variable), self.variable))
        for given, where in named:
            if given:
                path = Path(str(given)).expanduser()
                if not is_executable(path):
                    raise ConfigError(
                        f"{path}: {self.name} binary not found or not executable ({where}); {self.hint}", usage=True
                    )
                return path.resolve()
        local = self.local(options)
        if is_executable(local):
            return local.resolve()
        found = shutil.which(self.name)
        if found:
            return Path(found).resolve()
        raise ConfigError(f"{self.name} not found (looked in {local} and on PATH); {self.hint}", usage=True)
