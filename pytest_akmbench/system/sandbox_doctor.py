"""What ``doctor`` says of the cell sandbox on this machine: whether it works, and what a cell
gets, measured from inside one (docs/architecture.md, "Isolation")."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from .procs import reap_dead_orphans
from .sandbox import Sandbox, bwrap_binary, probe


def doctor_line() -> tuple[str, str]:
    """(status, detail) for ``doctor``: whether cells would run sandboxed here, and what a cell's
    sandbox gives on this machine, as measured from inside one."""
    problem = probe()
    if problem is not None:
        return "WARN", f"{problem}; with --bench-sandbox auto (the default) cells run unsandboxed"
    binary = bwrap_binary()
    try:
        out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        out = "bwrap"
    seen = inspect()
    weak = [k for k, good in _WANTED.items() if seen.get(k) != good]
    detail = f"{out} at {binary} works: cells run sandboxed; inside a cell " + ", ".join(
        f"{k} {seen.get(k, '?')}" for k in _WANTED
    )
    return ("WARN" if weak else "PASS"), detail + (f"; weaker than expected: {', '.join(weak)}" if weak else "")


# What doctor expects to find inside a cell's sandbox, measured by _INSPECT.
_WANTED = {
    "uid": "unprivileged",
    "capabilities": "none",
    "new privileges": "none",
    "/proc/sys": "read-only",
    "network": "loopback only",
}
_INSPECT = r"""
uid=$(id -u); caps=$(awk '/^CapEff/{print $2}' /proc/self/status)
sys=$(awk '$5=="/proc/sys"{split($6,o,",");print o[1]}' /proc/self/mountinfo | tail -n 1)
nets=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | tr '
' ' ')
echo "uid=$([ "$uid" = 0 ] && echo root || echo unprivileged)"
echo "capabilities=$([ "$caps" = 0000000000000000 ] && echo none || echo "$caps")"
echo "new privileges=$([ "$(awk '/^NoNewPrivs/{print $2}' /proc/self/status)" = 1 ] && echo none || echo possible)"
echo "/proc/sys=$([ "$sys" = ro ] && echo read-only || echo writable)"
echo "network=$([ "$nets" = 'lo ' ] && echo 'loopback only' || echo "$nets")"
"""


def inspect() -> dict[str, str]:
    """What a cell's sandbox gives here: its uid, capabilities, /proc/sys and network."""
    with tempfile.TemporaryDirectory(prefix="akmbench-inspect-") as tmp:
        box = Sandbox("bwrap", Path(tmp), owned=[Path(tmp)])
        argv = box.wrap(["/bin/sh", "-c", _INSPECT], Path(tmp), {"PATH": "/usr/bin:/bin"})
        try:
            proc = subprocess.run(
                argv, capture_output=True, text=True, timeout=30, start_new_session=True, pass_fds=box.keep_fds
            )
        except (OSError, subprocess.TimeoutExpired):
            return {}
        finally:
            reap_dead_orphans()
    return dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
