"""The evolve envelope as a markdown summary (docs/report.md, "The evolve envelope")."""

from __future__ import annotations

from typing import Any

from ...report.envelope_types import EvolveEnvelope


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


def _signed(x: float | None) -> str:
    return "—" if x is None else f"{x:+.2f}"


def _interval(block: dict[str, Any] | None) -> str:
    if block is None:
        return "—"
    return f"{block['delta']:+.2f} [{block['low']:+.2f}, {block['high']:+.2f}] (p={block['p_value']:.3g}, {block['tasks']} tasks)"


def render(env: EvolveEnvelope) -> str:
    """The summary: verdict, improvement, per-task table, proposals, lessons, feedback, leakage."""
    lines = [f"# akm-bench evolve — {env['agent'].get('model') or env['agent'].get('harness')}", ""]
    corpus = env["corpus"]
    akm = env.get("akm") or {}
    lines += [
        f"corpus: domain=`{corpus['domain']}`, seedsPerArm={corpus['seedsPerArm']}, "
        f"train tasks {len(corpus['train_tasks'])}, eval tasks {len(corpus['eval_tasks'])}; "
        f"akm {akm.get('version', '—')}; akm's LLM `{env['evolve_llm']}`",
        "",
        f"**{env['verdict']}**",
        "",
    ]
    lines += _improvement(env)
    lines += _per_task(env)
    lines += _proposals(env)
    lines += _lessons(env)
    lines += _feedback(env)
    leak = env["leakage"]
    lines += ["## Leakage", ""]
    for part in leak["per_fixture"]:
        lines.append(
            f"- eval gold refs {', '.join(part['eval_gold_refs']) or '—'}: feedback events in the evolving stash "
            f"{part['feedback_events']}, dispatched from train runs {part['dispatched_from_train']}, "
            f"from eval runs {part['eval_runs_feeding'] if part['eval_runs_feeding'] is not None else 'unknown'}"
        )
    lines += ["", f"leakage check: {'passed' if leak['ok'] else 'FAILED' if leak['ok'] is False else 'not run'}", ""]
    lines += _learning(env.get("learning"))
    if env["warnings"]:
        lines += ["## Warnings", "", *[f"- {w}" for w in env["warnings"]], ""]
    return "\n".join(lines)


def _improvement(env: EvolveEnvelope) -> list[str]:
    imp, lon = env["improvement"], env["longitudinal"]
    guard = imp["seed_spread_guard"]
    return [
        "## Improvement",
        "",
        "| comparison | delta [95% CI] |",
        "|---|---|",
        f"| post − pre | {_interval(imp['post_minus_pre'])} |",
        f"| control − pre (no evolve: drift) | {_interval(imp['control_minus_pre'])} |",
        f"| post − control | {_interval(imp['post_minus_control'])} |",
        "",
        f"improvement claimed: **{'yes' if imp['claimed'] else 'no'}** (a claim needs the post − control interval "
        f"to exclude 0 and the paired test to be significant: the control ran beside post, so drift cancels); "
        f"2× seed-spread guard: "
        + (
            "n/a (fewer than 2 seeds)"
            if guard is None
            else f"{'passed' if guard else 'not passed'} (spread {imp['seed_spread']:.2f})"
        ),
        "",
        "| pre | post | control | synthetic | post − pre | post − synthetic | degradations |",
        "|---|---|---|---|---|---|---|",
        f"| {_pct(lon['pre_pass_rate'])} | {_pct(lon['post_pass_rate'])} | {_pct(lon['control_pass_rate'])} | "
        f"{_pct(lon['synthetic_pass_rate'])} | {_signed(lon['improvement_slope'])} | "
        f"{_signed(lon['over_synthetic_lift'])} | {lon['degradation_count']} |",
        "",
    ]


def _per_task(env: EvolveEnvelope) -> list[str]:
    lines = [
        "## Per-task pre → post (control, synthetic)",
        "",
        "| task | pre | post | control | synthetic | post − pre |",
    ]
    lines.append("|---|---|---|---|---|---|")
    for row in env["per_task"]:
        d = None if row["pre"] is None or row["post"] is None else row["post"] - row["pre"]
        lines.append(
            f"| {row['task_id']} | {_pct(row['pre'])} | {_pct(row['post'])} | {_pct(row['control'])} | "
            f"{_pct(row['synthetic'])} | {_signed(d)} |"
        )
    return [*lines, ""]


def _proposals(env: EvolveEnvelope) -> list[str]:
    p = env["proposals"]
    lines = ["## Proposals", ""]
    lines.append(
        f"acceptance_rate={p['acceptance_rate']:.2f}, lint_pass_rate={p['lint_pass_rate']:.2f}, "
        f"total={p['total_proposals']}, accepted={p['total_accepted']}"
    )
    lines.append("")
    failed = [g for g in p["generation"] if g["outcome"] != "queued"]
    if not p["log"]:
        lines.append("_No proposal was accepted: none was generated._")
    else:
        lines += ["| asset_ref | verb | decision | lint | reason |", "|---|---|---|---|---|"]
        lines += [
            f"| {x['target_ref']} | {x.get('verb') or '—'} | {x['decision']} | {'pass' if x['lint_pass'] else 'fail'} | "
            f"{x.get('reason') or ''} |"
            for x in p["log"]
        ]
    for g in failed:
        lines.append(f"- {g['verb']} {g['ref']}: {g['outcome']}: {g.get('message') or ''}")
    return [*lines, ""]


def _lessons(env: EvolveEnvelope) -> list[str]:
    les = env["lessons"]
    lines = ["## Lessons", ""]
    lines.append(
        f"created {les['lessons_created_count']}, accepted {les['lessons_accepted_count']}, "
        f"reuse rate {les['lesson_reuse_rate']:.2f}, reuse success {les['lesson_reuse_success_rate']:.2f}"
    )
    if les["lessons"]:
        lines += ["", "| ref | accepted | lint | reuse | reuse_pass | first_reused_on |", "|---|---|---|---|---|---|"]
        lines += [
            f"| {x['ref']} | {x['accepted']} | {x['lint_pass']} | {x['reuse_count']} | {x['reuse_pass_rate']:.2f} | "
            f"{x['first_reused_on'] or '—'} |"
            for x in les["lessons"]
        ]
    return [*lines, ""]


def _feedback(env: EvolveEnvelope) -> list[str]:
    agg = env["feedback_integrity"]["aggregate"]
    return [
        "## Feedback-signal integrity (the agent's own feedback against the verifier)",
        "",
        "| | verifier pass | verifier fail |",
        "|---|---|---|",
        f"| agent positive | {agg['truePositive']} | {agg['falsePositive']} |",
        f"| agent negative | {agg['falseNegative']} | {agg['trueNegative']} |",
        "",
        f"feedback_agreement={_pct(agg['feedback_agreement'])}, coverage={_pct(agg['feedback_coverage'])}",
        "",
    ]


def _learning(learning: dict[str, Any] | None) -> list[str]:
    """The curve: each episode's post pass rate with its interval, the slope and the trend."""
    lines = ["## Learning curve", ""]
    if not learning:
        return [*lines, "_No learning curve._", ""]
    lines += [
        f"pre (before any episode): {_pct(learning['pre_pass_rate'])}",
        "",
        "| episode | post [95% CI] | train |",
        "|---|---|---|",
    ]
    for p in learning["episodes"]:
        span = "" if p["low"] is None else f" [{p['low']:.2f}, {p['high']:.2f}]"
        lines.append(f"| {p['episode']} | {_pct(p['post_pass_rate'])}{span} | {_pct(p.get('train_pass_rate'))} |")
    fit = learning["slope"]
    lines.append("")
    if fit is None:
        lines.append("_One episode: no slope (--bench-evolve-episodes N for a curve)._")
    else:
        test = (
            "no test: a trend across episodes needs 3 or more"
            if fit["p_value"] is None
            else f"[{fit['low']:+.2f}, {fit['high']:+.2f}] (p={fit['p_value']:.3g}, t over the episode means)"
        )
        lines.append(
            f"slope {fit['slope']:+.2f}/episode {test}, {fit['tasks']} tasks; trend: **{learning['trend']}**; "
            f"best episode {learning['best_episode']}"
            + ("; **the last episode is below the best**" if learning["last_below_best"] else "")
        )
    return [*lines, ""]
