"""The markdown summary of a report envelope (docs/report.md, "Markdown summary"); the verdict line
is in verdict.py, the detail sections in sections.py.

Pure functions of the envelope, so the session, the ``report`` command and tests render
the same bytes from the same envelope.
"""

from __future__ import annotations

from typing import Any

from .. import soundness, spend
from ..envelope_types import Envelope
from ..verdict import verdict
from . import adaptive, notes, workflow_sections
from .fmt import fmt_ci, fmt_obs, fmt_p, fmt_pct, md_table, num, signed
from .sections import (
    bridge_section,
    coverage_section,
    failure_section,
    floor_section,
    negative_transfer_section,
    overhead_section,
    pass_k_section,
    per_task_section,
    trajectory_section,
)

# ---------------------------------------------------------------- markdown


def render_markdown(envelope: Envelope) -> str:
    """The summary a reader sees first: verdict, aggregate with intervals, per-task table, sections."""
    arms = envelope["corpus"]["arms"]
    lines = _header(envelope)
    lines += _aggregate_section(envelope, arms)
    lines += adaptive.markdown_lines(envelope)
    lines += pass_k_section(envelope, arms)
    lines += _gates_section(envelope)
    lines += soundness.markdown_lines(envelope)
    lines += trajectory_section(envelope)
    lines += per_task_section(envelope, arms)
    lines += floor_section(envelope)
    lines += coverage_section(envelope)
    lines += negative_transfer_section(envelope)
    lines += failure_section(envelope)
    lines += bridge_section(envelope)
    lines += workflow_sections.section(envelope)
    lines += overhead_section(envelope)
    lines += _token_section(envelope)
    lines += spend.markdown_lines(envelope)
    lines += _harness_error_section(envelope)
    lines += _provenance_section(envelope)
    if envelope["warnings"]:
        lines += ["", "## Warnings", ""] + [f"- {w}" for w in envelope["warnings"]]
    return "\n".join(lines) + "\n"


def _header(envelope: Envelope) -> list[str]:
    corpus = envelope["corpus"]
    lines = [
        f"# akm-bench utility — {envelope['agent']['model'] or envelope['agent']['harness']}",
        "",
        f"branch `{envelope['branch']}` @ `{envelope['commit']}` — {envelope['timestamp']}"
        + ("" if envelope.get("complete", True) else " — **incomplete run**"),
        f"corpus: {corpus['tasks']} tasks across {corpus['domains']} domains "
        f"(slice={corpus['slice']}, seedsPerArm={corpus['seedsPerArm']}), agent: {envelope['agent']['harness']}",
        "",
        f"**Verdict:** {envelope.get('verdict') or verdict(envelope)}",
    ]
    failed = [g for g in envelope.get("gates") or [] if not g["ok"]]
    if envelope.get("gates"):
        lines.append(
            f"**Gates:** {len(envelope['gates']) - len(failed)} passed, {len(failed)} failed"
            + (": " + "; ".join(f"`{g['gate']}` ({g['message']})" for g in failed) if failed else "")
        )
    return lines


def _aggregate_section(envelope: Envelope, arms: list[str]) -> list[str]:
    """The aggregate table (one row per arm, then the delta) and the notes on the comparisons."""
    lines = ["", "## Aggregate", ""]
    agg = envelope["aggregate"]
    rows = []
    for arm in arms:
        a = agg.get(arm)
        if a is None:
            rows.append([arm] + ["not run"] * 7)
            continue
        ci = a.get("pass_rate_ci")
        rows.append(
            [
                arm,
                num(a["pass_rate"]),
                fmt_ci(ci["low"], ci["high"]) if ci else "n/a",
                num(a["pass_at_1"]),
                num(a["tokens_per_pass"], 0),
                num(a["wallclock_ms"], 0),
                a["runs"],
                a["harness_error_count"],
            ]
        )
    d = agg.get("delta")
    if d is not None:
        p = d.get("paired") or {}
        level = p.get("confidence") or 0.95
        rows.append(
            [
                "**delta**" if level == 0.95 else f"**delta** ({100 * level:g}% interval, Holm)",
                signed(d["pass_rate"]),
                fmt_ci(p.get("low"), p.get("high"), with_sign=True),
                "",
                signed(d["tokens_per_pass"], 0),
                signed(d["wallclock_ms"], 0),
                "",
                "",
            ]
        )
    lines.append(
        md_table(
            rows, ["arm", "pass_rate", "95% CI", "pass@1", "tokens_per_pass", "wallclock_ms", "runs", "harness_errors"]
        )
    )
    lines += [
        "",
        "arm intervals are of the mean over tasks like these, whatever the spread of task difficulty "
        "(exact binomial over the tasks: seeds sharpen each task, not the count of tasks); "
        "harness errors are out of every figure",
    ]
    if d is not None and d.get("paired"):
        lines += ["", _comparison_note("delta = akm − noakm", d["paired"])]
    return lines + _synthetic_notes(agg)


def _synthetic_notes(agg: dict[str, Any]) -> list[str]:
    if "akm_over_synthetic_lift" not in agg:
        return []
    syn = agg["akm_over_synthetic_lift"]
    if syn is None:
        lines = ["", "akm_over_synthetic_lift: n/a"]
    elif syn <= 0:
        lines = [
            "",
            f":warning: **akm_over_synthetic_lift = {signed(syn)}** — AKM did not beat the synthetic-notes baseline.",
        ]
    else:
        lines = ["", f"**akm_over_synthetic_lift: {signed(syn)}**"]
    if agg.get("akm_over_synthetic_paired"):
        lines += ["", _comparison_note("akm − synthetic", agg["akm_over_synthetic_paired"])]
    return lines


def _gates_section(envelope: Envelope) -> list[str]:
    if not envelope.get("gates"):
        return []
    return [
        "",
        "## Gates",
        "",
        md_table(
            [
                [f"`{g['gate']}`", "pass" if g["ok"] else "**FAIL**", fmt_obs(g["observed"]), g["message"]]
                for g in envelope["gates"]
            ],
            ["gate", "result", "observed", "detail"],
        ),
    ]


def _token_section(envelope: Envelope) -> list[str]:
    tm = envelope["token_measurement"]
    if not tm["total_runs"]:
        return []
    return [
        "",
        "## Token measurement",
        "",
        f"- runs: {tm['total_runs']} total, {tm['runs_with_measured_tokens']} measured, "
        f"{tm['runs_missing_measurement']} missing, {tm['runs_unsupported_measurement']} unsupported",
        f"- coverage: {fmt_pct(tm['coverage'])} ({'reliable' if tm['reliable'] else 'unreliable — token figures cover the measured runs only'})",
    ]


def _harness_error_section(envelope: Envelope) -> list[str]:
    problems = [r for r in envelope["runs"] if r["outcome"] == "harness_error"]
    if not problems:
        return []
    lines = ["", "## Harness errors", ""]
    lines += [f"- {r['task_id']} {r['arm']} s{r['seed']}: {r['reason']}" for r in problems[:50]]
    if len(problems) > 50:
        lines.append(f"- … and {len(problems) - 50} more")
    return lines


def _provenance_section(envelope: Envelope) -> list[str]:
    prov = envelope.get("provenance")
    if not prov:
        return []
    return [
        "",
        "## Provenance",
        "",
        f"plugin {prov['plugin_version']}, python {prov['python']}, host {prov['host']}, agent "
        f"{prov['agent']['name']} {prov['agent']['version']}, model {prov['model'] or 'n/a'}, opencode "
        f"{prov.get('opencode_version') or 'not used'}, akm {prov.get('akm_version') or 'not used'}"
        + (f" ({prov['akm_search_mode']} search)" if prov.get("akm_search_mode") else "")
        + ", "
        f"sandbox {prov.get('sandbox') or 'n/a'}, "
        f"{len(prov['fingerprints'])} fingerprint(s), {prov['samples_from_store']} sample(s) from the store",
    ]


def _comparison_note(name: str, p: dict[str, Any]) -> str:
    """How a paired comparison was computed, with its diagnostics."""
    if not p["tasks"]:
        return f"{name}: no task has valid runs in both arms"
    how = (
        f"exact over all {p['iterations']} sign vectors"
        if p["exact"]
        else f"{p['iterations']} random sign vectors, seed {p['seed']}"
    )
    diag = p["diagnostics"]
    return (
        f"{name}: {signed(p['delta'])}, paired over {p['tasks']} tasks"
        + (f" ({p['tasks_unpaired']} unpaired tasks left out)" if p["tasks_unpaired"] else "")
        + f"; paired permutation test ({how}) p={fmt_p(p['p_value'])}"
        + (
            f", Holm-adjusted p={fmt_p(p['p_value_holm'])} over {p['holm_family']} comparisons"
            if p["holm_family"] > 1
            else ""
        )
        + f"; {100 * (p.get('confidence') or 0.95):g}% interval = the lifts the test does not reject"
        + f"; significant: {'yes' if p['significant'] else 'no'}; {notes.SIGN_FLIP_NULL}. "
        f"Diagnostics: sign test {p['wins']} wins / {p['losses']} losses / {p['ties']} ties, p={fmt_p(diag['sign_test_p'])}; "
        f"cluster bootstrap {fmt_ci(diag['bootstrap_low'], diag['bootstrap_high'], with_sign=True)}"
    )
