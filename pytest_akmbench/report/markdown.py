"""The markdown summary of a report envelope and its one-line verdict (docs/report.md, "Markdown summary").

Pure functions of the envelope, so the session, the ``report`` command and tests render
the same bytes from the same envelope.
"""

from __future__ import annotations

from typing import Any

from tabulate import tabulate

from ..corpus.tasks import MEMORY_ABILITIES
from . import lift, metrics

_MD_TASK_CAP = 500  # per-run tables above this size are summarised, not listed


def _fmt_ci(low: float | None, high: float | None, with_sign: bool = False) -> str:
    if low is None or high is None:
        return "[n/a]"
    f = signed if with_sign else num
    return f"[{f(low)}, {f(high)}]"


def _p(p: float | None) -> str:
    return "n/a" if p is None else f"{p:.2g}"


def _provisional(env: dict[str, Any]) -> str:
    fc = env.get("floor_coverage")
    if not fc:
        return ""
    cells = sum(c["cells"] for c in fc["by_arm"].values())
    below = sum(c["partial"] + c["missing"] for c in fc["by_arm"].values())
    return f"provisional: {below} of {cells} cells below the floor of {fc['floor']} — " if below else ""


def _runs(agg: dict[str, Any], arms: tuple[str, ...]) -> str:
    return "valid runs " + ", ".join(f"{a} {agg[a]['valid_runs']}/{agg[a]['runs']}" for a in arms)


def _claim(agg: dict[str, Any], b: str, c: dict[str, Any]) -> str:
    """One comparison akm − b: the claim it supports, on which tasks and runs, and its risks."""
    d, ci = c["delta"], _fmt_ci(c["low"], c["high"], with_sign=True)
    size = f"{c['tasks']} paired task{'' if c['tasks'] == 1 else 's'}" + (
        f" ({c['tasks_unpaired']} unpaired)" if c.get("tasks_unpaired") else ""
    )
    size += "; " + _runs(agg, ("akm", b))
    if c["holm_family"] > 1:
        test = f"paired permutation p={_p(c['p_value_holm'])}, Holm-adjusted over {c['holm_family']} comparisons"
    else:
        test = f"paired permutation p={_p(c['p_value'])}"
    vs = "" if b == "noakm" else f" over {b}"
    if not c["reliable"]:
        arm = c["unreliable_arms"][0]
        e = c["harness_errors"][arm]
        text = (
            f"unreliable: {e['harness_errors']} of {e['runs']} {arm} runs are harness errors (over the "
            f"{lift.MAX_HARNESS_ERROR_SHARE:.0%} limit), no verdict on akm vs {b} "
            f"(measured on the valid runs: {signed(d)} {ci}, {test}), {size}"
        )
    elif c["significant"]:
        text = f"akm {'lifts' if d > 0 else 'lowers'} pass rate{vs} by {signed(d)} {ci} ({test}), {size}"
    else:
        text = f"no significant difference between akm and {b} ({signed(d)} {ci}, {test}), {size}"
    bounds = c.get("artefact_bounds")
    if bounds is not None:
        ea, eb = c["harness_errors"]["akm"], c["harness_errors"][b]
        text += (
            f"; artefact risk: harness errors differ between arms (akm {ea['harness_errors']}/{ea['runs']}, "
            f"{b} {eb['harness_errors']}/{eb['runs']}), counting them as failures on one side and passes on "
            f"the other puts the delta anywhere in {_fmt_ci(bounds['low'], bounds['high'], with_sign=True)}"
        )
    return text


def verdict(env: dict[str, Any]) -> str:
    """One line a reader can act on: each comparison the report tests, and whether it is beyond
    noise; marked provisional, unreliable or at risk of artefact when it is (docs/report.md)."""
    agg = env["aggregate"]
    ran = [a for a in metrics.ARM_ORDER if agg.get(a) and agg[a]["pass_rate"] is not None]
    prefix = "" if env.get("complete", True) else "incomplete run — "
    if not ran:
        return prefix + "no valid runs: no arm produced a pass or fail outcome"
    prefix += _provisional(env)
    claims = [
        _claim(agg, b, c)
        for b, c in (
            ("noakm", (agg.get("delta") or {}).get("paired")),
            ("synthetic", agg.get("akm_over_synthetic_paired")),
        )
        if c and c["tasks"]
    ]
    if claims:
        return prefix + "; ".join(claims)
    if len(ran) == 1:
        a = agg[ran[0]]
        ci = a["pass_rate_ci"] or {}
        return (
            prefix + f"only one arm ran ({ran[0]}): pass rate {num(a['pass_rate'])} "
            f"{_fmt_ci(ci.get('low'), ci.get('high'))} over {a['tasks_with_valid_runs']} tasks, "
            f"{_runs(agg, (ran[0],))}; no lift measured"
        )
    return (
        prefix + f"arms {', '.join(ran)} ran, but akm and another arm share no task with valid runs: no lift measured"
    )


# ---------------------------------------------------------------- markdown


def num(value: float | None, digits: int = 2) -> str:
    """A number to ``digits`` decimals, or n/a."""
    return "n/a" if value is None else f"{value:.{digits}f}"


def signed(value: float | None, digits: int = 2) -> str:
    """A signed number (+0.18, -0.05), never +0.00 or -0.00."""
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
    text = num(row["pass_rate"]) + (f" {_fmt_ci(ci['low'], ci['high'])}" if ci else "")
    return text + (" ~" if row.get("flaky") else "") + ("" if row.get("floor_status", "covered") == "covered" else " *")


def render_markdown(env: dict[str, Any]) -> str:
    """The summary a reader sees first: verdict, aggregate with intervals, per-task table, sections."""
    arms = env["corpus"]["arms"]
    lines = _header(env)
    lines += _aggregate_section(env, arms)
    lines += _pass_k_section(env, arms)
    lines += _gates_section(env)
    lines += _trajectory_section(env)
    lines += _per_task_section(env, arms)
    lines += _floor_section(env)
    lines += _coverage_section(env)
    lines += _negative_transfer_section(env)
    lines += _failure_section(env)
    lines += _bridge_section(env)
    lines += _overhead_section(env)
    lines += _token_section(env)
    lines += _harness_error_section(env)
    lines += _provenance_section(env)
    if env["warnings"]:
        lines += ["", "## Warnings", ""] + [f"- {w}" for w in env["warnings"]]
    return "\n".join(lines) + "\n"


def _header(env: dict[str, Any]) -> list[str]:
    corpus = env["corpus"]
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
    return lines


def _aggregate_section(env: dict[str, Any], arms: list[str]) -> list[str]:
    """The aggregate table (one row per arm, then the delta) and the notes on the comparisons."""
    lines = ["", "## Aggregate", ""]
    agg = env["aggregate"]
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
                _fmt_ci(ci["low"], ci["high"]) if ci else "n/a",
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
        rows.append(
            [
                "**delta**",
                signed(d["pass_rate"]),
                _fmt_ci(p.get("low"), p.get("high"), with_sign=True),
                "",
                signed(d["tokens_per_pass"], 0),
                signed(d["wallclock_ms"], 0),
                "",
                "",
            ]
        )
    lines.append(
        _table(
            rows, ["arm", "pass_rate", "95% CI", "pass@1", "tokens_per_pass", "wallclock_ms", "runs", "harness_errors"]
        )
    )
    lines += [
        "",
        "arm intervals treat tasks as clusters (Wilson at the design-effect sample size, t quantile); "
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


def _gates_section(env: dict[str, Any]) -> list[str]:
    if not env.get("gates"):
        return []
    return [
        "",
        "## Gates",
        "",
        _table(
            [
                [f"`{g['gate']}`", "pass" if g["ok"] else "**FAIL**", _obs(g["observed"]), g["message"]]
                for g in env["gates"]
            ],
            ["gate", "result", "observed", "detail"],
        ),
    ]


def _token_section(env: dict[str, Any]) -> list[str]:
    tm = env["token_measurement"]
    if not tm["total_runs"]:
        return []
    return [
        "",
        "## Token measurement",
        "",
        f"- runs: {tm['total_runs']} total, {tm['runs_with_measured_tokens']} measured, "
        f"{tm['runs_missing_measurement']} missing, {tm['runs_unsupported_measurement']} unsupported",
        f"- coverage: {_pct(tm['coverage'])} ({'reliable' if tm['reliable'] else 'unreliable — token figures cover the measured runs only'})",
    ]


def _harness_error_section(env: dict[str, Any]) -> list[str]:
    problems = [r for r in env["runs"] if r["outcome"] == "harness_error"]
    if not problems:
        return []
    lines = ["", "## Harness errors", ""]
    lines += [f"- {r['task_id']} {r['arm']} s{r['seed']}: {r['reason']}" for r in problems[:50]]
    if len(problems) > 50:
        lines.append(f"- … and {len(problems) - 50} more")
    return lines


def _provenance_section(env: dict[str, Any]) -> list[str]:
    prov = env.get("provenance")
    if not prov:
        return []
    return [
        "",
        "## Provenance",
        "",
        f"plugin {prov['plugin_version']}, python {prov['python']}, host {prov['host']}, agent "
        f"{prov['agent']['name']} {prov['agent']['version']}, model {prov['model'] or 'n/a'}, opencode "
        f"{prov.get('opencode_version') or 'n/a'}, akm {prov.get('akm_version') or 'n/a'}"
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
        + f"; paired permutation test ({how}) p={_p(p['p_value'])}"
        + (
            f", Holm-adjusted p={_p(p['p_value_holm'])} over {p['holm_family']} comparisons"
            if p["holm_family"] > 1
            else ""
        )
        + f"; 95% interval = the lifts the test does not reject; significant: {'yes' if p['significant'] else 'no'}. "
        f"Diagnostics: sign test {p['wins']} wins / {p['losses']} losses / {p['ties']} ties, p={_p(diag['sign_test_p'])}; "
        f"cluster bootstrap {_fmt_ci(diag['bootstrap_low'], diag['bootstrap_high'], with_sign=True)}"
    )


def _obs(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "n/a" if value is None else str(value)


def _pass_k_section(env: dict[str, Any], arms: list[str]) -> list[str]:
    agg = env["aggregate"]
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
        _table(rows, ["arm"] + [f"k={k}" for k in ks]),
        "",
        f"each arm's curve uses one task set for every k, up to the fewest valid runs of any of its tasks ({counts})",
    ]


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
        f"- irrelevant assets loaded (mean per run): {num(t['irrelevant_assets_loaded'])}",
        f"- observed in {c['runs_with_trajectory']} of {c['runs']} akm-arm runs",
    ]
    akm_rows = [r for r in env["runs"] if r["arm"] == "akm"]
    if 0 < len(akm_rows) <= _MD_TASK_CAP:
        mark = {True: "✓", False: "✗", None: "—"}
        lines += [
            "",
            _table(
                [
                    [
                        r["task_id"],
                        r["seed"],
                        mark[r["trajectory"]["correct_asset_loaded"]],
                        mark[r["trajectory"]["feedback_recorded"]],
                        mark[r["trajectory"]["searched_before_acting"]],
                    ]
                    for r in akm_rows
                ],
                ["task", "seed", "correct_asset_loaded", "feedback_recorded", "searched_before_acting"],
            ),
        ]
    return lines


def _per_task_section(env: dict[str, Any], arms: list[str]) -> list[str]:
    both = "akm" in arms and "noakm" in arms
    baseline = env.get("baseline_by_task_id")
    head = ["task", *arms] + (["delta"] if both else []) + (["baseline", "vs base"] if baseline is not None else [])
    rows = []
    for t in sorted(env["tasks"], key=lambda t: t["id"]):
        cells = [t["id"]] + [_rate_ci(t.get(arm)) for arm in arms]
        if both:
            cells.append(signed((t.get("delta") or {}).get("pass_rate")))
        if baseline is not None:
            base = baseline.get(t["id"])
            akm = (t.get("akm") or {}).get("pass_rate")
            cells += [num(base), signed(None if base is None or akm is None else akm - base)]
        rows.append(cells)
    return [
        "",
        "## Per-task pass rates",
        "",
        _table(rows, head),
        "",
        "pass rate [Wilson 95% CI]; ~ flaky; * below the reporting floor",
    ]


def _floor_section(env: dict[str, Any]) -> list[str]:
    fc = env.get("floor_coverage")
    if not fc:
        return []
    lines = ["", f"## Coverage vs reporting floor ({fc['floor']} valid samples per task × arm)", ""]
    lines.append(
        _table(
            [[arm, c["cells"], c["covered"], c["partial"], c["missing"]] for arm, c in fc["by_arm"].items()],
            ["arm", "cells", "covered", "partial", "missing"],
        )
    )
    needs = fc["needs_deepening"]
    if needs:
        shown = ", ".join(f"{n['task_id']} {n['arm']} ({n['valid']}/{fc['floor']})" for n in needs[:20])
        lines += ["", f"needs deepening: {shown}" + (f", … and {len(needs) - 20} more" if len(needs) > 20 else "")]
    flaky = env.get("flaky_tasks") or []
    if flaky:
        lines += ["", "### Flaky tasks (both outcomes, 0/1 stdev > 0.2)", ""]
        lines.append(
            _table(
                [
                    [f["task_id"], f["arm"], f"{f['passes']}/{f['valid_count']}", num(f["pass_rate_stdev"])]
                    for f in flaky
                ],
                ["task", "arm", "passes", "stdev"],
            )
        )
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
    lines.append(
        _table(
            [
                [
                    r["category"],
                    r["task_count"],
                    num(r["pass_rate_noakm"]),
                    num(r["pass_rate_akm"]),
                    signed(r["pass_rate_delta"]),
                    r["negative_transfer_count"],
                ]
                for r in cc["by_memory_ability"]
            ],
            ["memory_ability", "tasks", "noakm", "akm", "delta", "neg.transfer"],
        )
    )
    if len(cc["by_task_family"]) >= 2:
        lines += ["", "### By task_family", ""]
        lines.append(
            _table(
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


def _negative_transfer_section(env: dict[str, Any]) -> list[str]:
    if "akm" not in env["corpus"]["arms"] or "noakm" not in env["corpus"]["arms"]:
        return []
    lines = ["", "## Negative transfer", ""]
    top = env["top_regressed_tasks"]
    if not top:
        return lines + ["none"]
    lines.append(
        f"count={env['negative_transfer_count']}, severity={num(env['negative_transfer_severity'])} "
        "(sum of noakm − akm pass rate over regressed tasks)"
    )
    lines += [
        "",
        "### Top regressed tasks",
        "",
        _table(
            [
                [r["task_id"], r["domain"], num(r["noakm_pass_rate"]), num(r["akm_pass_rate"]), signed(r["delta"])]
                for r in top[:50]
            ],
            ["task", "domain", "noakm", "akm", "delta"],
        ),
    ]
    lines += [
        "",
        "### Domain-level deltas",
        "",
        _table(
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
                for r in env["domain_level_deltas"]
            ],
            [
                "domain",
                "tasks",
                "regressions",
                "noakm pass",
                "akm pass",
                "delta",
                "tokens delta",
                "wallclock delta (ms)",
            ],
        ),
    ]
    cands = env["asset_regression_candidates"]
    if cands:
        lines += [
            "",
            "### Asset regression candidates",
            "",
            _table(
                [[r["asset_ref"], r["regressed_task_count"], r["total_load_count"]] for r in cands[:50]],
                ["asset_ref", "regressed tasks", "total loads"],
            ),
        ]
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
    lines += [
        "",
        f"p50={rank(sb['gold_rank_p50'])}, p90={rank(sb['gold_rank_p90'])}, "
        f"gold_at_rank_1={_pct(sb['gold_at_rank_1'])}, gold_missing={_pct(sb['gold_missing'])} "
        f"({sb['searches_observed']} searches over {sb['runs_observed']} runs)",
        "",
    ]
    by_rank = [[r["rank"], num(r["pass_rate"]), r["run_count"]] for r in sb["pass_rate_by_rank"]]
    lines.append(
        _table(by_rank or [["(no runs with `akm search` invocations)", "—", "0"]], ["rank", "pass_rate", "run_count"])
    )
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
