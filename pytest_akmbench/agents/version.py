"""``<binary> --version`` run as every agent needs it: with a throwaway home (even ``--version``
writes config or state dirs), no stdin, in its own session, and a one-line error naming the
install hint when it cannot run or fails."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from ..errors import ConfigError


def version_output(
    binary: Path, name: str, home_env: Callable[[Path], Mapping[str, str]], hint: str, timeout_s: float
) -> str:
    """What ``binary --version`` printed on stdout; ``home_env(home)`` gives the variables that
    point the agent at the throwaway ``home`` (PATH is added)."""
    home = Path(tempfile.mkdtemp(prefix=f"akmbench-{name}-version-"))
    env = {**home_env(home), "PATH": os.environ.get("PATH", os.defpath)}
    try:
        proc = subprocess.run(
            [str(binary), "--version"],
            env=env,
            capture_output=True,
            timeout=timeout_s,
            start_new_session=True,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise ConfigError(f"{binary}: cannot run {name} --version: {err}; {hint}") from err
    finally:
        shutil.rmtree(home, ignore_errors=True)
    out = proc.stdout.decode("utf-8", "replace")
    if proc.returncode != 0 or not out.strip():
        tail = proc.stderr.decode("utf-8", "replace").strip()[-300:]
        raise ConfigError(f"{binary}: {name} --version failed (exit {proc.returncode}): {tail}; {hint}")
    return out
