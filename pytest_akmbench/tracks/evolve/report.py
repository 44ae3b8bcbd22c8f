"""The evolve envelope and its markdown summary (docs/report.md, "The evolve envelope").

Improvement is claimed only when the paired post - control delta over the eval tasks is
significant by the report's own paired test (report/lift.py: sign-flip permutation, interval
excluding 0): the control runs the untouched stash beside post, so whatever changed since pre
(the model behind the endpoint, the machine) moves both, and only the evolved stash separates
them. post - pre alone would call such drift an improvement. post - pre, the control's delta
(control - pre: drift) and the successor's guard (post - pre above twice the spread of the
per-seed pass rates) are reported beside it. Pure: no pytest.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from statistics import fmean
from typing import Any

from ...cell import akm
from ...records import Sample
from ...report import lift, metrics
from ...report.envelope_rows import TaskArmRow
from ...report.envelope_types import EvolveEnvelope
from ...stats import intervals
from . import learning
from .core import EVAL_CONDITIONS, arm_label, condition_of, episode_label

SCHEMA_VERSION = 1
AGREEMENT_THRESHOLD = 0.80


def _by_condition(samples: Sequence[Sample]) -> dict[str, dict[str, list[Sample]]]:
    out: dict[str, dict[str, list[Sample]]] = {}
    for s in samples:
        cond = condition_of(s)
        out.setdefault(cond, {}).setdefault(s["task_id"], []).append(s)
    return out


def _pass_rate(row: TaskArmRow | None) -> float | None:
    return row["pass_rate"] if row else None


def _rate(rows: dict[str, TaskArmRow | None]) -> float | None:
    agg = metrics.aggregate(list(rows.values()))
    return None if agg is None else agg.get("pass_rate")


def _seed_spread(runs: dict[str, list[Sample]]) -> float | None:
    """Standard deviation, over seeds, of the pass rate over the eval tasks (None below 2 seeds)."""
    per_seed: dict[int, list[bool]] = {}
    for task_runs in runs.values():
        for s in task_runs:
            if s["outcome"] != "harness_error":
                per_seed.setdefault(s["seed"], []).append(s["outcome"] == "pass")
    rates = [fmean(v) for v in per_seed.values() if v]
    return intervals.stdev(rates) if len(rates) >= 2 else None


def _compare(cond: dict[str, dict[str, list[Sample]]], a: str, b: str, tasks: list[str]) -> dict[str, Any] | None:
    if a not in cond or b not in cond:
        return None
    runs_a = [cond[a].get(t, []) for t in tasks]
    runs_b = [cond[b].get(t, []) for t in tasks]
    rows_a = [metrics.per_task(r) for r in runs_a]
    rows_b = [metrics.per_task(r) for r in runs_b]
    outs_a = [metrics.valid_outcomes(r) for r in runs_a]
    outs_b = [metrics.valid_outcomes(r) for r in runs_b]
    block = lift.compare_arms((arm_label(a), arm_label(b)), rows_a, rows_b, outs_a, outs_b)
    return block if block["tasks"] else None


def improvement(cond: dict[str, dict[str, list[Sample]]], tasks: list[str]) -> dict[str, Any]:
    """post - pre with its interval, the control's delta, the seed-spread guard, and the claim,
    made on post - control (no control, no claim)."""
    main = _compare(cond, "post", "pre", tasks)
    control = _compare(cond, "control", "pre", tasks)
    over_control = _compare(cond, "post", "control", tasks)
    spreads = [_seed_spread(cond.get(c, {})) for c in ("pre", "post")]
    known = [s for s in spreads if s is not None]
    spread = max(known) if known else None
    delta = main["delta"] if main else None
    guard = None if delta is None or spread is None else delta > 2 * spread
    claimed = bool(over_control and over_control["significant"] and over_control["delta"] > 0)
    return {
        "post_minus_pre": main,
        "control_minus_pre": control,
        "post_minus_control": over_control,
        "seed_spread": spread,
        "seed_spread_guard": guard,
        "claimed": claimed,
    }


def _feedback_integrity(log: list[dict[str, Any]]) -> dict[str, Any]:
    """The agent's own feedback signal (from its transcript) against the verifier's outcome:
    unlike the reference, the signal is not derived from the outcome it is checked against."""

    def cells(entries: list[dict[str, Any]]) -> dict[str, Any]:
        judged = [e for e in entries if e.get("agent_signal") in ("positive", "negative")]
        tp = sum(e["agent_signal"] == "positive" and e["outcome"] == "pass" for e in judged)
        fp = sum(e["agent_signal"] == "positive" and e["outcome"] != "pass" for e in judged)
        tn = sum(e["agent_signal"] == "negative" and e["outcome"] != "pass" for e in judged)
        fn = sum(e["agent_signal"] == "negative" and e["outcome"] == "pass" for e in judged)

        def ratio(n: int, d: int) -> float | None:
            return n / d if d else None

        return {
            "truePositive": tp,
            "falsePositive": fp,
            "trueNegative": tn,
            "falseNegative": fn,
            "feedback_agreement": ratio(tp + tn, len(judged)),
            "false_positive_rate": ratio(fp, fp + tn),
            "false_negative_rate": ratio(fn, fn + tp),
            "feedback_coverage": ratio(len(judged), len(entries)),
        }

    refs = sorted({e["gold_ref"] for e in log})
    return {
        "aggregate": cells(log),
        "perAsset": [{"ref": r, **cells([e for e in log if e["gold_ref"] == r])} for r in refs],
    }


def _proposals(steps: dict[str, dict[str, Any]]) -> dict[str, Any]:
    log = [
        {"domain": step.get("domain", d), "episode": step.get("episode", 1), "fixture": f, **p}
        for d, step in sorted(steps.items())
        for f, part in sorted(step["fixtures"].items())
        for p in part["proposals"]
    ]
    generation = [g for step in steps.values() for part in step["fixtures"].values() for g in part["generation"]]
    rows: dict[str, dict[str, Any]] = {}
    for p in log:
        row = rows.setdefault(
            p["target_ref"],
            {"asset_ref": p["target_ref"], "proposal_count": 0, "lint_pass_count": 0, "accepted_count": 0},
        )
        row["proposal_count"] += 1
        row["lint_pass_count"] += bool(p["lint_pass"])
        row["accepted_count"] += p["decision"] == "accept"
    total, accepted = len(log), sum(p["decision"] == "accept" for p in log)
    return {
        "total_proposals": total,
        "total_accepted": accepted,
        "acceptance_rate": accepted / total if total else 0.0,
        "lint_pass_rate": sum(bool(p["lint_pass"]) for p in log) / total if total else 0.0,
        "rows": [rows[k] for k in sorted(rows)],
        "log": log,
        "generation": generation,
    }


def _lessons(proposals: dict[str, Any], post: dict[str, list[Sample]]) -> dict[str, Any]:
    """Each lesson proposal and its reuse: post runs that showed it (from their trajectories)."""
    runs = sorted((s for r in post.values() for s in r), key=lambda s: (s["task_id"], s["seed"]))
    lessons = []
    for p in proposals["log"]:
        if p["kind"] != "lesson":
            continue
        used = [
            s
            for s in runs
            if p["decision"] == "accept"
            and any(
                akm.same_asset(ref, p["target_ref"]) for ref in (s.get("trajectory") or {}).get("assets_loaded") or []
            )
        ]
        lessons.append(
            {
                "ref": p["target_ref"],
                "lint_pass": p["lint_pass"],
                "accepted": p["decision"] == "accept",
                "first_reused_on": f"{used[0]['task_id']}[s{used[0]['seed']}]" if used else None,
                "reuse_count": len(used),
                "reuse_pass_rate": sum(s["outcome"] == "pass" for s in used) / len(used) if used else 0.0,
            }
        )
    accepted = [x for x in lessons if x["accepted"]]
    reused = [x for x in accepted if x["reuse_count"]]
    return {
        "lessons_created_count": len(lessons),
        "lessons_accepted_count": len(accepted),
        "lesson_reuse_rate": len(reused) / len(accepted) if accepted else 0.0,
        "lesson_reuse_success_rate": fmean(x["reuse_pass_rate"] for x in reused) if reused else 0.0,
        "lessons": lessons,
    }


def build(
    samples: Sequence[Sample],
    steps: dict[str, dict[str, Any]],
    *,
    eval_tasks: list[str],
    train_tasks: list[str],
    domains: list[str],
    seeds: int,
    agent: dict[str, Any],
    akm_info: dict[str, Any] | None,
    llm: str,
    missing_steps: list[str],
    episodes: int = 1,
) -> EvolveEnvelope:
    """The evolve envelope of a run (docs/report.md). With several episodes, ``post`` is the
    last episode's (the stash the run ends with) and ``learning`` holds the curve."""
    cond = _by_condition(samples)
    per_episode = [cond.get(episode_label("post", e), {}) for e in range(1, episodes + 1)]
    cond["post"] = per_episode[-1]
    rows = {c: {t: metrics.per_task(cond.get(c, {}).get(t, [])) for t in eval_tasks} for c in EVAL_CONDITIONS}
    rates = {c: _rate(rows[c]) for c in EVAL_CONDITIONS}
    train_rows = {t: metrics.per_task(cond.get("train", {}).get(t, [])) for t in train_tasks}
    proposals = _proposals(steps)
    log = [e for step in steps.values() for part in step["fixtures"].values() for e in part["feedback"]]
    integrity = _feedback_integrity(log)
    leak = [part["leakage"] for step in steps.values() for part in step["fixtures"].values()]
    imp = improvement(cond, eval_tasks)
    curve = _learning(cond, per_episode, eval_tasks, train_tasks, episodes)
    warnings = _warnings(steps, missing_steps, integrity, leak) + learning.warnings(curve)
    envelope: EvolveEnvelope = {
        "schemaVersion": SCHEMA_VERSION,
        "track": "evolve",
        "timestamp": datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "agent": agent,
        "akm": akm_info,
        "evolve_llm": llm,
        "corpus": {
            "domain": domains[0] if len(domains) == 1 else "all",
            "seedsPerArm": seeds,
            "episodes": episodes,
            "train_tasks": train_tasks,
            "eval_tasks": eval_tasks,
        },
        "proposals": proposals,
        "lessons": _lessons(proposals, cond.get("post", {})),
        "longitudinal": _longitudinal(rates, rows),
        "improvement": imp,
        "learning": curve,
        "phases": _phases(cond, rates, train_rows),
        "per_task": [{"task_id": t, **{c: _pass_rate(rows[c][t]) for c in EVAL_CONDITIONS}} for t in eval_tasks],
        "feedback_integrity": integrity,
        "leakage": {"ok": all(x["ok"] for x in leak) if leak else None, "per_fixture": leak},
        "warnings": warnings,
        "verdict": "",  # read from the rest, next
    }
    envelope["verdict"] = verdict(envelope)
    return envelope


def _phases(
    cond: dict[str, dict[str, list[Sample]]], rates: dict[str, float | None], train_rows: dict[str, Any]
) -> dict[str, Any]:
    runs = {c: sum(len(v) for v in cond.get(c, {}).values()) for c in ("train", *EVAL_CONDITIONS)}
    return {
        "train": {"pass_rate": _rate(train_rows), "runs": runs["train"]},
        **{c: {"pass_rate": rates[c], "runs": runs[c]} for c in EVAL_CONDITIONS},
    }


def _learning(
    cond: dict[str, dict[str, list[Sample]]],
    per_episode: list[dict[str, list[Sample]]],
    eval_tasks: list[str],
    train_tasks: list[str],
    episodes: int,
) -> dict[str, Any]:
    """The curve over the episodes' post cells, each point with its episode's train pass rate."""

    def outcomes(runs: dict[str, list[Sample]], tasks: list[str]) -> dict[str, list[bool]]:
        return {t: metrics.valid_outcomes(runs.get(t, [])) for t in tasks}

    pre = outcomes(cond.get("pre", {}), eval_tasks)
    curve = learning.curve(pre, [outcomes(runs, eval_tasks) for runs in per_episode], eval_tasks)
    for point in curve["episodes"]:
        train = outcomes(cond.get(episode_label("train", point["episode"]), {}), train_tasks)
        rates = [fmean(v) for v in train.values() if v]
        point["train_pass_rate"] = fmean(rates) if rates else None
    return curve


def _warnings(
    steps: dict[str, dict[str, Any]], missing: list[str], integrity: dict[str, Any], leak: list[dict[str, Any]]
) -> list[str]:
    warnings = [w for step in steps.values() for part in step["fixtures"].values() for w in part["warnings"]]
    warnings += [f"evolve: the proposal step of domain {d} has not run: its post cells could not run" for d in missing]
    agreement = integrity["aggregate"]["feedback_agreement"]
    if agreement is not None and agreement < AGREEMENT_THRESHOLD:
        warnings.append(f"feedback_agreement_below_threshold: {agreement:.2f} < {AGREEMENT_THRESHOLD:.2f}")
    if leak and not all(x["ok"] for x in leak):
        warnings.append("leakage: the evolving stash logged feedback the harness did not dispatch from a train run")
    return warnings


def _longitudinal(rates: dict[str, float | None], rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    def minus(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None else a - b

    degradations = []
    for task, pre in rows["pre"].items():
        post = rows["post"].get(task)
        if not (pre and post and pre["pass_rate"] is not None and post["pass_rate"] is not None):
            continue
        # One seed's worth of drop or more; compared in whole runs, not floats.
        if (pre["pass_rate"] - post["pass_rate"]) * max(1, post["valid_count"]) >= 1 - 1e-9:
            degradations.append(
                {
                    "task_id": task,
                    "pre_pass_rate": pre["pass_rate"],
                    "post_pass_rate": post["pass_rate"],
                    "delta": post["pass_rate"] - pre["pass_rate"],
                }
            )
    return {
        "improvement_slope": minus(rates["post"], rates["pre"]),
        "control_delta": minus(rates["control"], rates["pre"]),
        "over_synthetic_lift": minus(rates["post"], rates["synthetic"]),
        "degradation_count": len(degradations),
        "pre_pass_rate": rates["pre"],
        "post_pass_rate": rates["post"],
        "control_pass_rate": rates["control"],
        "synthetic_pass_rate": rates["synthetic"],
        "degradations": degradations,
    }


def verdict(env: EvolveEnvelope) -> str:
    """One line: whether feedback improved the stash, on what evidence."""
    imp = env["improvement"]
    main, control = imp["post_minus_pre"], imp["control_minus_pre"]
    accepted = env["proposals"]["total_accepted"]
    if main is None:
        return "evolve: no verdict: the eval cells of pre and post did not both run"
    over = imp["post_minus_control"]
    pre = f"post - pre {main['delta']:+.2f} [{main['low']:+.2f}, {main['high']:+.2f}]"
    ctrl = f"; control - pre {control['delta']:+.2f}" if control else ""
    guard = imp["seed_spread_guard"]
    guard_text = "" if guard is None else f"; 2x seed-spread guard {'passed' if guard else 'not passed'}"
    props = f"{accepted} of {env['proposals']['total_proposals']} proposals accepted"
    curve = learning.verdict_part(env["learning"]) if env["learning"] else None
    props += f"; {curve}" if curve else ""
    if over is None:
        why = "no control: post - pre alone cannot tell learning from drift"
        return f"evolve: no improvement claimed ({why}): {pre} over {main['tasks']} eval tasks{guard_text}; {props}"
    head = (
        f"post - control {over['delta']:+.2f} [{over['low']:+.2f}, {over['high']:+.2f}] over {over['tasks']} eval tasks"
    )
    if imp["claimed"]:
        return f"evolve: IMPROVED: {head}; {pre}{ctrl}{guard_text}; {props}"
    why = "interval includes 0" if over["low"] <= 0 <= over["high"] else "not significant"
    return f"evolve: no improvement claimed ({why}): {head}; {pre}{ctrl}{guard_text}; {props}"
