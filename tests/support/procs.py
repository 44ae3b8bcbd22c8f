"""Which live processes a test's cells left behind: found by the HOME each cell gives its agent."""

from __future__ import annotations

import os
from pathlib import Path


def processes_under(root: Path) -> list[str]:
    """Command lines of live (not zombie) processes whose HOME lies under ``root``."""
    prefix = b"HOME=" + str(root).encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            env = Path(f"/proc/{name}/environ").read_bytes().split(b"\0")
            stat = Path(f"/proc/{name}/stat").read_text()
            cmd = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if stat[stat.rfind(")") + 2] != "Z" and any(v.startswith(prefix) for v in env):
            found.append(f"{name} {cmd}")
    return found
