"""opencode's own start-up per cell: a fresh ``opencode run`` against ``opencode serve`` + ``run --attach``.

    python benchmarks/startup_bench.py                 # 6 cells per mode, interleaved
    python benchmarks/startup_bench.py --cells 10 --modes run,attach

Each cell is one ``opencode run --format json`` with the prompt on stdin, the scripted model
(policy ``idle``: one final answer, no tool call) and the adapter's recipe (per-cell opencode
config, ``OPENCODE_*`` switches, private HOME and XDG dirs), outside pytest so only opencode is
timed. Start-up is the time from just before the spawn to the scripted server's first
chat-completion request of the cell (polled every 5 ms from the server's per-cell token
totals); total is spawn to exit.

* ``run``: what the adapter does today: a new process per cell, fresh HOME every cell.
* ``attach``: one ``opencode serve`` (started once, its start-up printed apart) and per cell
  ``opencode run --attach URL --dir <workspace>``. The server has one HOME, one environment
  and one config, so every attached cell shares them; the script also prints what a bash tool
  of an attached cell sees (HOME, PATH's first entry, the cwd) to show that.

CPU is the cell's processes' user + system time (for ``attach`` also what the server used
meanwhile): unlike wall time it hardly moves with the machine's load. Modes alternate cell by
cell so load changes hit both. Prints medians; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import smoke  # noqa: E402

from pytest_akmbench.agents.opencode.binaries import OFFLINE_ENV  # noqa: E402
from pytest_akmbench.scripted.server import ScriptedModel  # noqa: E402

OPENCODE = ROOT / ".tools" / "node_modules" / "opencode-linux-x64" / "bin" / "opencode"
PROMPT = "Say done.\n"
KILL_WATCH_S = 5.0  # how long the kill probe watches for a killed cell's session going on


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def config(base_url: str) -> dict[str, object]:
    """The adapter's per-cell config for the scripted model (agents/opencode/adapter.py)."""
    return {
        "$schema": "https://opencode.ai/config.json",
        "model": "scripted/idle",
        "small_model": "scripted/idle",
        "plugin": [],
        "snapshot": False,
        "share": "disabled",
        "autoupdate": False,
        "permission": {"bash": "allow", "edit": "allow", "write": "allow", "read": "allow"},
        "provider": {
            "scripted": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Scripted",
                "options": {"baseURL": base_url, "apiKey": "scripted"},
                "models": {"idle": {"name": "idle", "tool_call": True, "limit": {"context": 100000, "output": 4096}}},
            }
        },
    }


def private_env(root: Path, base_url: str) -> dict[str, str]:
    """A private HOME/XDG and opencode config under ``root``, as the adapter makes per cell."""
    home = root / "home"
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    for key, sub in (("XDG_CONFIG_HOME", ".config"), ("XDG_DATA_HOME", ".local/share"), ("XDG_CACHE_HOME", ".cache"),
                     ("XDG_STATE_HOME", ".local/state")):  # fmt: skip
        env[key] = str(home / sub)
        Path(env[key]).mkdir(parents=True, exist_ok=True)
    cfg = root / "opencode.json"
    cfg.write_text(json.dumps(config(base_url)))
    env.update(OFFLINE_ENV, OPENCODE_CONFIG=str(cfg), OPENCODE_DISABLE_DEFAULT_PLUGINS="1")
    return env


def first_request(model: ScriptedModel, token: str, before: int, proc: subprocess.Popen[bytes]) -> float | None:
    """Seconds until the server's totals for ``token`` pass ``before`` (None if opencode exits first)."""
    t0 = time.monotonic()
    while proc.poll() is None:
        if model.totals(token)["prompt_tokens"] > before:
            return time.monotonic() - t0
        time.sleep(0.005)
    return None


def cpu_of(pid: int | None) -> float:
    """CPU seconds of the reaped children so far, plus those of a running process ``pid``."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime
    if pid is not None:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        cpu += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return cpu


def one_cell(
    argv: list[str], env: dict[str, str], cwd: Path, model: ScriptedModel, token: str, server: int | None = None
) -> tuple[float, float, int, float]:
    """(start-up, total, event lines on stdout, CPU seconds of the cell and the server) of one cell."""
    before = model.totals(token)["prompt_tokens"]
    cpu0 = cpu_of(server)
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(PROMPT.encode())
    proc.stdin.close()
    out: list[bytes] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    start = first_request(model, token, before, proc)
    proc.wait(timeout=120)
    total = time.monotonic() - t0
    reader.join(timeout=5)
    if start is None:
        raise RuntimeError(f"opencode made no model request: {argv[:3]} exit {proc.returncode}")
    return start, total, b"".join(out).count(b"\n"), cpu_of(server) - cpu0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(tmp: Path, model: ScriptedModel, token: str) -> tuple[subprocess.Popen[bytes], str, float]:
    env = private_env(tmp / "server", model.base_url(token))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    t0 = time.monotonic()
    proc = subprocess.Popen([str(OPENCODE), "serve", "--port", str(port)], cwd=tmp, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    while time.monotonic() - t0 < 60:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc, url, time.monotonic() - t0
        except OSError:
            time.sleep(0.02)
    proc.kill()
    raise RuntimeError("opencode serve did not listen within 60 s")


def probe_attached(tmp: Path, url: str, model: ScriptedModel, token: str) -> list[str]:
    """What an attached cell can see: its bash tool runs with the server's HOME and PATH, not
    the cell's, and the server's HTTP API lists every cell's session (any directory)."""
    ws = tmp / "probe-ws"
    ws.mkdir()
    probe = f"echo HOME=$HOME PATH0=${{PATH%%:*}} CWD=$(pwd) > probe.txt; curl -s {url}/session > sessions.json || true"
    model.register(token, "oracle", commands=[probe])
    cell_env = private_env(tmp / "probe-cell", "http://127.0.0.1:9/unused")
    argv = [str(OPENCODE), "run", "--attach", url, "--dir", str(ws), "--format", "json", "--model", "scripted/idle"]
    subprocess.run(argv, cwd=ws, env=cell_env, input=PROMPT.encode(), capture_output=True, timeout=120)
    model.register(token, "idle")
    seen = (ws / "probe.txt").read_text().strip() if (ws / "probe.txt").exists() else "nothing"
    try:
        dirs = sorted({s["directory"] for s in json.loads((ws / "sessions.json").read_text())})
    except (OSError, ValueError, KeyError, TypeError):
        dirs = []
    return [
        f"isolation: the cell's own HOME would be {cell_env['HOME']}; its bash tool saw {seen}",
        f"isolation: from inside the cell, GET /session listed sessions of {len(dirs)} directories: "
        + ", ".join(d.replace(str(tmp), "$TMP") for d in dirs),
    ]


def probe_kill(tmp: Path, url: str, model: ScriptedModel, token: str) -> str:
    """Whether killing an attached cell's client stops its session: the harness kills a cell by
    its process group, and the tools of an attached cell are the server's children."""
    ws = tmp / "kill-ws"
    ws.mkdir()
    model.register(token, "loop")
    env = private_env(tmp / "kill-cell", "http://127.0.0.1:9/unused")
    argv = [str(OPENCODE), "run", "--attach", url, "--dir", str(ws), "--format", "json", "--model", "scripted/idle"]
    proc = subprocess.Popen(argv, cwd=ws, env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    assert proc.stdin is not None
    proc.stdin.write(PROMPT.encode())
    proc.stdin.close()
    deadline = time.monotonic() + 120
    while model.totals(token)["requests"] < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, 9)
    proc.wait()
    at_kill = model.totals(token)["requests"]
    time.sleep(KILL_WATCH_S)
    after = model.totals(token)["requests"]
    model.register(token, "idle")
    return (
        f"kill: after the attached client's process group was killed at {at_kill} model requests, the "
        f"server's session made {after - at_kill} more in {KILL_WATCH_S:g} s"
        + (" (the cell's agent outlived its kill)" if after > at_kill else " (it stopped with the client)")
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", type=int, default=6, help="cells per mode (default 6)")
    ap.add_argument("--modes", default="run,attach", help="modes to time (default run,attach)")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (printed)")
    args = smoke.parse(ap, cells=1)
    if args.smoke:
        global KILL_WATCH_S
        KILL_WATCH_S = 1.0
    if not (OPENCODE.is_file() and os.access(OPENCODE, os.X_OK)):
        return smoke.skipped(f"opencode binary not found at {OPENCODE} (install it as the README/.ci says)")
    modes = [m for m in args.modes.split(",") if m]
    print(f"opencode start-up per cell; {os.cpu_count()} CPUs, load average at start {loadavg()}")
    tmp = Path(tempfile.mkdtemp(prefix="akmbench-startup-bench-"))
    try:
        with ScriptedModel() as model:
            measure(tmp, model, modes, args.cells)
    finally:
        print(f"load average at end {loadavg()}")
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


def measure(tmp: Path, model: ScriptedModel, modes: list[str], cells: int) -> None:
    server_token = uuid.uuid4().hex
    model.register(server_token, "idle")
    server = None
    if "attach" in modes:
        server, url, listen_s = start_server(tmp, model, server_token)
        print(f"opencode serve: listening after {listen_s:.2f} s (once per worker)")
    times: dict[str, list[tuple[float, float, int, float]]] = {m: [] for m in modes}
    try:
        for i in range(cells):
            for mode in modes:
                root = tmp / f"{mode}-{i}"
                ws = root / "ws"
                ws.mkdir(parents=True)
                if mode == "run":
                    token = uuid.uuid4().hex
                    env = private_env(root, model.register(token, "idle"))
                    argv = [str(OPENCODE), "run", "--format", "json", "--model", "scripted/idle", "--title", "b"]
                    times[mode].append(one_cell(argv, env, ws, model, token))
                    model.unregister(token)
                else:
                    env = private_env(root, "http://127.0.0.1:9/unused")
                    argv = [str(OPENCODE), "run", "--attach", url, "--dir", str(ws), "--format", "json",
                            "--model", "scripted/idle", "--title", "b"]  # fmt: skip
                    times[mode].append(one_cell(argv, env, ws, model, server_token, server.pid if server else None))
        for mode, xs in times.items() if cells else ():
            starts, totals = [x[0] for x in xs], [x[1] for x in xs]
            print(
                f"{mode:7s} start-up to first model request: median {statistics.median(starts):.2f} s "
                f"(min {min(starts):.2f}, max {max(starts):.2f}); whole cell median {statistics.median(totals):.2f} s"
                f" over {len(xs)} cells; CPU per cell median {statistics.median(x[3] for x in xs):.2f} s;"
                f" event lines on stdout per cell: {sorted({x[2] for x in xs})}"
            )
        if server is not None:
            print("\n".join(probe_attached(tmp, url, model, server_token)))
            print(probe_kill(tmp, url, model, server_token))
    finally:
        if server is not None:
            os.killpg(server.pid, 15)
            server.wait(timeout=10)


if __name__ == "__main__":
    raise SystemExit(main())
