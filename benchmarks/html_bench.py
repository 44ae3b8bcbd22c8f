"""Size and render time of report.html at scale: ``python benchmarks/html_bench.py``.

Builds the envelope of report_bench.py (synthetic samples over 2,000 tasks, akm samples with
trajectories, costs on some runs), then times ``html_report.render`` and the whole
``report_files.write`` (which copies a 1 kB transcript per run from a store, then a second time when
they are already there) and prints the sizes of the files. Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import smoke
from report_bench import make_samples, make_tasks

from pytest_akmbench.report import envelope as report
from pytest_akmbench.report.render import files as report_files
from pytest_akmbench.report.render import html as html_report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=2_000)
    parser.add_argument("--seeds", type=int, default=3, help="samples per task × arm (default 3)")
    args = smoke.parse(parser, tasks=20, seeds=2)
    os.environ.pop("GITHUB_STEP_SUMMARY", None)
    tasks = make_tasks(args.tasks)
    samples = make_samples(tasks, args.tasks * 3 * args.seeds)
    for i, s in enumerate(samples):
        s["cost_usd"] = 0.002 + (i % 7) * 0.0005 if i % 3 else None
    inp = report.ReportInput(
        tasks=tasks,
        arms=("noakm", "synthetic", "akm"),
        seeds=args.seeds,
        slice="all",
        stashes_root=Path("/nonexistent"),
        samples=samples,
        model="local/m",
        agent="opencode",
        agent_version="1.18.33",
    )
    env = report.build(inp, timestamp="2026-01-01T00:00:00.000Z")
    print(f"{len(samples):,} samples over {len(tasks):,} tasks x 3 arms")
    t0 = time.perf_counter()
    page = html_report.render(env)
    t1 = time.perf_counter()
    print(f"html_report.render(): {t1 - t0:6.2f} s  ({len(page.encode()) / 1e6:.2f} MB)")
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"  # a 1 kB transcript per run, for report_files.write to copy
        for r in env["runs"]:
            path = store / r["transcript"]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"{}\n" * 341)
        for label in ("report_files.write()", "again, unchanged"):
            t2 = time.perf_counter()
            paths = report_files.write(Path(tmp) / "report", env, store)
            t3 = time.perf_counter()
            sizes = ", ".join(f"{p.name} {p.stat().st_size / 1e6:.2f} MB" for p in paths)
            print(f"{label + ':':22}{t3 - t2:6.2f} s  ({sizes}; {len(env['runs']):,} transcripts copied)")


if __name__ == "__main__":
    main()
