"""The sections of report.html drawn as plots: pass rate per arm, the per-task forest of akm −
noakm, outcomes and failure modes, tokens and cost against pass rate, and the akm trajectory
(docs/report.md, "The HTML report"). Charts are inline SVG from :mod:`svg`."""

from __future__ import annotations

import math
from collections import Counter
from html import escape
from typing import Any

from ..envelope_types import Envelope
from . import notes, svg
from .fmt import num, signed
from .html_parts import empty, interval_text, legend, money, section, table, td

FOREST_CAP = 100  # tasks drawn in the forest plot (largest |delta| first); the table lists all
SCATTER_TASK_CAP = 300  # per-task points in the tokens plot
OUTCOMES = ("pass", "fail", "budget_exceeded", "harness_error")


def task_delta_interval(akm: dict[str, Any] | None, noakm: dict[str, Any] | None) -> tuple[float, float, float] | None:
    """(delta, low, high) of one task's akm − noakm pass rate: Newcombe's hybrid score interval
    (his method 10), built from the two Wilson intervals the envelope holds. The runs of a task
    in the two arms are separate runs, so the arms are independent samples."""
    if not akm or not noakm or akm.get("pass_rate") is None or noakm.get("pass_rate") is None:
        return None
    p1, p2 = akm["pass_rate"], noakm["pass_rate"]
    ci1, ci2 = akm.get("pass_rate_ci"), noakm.get("pass_rate_ci")
    if not ci1 or not ci2:
        return None
    d = p1 - p2
    low = d - math.sqrt((p1 - ci1["low"]) ** 2 + (ci2["high"] - p2) ** 2)
    high = d + math.sqrt((ci1["high"] - p1) ** 2 + (p2 - ci2["low"]) ** 2)
    return d, max(low, -1.0), min(high, 1.0)


def arm_cost(envelope: Envelope, arm: str) -> tuple[float | None, int]:
    """Mean ``cost_usd`` over the arm's valid runs that reported one, and how many did."""
    costs = [
        r["cost_usd"]
        for r in envelope["runs"]
        if r["arm"] == arm and r["outcome"] != "harness_error" and isinstance(r.get("cost_usd"), (int, float))
    ]
    return (sum(costs) / len(costs) if costs else None), len(costs)


def outcome_counts(envelope: Envelope, arm: str) -> dict[str, int]:
    counts = Counter(r["outcome"] for r in envelope["runs"] if r["arm"] == arm)
    return {o: counts.get(o, 0) for o in OUTCOMES}


def arms_section(envelope: Envelope) -> list[str]:
    agg, arms = envelope["aggregate"], envelope["corpus"]["arms"]
    out = [section("arms", "Pass rate per arm")]
    rows, marks = [], []
    for arm in arms:
        a = agg.get(arm)
        cost, _ = arm_cost(envelope, arm)
        if a is None:
            rows.append(f'<tr data-arm="{escape(arm)}">{td(arm)}<td colspan="8">not run</td></tr>')
            continue
        ci = a.get("pass_rate_ci")
        rows.append(
            f'<tr data-arm="{escape(arm)}">{td(arm)}{td(num(a["pass_rate"]), "pass_rate", True)}{td(interval_text(ci), "pass_rate_ci")}'
            f"{td(str(a['passes']) + '/' + str(a['valid_runs']), 'passes')}{td(a['runs'], 'runs', True)}"
            f"{td(a['harness_error_count'], 'harness_errors', True)}{td(a['budget_exceeded_count'], 'budget_exceeded', True)}"
            f"{td(num(a['tokens_per_run'], 0), 'tokens_per_run', True)}{td(money(cost), 'cost_per_run', True)}</tr>"
        )
        if a["pass_rate"] is not None:
            marks.append(
                svg.Interval(
                    arm,
                    a["pass_rate"],
                    ci["low"] if ci else None,
                    ci["high"] if ci else None,
                    f"{arm}: pass rate {num(a['pass_rate'])} {interval_text(ci)}, {a['passes']}/{a['valid_runs']} valid runs",
                    svg.ARM_COLOURS.get(arm, "#333"),
                    {"data-arm": arm},
                )
            )
    out.append(
        table(
            [
                "arm",
                "pass rate",
                "95% CI",
                "passes/valid",
                "runs",
                "harness errors",
                "over budget",
                "tokens/run",
                "cost/run",
            ],
            rows,
            "arms-table",
        )
    )
    if marks:
        out.append(
            svg.interval_plot(
                "arms", "pass rate per arm with 95% interval", marks, lo=0, hi=1, ticks=(0, 0.25, 0.5, 0.75, 1)
            )
        )
    else:
        out.append(empty("no arm has a valid run: no pass rate to plot", "arms"))
    out.append(
        '<p class="note">arm pass rate = mean of the per-task rates; intervals are over tasks (exact binomial, any spread of difficulty); '
        "harness errors are left out of every figure.</p>"
    )
    return out


def forest_section(envelope: Envelope) -> list[str]:
    out = [section("forest", "Per-task delta (akm − noakm)")]
    if not {"akm", "noakm"} <= set(envelope["corpus"]["arms"]):
        return out + [empty("the report has no akm − noakm comparison (one of the two arms did not run)", "forest")]
    rows = []
    for t in envelope["tasks"]:
        iv = task_delta_interval(t.get("akm"), t.get("noakm"))
        if iv is not None:
            rows.append((t, *iv))
    if not rows:
        return out + [empty("no task has valid runs in both arms", "forest")]
    shown = sorted(rows, key=lambda r: (-abs(r[1]), r[0]["id"]))[:FOREST_CAP]
    shown.sort(key=lambda r: (-r[1], r[0]["id"]))
    marks = [_task_mark(t, d, low, high) for t, d, low, high in shown]
    paired = (envelope["aggregate"].get("delta") or {}).get("paired")
    if paired and paired.get("tasks") and paired.get("low") is not None:
        marks.append(_paired_mark(paired))
    out.append(
        svg.interval_plot(
            "forest",
            "per-task delta akm − noakm with 95% interval",
            marks,
            lo=-1,
            hi=1,
            ticks=(-1, -0.5, 0, 0.5, 1),
            reference=0.0,
        )
    )
    out.append(_forest_note(len(shown), len(rows) - len(shown), paired))
    return out


def _task_mark(t: dict[str, Any], d: float, low: float, high: float) -> svg.Interval:
    a, n = t["akm"], t["noakm"]
    return svg.Interval(
        t["id"],
        d,
        low,
        high,
        f"{t['id']}: akm {a['passes']}/{a['valid_count']} − noakm {n['passes']}/{n['valid_count']} = {signed(d)} "
        f"[{signed(low)}, {signed(high)}]",
        "#d9822b" if d > 0 else "#5b7aa6" if d < 0 else "#666",
        {"data-task": t["id"]},
    )


def _paired_mark(paired: dict[str, Any]) -> svg.Interval:
    """The diamond: the paired mean over every task both arms ran."""
    return svg.Interval(
        "all paired tasks",
        paired["delta"],
        paired["low"],
        paired["high"],
        f"mean over {paired['tasks']} paired tasks: {signed(paired['delta'])} [{signed(paired['low'])}, "
        f"{signed(paired['high'])}], paired permutation p={paired['p_value']:.2g}",
        "#222",
        {"data-summary": "paired"},
        diamond=True,
    )


def _forest_note(shown: int, left: int, paired: dict[str, Any] | None) -> str:
    return (
        "<p class=\"note\">each row: a task's pass rate on akm minus noakm, with Newcombe's 95% interval from the "
        "two arms' Wilson intervals; the diamond is the paired mean over every task both arms ran, with the "
        "interval of the paired permutation test; "
        + notes.SIGN_FLIP_NULL
        + "."
        + notes.few_paired_tasks(paired)
        + (
            f" Shown: the {shown} tasks with the largest |delta|; the other {left} are in the per-task table "
            "and report.json."
            if left
            else ""
        )
        + "</p>"
    )


def outcomes_section(envelope: Envelope) -> list[str]:
    arms = envelope["corpus"]["arms"]
    out = [section("outcomes", "Outcomes and failure modes")]
    counts = {arm: outcome_counts(envelope, arm) for arm in arms}
    rows = [
        f'<tr data-arm="{escape(arm)}">{td(arm)}' + "".join(td(counts[arm][o], o, True) for o in OUTCOMES) + "</tr>"
        for arm in arms
    ]
    out.append(table(["arm", *OUTCOMES], rows, "outcomes-table"))
    ran = [(arm, list(counts[arm].items())) for arm in arms if sum(counts[arm].values())]
    if ran:
        out.append(legend(list(OUTCOMES), svg.OUTCOME_COLOURS))
        out.append(svg.stacked_bars("outcomes", "outcomes of the runs of each arm", ran, colours=svg.OUTCOME_COLOURS))
    else:
        out.append(empty("no runs", "outcomes"))
    by_label = envelope["failure_modes"]["by_label"]
    out.append("<h3>Failure modes (akm arm)</h3>")
    if by_label:
        total = sum(by_label.values())
        items = sorted(by_label.items(), key=lambda kv: (-kv[1], kv[0]))
        out.append(
            svg.bar_plot(
                "failure-modes",
                "failure modes of the akm arm's runs",
                [(label, float(n), f"{n} ({n / total * 100:.1f}%)", {"data-count": n}) for label, n in items],
                hi=float(items[0][1]),
                colour="#c8483c",
            )
        )
    else:
        out.append(
            empty(
                "no classified failure: the akm arm did not run, every run passed, or no trajectory was observed",
                "failure-modes",
            )
        )
    return out


def tokens_section(envelope: Envelope) -> list[str]:
    out = [section("tokens", "Tokens and cost against pass rate")]
    return out + _tokens_plot(envelope) + _cost_plot(envelope)


def _tokens_plot(envelope: Envelope) -> list[str]:
    """Tokens per run against pass rate: a point per arm (with its interval) and per task."""
    arms = envelope["corpus"]["arms"]
    tasks = envelope["tasks"] if len(envelope["tasks"]) <= SCATTER_TASK_CAP else []
    points = _task_token_points(tasks, arms) + _arm_token_points(envelope["aggregate"], arms)
    if not any(p.data.get("data-summary") for p in points):
        return [empty("no valid run had measured tokens", "tokens")]
    return [
        legend(arms, svg.ARM_COLOURS),
        svg.scatter(
            "tokens",
            "mean tokens per run against pass rate",
            points,
            x_label="tokens per run (mean over tasks)",
            y_label="pass rate",
            x_hi=svg.nice_max(max(p.x for p in points) * 1.05),
        ),
        '<p class="note">large points: each arm (vertical bar: its 95% interval); small points: tasks'
        + ("" if tasks else f" (left out above {SCATTER_TASK_CAP} tasks)")
        + ". Tokens count measured runs only.</p>",
    ]


def _task_token_points(tasks: list[dict[str, Any]], arms: list[str]) -> list[svg.Point]:
    points = []
    for arm in arms:
        colour = svg.ARM_COLOURS.get(arm, "#333")
        for t in tasks:
            row = t.get(arm)
            if row and row.get("tokens_per_run") is not None and row.get("pass_rate") is not None:
                points.append(
                    svg.Point(
                        row["tokens_per_run"],
                        row["pass_rate"],
                        colour,
                        f"{t['id']} ({arm}): {num(row['tokens_per_run'], 0)} tokens/run, pass rate {num(row['pass_rate'])}",
                        data={"data-arm": arm, "data-task": t["id"]},
                    )
                )
    return points


def _arm_token_points(agg: dict[str, Any], arms: list[str]) -> list[svg.Point]:
    points = []
    for arm in arms:
        a = agg.get(arm)
        if a and a.get("tokens_per_run") is not None and a.get("pass_rate") is not None:
            ci = a.get("pass_rate_ci") or {}
            points.append(
                svg.Point(
                    a["tokens_per_run"],
                    a["pass_rate"],
                    svg.ARM_COLOURS.get(arm, "#333"),
                    f"{arm}: {num(a['tokens_per_run'], 0)} tokens/run, pass rate {num(a['pass_rate'])} {interval_text(ci)}",
                    ci.get("low"),
                    ci.get("high"),
                    6.0,
                    {"data-arm": arm, "data-summary": "arm"},
                )
            )
    return points


def _cost_plot(envelope: Envelope) -> list[str]:
    """Cost per run against pass rate, a point per arm, when some run cost something."""
    agg = envelope["aggregate"]
    costs = [(arm, *arm_cost(envelope, arm)) for arm in envelope["corpus"]["arms"]]
    cost_points = [
        svg.Point(
            c,
            agg[arm]["pass_rate"],
            svg.ARM_COLOURS.get(arm, "#333"),
            f"{arm}: {money(c)} per run over {k} runs with a cost, pass rate {num(agg[arm]['pass_rate'])}",
            (agg[arm].get("pass_rate_ci") or {}).get("low"),
            (agg[arm].get("pass_rate_ci") or {}).get("high"),
            6.0,
            {"data-arm": arm, "data-summary": "arm"},
        )
        for arm, c, k in costs
        if c is not None and agg.get(arm) and agg[arm]["pass_rate"] is not None
    ]
    # An agent may report $0 for a model without a price: a cost is known when some run cost something.
    if not any(p.x > 0 for p in cost_points):
        return [empty("no run reported a cost above $0 (the model's price is unknown)", "cost")]
    return [
        svg.scatter(
            "cost",
            "mean cost per run against pass rate",
            cost_points,
            x_label="cost per run (USD, mean)",
            y_label="pass rate",
            x_hi=svg.nice_max(max(p.x for p in cost_points) * 1.05),
            x_fmt=lambda v: f"${v:.3g}",
        )
    ]


def trajectory_section(envelope: Envelope) -> list[str]:
    out = [section("trajectory", "What the agent did with akm (akm arm)")]
    t = (envelope.get("trajectory") or {}).get("akm")
    if t is None:
        return out + [empty("the akm arm did not run", "trajectory")]
    c = t["counts"]
    cells = t.get("unconfirmed_cells") or []
    unconfirmed = notes.unconfirmed_akm_log(cells, c["runs"])
    if unconfirmed:
        out.append(
            f'<p class="bad" id="akm-unconfirmed" data-runs="{len(cells)}" '
            f'data-events="{c.get("unconfirmed_events", 0)}">{escape(unconfirmed)}</p>'
        )
    if not c["runs_with_trajectory"]:
        return out + [
            empty(
                notes.trajectory_not_observed(c),
                "trajectory",
            )
        ]
    rows = []
    for key, hit, of in (
        ("correct_asset_loaded", "correct_asset_loaded", "gold_ref_runs"),
        ("feedback_recorded", "feedback_recorded", "runs_with_trajectory"),
        ("searched_before_acting", "searched_before_acting", "searched_before_acting_judged"),
    ):
        share = t[key]
        text = "n/a" if share is None else f"{share * 100:.1f}% ({c[hit]}/{c[of]})"
        rows.append((key, share or 0.0, text, {"data-share": svg.exact(share), "data-count": c[hit], "data-of": c[of]}))
    out.append(
        svg.bar_plot("trajectory", "akm trajectory: share of observed akm-arm runs", rows, hi=1.0, colour="#d9822b")
    )
    out.append(
        f'<p class="note">observed in {c["runs_with_trajectory"]} of {c["runs"]} akm-arm runs; '
        f"irrelevant assets loaded: {num(t['irrelevant_assets_loaded'])} per run.</p>"
    )
    sb = envelope["searchBridge"]
    out.append("<h3>Where the gold asset ranked in akm search</h3>")
    hist = sb.get("gold_rank_distribution") or {}
    if sb.get("searches_observed"):
        top = max(hist.values()) or 1
        out.append(
            svg.bar_plot(
                "gold-rank",
                "rank of the gold asset in each observed search",
                [
                    (f"rank {k}" if k != "missing" else "missing", float(v), str(v), {"data-rank": k})
                    for k, v in hist.items()
                ],
                hi=float(top),
                colour="#5b7aa6",
            )
        )
        out.append(
            f'<p class="note">{sb["searches_observed"]} searches over {sb["runs_observed"]} runs; gold at rank 1: '
            f"{num(sb['gold_at_rank_1'])}, missing: {num(sb['gold_missing'])}.</p>"
        )
    else:
        out.append(empty("no akm search of a task with a gold asset was observed", "gold-rank"))
    return out
