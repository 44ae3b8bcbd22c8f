"""Scenario (b) of the scale-out benchmark: cells through remote xdist workers on one machine.

    python benchmarks/scale_remote.py                 # 96 cells, 4 workers, 3 repeats
    python benchmarks/scale_remote.py --repeats 1 --keep

96 cells (16 tasks x 2 arms x 3 seeds) of a model-free agent that sleeps an uneven 0.2-1.0 s
(drawn once per cell, seeded) run three ways, interleaved per repeat:

* ``--tx 4*popen//chdir=<copy of the project>`` (``run_popen``): every cell runs in the copy,
  its sample and transcript travel back in the report, the controller appends them;
* the bench at ``-n 4`` (``run_local``): workers append themselves;
* plain ``pytest -n 4 --dist worksteal`` over 96 tests sleeping the same durations.

Printed: median wall of each against the ideal (sum of sleeps / 4), the remote run's ratio to
the bench at ``-n 4`` and to plain xdist (target <= 1.15x), and the bytes of serialised pytest
reports the controller received per sample (what xdist sends; the remote run adds its
transcripts, and each cell's claim message of a few hundred bytes, not counted). Asserts
nothing; every run must store all 96 samples or the script stops.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import smoke

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.corpus import write_stash, write_task  # noqa: E402

PY = sys.executable
N_TASKS, ARMS, SEEDS = 16, ("noakm", "akm"), 3

# The sleeping agent, plus a controller-side count of the report bytes it receives.
CONFTEST = """
import json, time
from pathlib import Path
from pytest_akmbench.agents import AgentResult

HERE = Path(__file__).parent
DURATIONS = json.loads((HERE / "durations.json").read_text())
SENT = {"bytes": 0, "samples": 0}
CONFIG = []


class Sleepy:
    name, version, uses_akm = "sleepy", "1", False
    def start(self, session): pass
    def stop(self): pass
    def run(self, request):
        time.sleep(DURATIONS[f"{request.task.id}|{request.arm}|{request.seed}"])
        request.transcript.write_text(json.dumps({"slept": True}) + "\\n")
        return AgentResult(exit_code=0, token_measurement="unsupported", transcript_written=True)


def pytest_akmbench_agents():
    return [Sleepy()]


def pytest_configure(config):
    CONFIG.append(config)


def pytest_runtest_logreport(report):
    config = CONFIG[-1]
    if hasattr(config, "workerinput") or not hasattr(report, "node"):
        return  # only what a controller received from a worker
    data = config.hook.pytest_report_to_serializable(config=config, report=report)
    data.pop("node", None)  # set by the controller on arrival, never sent
    SENT["bytes"] += len(json.dumps(data))
    if report.when == "setup" and getattr(report, "akmbench_sample", None):
        SENT["samples"] += 1


def pytest_sessionfinish(session):
    if not hasattr(session.config, "workerinput"):
        (HERE / "sent.json").write_text(json.dumps(SENT))
"""

PLAIN_TEST = """
import json, time
from pathlib import Path
import pytest

DURATIONS = json.loads((Path(__file__).parent / "durations.json").read_text())


@pytest.mark.parametrize("d", DURATIONS)
def test_sleep(d):
    time.sleep(d)
"""


def shrink() -> None:
    """Smoke size: 2 tasks x 2 arms x 1 seed."""
    global N_TASKS, SEEDS
    N_TASKS, SEEDS = 2, 1


def durations() -> dict[str, float]:
    ids = [f"d/t{i:04d}" for i in range(N_TASKS)]
    return {
        f"{t}|{a}|{s}": random.Random(f"{t}|{a}|{s}").uniform(0.2, 1.0)
        for t in ids
        for a in ARMS
        for s in range(1, SEEDS + 1)
    }


def make_project(base: Path) -> Path:
    """The sleeping-agent project: corpus, stash, conftest, durations; store and tmp inside."""
    base.mkdir(parents=True)
    (base / "pytest.ini").write_text("[pytest]\nbench_store = store\nbench_report = report\nbench_tmp = cells\n")
    write_stash(base / "corpus" / "stashes")
    for i in range(N_TASKS):
        write_task(base / "corpus" / "tasks", f"d/t{i:04d}", verify="grep -q Task README.md\n")
    (base / "conftest.py").write_text(CONFTEST)
    (base / "durations.json").write_text(json.dumps(durations()))
    return base


def _bench(project: Path, *extra: str) -> dict[str, Any]:
    for out in ("store", "report", "cells", "sent.json"):
        path = project / out
        shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
    argv = [PY, "-m", "pytest", "corpus/tasks", "-q", "-p", "no:cacheprovider", "--bench-agent", "sleepy"]
    argv += ["--bench-seeds", str(SEEDS), "--bench-arms", ",".join(ARMS), *extra]
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=project, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(extra)} exited {proc.returncode}:\n{(proc.stdout + proc.stderr)[-3000:]}")
    stored = (project / "store" / "samples.jsonl").read_text().splitlines()
    if len(stored) != N_TASKS * len(ARMS) * SEEDS:
        raise SystemExit(f"{' '.join(extra)}: expected {N_TASKS * len(ARMS) * SEEDS} samples, got {len(stored)}")
    sent = json.loads((project / "sent.json").read_text())
    return {"wall_s": wall, "samples": len(stored), "bytes_per_sample": sent["bytes"] / max(1, sent["samples"])}


def run_popen(corpus_dir: Path, workers: int = 4) -> dict[str, Any]:
    """The project at ``corpus_dir`` through ``--tx N*popen//chdir=<a copy of it>``."""
    copy = corpus_dir.parent / f"{corpus_dir.name}-remote"
    if not copy.exists():
        shutil.copytree(corpus_dir, copy, ignore=shutil.ignore_patterns("store", "report", "cells", "sent.json"))
    result = _bench(corpus_dir, "--tx", f"{workers}*popen//chdir={copy}", "--dist", "worksteal")
    if (copy / "store").exists():
        raise SystemExit(f"{copy}: a remote worker wrote a store of its own")
    return result


def run_local(corpus_dir: Path, workers: int = 4) -> dict[str, Any]:
    """The same project at ``-n N --dist worksteal``: local workers append themselves."""
    return _bench(corpus_dir, "-n", str(workers), "--dist", "worksteal")


def run_plain(work: Path, workers: int = 4) -> dict[str, Any]:
    """Plain pytest-xdist over tests sleeping the same durations: the floor."""
    plain = work / "plain"
    if not plain.exists():
        plain.mkdir()
        (plain / "pytest.ini").write_text("[pytest]\n")
        (plain / "durations.json").write_text(json.dumps(list(durations().values())))
        (plain / "test_sleep.py").write_text(PLAIN_TEST)
    argv = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", str(workers), "--dist", "worksteal"]
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=plain, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"plain pytest exited {proc.returncode}:\n{proc.stdout[-3000:]}")
    return {"wall_s": time.perf_counter() - t0}


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3, help="repeats of each measurement (default 3)")
    ap.add_argument("--workers", type=int, default=4, help="workers of every run (default 4)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = smoke.parse(ap, repeats=1, workers=2)
    if args.smoke:
        shrink()
    work = Path(tempfile.mkdtemp(prefix="scale-remote-"))
    try:
        project = make_project(work / "proj")
        runs: dict[str, list[dict[str, Any]]] = {"popen": [], "local": [], "plain": []}
        loads = []
        for _ in range(args.repeats):
            loads.append(loadavg())
            runs["plain"].append(run_plain(work, args.workers))
            runs["local"].append(run_local(project, args.workers))
            runs["popen"].append(run_popen(project, args.workers))
        report(runs, args.workers, loads)
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def report(runs: dict[str, list[dict[str, Any]]], workers: int, loads: list[str]) -> None:
    def med(name: str, key: str = "wall_s") -> float:
        return statistics.median(r[key] for r in runs[name])

    sleeps = list(durations().values())
    ideal = sum(sleeps) / workers
    print(f"== (b) {len(sleeps)} sleeping cells (0.2-1.0 s), {workers} workers, {len(runs['popen'])} repeats")
    print(f"   load average per repeat: {'; '.join(loads)}")
    print(f"   ideal (sum of sleeps / {workers}): {ideal:.2f} s (sum {sum(sleeps):.2f} s)")
    rows = (
        ("plain pytest -n (worksteal)", "plain"),
        ("bench -n (worksteal)", "local"),
        ("bench --tx popen//chdir", "popen"),
    )
    for label, name in rows:
        extra = f", {med(name, 'bytes_per_sample'):.0f} B/sample" if name != "plain" else ""
        print(f"   {label:30s} median {med(name):6.2f} s ({med(name) / ideal:.2f}x ideal{extra})")
    for base in ("local", "plain"):
        ratio = med("popen") / med(base)
        print(f"   popen vs {base}: {ratio:.2f}x (target <= 1.15x: {'OK' if ratio <= 1.15 else 'MISSED'})")


if __name__ == "__main__":
    main()
