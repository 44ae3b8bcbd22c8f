"""Benchmark the sample store at realistic scale: ``python benchmarks/store_bench.py``.

Writes 100,000 synthetic ~1.5 KB samples (2,000 tasks x 3 arms x ~17 seeds) with
``SampleStore.append``, then measures, each in a fresh child process so peak RSS belongs
to that phase alone:

* ``read()`` + ``latest_valid`` wall time and peak memory (ru_maxrss; tracemalloc in a
  separate pass because tracing slows decoding several-fold);
* the done-check of 10,000 cells (the seeds each cell holds, from ``latest_valid``).

Also times a short run of durable (fsync) appends. Prints figures; asserts nothing.
Targets: read + index of 100k samples well under 5 s and 500 MB; done-check <= 1 s.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import smoke

from pytest_akmbench.store.samples import SampleStore, fingerprint_hash, latest_valid

N_RECORDS = 100_000
N_TASKS = 2_000
ARMS = ("noakm", "akm", "akm-feedback")
N_CELLS_CHECK = 10_000
N_FSYNC = 2_000
SMOKE: list[str] = []  # ["--smoke"] under --smoke: the children read at the same tiny sizes


def _fingerprint(arm: str) -> dict:
    return {
        "model": "anthropic/claude-sonnet-4-5",
        "provider": "anthropic",
        "harness": "pytest-akmbench/0.1.0",
        "agent": "opencode/1.0.12",
        "arm": arm,
        "corpus_hash": "3f9a1c0d5e7b2a46",
        "prompt_version": "v3",
        "temperature": 0.0,
        "max_turns": 40,
    }


def synthetic_records(n: int = N_RECORDS) -> list[dict]:
    """Deterministic records shaped like real samples (~1.5 KB of JSON each)."""
    rng = random.Random(1234)
    fps = {arm: (_fingerprint(arm), fingerprint_hash(_fingerprint(arm))) for arm in ARMS}
    records = []
    i = 0
    seed = 0
    while len(records) < n:
        seed += 1
        for t in range(N_TASKS):
            for arm in ARMS:
                if len(records) >= n:
                    break
                i += 1
                fp, fph = fps[arm]
                inp, out = rng.randint(2_000, 400_000), rng.randint(200, 30_000)
                outcome = rng.choices(("pass", "fail", "budget_exceeded", "harness_error"), (50, 40, 7, 3))[0]
                records.append(
                    {
                        "task_id": f"domain-{t % 23:02d}/task-{t:05d}",
                        "arm": arm,
                        "seed": seed,
                        "outcome": outcome,
                        "fingerprint": fp,
                        "fingerprint_hash": fph,
                        "run_id": f"20250101T120000Z-{seed:04x}",
                        "started_at": "2025-01-01T12:00:00.000000+00:00",
                        "finished_at": "2025-01-01T12:03:21.123456+00:00",
                        "duration_s": round(rng.uniform(5, 600), 3),
                        "tokens": {
                            "input": inp,
                            "output": out,
                            "cache_read": rng.randint(0, inp),
                            "cache_write": rng.randint(0, 20_000),
                            "reasoning": rng.randint(0, 8_000),
                            "total": inp + out,
                        },
                        "cost_usd": round(rng.uniform(0.01, 3), 6),
                        "turns": rng.randint(1, 40),
                        "tool_calls": {
                            "bash": rng.randint(0, 30),
                            "read": rng.randint(0, 20),
                            "edit": rng.randint(0, 10),
                            "akm_search": rng.randint(0, 5),
                            "akm_show": rng.randint(0, 5),
                        },
                        "akm": {
                            "searches": rng.randint(0, 5),
                            "assets_loaded": rng.randint(0, 8),
                            "gold_ref_loaded": rng.random() < 0.5,
                            "feedback_events": rng.randint(0, 3),
                        },
                        "verifier": {
                            "kind": "pytest",
                            "exit_code": int(outcome != "pass"),
                            "duration_s": round(rng.uniform(0.1, 30), 3),
                            "stdout_tail": "".join(rng.choices("abcdefghij .\n", k=380)),
                        },
                        "budget": {"max_tokens": 500_000, "max_wall_s": 900, "max_turns": 40},
                        "transcript": f"transcripts/20250101T120000Z-{seed:04x}/task-{t:05d}_{arm}_{seed}-a{i:06d}.jsonl",
                        "error": None if outcome != "harness_error" else "agent process exited 137 (killed)",
                        "worker": f"gw{i % 8}",
                        "attempt": f"a{i:06d}",
                    }
                )
    return records


def _maxrss_mb() -> float:
    """Peak RSS of this process in MB."""
    # Prefer VmHWM: Linux carries ru_maxrss over fork+exec, so a child spawned by this
    # (large) parent would report the parent's peak; VmHWM resets with the new address space.
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 2**20 if sys.platform == "darwin" else rss / 1024  # bytes on macOS, KiB elsewhere


def child_read(directory: Path) -> None:
    """Phase run in a fresh process: read + index, done-check; prints key=value lines."""
    base = _maxrss_mb()
    store = SampleStore(directory)
    t0 = time.perf_counter()
    records, warnings = store.read()
    t1 = time.perf_counter()
    latest = latest_valid(records)
    t2 = time.perf_counter()
    # The done-check a resuming run makes: the seeds each cell already holds a valid sample of.
    done: dict[tuple[str, str, str], set[int]] = {}
    for task_id, arm, fp, seed in latest_valid(records, lambda r: r["fingerprint_hash"]):
        done.setdefault((task_id, arm, fp), set()).add(seed)
    cells = [
        (f"domain-{t % 23:02d}/task-{t:05d}", arm, fingerprint_hash(_fingerprint(arm)))
        for t in range(N_TASKS)
        for arm in ARMS
    ][: N_CELLS_CHECK // 2]
    cells += [(f"domain-00/missing-{k:05d}", "akm", "0" * 16) for k in range(N_CELLS_CHECK - len(cells))]
    wanted = range(1, 18)
    todo = sum(1 for cell in cells for s in wanted if s not in done.get(cell, ()))
    t3 = time.perf_counter()
    print(f"records={len(records)} warnings={len(warnings)} latest={len(latest)} done_cells={len(done)} todo={todo}")
    print(f"read_s={t1 - t0:.3f} index_s={t2 - t1:.3f} done_s={t3 - t2:.3f}")
    print(f"rss_base_mb={base:.1f} rss_peak_mb={_maxrss_mb():.1f}")


def child_trace(directory: Path) -> None:
    tracemalloc.start()
    records, _ = SampleStore(directory).read()
    latest_valid(records)
    _, peak = tracemalloc.get_traced_memory()
    print(f"tracemalloc_peak_mb={peak / 2**20:.1f}")


def _child(mode: str, directory: Path) -> dict[str, str]:
    out = subprocess.run(
        [sys.executable, __file__, f"--{mode}", str(directory), *SMOKE], check=True, capture_output=True, text=True
    ).stdout
    return dict(kv.split("=", 1) for kv in out.split())


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="akm-store-bench-") as tmp:
        tmp_path = Path(tmp)
        records = synthetic_records(N_RECORDS)
        store = SampleStore(tmp_path / "bulk", fsync=False)
        t0 = time.perf_counter()
        for r in records:
            store.append(r)
        append_s = time.perf_counter() - t0
        size = store.path.stat().st_size

        durable = SampleStore(tmp_path / "durable")  # fsync=True, the default
        t0 = time.perf_counter()
        for r in records[:N_FSYNC]:
            durable.append(r)
        fsync_s = time.perf_counter() - t0

        rd = _child("read", store.directory)
        tr = _child("trace", store.directory)

    read_index = float(rd["read_s"]) + float(rd["index_s"])
    print(f"""
sample store benchmark (python {sys.version.split()[0]}, {os.cpu_count()} cpus, tmp={tempfile.gettempdir()})
  records written            {len(records):>10,}   avg {size / len(records):,.0f} B/record, file {size / 2**20:,.1f} MiB
  append, fsync=False        {len(records) / append_s:>10,.0f} rec/s   ({append_s * 1e6 / len(records):.1f} us/record, {append_s:.2f} s total)
  append, fsync=True         {N_FSYNC / fsync_s:>10,.0f} rec/s   ({fsync_s * 1e3 / N_FSYNC:.3f} ms/record over {N_FSYNC:,})
  read()                     {float(rd["read_s"]):>10.3f} s     ({rd["records"]} records, {rd["warnings"]} warnings)
  latest_valid()             {float(rd["index_s"]):>10.3f} s     ({rd["latest"]} trials)
  read + index               {read_index:>10.3f} s     target < 5 s
  peak RSS (read+index+done) {float(rd["rss_peak_mb"]):>10.1f} MB    (interpreter baseline {float(rd["rss_base_mb"]):.1f} MB), target < 500 MB
  tracemalloc peak           {float(tr["tracemalloc_peak_mb"]):>10.1f} MB    (read + latest_valid, Python allocations only)
  done-check                 {float(rd["done_s"]):>10.3f} s     ({N_CELLS_CHECK:,} cells x 17 seeds, {rd["todo"]} trials to run), target <= 1 s
""")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--read", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--trace", type=Path, help=argparse.SUPPRESS)
    args = smoke.parse(parser)
    if args.smoke:
        N_RECORDS, N_TASKS, N_CELLS_CHECK, N_FSYNC, SMOKE = 2_000, 40, 200, 20, ["--smoke"]
    if args.read:
        child_read(args.read)
    elif args.trace:
        child_trace(args.trace)
    else:
        main()
