"""Harness speed of pytest-akmbench cells, each figure against a floor measured in the same run.

    python benchmarks/cells_bench.py                 # all four sections, defaults below
    python benchmarks/cells_bench.py --sections 1,4  # only some
    python benchmarks/cells_bench.py --cells 100 --repeats 5

1. per-cell wall of N ``nop`` cells with ``script`` verifiers run serially through pytest, from
   the stored samples (``timing_ms.total``) and from (wall - pytest start-up) / N, against a floor
   of mkdtemp + copytree(workspace) + ``bash verify.sh`` + rmtree done in this process, and
   against a guarded floor: that work plus the least work of each guarantee a cell keeps (its
   claim, HOME and akm stub, the verifier's private copy, HOME and PATH, its process group
   killed, the fsync'd sample), also in this process, and per cell at the margin (N more cells).
   Target <= 1.3x the floor (issue 33); each figure is also printed against the guarded floor,
   whose own ratio to the floor says how close any harness keeping them can come.
2. one ``pytest``-verifier cell (its ``timing_ms.verify`` and ``timing_ms.total``) against a bare
   ``python -m pytest -q -p no:cacheprovider <tests>`` with plugin autoload off, cwd = a
   workspace copy. Target <= 1.1x.
3. ``pytest --co -q`` of 10,000 cells (500 tasks x 2 arms x 10 seeds) against pytest collecting
   10,000 parametrized items; and the resume done-check (only done outside ``--co``) with an
   empty store and with a store holding a sample for every cell. Targets <= 1.5x and <= 1 s.
4. 48 cells of an agent that sleeps 0.2-1.0 s (seeded per cell) at ``--parallel 4`` against plain
   ``pytest -n 4`` running 48 tests sleeping the same durations (--dist load and worksteal).
   Target <= 1.15x.

Everything runs in a temporary directory that is removed at the end; nothing is written to
the repository. The machine may be shared: each measurement is repeated (``--repeats``) and
interleaved with its floor, medians are printed with /proc/loadavg. Prints; asserts nothing.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import smoke  # noqa: E402

from tests.support.corpus import write_stash, write_task  # noqa: E402

PY = sys.executable
# A verifier that passes on the untouched workspace: the nop agent then yields "pass" cells,
# so the figures do not include pytest rendering hundreds of failure reports.
PASSING_VERIFY = "grep -q Task README.md\n"
# --sandbox: added to every bench run (empty: the plugin's default, bwrap where it works).
SANDBOX: list[str] = []


# ---------------------------------------------------------------- helpers


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def verdict(ratio: float, target: float) -> str:
    return f"{ratio:.2f}x (target <= {target:g}x: {'OK' if ratio <= target else 'MISSED'})"


def timed_run(
    argv: list[str], cwd: Path, env: dict[str, str] | None = None
) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    return time.perf_counter() - t0, proc


def check(proc: subprocess.CompletedProcess, what: str, ok: tuple[int, ...] = (0,)) -> None:
    if proc.returncode not in ok:
        tail = (proc.stdout + proc.stderr)[-3000:]
        raise SystemExit(f"{what} exited {proc.returncode}:\n{tail}")


def make_project(
    base: Path, n_tasks: int, *, verifier: str = "script", prefix: str = "d/t", workspace: dict[str, str] | None = None
) -> Path:
    """A project dir with pytest.ini (pins the rootdir), corpus/tasks and corpus/stashes/st."""
    base.mkdir(parents=True)
    (base / "pytest.ini").write_text("[pytest]\n")
    write_stash(base / "corpus" / "stashes")
    for i in range(n_tasks):
        write_task(
            base / "corpus" / "tasks",
            f"{prefix}{i:04d}",
            verifier=verifier,
            verify=PASSING_VERIFY if verifier == "script" else None,
            workspace=workspace,
        )
    return base


def bench_argv(work: Path, tag: str, *, agent: str, seeds: int, arms: str, extra: list[str] = ()) -> list[str]:
    return [
        PY,
        "-m",
        "pytest",
        "corpus/tasks",
        "-q",
        "-p",
        "no:cacheprovider",
        "--bench-agent",
        agent,
        "--bench-seeds",
        str(seeds),
        "--bench-arms",
        arms,
        "--bench-store",
        str(work / f"store-{tag}"),
        "--bench-report",
        str(work / f"report-{tag}"),
        "--bench-tmp",
        str(work / "cells"),
        *SANDBOX,
        *extra,
    ]


def read_samples(store: Path) -> list[dict]:
    path = store / "samples.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# ---------------------------------------------------------------- 1. nop cells vs floor


def floor_cell(workspace: Path, verify_sh: Path, tmp_root: Path) -> float:
    """One temp dir, one copy of the workspace, one `bash verify.sh`, one delete."""
    t0 = time.perf_counter()
    d = Path(tempfile.mkdtemp(prefix="floor-", dir=tmp_root))
    shutil.copytree(workspace, d / "workspace")
    subprocess.run(["bash", str(verify_sh)], cwd=d / "workspace", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shutil.rmtree(d)
    return time.perf_counter() - t0


PATH_REALS = [
    (e, os.path.realpath(e)) for e in os.environ.get("PATH", os.defpath).split(os.pathsep) if e.startswith("/")
]


def _same_dir(a: str, b: str) -> bool:
    try:
        x, y = os.stat(a), os.stat(b)
    except OSError:
        return False
    return (x.st_dev, x.st_ino) == (y.st_dev, y.st_ino)


def guarded_floor_cell(task_dir: Path, tmp_root: Path, store: Path) -> float:
    """The floor's work plus the least work of each guarantee a cell keeps (benchmarks/README.md,
    "Per item, fourth pass"), done in this process the plain way:

    - a claim against another bench on the store: a lock file created, flock'd, unlinked;
    - the run dir: the workspace copy, and a HOME, tmp and bin of its own with the akm stub;
    - the verifier's scratch, made after the agent: the task copied without ``workspace/`` and
      ``solution/``, the agent's workspace linked in its place, a HOME of its own;
    - the verifier's PATH: no entry inside the run dir, each checked against a resolution made once;
    - ``bash verify.sh`` in a session of its own, and its group killed after it;
    - the sample appended and fsync'd before the next cell; both directories deleted.
    """
    t0 = time.perf_counter()
    claims = store / "claims"
    claims.mkdir(exist_ok=True)
    claim = os.open(claims / "trial.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(claim, fcntl.LOCK_EX)
    run_dir = Path(tempfile.mkdtemp(prefix="cell-", dir=tmp_root))
    shutil.copytree(task_dir / "workspace", run_dir / "workspace")
    for name in ("home", "tmp", "bin"):
        (run_dir / name).mkdir()
    with open(run_dir / "bin" / "akm", "w") as fh:
        fh.write("#!/bin/sh\nexit 127\n")
        os.fchmod(fh.fileno(), 0o755)
    scratch = Path(tempfile.mkdtemp(prefix="verify-", dir=tmp_root))
    copy = scratch / "task"
    shutil.copytree(task_dir, copy, ignore=shutil.ignore_patterns("workspace", "solution"))
    (copy / "workspace").symlink_to(run_dir / "workspace")
    (scratch / "home").mkdir()
    # Each entry's real path as resolved before the first cell, checked with two stats: the least
    # work that still sees an entry moved since (cell/verifiers._real does the same).
    root = os.path.realpath(run_dir) + "/"
    path = [e for e, real in PATH_REALS if _same_dir(e, real) and not real.startswith(root)]
    env = {"PATH": os.pathsep.join(path), "HOME": str(scratch / "home"), "TMPDIR": str(scratch / "home")}
    proc = subprocess.Popen(
        ["bash", str(copy / "verify.sh")],
        cwd=run_dir / "workspace",
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    if proc.wait() != 0:  # a check that failed early would make the floor look cheap
        raise SystemExit(f"the guarded floor's verify.sh exited {proc.returncode}")
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    with open(store / "samples.jsonl", "a") as fh:
        fh.write(json.dumps({"task_id": "d/t0000", "outcome": "pass", "code": proc.returncode}) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.unlink(claims / "trial.lock")
    os.close(claim)
    shutil.rmtree(run_dir)
    shutil.rmtree(scratch)
    return time.perf_counter() - t0


PYTEST_FLOOR = """
import shutil, subprocess, tempfile
from pathlib import Path
import pytest

WORKSPACE, VERIFY, TMP = Path({workspace!r}), Path({verify!r}), Path({tmp!r})


@pytest.mark.parametrize("i", range({n}))
def test_floor(i):
    d = Path(tempfile.mkdtemp(prefix="floor-", dir=TMP))
    shutil.copytree(WORKSPACE, d / "workspace")
    subprocess.run(["bash", str(VERIFY)], cwd=d / "workspace", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shutil.rmtree(d)
"""


def pytest_floor(tmp: Path, task_dir: Path, n: int) -> float:
    """The floor's work as n items of a plain pytest file, timed as the bench is: (wall of the run
    - wall of its --co) / n. What pytest's own item costs on this machine (its protocol, the
    installed plugins' hooks, the terminal line) beside the in-process floor."""
    proj = tmp / "pfloor"
    (proj / "tmp").mkdir(parents=True, exist_ok=True)
    (proj / "pytest.ini").write_text("[pytest]\n")
    (proj / "test_floor.py").write_text(
        PYTEST_FLOOR.format(
            workspace=str(task_dir / "workspace"), verify=str(task_dir / "verify.sh"), tmp=str(proj / "tmp"), n=n
        )
    )
    argv = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_floor.py"]
    t_co, proc = timed_run([*argv, "--co"], proj)
    check(proc, "plain pytest --co of the floor")
    wall, proc = timed_run(argv, proj)
    check(proc, "plain pytest run of the floor")
    return (wall - t_co) / n


def section_cells(tmp: Path, n_cells: int, seeds: int, repeats: int) -> None:
    n_tasks = max(1, n_cells // seeds)
    n = n_tasks * seeds
    print(
        f"\n== 1. {n} nop cells, script verifier, serial ({n_tasks} tasks x 1 arm x {seeds} seeds), {repeats} repeats"
    )
    proj = make_project(tmp / "p1", n_tasks)
    # Twice the tasks: the difference of the two runs' walls is what N more cells cost, without
    # what a run pays once whatever its size (start-up, the report, pytest's summary).
    proj2 = make_project(tmp / "p1x2", 2 * n_tasks)
    task_dir = proj / "corpus" / "tasks" / "d" / "t0000"
    floor_tmp = tmp / "floor"
    floor_tmp.mkdir()
    guarded_store = tmp / "guarded-store"
    guarded_store.mkdir()
    floors: list[float] = []
    guarded: list[float] = []
    pytest_floors: list[float] = []
    startups: list[float] = []
    walls: list[float] = []
    per_wall: list[float] = []
    marginal: list[float] = []
    totals: list[float] = []
    parts: dict[str, list[float]] = {"setup": [], "agent": [], "verify": []}
    loads = []
    for r in range(repeats):
        loads.append(loadavg())
        for _ in range(n):  # interleaved: the two floors see the same moments of the machine
            floors.append(floor_cell(task_dir / "workspace", task_dir / "verify.sh", floor_tmp))
            guarded.append(guarded_floor_cell(task_dir, floor_tmp, guarded_store))
        pytest_floors.append(pytest_floor(tmp, task_dir, n))
        t_co, proc = timed_run(bench_argv(tmp, f"1co{r}", agent="nop", seeds=seeds, arms="noakm", extra=["--co"]), proj)
        check(proc, "pytest --co")
        startups.append(t_co)
        wall, proc = timed_run(bench_argv(tmp, f"1run{r}", agent="nop", seeds=seeds, arms="noakm"), proj)
        check(proc, "pytest run of nop cells")
        walls.append(wall)
        per_wall.append((wall - t_co) / n)
        wall2, proc = timed_run(bench_argv(tmp, f"1run2x{r}", agent="nop", seeds=seeds, arms="noakm"), proj2)
        check(proc, "pytest run of twice the nop cells")
        marginal.append((wall2 - wall) / n)
        if len(read_samples(tmp / f"store-1run2x{r}")) != 2 * n:
            raise SystemExit(f"expected {2 * n} samples of the run of twice the cells")
        samples = read_samples(tmp / f"store-1run{r}")
        if len(samples) != n:
            raise SystemExit(f"expected {n} samples, found {len(samples)}")
        totals.extend(s["timing_ms"]["total"] / 1000 for s in samples)
        for k in parts:
            parts[k].extend(s["timing_ms"][k] / 1000 for s in samples)
    f = med(floors)
    print(f"   load average per repeat: {'; '.join(loads)}")
    print(f"   floor (mkdtemp + copytree + bash verify.sh + rmtree, in-process): median {ms(f)} over {len(floors)}")
    print(
        f"   pytest start-up (--co of the same corpus): median {med(startups):.2f} s;"
        f" full run wall: median {med(walls):.2f} s"
    )
    print(
        f"   per cell from samples (timing_ms.total, integer ms; excludes the run-dir delete and"
        f" pytest's per-item work): median {ms(med(totals))} -> {verdict(med(totals) / f, 1.3)}"
    )
    print(
        f"      of which setup {ms(med(parts['setup']))}, agent {ms(med(parts['agent']))},"
        f" verify {ms(med(parts['verify']))} (medians)"
    )
    print(f"   per cell from (wall - start-up) / {n}: median {ms(med(per_wall))} -> {verdict(med(per_wall) / f, 1.3)}")
    g = med(guarded)
    print(
        f"   guarded floor (the floor plus the least work of each guarantee a cell keeps, in-process):"
        f" median {ms(g)} = {g / f:.2f}x the floor"
        + (": no harness that keeps them can reach 1.3x the floor" if g / f > 1.3 else "")
    )
    print(f"   per cell from (wall - start-up) / {n} against the guarded floor: {verdict(med(per_wall) / g, 1.3)}")
    m = med(marginal)
    print(
        f"   per cell at the margin, (wall of {2 * n} cells - wall of {n}) / {n}: median {ms(m)};"
        f" against the floor {m / f:.2f}x, against the guarded floor {verdict(m / g, 1.3)}"
    )
    pf = med(pytest_floors)
    print(
        f"   for reference, the floor's work as {n} items of a plain pytest file, (wall - --co) / {n}: median {ms(pf)}"
        f" ({ms(pf - f)} of pytest's own per item); the bench per item against it: {med(per_wall) / pf:.2f}x"
    )
    attribution(task_dir, floor_tmp, n)


def attribution(task_dir: Path, tmp_root: Path, n: int) -> None:
    """In-process medians of the pieces a cell repeats, to say where the time above the floor goes."""
    from pytest_akmbench.system import procs

    env = {"PATH": os.environ.get("PATH", os.defpath)}
    ws = Path(tempfile.mkdtemp(prefix="attr-", dir=tmp_root))
    shutil.copytree(task_dir / "workspace", ws / "workspace")
    tracker = procs.ProcessTracker("akmbench-bench-attribution/x")
    argv = ["bash", str(task_dir / "verify.sh")]

    def timing(fn) -> float:
        xs = []
        for _ in range(n):
            t0 = time.perf_counter()
            fn()
            xs.append(time.perf_counter() - t0)
        return med(xs)

    sweep = timing(lambda: procs.sweep("akmbench-bench-attribution/x"))
    kill_all = timing(tracker.kill_all)
    tracked = timing(lambda: tracker.run(argv, cwd=ws / "workspace", env=env, timeout_s=60))
    plain = timing(
        lambda: subprocess.run(
            argv, cwd=ws / "workspace", env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
    )
    tracker.kill_all()
    shutil.rmtree(ws)
    n_procs = sum(1 for p in os.listdir("/proc") if p.isdigit())
    print(
        f"   attribution (in-process medians, {n_procs} processes on the machine): procs.sweep() {ms(sweep)},"
        f" ProcessTracker.kill_all() with nothing tracked {ms(kill_all)} (a cell calls it 3 times: runner.run_cell"
        f" after the agent and in its finally, plugin.bench_procs finalizer); ProcessTracker.run(bash verify.sh)"
        f" {ms(tracked)} vs subprocess.run {ms(plain)}"
    )


# ---------------------------------------------------------------- 2. pytest verifier vs bare pytest


def section_pytest_verifier(tmp: Path, repeats: int) -> None:
    print(f"\n== 2. one pytest-verifier cell vs bare pytest of the same test file, {repeats} repeats")
    proj = make_project(
        tmp / "p2",
        1,
        verifier="pytest",
        prefix="p/pytest-task",
        workspace={"README.md": "Task: write hello to out.txt\n", "out.txt": "hello\n"},
    )
    task_dir = proj / "corpus" / "tasks" / "p" / "pytest-task0000"
    bare_env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    verifies: list[float] = []
    totals: list[float] = []
    walls: list[float] = []
    bares: list[float] = []
    loads = []
    for r in range(repeats):
        loads.append(loadavg())
        # Bare: a fresh workspace copy as cwd and a fresh copy of the tests outside any project.
        scratch = tmp / f"bare{r}"
        shutil.copytree(task_dir / "workspace", scratch / "workspace")
        shutil.copytree(task_dir / "tests", scratch / "verify" / "tests")
        t, proc = timed_run(
            [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(scratch / "verify" / "tests")],
            scratch / "workspace",
            env=bare_env,
        )
        check(proc, "bare pytest")
        bares.append(t)
        wall, proc = timed_run(bench_argv(tmp, f"2run{r}", agent="nop", seeds=1, arms="noakm"), proj)
        check(proc, "pytest-verifier cell")
        walls.append(wall)
        (sample,) = read_samples(tmp / f"store-2run{r}")
        if sample["outcome"] != "pass":
            raise SystemExit(f"pytest-verifier cell did not pass: {sample['reason']}")
        verifies.append(sample["timing_ms"]["verify"] / 1000)
        totals.append(sample["timing_ms"]["total"] / 1000)
    b = med(bares)
    print(f"   load average per repeat: {'; '.join(loads)}")
    print(f"   bare `python -m pytest -q -p no:cacheprovider tests/` (autoload off): median {ms(b)}")
    print(f"   cell timing_ms.verify: median {ms(med(verifies))} -> {verdict(med(verifies) / b, 1.1)}")
    print(
        f"   cell timing_ms.total (end to end inside the cell): median {ms(med(totals))}"
        f" -> {verdict(med(totals) / b, 1.1)}"
    )
    print(f"   (whole bench process for that one cell, incl. pytest start-up and report: median {med(walls):.2f} s)")


# ---------------------------------------------------------------- 3. collection of 10,000 cells

PROBE_CONFTEST = '''
"""Benchmark probe, active only with AKMB_PROBE set: times the plugin's resume done-check
(which runs after collection, outside --co), optionally fills the store with one synthetic
sample per cell under the plugin's own fingerprints, and skips running the items."""
import json, os, time
import pytest

OUT = os.environ.get("AKMB_PROBE")
T = {}

if OUT:
    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(session, config, items):
        T["collected"] = time.perf_counter()

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_collection(session):
        result = yield
        t_checked = time.perf_counter()
        from pytest_akmbench.plugin.nodes import CELL_KEY, STORED_KEY
        from pytest_akmbench.plugin.state import STATE_KEY
        from pytest_akmbench.cell.context import cell_fingerprint
        from pytest_akmbench.store.samples import fingerprint_hash
        items = [i for i in session.items if CELL_KEY in i.stash]
        info = {"items": len(items), "from_store": sum(STORED_KEY in i.stash for i in items),
                "check_s": t_checked - T["collected"]}
        template_path = os.environ.get("AKMB_FILL")
        if template_path:
            state = session.config.stash[STATE_KEY]
            template = json.loads(open(template_path).read())
            store = state.store_dir
            store.mkdir(parents=True, exist_ok=True)
            with open(store / "samples.jsonl", "a") as fh:
                for item in items:
                    cell = item.stash[CELL_KEY]
                    fp = cell_fingerprint(cell, state.context())
                    rec = dict(template, task_id=cell.task.id, arm=cell.arm, seed=cell.seed,
                               domain=cell.task.domain, slice=cell.task.slice, fingerprint=fp,
                               fingerprint_hash=fingerprint_hash(fp), outcome="pass")
                    fh.write(json.dumps(rec, separators=(",", ":")) + "\\n")
        with open(OUT, "w") as fh:
            json.dump(info, fh)
        return result

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(session):
        return True  # collected and checked; run nothing
'''


def section_collection(tmp: Path, repeats: int, real_fill: bool, n_tasks: int = 500) -> None:
    seeds = 10
    n = n_tasks * 2 * seeds
    print(f"\n== 3. collection of {n} cells ({n_tasks} tasks x 2 arms x {seeds} seeds, nop agent), {repeats} repeats")
    proj = make_project(tmp / "p3", n_tasks)
    (proj / "conftest.py").write_text(PROBE_CONFTEST)
    plain = tmp / "p3plain"
    plain.mkdir()
    (plain / "pytest.ini").write_text("[pytest]\n")
    (plain / "test_param.py").write_text(
        f"import pytest\n\n\n@pytest.mark.parametrize('i', range({n}))\ndef test_item(i):\n    pass\n"
    )

    def co(tag: str) -> float:
        t, proc = timed_run(bench_argv(tmp, tag, agent="nop", seeds=seeds, arms="noakm,akm", extra=["--co"]), proj)
        check(proc, "pytest --co of the cells")
        if f"{n} tests collected" not in proc.stdout:
            raise SystemExit(f"unexpected --co output: {proc.stdout[-300:]}")
        return t

    def probe(tag: str, fill: Path | None = None) -> dict:
        out = tmp / f"probe-{tag}.json"
        env = {**os.environ, "AKMB_PROBE": str(out)}
        if fill is not None:
            env["AKMB_FILL"] = str(fill)
        t, proc = timed_run(bench_argv(tmp, tag, agent="nop", seeds=seeds, arms="noakm,akm"), proj, env=env)
        check(proc, "probe run", ok=(0, 5))
        info = json.loads(out.read_text())
        info["wall_s"] = t
        return info

    # Fill one store with a valid sample for every cell.
    t0 = time.perf_counter()
    if real_fill:
        _, proc = timed_run(
            bench_argv(tmp, "3full", agent="nop", seeds=seeds, arms="noakm,akm", extra=["--parallel", "2"]), proj
        )
        check(proc, "real fill run")
        how = "really ran every cell once with --parallel 2"
    else:
        # A real nop sample as the template, so records have a real size (~1.2 KB); the probe
        # stamps each with its cell and the fingerprint the plugin itself computes.
        _, proc = timed_run(bench_argv(tmp, "3tmpl", agent="nop", seeds=1, arms="noakm", extra=["-k", "t0000"]), proj)
        check(proc, "template run")
        template = tmp / "template.json"
        template.write_text(json.dumps(read_samples(tmp / "store-3tmpl")[0]))
        probe("3full", fill=template)
        how = "synthetic samples (a real nop sample re-stamped with each cell's plugin-computed fingerprint)"
    stored = len(read_samples(tmp / "store-3full"))
    print(f"   full store: {stored} samples, {how}, in {time.perf_counter() - t0:.1f} s")

    bench_co: list[float] = []
    bench_co_full: list[float] = []
    plain_co: list[float] = []
    check_empty: list[float] = []
    check_full: list[float] = []
    wall_empty: list[float] = []
    wall_full: list[float] = []
    hits: list[int] = []
    loads = []
    for r in range(repeats):
        loads.append(loadavg())
        t, proc = timed_run([PY, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider", "test_param.py"], plain)
        check(proc, "plain --co")
        plain_co.append(t)
        shutil.rmtree(tmp / f"store-3empty{r}", ignore_errors=True)
        bench_co.append(co(f"3empty{r}"))
        bench_co_full.append(co("3full"))
        empty = probe(f"3pe{r}")
        full = probe("3full")
        check_empty.append(empty["check_s"])
        check_full.append(full["check_s"])
        wall_empty.append(empty["wall_s"])
        wall_full.append(full["wall_s"])
        hits.append(full["from_store"])
    p = med(plain_co)
    print(f"   load average per repeat: {'; '.join(loads)}")
    print(f"   plain pytest --co -q of {n} parametrized items: median {p:.2f} s")
    print(
        f"   bench pytest --co -q of {n} cells, empty store: median {med(bench_co):.2f} s"
        f" -> {verdict(med(bench_co) / p, 1.5)}"
    )
    print(
        f"   bench pytest --co -q of {n} cells, full store:  median {med(bench_co_full):.2f} s"
        f" (the done-check is skipped under --co: plugin.py pytest_collection)"
    )
    print(
        "   done-check (after collection, in-process probe; includes reading samples.jsonl and"
        " hashing each cell's fingerprint):"
    )
    print(
        f"      empty store: median {ms(med(check_empty))}; full store ({min(hits)}..{max(hits)} of {n} cells"
        f" found done): median {ms(med(check_full))}"
    )
    added = med(check_full)
    print(
        f"      done-check with the full store: {added:.2f} s (target <= 1 s: {'OK' if added <= 1 else 'MISSED'});"
        f" over the empty-store check: +{ms(med(check_full) - med(check_empty))}"
    )
    print(
        f"   whole probe process (collect + check + report, no items run): empty store {med(wall_empty):.2f} s,"
        f" full store {med(wall_full):.2f} s"
    )


# ---------------------------------------------------------------- 4. --parallel 4 vs pytest -n 4

SLEEPY_CONFTEST = '''
import json, time
from pathlib import Path
from pytest_akmbench.agents import AgentResult

DURATIONS = json.loads((Path(__file__).parent / "durations.json").read_text())


class Sleepy:
    """Sleeps the cell's pre-drawn duration; writes nothing."""
    name = "sleepy"
    version = "1"
    uses_akm = False  # it never calls akm: the akm arm's cells then need no akm installed
    def start(self, session): pass
    def stop(self): pass
    def run(self, request):
        time.sleep(DURATIONS[f"{request.task.id}|{request.arm}|{request.seed}"])
        return AgentResult(exit_code=0, token_measurement="unsupported")


def pytest_akmbench_agents():
    return [Sleepy()]
'''

PLAIN_SLEEP_TEST = """
import json, time
from pathlib import Path
import pytest

DURATIONS = json.loads((Path(__file__).parent / "durations.json").read_text())


@pytest.mark.parametrize("d", DURATIONS)
def test_sleep(d):
    time.sleep(d)
"""


def section_parallel(tmp: Path, repeats: int, workers: int = 4, n_tasks: int = 8) -> None:
    arms, seeds = ("noakm", "akm"), 3
    print(
        f"\n== 4. {n_tasks * len(arms) * seeds} sleeping cells ({n_tasks} tasks x {len(arms)} arms x {seeds} seeds)"
        f" at --parallel {workers} vs pytest -n {workers}, {repeats} repeats"
    )
    proj = make_project(tmp / "p4", n_tasks)
    ids = [f"d/t{i:04d}" for i in range(n_tasks)]
    # Drawn once, hash-free string seeds; the same list in collection order for both sides.
    keyed = {
        f"{t}|{a}|{s}": random.Random(f"{t}|{a}|{s}").uniform(0.2, 1.0)
        for t in ids
        for a in arms
        for s in range(1, seeds + 1)
    }
    ordered = list(keyed.values())
    (proj / "durations.json").write_text(json.dumps(keyed))
    (proj / "conftest.py").write_text(SLEEPY_CONFTEST)
    plain = tmp / "p4plain"
    plain.mkdir()
    (plain / "pytest.ini").write_text("[pytest]\n")
    (plain / "durations.json").write_text(json.dumps(ordered))
    (plain / "test_sleep.py").write_text(PLAIN_SLEEP_TEST)
    plain_base = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", str(workers), "test_sleep.py"]
    bench: list[float] = []
    load_: list[float] = []
    steal: list[float] = []
    loads = []
    for r in range(repeats):
        loads.append(loadavg())
        t, proc = timed_run(plain_base, plain)
        check(proc, "plain -n load")
        load_.append(t)
        t, proc = timed_run(plain_base + ["--dist", "worksteal"], plain)
        check(proc, "plain -n worksteal")
        steal.append(t)
        t, proc = timed_run(
            bench_argv(
                tmp, f"4run{r}", agent="sleepy", seeds=seeds, arms=",".join(arms), extra=["--parallel", str(workers)]
            ),
            proj,
        )
        check(proc, "bench --parallel")
        n_samples = len(read_samples(tmp / f"store-4run{r}"))
        if n_samples != len(ordered):
            raise SystemExit(f"expected {len(ordered)} samples, got {n_samples}")
        bench.append(t)
    b = med(bench)
    print(f"   load average per repeat: {'; '.join(loads)}")
    print(
        f"   serial sum of sleeps: {sum(ordered):.2f} s; ideal at {workers} workers >= {sum(ordered) / workers:.2f} s"
        f" (longest single sleep {max(ordered):.2f} s)"
    )
    print(f"   plain pytest -n {workers} --dist load:      median {med(load_):.2f} s")
    print(f"   plain pytest -n {workers} --dist worksteal: median {med(steal):.2f} s")
    print(f"   bench --parallel {workers} (worksteal):     median {b:.2f} s")
    print(f"   bench vs plain load:      {verdict(b / med(load_), 1.15)}")
    print(f"   bench vs plain worksteal: {verdict(b / med(steal), 1.15)}")


# ---------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", type=int, default=200, help="cells of section 1 (default 200)")
    ap.add_argument("--seeds", type=int, default=10, help="seeds per task in section 1 (default 10)")
    ap.add_argument("--repeats", type=int, default=3, help="repeats of each measurement (default 3)")
    ap.add_argument("--sections", default="1,2,3,4", help="comma-separated sections to run (default all)")
    ap.add_argument(
        "--real-fill",
        action="store_true",
        help="section 3: fill the store by really running the 10,000 cells (--parallel 2)"
        " instead of writing synthetic samples",
    )
    ap.add_argument("--co-tasks", type=int, default=500, help="tasks of section 3, x 2 arms x 10 seeds (default 500)")
    ap.add_argument("--sleep-tasks", type=int, default=8, help="tasks of section 4, x 2 arms x 3 seeds (default 8)")
    ap.add_argument("--workers", type=int, default=4, help="workers of section 4 (default 4)")
    ap.add_argument(
        "--sandbox",
        choices=("auto", "bwrap", "none"),
        help="--bench-sandbox of every bench run (default: the plugin's own); the floors run unsandboxed",
    )
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (printed) for inspection")
    args = smoke.parse(ap, cells=4, seeds=2, repeats=1, co_tasks=5, sleep_tasks=1, workers=2)
    sections = {s.strip() for s in args.sections.split(",")}
    if args.sandbox:
        SANDBOX[:] = ["--bench-sandbox", args.sandbox]
    print(
        f"pytest-akmbench cells benchmark; python {sys.version.split()[0]}, {os.cpu_count()} CPUs,"
        f" load average at start {loadavg()}, sandbox {args.sandbox or 'default'}"
    )
    tmp = Path(tempfile.mkdtemp(prefix="akmbench-cells-bench-"))
    t0 = time.perf_counter()
    try:
        if "1" in sections:
            section_cells(tmp, args.cells, args.seeds, args.repeats)
        if "2" in sections:
            section_pytest_verifier(tmp, args.repeats if args.smoke else max(args.repeats, 5))
        if "3" in sections:
            section_collection(tmp, args.repeats, args.real_fill, args.co_tasks)
        if "4" in sections:
            section_parallel(tmp, args.repeats, args.workers, args.sleep_tasks)
    finally:
        if args.keep:
            print(f"\nkept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"\ndone in {time.perf_counter() - t0:.0f} s; load average at end {loadavg()}")


if __name__ == "__main__":
    main()
