"""The detail sections of the markdown summary, one function per section (docs/report.md,
"Markdown summary")."""

from __future__ import annotations

from typing import Any, Literal

from ...corpus.tasks import MEMORY_ABILITIES
from ..envelope_types import Envelope
from . import notes
from .fmt import fmt_pct, fmt_rate_ci, md_table, num, signed

MD_TASK_CAP = 500  # per-run tables above this size are summarised, not listed
TRAJECTORY_MARKS: tuple[Literal["correct_asset_loaded", "feedback_recorded", "searched_before_acting"], ...] = (
    "correct_asset_loaded",
    "feedback_recorded",
    "searched_before_acting",
)
MD_TASK_ROWS = 50  # per-task rows in the markdown, largest |delta| first when there are more


def pass_k_section(envelope: Envelope, arms: list[str]) -> list[str]:
    agg = envelope["aggregate"]
    ks = sorted({k for arm in arms if agg.get(arm) for k in agg[arm]["pass_at_k"]}, key=int)[:10]
    if len(ks) < 2:
        return []
    counts = ", ".join(
        f"{arm} {agg[arm]['pass_k_tasks']} tasks, k ≤ {len(agg[arm]['pass_at_k'])}" for arm in arms if agg.get(arm)
    )
    rows = []
    for arm in arms:
        a = agg.get(arm)
        if a is None:
            continue
        rows.append([arm] + [f"{num(a['pass_at_k'].get(k))} / {num(a['pass_hat_k'].get(k))}" for k in ks])
    return [
        "",
        "### pass@k / pass^k (mean over tasks)",
        "",
        md_table(rows, ["arm"] + [f"k={k}" for k in ks]),
        "",
        f"each arm's curve uses one task set for every k, up to the fewest valid runs of any of its tasks ({counts})",
    ]


def trajectory_section(envelope: Envelope) -> list[str]:
    t = (envelope.get("trajectory") or {}).get("akm")
    if t is None:
        return []
    c = t["counts"]
    lines = ["", "## Trajectory (akm)", ""]
    unconfirmed = notes.unconfirmed_akm_log(t.get("unconfirmed_cells") or [], c["runs"])
    lines += [f"**{unconfirmed}**", ""] if unconfirmed else []
    if not c["runs_with_trajectory"]:
        return lines + [notes.trajectory_not_observed(c)]
    lines += [
        f"- correct_asset_loaded: {fmt_pct(t['correct_asset_loaded'])} ({c['correct_asset_loaded']}/{c['gold_ref_runs']} runs with a gold ref)",
        f"- feedback_recorded: {fmt_pct(t['feedback_recorded'])} ({c['feedback_recorded']}/{c['runs_with_trajectory']}; "
        f"{c['feedback_positive']} positive, {c['feedback_negative']} negative)",
        f"- searched_before_acting: {fmt_pct(t['searched_before_acting'])} ({c['searched_before_acting']}/{c['searched_before_acting_judged']})",
        f"- irrelevant assets loaded (mean per run): {num(t['irrelevant_assets_loaded'])}",
        f"- observed in {c['runs_with_trajectory']} of {c['runs']} akm-arm runs",
    ]
    akm_rows = [r for r in envelope["runs"] if r["arm"] == "akm"]
    if 0 < len(akm_rows) <= MD_TASK_CAP:
        mark = {True: "✓", False: "✗", None: "—"}
        lines += [
            "",
            md_table(
                [
                    [
                        r["task_id"],
                        r["seed"],
                        *(
                            ["harness_error (not observed)", "—", "—"]  # the agent never ran, or not to the end
                            if r["outcome"] == "harness_error"
                            else [mark[r["trajectory"][k]] for k in TRAJECTORY_MARKS]
                        ),
                    ]
                    for r in akm_rows
                ],
                ["task", "seed", "correct_asset_loaded", "feedback_recorded", "searched_before_acting"],
            ),
        ]
    return lines


def _shown_tasks(tasks: list[dict[str, Any]], both: bool) -> list[dict[str, Any]]:
    """The per-task rows the markdown lists: a GitHub step summary over 1 MiB is dropped, so above
    MD_TASK_ROWS tasks only those with the largest |delta| (the first by id without a delta); the
    rest are in the JSON and HTML."""
    tasks = sorted(tasks, key=lambda t: t["id"])
    if len(tasks) <= MD_TASK_ROWS:
        return tasks
    if not both:
        return tasks[:MD_TASK_ROWS]
    return sorted(tasks, key=lambda t: (-abs((t.get("delta") or {}).get("pass_rate") or 0.0), t["id"]))[:MD_TASK_ROWS]


def per_task_section(envelope: Envelope, arms: list[str]) -> list[str]:
    both = "akm" in arms and "noakm" in arms
    baseline = envelope.get("baseline_by_task_id")
    head = ["task", *arms] + (["delta"] if both else []) + (["baseline", "vs base"] if baseline is not None else [])
    rows = []
    for t in _shown_tasks(envelope["tasks"], both):
        cells = [t["id"]] + [fmt_rate_ci(t.get(arm)) for arm in arms]
        if both:
            cells.append(signed((t.get("delta") or {}).get("pass_rate")))
        if baseline is not None:
            base = baseline.get(t["id"])
            akm = (t.get("akm") or {}).get("pass_rate")
            cells += [num(base), signed(None if base is None or akm is None else akm - base)]
        rows.append(cells)
    which = "with the largest |delta|" if both else "first by id"
    note = [
        f"{len(rows)} of {len(envelope['tasks'])} tasks shown ({which}); all are in report.json and report.html",
        "",
    ]
    return [
        "",
        "## Per-task pass rates",
        "",
        *(note if len(rows) < len(envelope["tasks"]) else []),
        md_table(rows, head),
        "",
        "pass rate [Wilson 95% CI]; ~ flaky; * below the reporting floor",
    ]


def floor_section(envelope: Envelope) -> list[str]:
    fc = envelope.get("floor_coverage")
    if not fc:
        return []
    lines = ["", f"## Coverage vs reporting floor ({fc['floor']} valid samples per task × arm)", ""]
    lines.append(
        md_table(
            [[arm, c["cells"], c["covered"], c["partial"], c["missing"]] for arm, c in fc["by_arm"].items()],
            ["arm", "cells", "covered", "partial", "missing"],
        )
    )
    needs = fc["needs_deepening"]
    if needs:
        shown = ", ".join(f"{n['task_id']} {n['arm']} ({n['valid']}/{fc['floor']})" for n in needs[:20])
        lines += ["", f"needs deepening: {shown}" + (f", … and {len(needs) - 20} more" if len(needs) > 20 else "")]
    flaky = envelope.get("flaky_tasks") or []
    if flaky:
        lines += ["", "### Flaky tasks (both outcomes, 0/1 stdev > 0.2)", ""]
        lines.append(
            md_table(
                [
                    [f["task_id"], f["arm"], f"{f['passes']}/{f['valid_count']}", num(f["pass_rate_stdev"])]
                    for f in flaky
                ],
                ["task", "arm", "passes", "stdev"],
            )
        )
    return lines


def coverage_section(envelope: Envelope) -> list[str]:
    cc = envelope["corpus_coverage"]
    counts = cc["coverage"]["memoryAbilityCounts"]
    if not any(counts.get(a) for a in MEMORY_ABILITIES):
        return []
    rows = [[a, counts[a]] for a in sorted(MEMORY_ABILITIES) if counts.get(a)]
    if counts.get("untagged"):
        rows.append(["untagged", counts["untagged"]])
    lines = ["", "## Corpus coverage", "", md_table(rows, ["memory_ability", "tasks"]), "", "### By memory_ability", ""]
    wf_col = any(r.get("workflow_compliance") is not None for r in cc["by_memory_ability"])
    lines.append(
        md_table(
            [
                [
                    r["category"],
                    r["task_count"],
                    num(r["pass_rate_noakm"]),
                    num(r["pass_rate_akm"]),
                    signed(r["pass_rate_delta"]),
                    r["negative_transfer_count"],
                    *([num(r.get("workflow_compliance"))] if wf_col else []),
                ]
                for r in cc["by_memory_ability"]
            ],
            ["memory_ability", "tasks", "noakm", "akm", "delta", "neg.transfer", *(["workflow"] if wf_col else [])],
        )
    )
    if len(cc["by_task_family"]) >= 2:
        lines += ["", "### By task_family", ""]
        lines.append(
            md_table(
                [
                    [
                        r["category"],
                        r["task_count"],
                        num(r["pass_rate_noakm"]),
                        num(r["pass_rate_akm"]),
                        signed(r["pass_rate_delta"]),
                    ]
                    for r in cc["by_task_family"]
                ],
                ["task_family", "tasks", "noakm", "akm", "delta"],
            )
        )
    return lines


def transfer_noise_line(noise: dict[str, Any]) -> str:
    """The count beyond noise beside the count noise alone gives (docs/report.md)."""
    return (
        f"{noise['beyond_noise']} of {noise['tasks_tested']} tasks regressed beyond noise ({noise['test']}); "
        f"{noise['tasks_below']} are below noakm at all, where chance alone puts "
        f"{noise['expected_below_by_chance']:.1f} on average"
    )


def negative_transfer_section(envelope: Envelope) -> list[str]:
    if "akm" not in envelope["corpus"]["arms"] or "noakm" not in envelope["corpus"]["arms"]:
        return []
    lines = ["", "## Negative transfer", ""]
    top = envelope["top_regressed_tasks"]
    noise = envelope.get("negative_transfer_noise")
    if noise:
        lines.append(transfer_noise_line(noise))
        lines.append("")
    if not top:
        return lines + ["none beyond noise" if noise else "none"]
    lines.append(
        f"count={envelope['negative_transfer_count']}, severity={num(envelope['negative_transfer_severity'])} "
        "(sum of noakm − akm pass rate over the tasks regressed beyond noise)"
    )
    lines += [
        "",
        "### Top regressed tasks",
        "",
        md_table(
            [
                [r["task_id"], r["domain"], num(r["noakm_pass_rate"]), num(r["akm_pass_rate"]), signed(r["delta"])]
                for r in top[:50]
            ],
            ["task", "domain", "noakm", "akm", "delta"],
        ),
    ]
    lines += ["", "### Domain-level deltas", "", _domain_deltas_table(envelope["domain_level_deltas"])]
    cands = envelope["asset_regression_candidates"]
    if cands:
        lines += [
            "",
            "### Asset regression candidates",
            "",
            md_table(
                [[r["asset_ref"], r["regressed_task_count"], r["total_load_count"]] for r in cands[:50]],
                ["asset_ref", "regressed tasks", "total loads"],
            ),
        ]
    return lines


def _domain_deltas_table(rows: list[dict[str, Any]]) -> str:
    return md_table(
        [
            [
                r["domain"],
                r["task_count"],
                r["regression_count"],
                num(r["pass_rate_noakm"]),
                num(r["pass_rate_akm"]),
                signed(r["pass_rate_delta"]),
                signed(r["tokens_per_pass_delta"], 0),
                signed(r["wallclock_ms_delta"], 0),
            ]
            for r in rows
        ],
        ["domain", "tasks", "regressions", "noakm pass", "akm pass", "delta", "tokens delta", "wallclock delta (ms)"],
    )


def failure_section(envelope: Envelope) -> list[str]:
    by_label = envelope["failure_modes"]["by_label"]
    if not by_label:
        return []
    total = sum(by_label.values())
    lines = ["", "## Failure modes (akm arm)", ""]
    for label, count in sorted(by_label.items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append(f"- {label} — {count} ({count / total * 100:.1f}% of classified runs)")
    return lines


def bridge_section(envelope: Envelope) -> list[str]:
    sb = envelope["searchBridge"]
    if "akm" not in envelope["corpus"]["arms"]:
        return []
    lines = ["", "## Search → outcome bridge", ""]
    if not sb["searches_observed"] and not sb["runs_observed"]:
        return lines + ["(no observed akm-arm runs of gold-ref tasks; bridge metrics N/A)"]

    def rank(v: Any) -> str:
        return "n/a" if v is None else str(v)

    lines.append(md_table([[k, v] for k, v in sb["gold_rank_distribution"].items()], ["rank", "count"]))
    lines += [
        "",
        f"p50={rank(sb['gold_rank_p50'])}, p90={rank(sb['gold_rank_p90'])}, "
        f"gold_at_rank_1={fmt_pct(sb['gold_at_rank_1'])}, gold_missing={fmt_pct(sb['gold_missing'])} "
        f"({sb['searches_observed']} searches over {sb['runs_observed']} runs)",
        "",
    ]
    by_rank = [[r["rank"], num(r["pass_rate"]), r["run_count"]] for r in sb["pass_rate_by_rank"]]
    lines.append(
        md_table(by_rank or [["(no runs with `akm search` invocations)", "—", "0"]], ["rank", "pass_rate", "run_count"])
    )
    return lines


def overhead_section(envelope: Envelope) -> list[str]:
    a = envelope["akm_overhead"]["aggregate"]
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
        f"- tool calls: search={num(a['mean_search_count'])} show={num(a['mean_show_count'])} "
        f"feedback={num(a['mean_feedback_count'])} (mean per run)",
        f"- feedback polarity: positive={num(a['mean_positive_feedback_count'])} negative={num(a['mean_negative_feedback_count'])} (mean per run)",
        f"- total tool calls: {a['total_tool_calls']} (mean {num(a['mean_tool_calls'])} per run)",
        f"- tool_calls_per_success: {num(a['tool_calls_per_success'])}",
        f"- assets loaded (mean unique per run): {num(a['mean_assets_loaded'])}",
        f"- irrelevant assets loaded (mean per judged run): {num(a['mean_irrelevant_assets_loaded'])}",
        f"- time_to_first_search: {ms(a['mean_time_to_first_search_ms'])}",
        f"- time_to_first_correct_asset: {ms(a['mean_time_to_first_correct_asset_ms'])}",
        f"- context_bytes_loaded: {by(a['mean_context_bytes_loaded'], 'bytes')}",
        f"- asset_bytes_loaded: {by(a['mean_asset_bytes_loaded'], 'bytes')}",
        f"- cost_per_success: {by(a['cost_per_success'], 'tokens')}",
    ]
