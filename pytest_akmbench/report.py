"""The report envelope (reference §7.1, "§13.3 envelope") and its markdown summary.

The envelope is built from samples alone, in a fixed order (selection order of tasks, arms
noakm/synthetic/akm, seeds ascending), so a run with ``-n`` gives the same report as a
serial one apart from timestamps and timings. Keys beyond the reference's, and the rules
behind the intervals and the verdict, are described in docs/report.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from tabulate import tabulate

from . import gates as gates_mod
from . import metrics
from .corpus import MEMORY_ABILITIES, Task, fixtures_stamp, task_corpus_hash
from .trajectory import failure_mode

SCHEMA_VERSION = 1
_MD_TASK_CAP = 500  # per-run tables above this size are summarised, not listed
_LONG_LIST = 8  # report.json writes lists longer than this one compact element per line


@dataclass(frozen=True, slots=True)
class ReportInput:
    """What a report is about: the selection, and the samples to summarise.

    ``floor`` is the reporting floor (valid samples per task × arm); ``provenance`` adds
    facts only the caller knows (e.g. ``opencode_version``, ``akm_version``); ``gates`` are
    ``--bench-gate`` expressions evaluated into the envelope (paths relative to
    ``gates_base_dir``); ``baseline`` is a flat {task_id: pass_rate} map (reference §1.8).
    """

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
    floor: int = metrics.DEFAULT_FLOOR
    provenance: dict[str, Any] | None = None
    gates: tuple[str, ...] = ()
    gates_base_dir: Path | None = None
    store_dir: Path | None = None


def _git(args: list[str], cwd: Path | None) -> str:
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"


def ordered_arms(arms: tuple[str, ...]) -> list[str]:
    return [a for a in metrics.ARM_ORDER if a in arms]


def _plugin_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pytest-akmbench")
    except PackageNotFoundError:
        return "0.0.0"


def build(inp: ReportInput, *, timestamp: str | None = None) -> dict[str, Any]:
    """The envelope for ``inp``; ``timestamp`` defaults to now."""
    arms = ordered_arms(inp.arms)
    arm_rank = {a: i for i, a in enumerate(arms)}
    order = {t.id: i for i, t in enumerate(inp.tasks)}
    gold_of = {t.id: t.gold_ref for t in inp.tasks}
    domain_of = {t.id: t.domain for t in inp.tasks}
    by_cell: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for s in sorted(
        (s for s in inp.samples if s["task_id"] in order and s["arm"] in arm_rank),
        key=lambda s: (order[s["task_id"]], arm_rank[s["arm"]], s["seed"]),
    ):
        by_cell[(s["task_id"], s["arm"])].append(s)
    fixtures, fixture_hash = fixtures_stamp(inp.tasks, inp.stashes_root)

    tasks_out: list[dict[str, Any]] = []
    rows_by_arm: dict[str, list[dict[str, Any] | None]] = {a: [] for a in metrics.ARM_ORDER}
    outcomes_by_arm: dict[str, list[list[bool]]] = {a: [] for a in metrics.ARM_ORDER}
    for task in inp.tasks:
        entry: dict[str, Any] = {"id": task.id}
        for arm in ("noakm", "akm", "synthetic"):
            runs = by_cell.get((task.id, arm), [])
            row = metrics.per_task(runs, seeds=inp.seeds, floor=inp.floor) if arm in arm_rank else None
            rows_by_arm[arm].append(row)
            outcomes_by_arm[arm].append(metrics.valid_outcomes(runs) if row is not None else [])
            if arm != "synthetic" or "synthetic" in arm_rank:
                entry[arm] = row
        entry["delta"] = metrics.delta(entry["akm"], entry["noakm"])
        tasks_out.append(entry)

    agg: dict[str, Any] = {
        arm: metrics.aggregate(rows_by_arm[arm], outcomes_by_arm[arm]) for arm in ("noakm", "akm")
    }
    agg["delta"] = metrics.delta(agg["akm"], agg["noakm"])
    if agg["delta"] is not None:
        agg["delta"]["paired"] = metrics.paired(list(zip(outcomes_by_arm["akm"], outcomes_by_arm["noakm"])))
    if "synthetic" in arm_rank:
        agg["synthetic"] = metrics.aggregate(rows_by_arm["synthetic"], outcomes_by_arm["synthetic"])
        lift = metrics.delta(agg["akm"], agg["synthetic"])
        agg["akm_over_synthetic_lift"] = lift["pass_rate"] if lift else None
        if lift is not None:
            agg["akm_over_synthetic_paired"] = metrics.paired(
                list(zip(outcomes_by_arm["akm"], outcomes_by_arm["synthetic"]))
            )

    runs = [s for t in inp.tasks for a in arms for s in by_cell.get((t.id, a), [])]
    akm_runs = [s for s in runs if s["arm"] == "akm"]
    labels = {id(s): failure_mode(s, gold_of[s["task_id"]]) for s in akm_runs}
    regressed = metrics.negative_transfer(tasks_out, domain_of)
    regressed_ids = {r["task_id"] for r in regressed}
    floor = _floor_coverage(inp, arms, tasks_out)
    flaky = [
        {"task_id": t["id"], "arm": arm, "pass_rate": t[arm]["pass_rate"], "passes": t[arm]["passes"],
         "valid_count": t[arm]["valid_count"], "pass_rate_stdev": t[arm]["pass_rate_stdev"]}
        for t in tasks_out for arm in arms if t.get(arm) and t[arm]["flaky"]
    ]
    tm = metrics.token_measurement(runs)
    warnings = list(inp.warnings) + _warnings(inp, runs, akm_runs, tm, floor)

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
        "trajectory": {"akm": metrics.trajectory_aggregate(akm_runs) if "akm" in arm_rank else None},
        "failure_modes": metrics.failure_modes([(s["task_id"], labels[id(s)]) for s in akm_runs]),
        "token_measurement": tm,
        "tasks": tasks_out,
        "negative_transfer_count": len(regressed),
        "negative_transfer_severity": sum(r["severity"] for r in regressed),
        "top_regressed_tasks": regressed,
        "domain_level_deltas": metrics.domain_level_deltas(tasks_out, domain_of, regressed_ids),
        "asset_regression_candidates": metrics.asset_regression_candidates(akm_runs, regressed_ids),
        "corpus_coverage": metrics.corpus_coverage(inp.tasks, tasks_out),
        "warnings": warnings,
        "searchBridge": metrics.search_bridge(akm_runs, gold_of),
        "runs": [_run_row(s, labels.get(id(s))) for s in runs],
    }
    if inp.baseline is not None:
        envelope["baseline_by_task_id"] = dict(inp.baseline)
    envelope["perAsset"] = metrics.per_asset(akm_runs)
    envelope["akm_overhead"] = metrics.akm_overhead(akm_runs)
    envelope["flaky_tasks"] = flaky
    envelope["floor_coverage"] = floor
    envelope["provenance"] = _provenance(inp, runs)
    envelope["verdict"] = verdict(envelope)
    if inp.gates:
        envelope["gates"] = gates_mod.evaluate(envelope, list(inp.gates), inp.gates_base_dir or inp.cwd or Path.cwd())
    return envelope


def _floor_coverage(inp: ReportInput, arms: list[str], tasks_out: list[dict[str, Any]]) -> dict[str, Any]:
    by_arm: dict[str, dict[str, int]] = {}
    needs: list[dict[str, Any]] = []
    for arm in arms:
        counts = {"cells": 0, "covered": 0, "partial": 0, "missing": 0}
        for t in tasks_out:
            row = t.get(arm)
            valid = row["valid_count"] if row else 0
            status = metrics.floor_status(valid, inp.floor)
            counts["cells"] += 1
            counts[status] += 1
            if status != "covered":
                needs.append({"task_id": t["id"], "arm": arm, "valid": valid, "status": status,
                              "samples_needed": inp.floor - valid})
        by_arm[arm] = counts
    return {"floor": inp.floor, "seeds": inp.seeds, "by_arm": by_arm, "needs_deepening": needs}


def _warnings(
    inp: ReportInput, runs: list[dict[str, Any]], akm_runs: list[dict[str, Any]], tm: dict[str, Any], floor: dict[str, Any]
) -> list[str]:
    out: list[str] = []
    if runs and not tm["reliable"] and tm["runs_missing_measurement"]:
        out.append(
            f"token measurement incomplete: {tm['runs_missing_measurement']} of {tm['total_runs']} runs lack "
            f"measured token usage; token figures reflect only the {tm['runs_with_measured_tokens']} measured runs."
        )
    errors = sum(s["outcome"] == "harness_error" for s in runs)
    if errors:
        out.append(f"{errors} of {len(runs)} runs ended in harness_error; they are excluded from pass rates and counted apart.")
    below = [n for n in floor["needs_deepening"]]
    if below:
        cells = sum(a["cells"] for a in floor["by_arm"].values())
        partial = sum(n["status"] == "partial" for n in below)
        out.append(
            f"{len(below)} of {cells} task×arm cells are below the reporting floor of {inp.floor} valid samples "
            f"({partial} partial, {len(below) - partial} missing); see floor_coverage.needs_deepening."
        )
    ran = [s for s in akm_runs if s["outcome"] != "harness_error"]
    unobserved = sum(metrics.observed(s) is None for s in ran)
    if unobserved:
        out.append(
            f"akm trajectory not observed for {unobserved} of {len(ran)} akm-arm runs (agent {inp.agent}); "
            "trajectory, failure_modes, searchBridge, perAsset and akm_overhead cover only the observed runs."
        )
    return out


def _provenance(inp: ReportInput, runs: list[dict[str, Any]]) -> dict[str, Any]:
    extra = dict(inp.provenance or {})
    out: dict[str, Any] = {
        "plugin_version": _plugin_version(),
        "python": platform.python_version(),
        "implementation": sys.implementation.name,
        "platform": platform.platform(terse=True),
        "host": socket.gethostname(),
        "agent": {"name": inp.agent, "version": inp.agent_version},
        "model": inp.model,
        "opencode_version": extra.pop("opencode_version", None),
        "akm_version": extra.pop("akm_version", None),
        "prompt_versions": sorted({str(s["prompt_version"]) for s in runs if s.get("prompt_version")}),
        "fingerprints": sorted({str(s["fingerprint_hash"]) for s in runs if s.get("fingerprint_hash")}),
        "samples_from_store": sum(bool(s.get("from_store")) for s in runs),
        "store": str(inp.store_dir) if inp.store_dir is not None else None,
    }
    out.update(extra)
    return out


def _run_row(s: dict[str, Any], label: str | None) -> dict[str, Any]:
    """A ``runs[]`` row: the reference's fields first, then what it left out (§14 item 28)."""
    traj = metrics.observed(s)
    return {
        "task_id": s["task_id"],
        "arm": s["arm"],
        "seed": s["seed"],
        "model": s.get("model"),
        "outcome": s["outcome"],
        "tokens": s.get("tokens"),
        "wallclock_ms": s.get("wallclock_ms"),
        "verifier_exit_code": (s.get("verifier") or {}).get("exit_code", -1),
        "trajectory": {
            "correct_asset_loaded": traj["correct_asset_loaded"] if traj else None,
            "feedback_recorded": traj["feedback_recorded"] if traj else None,
            "searched_before_acting": traj["searched_before_acting"] if traj else None,
        },
        "assets_loaded": list(traj["assets_loaded"]) if traj else None,
        "failure_mode": label,
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


# ---------------------------------------------------------------- verdict


def _fmt_ci(low: float | None, high: float | None, signed: bool = False) -> str:
    if low is None or high is None:
        return "[n/a]"
    f = _signed if signed else _num
    return f"[{f(low)}, {f(high)}]"


def _p(p: float | None) -> str:
    return "n/a" if p is None else f"{p:.2g}"


def verdict(env: dict[str, Any]) -> str:
    """One line a reader can act on: the lift and whether it is beyond noise."""
    agg, corpus = env["aggregate"], env["corpus"]
    ran = [a for a in metrics.ARM_ORDER if agg.get(a) and agg[a]["pass_rate"] is not None]
    seeds = corpus["seedsPerArm"]
    prefix = "" if env.get("complete", True) else "incomplete run — "
    paired = (agg.get("delta") or {}).get("paired")
    if not ran:
        return prefix + "no valid runs: no arm produced a pass or fail outcome"
    if paired and paired["tasks"]:
        d, ci = paired["delta"], _fmt_ci(paired["low"], paired["high"], signed=True)
        size = f"{paired['tasks']} tasks × {seeds} seeds"
        if paired["significant"]:
            verb = "lifts" if d > 0 else "lowers"
            text = f"akm {verb} pass rate by {_signed(d)} {ci} (sign test p={_p(paired['p_value'])}), {size}"
        else:
            text = f"no significant difference between akm and noakm ({_signed(d)} {ci}, p={_p(paired['p_value'])}), {size}"
        syn = agg.get("akm_over_synthetic_paired")
        if syn and syn["tasks"]:
            text += (f"; akm vs synthetic {_signed(syn['delta'])} {_fmt_ci(syn['low'], syn['high'], signed=True)}"
                     f" ({'significant' if syn['significant'] else 'not significant'})")
        return prefix + text
    if len(ran) == 1:
        a = agg[ran[0]]
        ci = a["pass_rate_ci"] or {}
        return (prefix + f"only one arm ran ({ran[0]}): pass rate {_num(a['pass_rate'])} "
                f"{_fmt_ci(ci.get('low'), ci.get('high'))} over {a['tasks_with_valid_runs']} tasks × {seeds} seeds; no lift measured")
    return prefix + f"arms {', '.join(ran)} ran, but akm and noakm share no task with valid runs: no lift measured"


# ---------------------------------------------------------------- markdown


def _num(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _signed(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "n/a"
    text = f"{value:+.{digits}f}"
    return text[1:] if float(text) == 0 else text


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def _table(rows: list[list[Any]], head: list[str]) -> str:
    return str(tabulate(rows, head, tablefmt="github", disable_numparse=True))


def _rate_ci(row: dict[str, Any] | None) -> str:
    if row is None:
        return "n/a"
    if row["pass_rate"] is None:
        return "n/a (no valid run)"
    ci = row.get("pass_rate_ci")
    text = _num(row["pass_rate"]) + (f" {_fmt_ci(ci['low'], ci['high'])}" if ci else "")
    return text + (" ~" if row.get("flaky") else "") + ("" if row.get("floor_status", "covered") == "covered" else " *")


def render_markdown(env: dict[str, Any]) -> str:
    """The summary a reader sees first: verdict, aggregate with intervals, per-task table, sections."""
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
        f"**Verdict:** {env.get('verdict') or verdict(env)}",
    ]
    failed = [g for g in env.get("gates") or [] if not g["ok"]]
    if env.get("gates"):
        lines.append(
            f"**Gates:** {len(env['gates']) - len(failed)} passed, {len(failed)} failed"
            + (": " + "; ".join(f"`{g['gate']}` ({g['message']})" for g in failed) if failed else "")
        )
    lines += ["", "## Aggregate", ""]
    agg = env["aggregate"]
    rows = []
    for arm in arms:
        a = agg.get(arm)
        if a is None:
            rows.append([arm] + ["not run"] * 7)
            continue
        ci = a.get("pass_rate_ci")
        rows.append([
            arm, _num(a["pass_rate"]), _fmt_ci(ci["low"], ci["high"]) if ci else "n/a", _num(a["pass_at_1"]),
            _num(a["tokens_per_pass"], 0), _num(a["wallclock_ms"], 0), a["runs"], a["harness_error_count"],
        ])
    d = agg.get("delta")
    if d is not None:
        p = d.get("paired") or {}
        rows.append(["**delta**", _signed(d["pass_rate"]), _fmt_ci(p.get("low"), p.get("high"), signed=True), "",
                     _signed(d["tokens_per_pass"], 0), _signed(d["wallclock_ms"], 0), "", ""])
    lines.append(_table(rows, ["arm", "pass_rate", "95% CI", "pass@1", "tokens_per_pass", "wallclock_ms", "runs", "harness_errors"]))
    if d is not None and d.get("paired"):
        p = d["paired"]
        lines += ["", f"delta = akm − noakm, paired over {p['tasks']} tasks (cluster bootstrap, {p['iterations']} resamples, "
                  f"seed {p['seed']}); sign test {p['wins']} wins / {p['losses']} losses / {p['ties']} ties, "
                  f"p={_p(p['p_value'])}; significant: {'yes' if p['significant'] else 'no'}"]
    if "akm_over_synthetic_lift" in agg:
        lift = agg["akm_over_synthetic_lift"]
        if lift is None:
            lines += ["", "akm_over_synthetic_lift: n/a"]
        elif lift <= 0:
            lines += ["", f":warning: **akm_over_synthetic_lift = {_signed(lift)}** — AKM did not beat the synthetic-notes baseline."]
        else:
            lines += ["", f"**akm_over_synthetic_lift: {_signed(lift)}**"]
    lines += _pass_k_section(env, arms)
    if env.get("gates"):
        lines += ["", "## Gates", ""]
        lines.append(_table([[f"`{g['gate']}`", "pass" if g["ok"] else "**FAIL**", _obs(g["observed"]), g["message"]]
                             for g in env["gates"]], ["gate", "result", "observed", "detail"]))
    lines += _trajectory_section(env)
    lines += _per_task_section(env, arms)
    lines += _floor_section(env)
    lines += _coverage_section(env)
    lines += _negative_transfer_section(env)
    lines += _failure_section(env)
    lines += _bridge_section(env)
    lines += _overhead_section(env)
    tm = env["token_measurement"]
    if tm["total_runs"]:
        lines += ["", "## Token measurement", "",
                  f"- runs: {tm['total_runs']} total, {tm['runs_with_measured_tokens']} measured, "
                  f"{tm['runs_missing_measurement']} missing, {tm['runs_unsupported_measurement']} unsupported",
                  f"- coverage: {_pct(tm['coverage'])} ({'reliable' if tm['reliable'] else 'unreliable — token figures cover the measured runs only'})"]
    problems = [r for r in env["runs"] if r["outcome"] == "harness_error"]
    if problems:
        lines += ["", "## Harness errors", ""]
        lines += [f"- {r['task_id']} {r['arm']} s{r['seed']}: {r['reason']}" for r in problems[:50]]
        if len(problems) > 50:
            lines.append(f"- … and {len(problems) - 50} more")
    prov = env.get("provenance")
    if prov:
        lines += ["", "## Provenance", "",
                  f"plugin {prov['plugin_version']}, python {prov['python']}, host {prov['host']}, agent "
                  f"{prov['agent']['name']} {prov['agent']['version']}, model {prov['model'] or 'n/a'}, opencode "
                  f"{prov.get('opencode_version') or 'n/a'}, akm {prov.get('akm_version') or 'n/a'}, "
                  f"{len(prov['fingerprints'])} fingerprint(s), {prov['samples_from_store']} sample(s) from the store"]
    if env["warnings"]:
        lines += ["", "## Warnings", ""] + [f"- {w}" for w in env["warnings"]]
    return "\n".join(lines) + "\n"


def _obs(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "n/a" if value is None else str(value)


def _pass_k_section(env: dict[str, Any], arms: list[str]) -> list[str]:
    agg = env["aggregate"]
    ks = sorted({k for arm in arms if agg.get(arm) for k in agg[arm]["pass_at_k"]}, key=int)[:10]
    if len(ks) < 2:
        return []
    rows = []
    for arm in arms:
        a = agg.get(arm)
        if a is None:
            continue
        rows.append([arm] + [f"{_num(a['pass_at_k'].get(k))} / {_num(a['pass_hat_k'].get(k))}" for k in ks])
    return ["", "### pass@k / pass^k (mean over tasks)", "", _table(rows, ["arm"] + [f"k={k}" for k in ks])]


def _trajectory_section(env: dict[str, Any]) -> list[str]:
    t = (env.get("trajectory") or {}).get("akm")
    if t is None:
        return []
    c = t["counts"]
    lines = ["", "## Trajectory (akm)", ""]
    if not c["runs_with_trajectory"]:
        return lines + [f"not observed: none of the {c['runs']} akm-arm runs recorded a transcript or akm events"]
    lines += [
        f"- correct_asset_loaded: {_pct(t['correct_asset_loaded'])} ({c['correct_asset_loaded']}/{c['gold_ref_runs']} runs with a gold ref)",
        f"- feedback_recorded: {_pct(t['feedback_recorded'])} ({c['feedback_recorded']}/{c['runs_with_trajectory']}; "
        f"{c['feedback_positive']} positive, {c['feedback_negative']} negative)",
        f"- searched_before_acting: {_pct(t['searched_before_acting'])} ({c['searched_before_acting']}/{c['searched_before_acting_judged']})",
        f"- irrelevant assets loaded (mean per run): {_num(t['irrelevant_assets_loaded'])}",
        f"- observed in {c['runs_with_trajectory']} of {c['runs']} akm-arm runs",
    ]
    akm_rows = [r for r in env["runs"] if r["arm"] == "akm"]
    if 0 < len(akm_rows) <= _MD_TASK_CAP:
        mark = {True: "✓", False: "✗", None: "—"}
        lines += ["", _table(
            [[r["task_id"], r["seed"], mark[r["trajectory"]["correct_asset_loaded"]], mark[r["trajectory"]["feedback_recorded"]],
              mark[r["trajectory"]["searched_before_acting"]]] for r in akm_rows],
            ["task", "seed", "correct_asset_loaded", "feedback_recorded", "searched_before_acting"],
        )]
    return lines


def _per_task_section(env: dict[str, Any], arms: list[str]) -> list[str]:
    both = "akm" in arms and "noakm" in arms
    baseline = env.get("baseline_by_task_id")
    head = ["task", *arms] + (["delta"] if both else []) + (["baseline", "vs base"] if baseline is not None else [])
    rows = []
    for t in sorted(env["tasks"], key=lambda t: t["id"]):
        cells = [t["id"]] + [_rate_ci(t.get(arm)) for arm in arms]
        if both:
            cells.append(_signed((t.get("delta") or {}).get("pass_rate")))
        if baseline is not None:
            base = baseline.get(t["id"])
            akm = (t.get("akm") or {}).get("pass_rate")
            cells += [_num(base), _signed(None if base is None or akm is None else akm - base)]
        rows.append(cells)
    return ["", "## Per-task pass rates", "", _table(rows, head), "",
            "pass rate [Wilson 95% CI]; ~ flaky; * below the reporting floor"]


def _floor_section(env: dict[str, Any]) -> list[str]:
    fc = env.get("floor_coverage")
    if not fc:
        return []
    lines = ["", f"## Coverage vs reporting floor ({fc['floor']} valid samples per task × arm)", ""]
    lines.append(_table([[arm, c["cells"], c["covered"], c["partial"], c["missing"]] for arm, c in fc["by_arm"].items()],
                        ["arm", "cells", "covered", "partial", "missing"]))
    needs = fc["needs_deepening"]
    if needs:
        shown = ", ".join(f"{n['task_id']} {n['arm']} ({n['valid']}/{fc['floor']})" for n in needs[:20])
        lines += ["", f"needs deepening: {shown}" + (f", … and {len(needs) - 20} more" if len(needs) > 20 else "")]
    flaky = env.get("flaky_tasks") or []
    if flaky:
        lines += ["", "### Flaky tasks (both outcomes, 0/1 stdev > 0.2)", ""]
        lines.append(_table([[f["task_id"], f["arm"], f"{f['passes']}/{f['valid_count']}", _num(f["pass_rate_stdev"])] for f in flaky],
                            ["task", "arm", "passes", "stdev"]))
    return lines


def _coverage_section(env: dict[str, Any]) -> list[str]:
    cc = env["corpus_coverage"]
    counts = cc["coverage"]["memoryAbilityCounts"]
    if not any(counts.get(a) for a in MEMORY_ABILITIES):
        return []
    rows = [[a, counts[a]] for a in sorted(MEMORY_ABILITIES) if counts.get(a)]
    if counts.get("untagged"):
        rows.append(["untagged", counts["untagged"]])
    lines = ["", "## Corpus coverage", "", _table(rows, ["memory_ability", "tasks"]), "", "### By memory_ability", ""]
    lines.append(_table([[r["category"], r["task_count"], _num(r["pass_rate_noakm"]), _num(r["pass_rate_akm"]),
                          _signed(r["pass_rate_delta"]), r["negative_transfer_count"]] for r in cc["by_memory_ability"]],
                        ["memory_ability", "tasks", "noakm", "akm", "delta", "neg.transfer"]))
    if len(cc["by_task_family"]) >= 2:
        lines += ["", "### By task_family", ""]
        lines.append(_table([[r["category"], r["task_count"], _num(r["pass_rate_noakm"]), _num(r["pass_rate_akm"]),
                              _signed(r["pass_rate_delta"])] for r in cc["by_task_family"]],
                            ["task_family", "tasks", "noakm", "akm", "delta"]))
    return lines


def _negative_transfer_section(env: dict[str, Any]) -> list[str]:
    if "akm" not in env["corpus"]["arms"] or "noakm" not in env["corpus"]["arms"]:
        return []
    lines = ["", "## Negative transfer", ""]
    top = env["top_regressed_tasks"]
    if not top:
        return lines + ["none"]
    lines.append(f"count={env['negative_transfer_count']}, severity={_num(env['negative_transfer_severity'])} "
                 "(sum of noakm − akm pass rate over regressed tasks)")
    lines += ["", "### Top regressed tasks", "", _table(
        [[r["task_id"], r["domain"], _num(r["noakm_pass_rate"]), _num(r["akm_pass_rate"]), _signed(r["delta"])] for r in top[:50]],
        ["task", "domain", "noakm", "akm", "delta"])]
    lines += ["", "### Domain-level deltas", "", _table(
        [[r["domain"], r["task_count"], r["regression_count"], _num(r["pass_rate_noakm"]), _num(r["pass_rate_akm"]),
          _signed(r["pass_rate_delta"]), _signed(r["tokens_per_pass_delta"], 0), _signed(r["wallclock_ms_delta"], 0)]
         for r in env["domain_level_deltas"]],
        ["domain", "tasks", "regressions", "noakm pass", "akm pass", "delta", "tokens delta", "wallclock delta (ms)"])]
    cands = env["asset_regression_candidates"]
    if cands:
        lines += ["", "### Asset regression candidates", "", _table(
            [[r["asset_ref"], r["regressed_task_count"], r["total_load_count"]] for r in cands[:50]],
            ["asset_ref", "regressed tasks", "total loads"])]
    return lines


def _failure_section(env: dict[str, Any]) -> list[str]:
    by_label = env["failure_modes"]["by_label"]
    if not by_label:
        return []
    total = sum(by_label.values())
    lines = ["", "## Failure modes (akm arm)", ""]
    for label, count in sorted(by_label.items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append(f"- {label} — {count} ({count / total * 100:.1f}% of classified runs)")
    return lines


def _bridge_section(env: dict[str, Any]) -> list[str]:
    sb = env["searchBridge"]
    if "akm" not in env["corpus"]["arms"]:
        return []
    lines = ["", "## Search → outcome bridge", ""]
    if not sb["searches_observed"] and not sb["runs_observed"]:
        return lines + ["(no observed akm-arm runs of gold-ref tasks; bridge metrics N/A)"]

    def rank(v: Any) -> str:
        return "n/a" if v is None else str(v)

    lines.append(_table([[k, v] for k, v in sb["gold_rank_distribution"].items()], ["rank", "count"]))
    lines += ["", f"p50={rank(sb['gold_rank_p50'])}, p90={rank(sb['gold_rank_p90'])}, "
              f"gold_at_rank_1={_pct(sb['gold_at_rank_1'])}, gold_missing={_pct(sb['gold_missing'])} "
              f"({sb['searches_observed']} searches over {sb['runs_observed']} runs)", ""]
    by_rank = [[r["rank"], _num(r["pass_rate"]), r["run_count"]] for r in sb["pass_rate_by_rank"]]
    lines.append(_table(by_rank or [["(no runs with `akm search` invocations)", "—", "0"]], ["rank", "pass_rate", "run_count"]))
    return lines


def _overhead_section(env: dict[str, Any]) -> list[str]:
    a = env["akm_overhead"]["aggregate"]
    if not a["total_runs"]:
        return []
    lines = ["", "## AKM overhead", ""]
    if not a["runs_with_trajectory"]:
        return lines + [f"- runs: {a['total_runs']} (no trajectory observed)"]

    def ms(v: float | None) -> str:
        return "n/a" if v is None else f"{round(v)}ms"

    def by(v: float | None, unit: str) -> str:
        return "n/a" if v is None else f"{round(v)} {unit}"

    return lines + [
        f"- runs: {a['total_runs']} ({a['passing_runs']} passed, {a['runs_with_trajectory']} observed)",
        f"- tool calls: search={_num(a['mean_search_count'])} show={_num(a['mean_show_count'])} "
        f"feedback={_num(a['mean_feedback_count'])} (mean per run)",
        f"- feedback polarity: positive={_num(a['mean_positive_feedback_count'])} negative={_num(a['mean_negative_feedback_count'])} (mean per run)",
        f"- total tool calls: {a['total_tool_calls']} (mean {_num(a['mean_tool_calls'])} per run)",
        f"- tool_calls_per_success: {_num(a['tool_calls_per_success'])}",
        f"- assets loaded (mean unique per run): {_num(a['mean_assets_loaded'])}",
        f"- irrelevant assets loaded (mean per judged run): {_num(a['mean_irrelevant_assets_loaded'])}",
        f"- time_to_first_search: {ms(a['mean_time_to_first_search_ms'])}",
        f"- time_to_first_correct_asset: {ms(a['mean_time_to_first_correct_asset_ms'])}",
        f"- context_bytes_loaded: {by(a['mean_context_bytes_loaded'], 'bytes')}",
        f"- asset_bytes_loaded: {by(a['mean_asset_bytes_loaded'], 'bytes')}",
        f"- cost_per_success: {by(a['cost_per_success'], 'tokens')}",
    ]


def write(directory: Path, env: dict[str, Any]) -> tuple[Path, Path]:
    """Write report.json and summary.md atomically; append the summary to $GITHUB_STEP_SUMMARY."""
    directory.mkdir(parents=True, exist_ok=True)
    json_path, md_path = directory / "report.json", directory / "summary.md"
    markdown = render_markdown(env)
    _atomic_write(json_path, lambda fh: fh.writelines(_json_chunks(env)))
    _atomic_write(md_path, lambda fh: fh.write(markdown))
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        with open(step_summary, "a", encoding="utf-8") as fh:
            fh.write(markdown + "\n")
    return json_path, md_path


def _json_chunks(value: Any, level: int = 0) -> Iterator[str]:
    """Indented JSON in which long lists hold one compact element per line.

    Readable and diff-friendly like ``indent=2``, but each row goes through the C encoder, so a
    100k-run report is written in a fraction of the time and never held as one string.
    """
    pad = "  " * (level + 1)
    if isinstance(value, dict) and value:
        yield "{\n"
        for i, (key, item) in enumerate(value.items()):
            yield f"{',' if i else ''}\n{pad}" if i else pad
            yield json.dumps(str(key)) + ": "
            yield from _json_chunks(item, level + 1)
        yield "\n" + "  " * level + "}" + ("\n" if level == 0 else "")
    elif isinstance(value, list) and value:
        yield "["
        long = len(value) > _LONG_LIST
        for i, item in enumerate(value):
            yield ("," if i else "") + "\n" + pad
            if long:
                yield json.dumps(item)
            else:
                yield from _json_chunks(item, level + 1)
        yield "\n" + "  " * level + "]"
    else:
        yield json.dumps(value)


def _atomic_write(path: Path, fill: Callable[[IO[str]], object]) -> None:
    # json.dump streams its chunks into the file: a 100k-run envelope never exists as one string.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fill(fh)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
