"""The preflight's look from inside the cell boundary: opencode starts, and its model is reachable,
in a sandbox made as a cell's would be (docs/opencode.md, "Preflight").

The host-side preflight (:mod:`preflight`) proves the model answers the harness with the key. A
cell sees less: only what its sandbox exposes, and its model only through the forwarder and the
sandbox's relay. What fails there would fail every cell, after its budget is spent, so it is
checked once before the first cell, in a throwaway run dir.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..system.procs import ProcessTracker
from ..system.sandbox import for_cell, open_route

# A GET on the base URL: any HTTP answer, even 404, proves the way out works.
_REACH = """
import sys, urllib.error, urllib.request
try:
    urllib.request.urlopen(sys.argv[1], timeout=20).close()
except urllib.error.HTTPError:
    pass
except OSError as err:
    print(getattr(err, "reason", err))
    sys.exit(1)
"""


def check_inside(
    *,
    mode: str,
    network: str,
    work_root: Path,
    tools: Sequence[Path],
    version_argv: Sequence[str],
    upstream: str,
    cell_path: str,
    swaps: Mapping[str, str],
    extra: Sequence[Path] = (),
    agent: str = "opencode",
) -> str | None:
    """None when the sandbox is off; else a line of what was checked, or a ConfigError."""
    if mode == "none":
        return None
    work_root.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="preflight-", dir=work_root))
    for sub in ("workspace", "home", "tmp"):
        (run_dir / sub).mkdir()
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(run_dir / "home"), "LANG": "C.UTF-8"}
    box = for_cell(mode, run_dir, extra=extra, network=network)
    box.expose_tools(*tools)
    procs = ProcessTracker(f"preflight-{uuid.uuid4().hex[:12]}")
    forwarder, origin = open_route(box, upstream, swaps)
    try:
        with box.applied(procs):
            code, out, _ = procs.run(list(version_argv), cwd=run_dir / "workspace", env=env, timeout_s=120)
            if code != 0:
                raise ConfigError(
                    f"preflight: {agent} does not start inside the cell sandbox (exit {code}: "
                    f"{out.strip()[-200:]}); add what it needs with --bench-sandbox-ro, or run --bench-sandbox none",
                    usage=True,
                )
            reach = [sys.executable, "-I", "-S", "-c", _REACH, origin + cell_path]
            code, out, _ = procs.run(reach, cwd=run_dir / "workspace", env=env, timeout_s=60)
            if code != 0:
                raise ConfigError(
                    f"preflight: the model is not reachable from inside the cell sandbox ({out.strip()[-200:]}); "
                    f"check that bwrap can make a network namespace here, or run --bench-network host",
                    usage=True,
                )
    finally:
        procs.kill_all()
        forwarder.close()
        shutil.rmtree(run_dir, ignore_errors=True)
    return f"{agent} starts and reaches the model inside the cell sandbox ({network} network)"


def with_inside(
    line: str,
    options: Mapping[str, Any],
    tools: Sequence[Path],
    where: Callable[[], tuple[str, str]],
    swaps: Mapping[str, str],
    agent: str = "opencode",
) -> str:
    """The preflight's ``line`` and, when the session's ``options`` put cells in a sandbox, what
    :func:`check_inside` found; ``where`` gives (the model's base URL, the cell's path to it)."""
    if options.get("sandbox", "none") == "none" or not options.get("work_root"):
        return line
    upstream, cell_path = where()
    inside = check_inside(
        mode=str(options["sandbox"]),
        network=str(options.get("network") or "isolated"),
        work_root=Path(str(options["work_root"])),
        tools=tools,
        version_argv=[str(tools[0]), "--version"],
        upstream=upstream,
        cell_path=cell_path,
        swaps=swaps,
        extra=[Path(p) for p in options.get("sandbox_ro") or ()],
        agent=agent,
    )
    return line if inside is None else f"{line}; {inside}"
