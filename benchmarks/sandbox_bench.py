"""What the per-cell sandbox (bwrap) adds to a cell, sandboxed against unsandboxed, interleaved.

    python benchmarks/sandbox_bench.py                    # all three sections
    python benchmarks/sandbox_bench.py --sections 2 --cells 100 --repeats 5

1. one tracked process (``ProcessTracker.run(["true"])`` + ``kill_all``), the way a cell's
   agent is started, with and without the sandbox, in this process; plus the in-process cost of
   building a cell's sandbox and its bwrap argv, and the once-per-process probe.
2. N ``oracle`` cells (script tasks, ``solve.sh`` run in the sandbox) through pytest with
   ``--bench-sandbox bwrap`` and ``--bench-sandbox none``, alternating runs: medians of the
   samples' ``timing_ms.total`` and of (wall - pytest start-up) / N.
3. ``opencode --version`` (when the binary is installed) in and out of a cell's sandbox: the
   sandbox's effect on the start-up of the real agent binary.
4. the cell boundary's newer parts, each against the same step without them: a script verifier
   in its own sandbox against one run unsandboxed, and an agent start in a network namespace
   whose one way out is the model forwarder (the relay inside, the forwarder outside) against
   one on the host's network, plus one model request through relay and forwarder against one
   sent straight to the server. Target: at most 50 ms per cell for both together.

Target: at most 50 ms added to a cell. Everything runs in a temporary directory that is
removed at the end. The machine may be shared: every measurement alternates the two modes,
repeats, and prints medians with /proc/loadavg. Prints; asserts nothing.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import smoke  # noqa: E402

from benchmarks.cells_bench import bench_argv, check, loadavg, make_project, med, ms, read_samples  # noqa: E402
from pytest_akmbench.system import sandbox  # noqa: E402
from pytest_akmbench.system.procs import ProcessTracker, become_subreaper  # noqa: E402

PY = sys.executable
TARGET_S = 0.050


def added(label: str, boxed: float, plain: float) -> None:
    extra = boxed - plain
    ok = "OK" if extra <= TARGET_S else "MISSED"
    print(
        f"   {label}: sandboxed {ms(boxed)}, unsandboxed {ms(plain)} -> added {ms(extra)}"
        f" (target <= {ms(TARGET_S)}: {ok})"
    )


def cpu_s() -> float:
    """CPU seconds of this process and its waited-for children: unlike wall time, not inflated
    by a busy machine."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def cell_dir(tmp: Path) -> Path:
    run_dir = Path(tempfile.mkdtemp(prefix="cell-", dir=tmp))
    for sub in ("workspace", "home", "tmp"):
        (run_dir / sub).mkdir()
    return run_dir


def section_spawn(tmp: Path, n: int) -> None:
    print(f"\n== 1. one tracked process per cell, {n} alternating pairs (load {loadavg()})")
    out = subprocess.run(
        [
            PY,
            "-c",
            "import time; from pytest_akmbench.system import sandbox; t = time.perf_counter();"
            " p = sandbox.probe(); print(time.perf_counter() - t, p)",
        ],
        capture_output=True,
        text=True,
    )
    probe_s, _, problem = out.stdout.strip().partition(" ")
    print(f"   probe (once per process, fresh interpreter): {ms(float(probe_s))}; result: {problem}")
    if problem != "None":
        raise SystemExit("SKIPPED: bwrap does not work here")
    become_subreaper()
    run_dir = cell_dir(tmp)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(run_dir / "home")}
    build, boxed, plain = [], [], []
    for i in range(n):
        t = time.perf_counter()
        box = sandbox.for_cell("bwrap", run_dir)
        box.wrap(["true"], run_dir / "workspace", env)
        build.append(time.perf_counter() - t)
        for mode, sink in (("bwrap", boxed), ("none", plain)) if i % 2 else (("none", plain), ("bwrap", boxed)):
            procs = ProcessTracker(f"akmbench-sandbox-bench/{mode}/{i}")
            t = time.perf_counter()
            with sandbox.for_cell(mode, run_dir).applied(procs):
                code = procs.run(["true"], cwd=run_dir / "workspace", env=env, timeout_s=30)[0]
            procs.kill_all()
            sink.append(time.perf_counter() - t)
            assert code == 0
    print(f"   building a cell's sandbox and bwrap argv (in-process): median {ms(med(build))}")
    added("spawn + wait + kill_all of `true`", med(boxed), med(plain))


def section_cells(tmp: Path, n_cells: int, seeds: int, repeats: int) -> None:
    n_tasks = max(1, n_cells // seeds)
    n = n_tasks * seeds
    print(
        f"\n== 2. {n} oracle cells through pytest, serial ({n_tasks} tasks x 1 arm x {seeds} seeds),"
        f" {repeats} repeats per mode, alternating"
    )
    proj = make_project(tmp / "p2", n_tasks)
    totals: dict[str, list[float]] = {"bwrap": [], "none": []}
    agents: dict[str, list[float]] = {"bwrap": [], "none": []}
    per_wall: dict[str, list[float]] = {"bwrap": [], "none": []}
    loads = []
    for r in range(repeats):
        loads.append(loadavg())
        t = time.perf_counter()
        check(
            subprocess.run(
                bench_argv(tmp, f"co{r}", agent="oracle", seeds=seeds, arms="noakm", extra=["--co"]),
                cwd=proj,
                capture_output=True,
                text=True,
            ),
            "pytest --co",
        )
        startup = time.perf_counter() - t
        for mode in ("bwrap", "none") if r % 2 else ("none", "bwrap"):
            tag = f"{mode}{r}"
            t = time.perf_counter()
            proc = subprocess.run(
                bench_argv(tmp, tag, agent="oracle", seeds=seeds, arms="noakm", extra=["--bench-sandbox", mode]),
                cwd=proj,
                capture_output=True,
                text=True,
            )
            wall = time.perf_counter() - t
            check(proc, f"pytest run --bench-sandbox {mode}")
            samples = read_samples(tmp / f"store-{tag}")
            if len(samples) != n or any(s["outcome"] != "pass" for s in samples):
                raise SystemExit(f"expected {n} passing samples under {mode}, got {len(samples)}")
            totals[mode].extend(s["timing_ms"]["total"] / 1000 for s in samples)
            agents[mode].extend(s["timing_ms"]["agent"] / 1000 for s in samples)
            per_wall[mode].append((wall - startup) / n)
    print(f"   load average per repeat: {'; '.join(loads)}")
    added("per cell, timing_ms.total (median)", med(totals["bwrap"]), med(totals["none"]))
    added("per cell, timing_ms.agent (median)", med(agents["bwrap"]), med(agents["none"]))
    added("per cell, (wall - start-up) / N (median of runs)", med(per_wall["bwrap"]), med(per_wall["none"]))


def section_opencode(tmp: Path, repeats: int) -> None:
    binary = (ROOT / ".tools" / "node_modules" / "opencode-linux-x64" / "bin" / "opencode").resolve()
    print(f"\n== 3. opencode --version in and out of a cell's sandbox, {repeats} alternating pairs (load {loadavg()})")
    if not binary.exists():
        if smoke.skipped("opencode not installed (bash .ci/setup)"):
            raise SystemExit(1)
        return
    run_dir = cell_dir(tmp)
    home = run_dir / "home"
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local/state"),
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
    }
    times: dict[str, list[float]] = {"bwrap": [], "none": []}
    for i in range(repeats):
        for mode in ("bwrap", "none") if i % 2 else ("none", "bwrap"):
            box = sandbox.for_cell(mode, run_dir)
            box.expose_tools(binary)
            # Through a ProcessTracker as a cell spawns it: the sandbox's first process reads its
            # code from a file descriptor that only the tracker's spawns keep open.
            procs = ProcessTracker(f"akmbench-sandbox-bench/opencode/{mode}/{i}")
            t = time.perf_counter()
            with box.applied(procs):
                code, out, _ = procs.run([str(binary), "--version"], cwd=run_dir / "workspace", env=env, timeout_s=120)
            procs.kill_all()
            times[mode].append(time.perf_counter() - t)
            if code != 0:
                raise SystemExit(f"opencode --version ({mode}) exited {code}:\n{out[-3000:]}")
    added("opencode --version", med(times["bwrap"]), med(times["none"]))


def section_boundary(tmp: Path, n: int) -> None:
    """Section 4: the verifier's sandbox and the agent's network namespace, each per cell."""
    import http.server
    import threading
    import urllib.request

    from pytest_akmbench.cell.verifiers import verify
    from pytest_akmbench.corpus.tasks import load_corpus
    from tests.support.corpus import write_stash, write_task

    print(f"\n== 4. the verifier's sandbox and the agent's network, {n} alternating pairs (load {loadavg()})")
    become_subreaper()
    write_stash(tmp / "c4" / "stashes")
    write_task(tmp / "c4" / "tasks", "a/s")
    task = load_corpus(tmp / "c4" / "tasks", tmp / "c4" / "stashes").tasks[0]
    run_dir = cell_dir(tmp)
    (run_dir / "workspace" / "out.txt").write_text("hello\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(run_dir / "home")}
    verifier: dict[str, list[float]] = {"bwrap": [], "none": []}
    verifier_cpu: dict[str, list[float]] = {"bwrap": [], "none": []}
    for i in range(n):
        for mode in ("bwrap", "none") if i % 2 else ("none", "bwrap"):
            procs = ProcessTracker(f"akmbench-sandbox-bench/verify/{mode}/{i}")
            scratch = Path(tempfile.mkdtemp(prefix="verify-", dir=tmp))
            t, c = time.perf_counter(), cpu_s()
            verdict = verify(
                task,
                workspace=run_dir / "workspace",
                final_text="",
                scratch=scratch,
                env=env,
                procs=procs,
                timeout_s=30,
                sandbox=mode,
            )
            procs.kill_all()
            verifier[mode].append(time.perf_counter() - t)
            verifier_cpu[mode].append(cpu_s() - c)
            assert verdict.passed, verdict
            shutil.rmtree(scratch, ignore_errors=True)
    added("script verifier, sandboxed or not", med(verifier["bwrap"]), med(verifier["none"]))
    added("  the same in CPU time", med(verifier_cpu["bwrap"]), med(verifier_cpu["none"]))

    class Answer(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    upstream = f"http://127.0.0.1:{server.server_address[1]}/v1"
    start: dict[str, list[float]] = {"isolated": [], "host": []}
    start_cpu: dict[str, list[float]] = {"isolated": [], "host": []}
    for i in range(n):
        for network in ("isolated", "host") if i % 2 else ("host", "isolated"):
            procs = ProcessTracker(f"akmbench-sandbox-bench/net/{network}/{i}")
            box = sandbox.for_cell("bwrap", run_dir, network=network)
            t, c = time.perf_counter(), cpu_s()
            forwarder, _ = box.route_model(upstream, {})
            with box.applied(procs):
                code = procs.run(["true"], cwd=run_dir / "workspace", env=env, timeout_s=30)[0]
            procs.kill_all()
            forwarder.close()
            start[network].append(time.perf_counter() - t)
            start_cpu[network].append(cpu_s() - c)
            assert code == 0
    added("agent start in its network namespace (relay + forwarder)", med(start["isolated"]), med(start["host"]))
    added("  the same in CPU time", med(start_cpu["isolated"]), med(start_cpu["host"]))
    request: dict[str, list[float]] = {"forwarded": [], "direct": []}
    with sandbox.open_route(None, upstream, {})[0] as forwarder:
        for _ in range(n):
            for how, url in (("forwarded", forwarder.origin() + "/v1/x"), ("direct", upstream + "/x")):
                t = time.perf_counter()
                urllib.request.urlopen(url, timeout=10).read()
                request[how].append(time.perf_counter() - t)
    server.shutdown()
    print(
        f"   one model request: through the forwarder {ms(med(request['forwarded']))}, "
        f"straight to the server {ms(med(request['direct']))} (host side; the relay inside adds one hop)"
    )
    together = med(verifier["bwrap"]) - med(verifier["none"]) + med(start["isolated"]) - med(start["host"])
    print(
        f"   together per cell: {ms(together)} (target <= {ms(TARGET_S)}: {'OK' if together <= TARGET_S else 'MISSED'})"
    )
    cpu = med(verifier_cpu["bwrap"]) - med(verifier_cpu["none"]) + med(start_cpu["isolated"]) - med(start_cpu["host"])
    print(f"   together per cell in CPU time: {ms(cpu)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", default="1,2,3,4")
    parser.add_argument("--spawns", type=int, default=200, help="pairs in section 1 (default 200)")
    parser.add_argument("--cells", type=int, default=100, help="cells per run in section 2 (default 100)")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3, help="runs per mode in section 2 (default 3)")
    parser.add_argument("--opencode-repeats", type=int, default=10)
    parser.add_argument("--boundary-pairs", type=int, default=40, help="pairs in section 4 (default 40)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = smoke.parse(parser, spawns=5, cells=4, seeds=2, repeats=1, opencode_repeats=1, boundary_pairs=2)
    sections = {s.strip() for s in args.sections.split(",")}
    tmp = Path(tempfile.mkdtemp(prefix="akmbench-sandbox-bench-"))
    print(f"sandbox bench in {tmp}; python {sys.version.split()[0]}; load {loadavg()}")
    try:
        if "1" in sections:
            section_spawn(tmp, args.spawns)
        if "2" in sections:
            section_cells(tmp, args.cells, args.seeds, args.repeats)
        if "3" in sections:
            section_opencode(tmp, args.opencode_repeats)
        if "4" in sections:
            section_boundary(tmp, args.boundary_pairs)
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
