"""Benchmark the report at scale: ``python benchmarks/report_bench.py``.

Builds the full envelope (every section, bootstrap included) from 100,000 synthetic samples
over 2,000 tasks × 3 arms (about 17 seeds per cell), the akm arm's samples carrying trajectory
dicts shaped like ``trajectory.analyse_cell``'s. Then renders the markdown and serialises the
JSON. Prints wall times and peak memory (VmHWM from /proc/self/status); asserts nothing.
Targets: build ≤ 10 s, peak ≤ 1 GB.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import smoke

from pytest_akmbench.corpus.tasks import MEMORY_ABILITIES, Task
from pytest_akmbench.report import envelope as report
from pytest_akmbench.report.render import files as report_files
from pytest_akmbench.report.render.markdown import render_markdown

N_SAMPLES = 100_000
N_TASKS = 2_000
ARMS = ("noakm", "synthetic", "akm")


def vm_hwm_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def make_tasks(n: int) -> list[Task]:
    return [
        Task(
            id=f"dom{i % 20:02d}/task-{i:04d}",
            title=f"task {i}",
            domain=f"dom{i % 20:02d}",
            difficulty="easy",
            stash="st",
            verifier="script",
            task_dir=Path("/nonexistent"),
            yaml_text=f"id: task-{i}\n",
            gold_ref=f"skill:s{i % 300}" if i % 4 else None,
            memory_ability=MEMORY_ABILITIES[i % 6] if i % 3 else None,
            task_family=f"fam{i % 7}",
            expected_transfer_from=(f"skill:s{(i + 1) % 300}",),
        )
        for i in range(n)
    ]


def make_trajectory(rng: random.Random, gold: str | None) -> dict[str, Any]:
    searched = rng.random() < 0.8
    rank = rng.choice([1, 1, 2, 3, 7, None]) if searched else None
    shown = [gold] if gold and rng.random() < 0.6 else []
    if rng.random() < 0.3:
        shown.append(f"skill:s{rng.randrange(300)}")
    feedback = rng.choice([None, "positive", "negative"])
    actions: list[dict[str, Any]] = []
    if searched:
        actions.append(
            {
                "kind": "search",
                "query": "q",
                "results": [f"skill:s{rng.randrange(300)}" for _ in range(5)],
                "gold_rank": rank,
                "t_ms": 1000,
                "ok": True,
            }
        )
    actions += [{"kind": "show", "ref": r, "ok": True, "t_ms": 2000} for r in shown]
    actions.append({"kind": "write", "tool": "bash", "path": None, "t_ms": 3000})
    if feedback:
        actions.append(
            {
                "kind": "feedback",
                "ref": shown[0] if shown else "skill:x",
                "polarity": feedback,
                "ok": True,
                "t_ms": 4000,
            }
        )
    return {
        "source": "transcript",
        "akm_events": True,
        "actions": actions,
        "actions_truncated": False,
        "search_count": int(searched),
        "show_count": len(shown),
        "feedback_count": int(bool(feedback)),
        "positive_feedback_count": int(feedback == "positive"),
        "negative_feedback_count": int(feedback == "negative"),
        "gold_ranks": [rank] if searched and gold else [],
        "assets_loaded": shown,
        "correct_asset_loaded": None if gold is None else gold in shown,
        "feedback_recorded": bool(feedback),
        "feedback_polarity": feedback,
        "searched_before_acting": searched,
        "workspace_writes": 1,
        "irrelevant_assets_loaded": [r for r in shown if r != gold],
        "time_to_first_search_ms": 1000 if searched else None,
        "time_to_first_correct_asset_ms": 2000 if gold in shown else None,
        "asset_bytes_loaded": 500 * len(shown),
        "context_bytes_loaded": 800,
        "warnings": [],
    }


def make_samples(tasks: list[Task], n: int, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    cells = [(t, arm) for t in tasks for arm in ARMS]
    per_cell, extra = divmod(n, len(cells))
    samples = []
    for i, (task, arm) in enumerate(cells):
        p = {"noakm": 0.4, "synthetic": 0.45, "akm": 0.6}[arm] + ((i // len(ARMS)) % 20 - 10) / 50
        for s in range(1, per_cell + (1 if i < extra else 0) + 1):
            r = rng.random()
            outcome = (
                "harness_error"
                if r < 0.01
                else "budget_exceeded"
                if r < 0.04
                else "pass"
                if rng.random() < p
                else "fail"
            )
            measured = rng.random() < 0.95
            sample: dict[str, Any] = {
                "schema": 1,
                "task_id": task.id,
                "arm": arm,
                "seed": s,
                "domain": task.domain,
                "slice": "eval",
                "outcome": outcome,
                "reason": "harness: boom" if outcome == "harness_error" else None,
                "budget": "tokens" if outcome == "budget_exceeded" else None,
                "budget_tag": rng.choice(["hung", "confused"]) if outcome == "budget_exceeded" else None,
                "tokens": {
                    "input": 9000,
                    "output": 1000,
                    "reasoning": 0,
                    "cache_read": 0,
                    "cache_write": 0,
                    "total": 10000,
                }
                if measured
                else None,
                "token_measurement": "measured" if measured else "missing",
                "cost_usd": 0.01,
                "turns": 5,
                "tool_calls": 4,
                "wallclock_ms": rng.randrange(5000, 60000),
                "verifier": {"kind": "script", "exit_code": 0 if outcome == "pass" else 1, "output_tail": ""},
                "model": "local/m",
                "prompt_version": f"{arm}-v1",
                "fingerprint_hash": f"{arm}-fp",
                "transcript": f"transcripts/r/{task.id}-{arm}-s{s}.jsonl",
            }
            if arm == "akm" and outcome != "harness_error":
                sample["trajectory"] = make_trajectory(rng, task.gold_ref)
            samples.append(sample)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=N_SAMPLES)
    parser.add_argument("--tasks", type=int, default=N_TASKS)
    args = smoke.parse(parser, samples=600, tasks=20)
    os.environ.pop("GITHUB_STEP_SUMMARY", None)
    t0 = time.perf_counter()
    tasks = make_tasks(args.tasks)
    samples = make_samples(tasks, args.samples)
    seeds = max(s["seed"] for s in samples)
    t1 = time.perf_counter()
    print(
        f"generated {len(samples):,} samples over {len(tasks):,} tasks x {len(ARMS)} arms (<= {seeds} seeds) "
        f"in {t1 - t0:.2f} s; VmHWM {vm_hwm_mb():.0f} MB"
    )
    inp = report.ReportInput(
        tasks=tasks,
        arms=ARMS,
        seeds=seeds,
        slice="all",
        stashes_root=Path("/nonexistent"),
        samples=samples,
        model="local/m",
        agent="opencode",
        agent_version="1.18.33",
        baseline={t.id: 0.5 for t in tasks[::2]},
        gates=("lift.low>0", "akm.pass_rate>=0.5"),
    )
    t2 = time.perf_counter()
    env = report.build(inp, timestamp="2026-01-01T00:00:00.000Z")
    t3 = time.perf_counter()
    print(f"build():           {t3 - t2:6.2f} s   (VmHWM so far {vm_hwm_mb():.0f} MB)")
    md = render_markdown(env)
    t4 = time.perf_counter()
    print(f"render_markdown(): {t4 - t3:6.2f} s   ({len(md) / 1e6:.1f} MB of markdown)")
    with tempfile.TemporaryDirectory() as tmp:
        json_path, _, _ = report_files.write(Path(tmp), env)
        size = json_path.stat().st_size
    t5 = time.perf_counter()
    print(f"files.write():     {t5 - t4:6.2f} s   ({size / 1e6:.1f} MB of JSON, streamed)")
    print(f"verdict: {env['verdict']}")
    print(f"gates: {[(g['gate'], g['ok']) for g in env['gates']]}")
    print(f"peak memory (VmHWM): {vm_hwm_mb():.0f} MB; build target <= 10 s, peak <= 1024 MB")


if __name__ == "__main__":
    main()
