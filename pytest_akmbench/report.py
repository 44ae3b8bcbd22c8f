"""The report envelope (reference §7.1, "§13.3 envelope") and its markdown summary.

The envelope is built from samples alone, in a fixed order (selection order of tasks, arms
noakm/synthetic/akm, seeds ascending), so a run with ``-n`` gives the same report as a
serial one apart from timestamps and timings.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tabulate import tabulate

from . import metrics
from .corpus import Task, fixtures_stamp, task_corpus_hash

SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class ReportInput:
    """What a report is about: the selection, and the samples to summarise."""

    tasks: list[Task]
    arms: tuple[str, ...]
    seeds: int
    slice: str
    stashes_root: Path
    samples: list[dict[str, Any]]
    model: str | None
    agent: str
    agent_version: str
    complete: bool = True
    warnings: list[str] = field(default_factory=list)
    baseline: dict[str, float] | None = None
    cwd: Path | None = None


def _git(args: list[str], cwd: Path | None) -> str:
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"


def ordered_arms(arms: tuple[str, ...]) -> list[str]:
    return [a for a in metrics.ARM_ORDER if a in arms]


def build(inp: ReportInput, *, timestamp: str | None = None) -> dict[str, Any]:
    """The envelope for ``inp``; ``timestamp`` defaults to now."""
    arms = ordered_arms(inp.arms)
    order = {t.id: i for i, t in enumerate(inp.tasks)}
    by_cell: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for s in sorted(
        (s for s in inp.samples if s["task_id"] in order and s["arm"] in arms),
        key=lambda s: (order[s["task_id"]], arms.index(s["arm"]), s["seed"]),
    ):
        by_cell[(s["task_id"], s["arm"])].append(s)
    fixtures, fixture_hash = fixtures_stamp(inp.tasks, inp.stashes_root)
    tasks_out = []
    per_arm_rows: dict[str, list[dict[str, Any] | None]] = {a: [] for a in ("noakm", "akm", "synthetic")}
    for task in inp.tasks:
        entry: dict[str, Any] = {"id": task.id}
        for arm in ("noakm", "akm", "synthetic"):
            row = metrics.per_task(by_cell.get((task.id, arm), [])) if arm in arms else None
            per_arm_rows[arm].append(row)
            if arm != "synthetic" or "synthetic" in arms:
                entry[arm] = row
        entry["delta"] = metrics.delta(entry["akm"], entry["noakm"])
        tasks_out.append(entry)
    agg = {arm: metrics.aggregate(per_arm_rows[arm]) for arm in ("noakm", "akm")}
    agg["delta"] = metrics.delta(agg["akm"], agg["noakm"])
    if "synthetic" in arms:
        agg["synthetic"] = metrics.aggregate(per_arm_rows["synthetic"])
        lift = metrics.delta(agg["akm"], agg["synthetic"])
        agg["akm_over_synthetic_lift"] = lift["pass_rate"] if lift else None
    runs = [s for t in inp.tasks for a in arms for s in by_cell.get((t.id, a), [])]
    warnings = list(inp.warnings)
    tm = metrics.token_measurement(runs)
    if runs and not tm["reliable"] and tm["runs_missing_measurement"]:
        warnings.append(
            f"token measurement incomplete: {tm['runs_missing_measurement']} of {tm['total_runs']} runs lack "
            f"measured token usage; token figures reflect only the {tm['runs_with_measured_tokens']} measured runs."
        )
    envelope: dict[str, Any] = {
        "schemaVersion": SCHEMA_VERSION,
        "track": "utility",
        "branch": _git(["rev-parse", "--abbrev-ref", "HEAD"], inp.cwd),
        "commit": _git(["rev-parse", "--short", "HEAD"], inp.cwd),
        "timestamp": timestamp or datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "complete": inp.complete,
        "agent": {"harness": inp.agent, "version": inp.agent_version, "model": inp.model},
        "corpus": {
            "domains": len({t.domain for t in inp.tasks}),
            "tasks": len(inp.tasks),
            "slice": inp.slice,
            "seedsPerArm": inp.seeds,
            "arms": arms,
            "selectedTaskIds": sorted(t.id for t in inp.tasks),
            "taskCorpusHash": task_corpus_hash(inp.tasks),
            "fixtures": fixtures,
            "fixtureContentHash": fixture_hash,
        },
        "aggregate": agg,
        "token_measurement": tm,
        "tasks": tasks_out,
        "warnings": warnings,
        "runs": [_run_row(s) for s in runs],
    }
    if inp.baseline is not None:
        envelope["baseline_by_task_id"] = dict(inp.baseline)
    return envelope


def _run_row(s: dict[str, Any]) -> dict[str, Any]:
    """A ``runs[]`` row: the reference's fields first, then what it left out (§14 item 28)."""
    return {
        "task_id": s["task_id"],
        "arm": s["arm"],
        "seed": s["seed"],
        "model": s.get("model"),
        "outcome": s["outcome"],
        "tokens": s.get("tokens"),
        "wallclock_ms": s.get("wallclock_ms"),
        "verifier_exit_code": s.get("verifier", {}).get("exit_code", -1),
        "token_measurement": s.get("token_measurement"),
        "reason": s.get("reason"),
        "budget": s.get("budget"),
        "budget_tag": s.get("budget_tag"),
        "cost_usd": s.get("cost_usd"),
        "turns": s.get("turns"),
        "tool_calls": s.get("tool_calls"),
        "transcript": s.get("transcript"),
        "from_store": bool(s.get("from_store", False)),
    }


# ---------------------------------------------------------------- markdown


def _num(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _signed(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "n/a"
    text = f"{value:+.{digits}f}"
    return text[1:] if float(text) == 0 else text


def render_markdown(env: dict[str, Any]) -> str:
    """The summary a reader sees first: header, aggregate table, per-task table, warnings."""
    corpus = env["corpus"]
    arms = corpus["arms"]
    lines = [
        f"# akm-bench utility — {env['agent']['model'] or env['agent']['harness']}",
        "",
        f"branch `{env['branch']}` @ `{env['commit']}` — {env['timestamp']}"
        + ("" if env.get("complete", True) else " — **incomplete run**"),
        f"corpus: {corpus['tasks']} tasks across {corpus['domains']} domains "
        f"(slice={corpus['slice']}, seedsPerArm={corpus['seedsPerArm']}), agent: {env['agent']['harness']}",
        "",
        "## Aggregate",
        "",
    ]
    agg = env["aggregate"]
    rows = []
    for arm in arms:
        a = agg.get(arm)
        rows.append([arm] + (["not run"] * 5 if a is None else [
            _num(a["pass_rate"]), _num(a["tokens_per_pass"], 0), _num(a["wallclock_ms"], 0),
            a["runs"], a["harness_error_count"],
        ]))
    d = agg.get("delta")
    if d is not None:
        rows.append(["**delta**", _signed(d["pass_rate"]), _signed(d["tokens_per_pass"], 0), _signed(d["wallclock_ms"], 0), "", ""])
    lines.append(tabulate(rows, ["arm", "pass_rate", "tokens_per_pass", "wallclock_ms", "runs", "harness_errors"], tablefmt="github", disable_numparse=True))
    lines += ["", "## Per-task pass rates", ""]
    head = ["task", *arms] + (["delta"] if "akm" in arms and "noakm" in arms else [])
    task_rows = []
    for t in sorted(env["tasks"], key=lambda t: t["id"]):
        cells = [t["id"]] + [_num((t.get(arm) or {}).get("pass_rate")) if t.get(arm) else "n/a" for arm in arms]
        if len(head) > len(arms) + 1:
            cells.append(_signed((t.get("delta") or {}).get("pass_rate")))
        task_rows.append(cells)
    lines.append(tabulate(task_rows, head, tablefmt="github", disable_numparse=True))
    problems = [r for r in env["runs"] if r["outcome"] == "harness_error"]
    if problems:
        lines += ["", "## Harness errors", ""]
        lines += [f"- {r['task_id']} {r['arm']} s{r['seed']}: {r['reason']}" for r in problems[:50]]
    if env["warnings"]:
        lines += ["", "## Warnings", ""] + [f"- {w}" for w in env["warnings"]]
    return "\n".join(lines) + "\n"


def write(directory: Path, env: dict[str, Any]) -> tuple[Path, Path]:
    """Write report.json and summary.md atomically; append the summary to $GITHUB_STEP_SUMMARY."""
    directory.mkdir(parents=True, exist_ok=True)
    json_path, md_path = directory / "report.json", directory / "summary.md"
    markdown = render_markdown(env)
    _atomic_write(json_path, json.dumps(env, indent=2) + "\n")
    _atomic_write(md_path, markdown)
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        with open(step_summary, "a", encoding="utf-8") as fh:
            fh.write(markdown + "\n")
    return json_path, md_path


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)
