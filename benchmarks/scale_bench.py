"""Scale-out of pytest-akmbench: the same 96 sleeping cells through each way of spreading them.

    python benchmarks/scale_bench.py                    # every scenario, 3 repeats
    python benchmarks/scale_bench.py --scenarios a,c --repeats 1

The cells: 16 tasks x 2 arms x 3 seeds of a model-free agent (``sleepy``) that sleeps a duration
drawn per cell from ``random.Random("<task>|<arm>|<seed>").uniform(0.2, 1.0)`` (string seeds: no
hash randomisation) and writes nothing; script verifiers. The floor is plain ``pytest -n 4 --dist
worksteal`` running 96 tests that sleep the same durations, and the ideal is the sum of the sleeps
/ 4. Scenarios (``SCENARIOS``; one more is a function and one line there):

  a. one machine, ``--parallel 4`` (xdist -n 4, worksteal);
  b. remote workers on this machine, ``--tx 4*popen//chdir=<a copy of the project>``: the
     controller claims and stores every sample (benchmarks/scale_remote.py runs it alone);
  c. two CI shards (``--bench-shard 1/2`` and ``2/2``, ``-n 2`` each, their own stores) run at the
     same time, then ``python -m pytest_akmbench report --store A --store B``: the wall is from
     the start of both to the end of the merge.

Each repeat runs the floor and every scenario, interleaved; medians are printed with
/proc/loadavg. Target: each scenario within 1.15x of the floor. Everything lives in a temporary
directory, removed at the end (``--keep`` keeps it). Prints; asserts nothing but that every run
stored its 96 samples and each merged report is complete.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import scale_remote
import smoke
from cells_bench import (
    PLAIN_SLEEP_TEST,
    PY,
    SLEEPY_CONFTEST,
    bench_argv,
    check,
    loadavg,
    make_project,
    med,
    read_samples,
    timed_run,
)

TASKS, ARMS, SEEDS, WORKERS = 16, ("noakm", "akm"), 3, 4
TARGET = 1.15
CONFTEST = SLEEPY_CONFTEST


@dataclass
class Setup:
    """The project of sleeping cells, the plain-pytest twin, and the durations both sleep."""

    work: Path
    project: Path
    plain: Path
    durations: list[float]
    repeat: int = 0

    @property
    def cells(self) -> int:
        return len(self.durations)

    def argv(self, tag: str, *extra: str) -> list[str]:
        return bench_argv(self.work, tag, agent="sleepy", seeds=SEEDS, arms=",".join(ARMS), extra=list(extra))


@dataclass
class Scenario:
    key: str
    label: str
    run: Callable[[Setup], float]  # one run's wall in seconds; raises SystemExit when it went wrong
    walls: list[float] = field(default_factory=list)
    parts: dict[str, list[float]] = field(default_factory=dict)  # named parts of a run's wall


def setup(work: Path) -> Setup:
    project = make_project(work / "project", TASKS)
    ids = [f"d/t{i:04d}" for i in range(TASKS)]
    keyed = {
        f"{t}|{a}|{s}": random.Random(f"{t}|{a}|{s}").uniform(0.2, 1.0)
        for t in ids
        for a in ARMS
        for s in range(1, SEEDS + 1)
    }
    (project / "durations.json").write_text(json.dumps(keyed))
    (project / "conftest.py").write_text(CONFTEST)
    plain = work / "plain"
    plain.mkdir()
    (plain / "pytest.ini").write_text("[pytest]\n")
    (plain / "durations.json").write_text(json.dumps(list(keyed.values())))
    (plain / "test_sleep.py").write_text(PLAIN_SLEEP_TEST)
    return Setup(work, project, plain, list(keyed.values()))


def floor(s: Setup) -> float:
    argv = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", str(WORKERS), "--dist", "worksteal"]
    t, proc = timed_run([*argv, "test_sleep.py"], s.plain)
    check(proc, "plain pytest -n 4")
    return t


def local(s: Setup) -> float:
    tag = f"a{s.repeat}"
    t, proc = timed_run(s.argv(tag, "--parallel", str(WORKERS)), s.project)
    check(proc, "bench --parallel 4")
    stored = len(read_samples(s.work / f"store-{tag}"))
    if stored != s.cells:
        raise SystemExit(f"a: expected {s.cells} samples, the store has {stored}")
    return t


def shards_merged(s: Setup) -> float:
    tags = [f"c{s.repeat}-{k}" for k in (1, 2)]
    t0 = time.perf_counter()
    procs = [
        subprocess.Popen(
            s.argv(tag, "-n", str(WORKERS // 2), "--bench-shard", f"{k}/2"),
            cwd=s.project,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for k, tag in enumerate(tags, start=1)
    ]
    for proc in procs:
        out, _ = proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(f"c: a shard exited {proc.returncode}:\n{out[-3000:]}")
    ran = time.perf_counter() - t0
    stores = [str(s.work / f"store-{tag}") for tag in tags]
    out_dir = s.work / f"merged-c{s.repeat}"
    merge = [PY, "-m", "pytest_akmbench", "report", "--agent", "sleepy", "--out", str(out_dir)]
    proc = subprocess.run(
        [*merge, *(x for store in stores for x in ("--store", store))], cwd=s.project, capture_output=True, text=True
    )
    t = time.perf_counter() - t0
    check(proc, "report --store A --store B")
    SCENARIOS["c"].parts.setdefault("both shards", []).append(ran)
    SCENARIOS["c"].parts.setdefault("merge", []).append(t - ran)
    report = json.loads((out_dir / "report.json").read_text())
    if len(report["runs"]) != s.cells or not report["complete"]:
        raise SystemExit(f"c: the merged report has {len(report['runs'])} runs, complete={report['complete']}")
    return t


def remote_popen(s: Setup) -> float:
    project = s.work / "remote-project"  # the same 96 cells and durations (scale_remote.py)
    if not project.exists():
        scale_remote.make_project(project)
    result = scale_remote.run_popen(project, WORKERS)
    SCENARIOS["b"].parts.setdefault("report bytes per sample", []).append(result["bytes_per_sample"])
    return float(result["wall_s"])


SCENARIOS: dict[str, Scenario] = {
    "a": Scenario("a", f"local --parallel {WORKERS}", local),
    "b": Scenario("b", f"--tx {WORKERS}*popen//chdir=<copy>", remote_popen),
    "c": Scenario("c", "2 shards of -n 2 at once, then merged", shards_merged),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"which of {','.join(SCENARIOS)} (default: all)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = smoke.parse(ap, repeats=1)
    if args.smoke:  # 2 tasks x 2 arms x 1 seed at 2 workers, here and in scale_remote's project (b)
        global TASKS, SEEDS, WORKERS
        TASKS, SEEDS, WORKERS = 2, 1, 2
        scale_remote.shrink()
        SCENARIOS["a"].label, SCENARIOS["b"].label = "local --parallel 2", "--tx 2*popen//chdir=<copy>"
        SCENARIOS["c"].label = "2 shards of -n 1 at once, then merged"
    chosen = [SCENARIOS[k.strip()] for k in args.scenarios.split(",") if k.strip()]
    work = Path(tempfile.mkdtemp(prefix="scale-bench-"))
    try:
        s = setup(work)
        ideal = sum(s.durations) / WORKERS
        floors, loads = [], []
        for r in range(args.repeats):
            s.repeat = r
            loads.append(loadavg())
            floors.append(floor(s))
            for sc in chosen:
                sc.walls.append(sc.run(s))
        base = med(floors)
        print(f"{s.cells} sleeping cells ({TASKS} tasks x {len(ARMS)} arms x {SEEDS} seeds), {args.repeats} repeats")
        print(f"load average per repeat: {'; '.join(loads)}")
        print(f"sum of sleeps {sum(s.durations):.2f} s; ideal at {WORKERS} workers {ideal:.2f} s\n")
        print(f"| run | median wall | vs ideal | vs plain -n {WORKERS} | target <= {TARGET}x |")
        print("|---|---|---|---|---|")
        print(f"| plain pytest -n {WORKERS} --dist worksteal | {base:.2f} s | {base / ideal:.2f}x | 1.00x | |")
        for sc in chosen:
            wall = med(sc.walls)
            ok = "OK" if wall / base <= TARGET else "MISSED"
            print(f"| {sc.key}. {sc.label} | {wall:.2f} s | {wall / ideal:.2f}x | {wall / base:.2f}x | {ok} |")
        for sc in chosen:
            for name, walls in sc.parts.items():
                unit = "" if "bytes" in name else " s"
                print(f"{sc.key}: {name}: median {med(walls):.2f}{unit}")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
