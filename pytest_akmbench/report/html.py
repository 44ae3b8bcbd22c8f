"""report.html: the envelope as one self-contained page (docs/report.md, "The HTML report").

A pure function of the envelope, like the markdown summary: no script, no network, no
timestamp of its own, charts drawn inline by :mod:`svg`. Transcript links are the envelope's
``runs[].transcript`` paths, relative to the report directory that holds the page (report.write
copies the transcripts there).
"""

from __future__ import annotations

import math
from collections import Counter
from html import escape
from pathlib import PurePosixPath
from typing import Any

from . import notes, soundness, svg
from .fmt import num, signed

FOREST_CAP = 100  # tasks drawn in the forest plot (largest |delta| first); the table lists all
SCATTER_TASK_CAP = 300  # per-task points in the tokens plot
OUTCOMES = ("pass", "fail", "budget_exceeded", "harness_error")

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1000px;padding:1em 1.5em;color:#222}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ddd}
.meta{color:#555}.verdict{font-size:1.1em;background:#f4f6f8;border-left:4px solid #5b7aa6;padding:.6em .8em}
.incomplete{color:#a33;font-weight:bold}.note{color:#555;font-size:.92em}.empty{color:#777;font-style:italic}
table{border-collapse:collapse;margin:.5em 0;font-size:.92em}th,td{border:1px solid #ddd;padding:2px 7px;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f4f6f8}
.ok{color:#2d7a47}.bad{color:#b3362b;font-weight:bold}svg.plot{display:block;margin:.4em 0;max-width:100%;height:auto}
.legend span{display:inline-block;margin-right:1em}.legend i{display:inline-block;width:.8em;height:.8em;margin-right:.3em}
"""


def render(env: dict[str, Any]) -> str:
    """The whole page for ``env`` (same envelope, same bytes)."""
    agent, corpus = env["agent"], env["corpus"]
    title = f"akm-bench utility — {agent.get('model') or agent['harness']}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        # No network: nothing may load from anywhere, even if a field sneaks markup in.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">",
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f'<p class="meta">branch <code>{escape(str(env.get("branch")))}</code> @ <code>{escape(str(env.get("commit")))}</code>'
        f" — {escape(str(env.get('timestamp')))}"
        + ("" if env.get("complete", True) else ' — <span class="incomplete">incomplete run</span>')
        + "<br>"
        f"corpus: {corpus['tasks']} tasks across {corpus['domains']} domains (slice={escape(str(corpus['slice']))}, "
        f"seedsPerArm={corpus['seedsPerArm']}, arms {escape(', '.join(corpus['arms']))}), agent: {escape(agent['harness'])} "
        f'{escape(str(agent.get("version") or ""))} — files: <a href="report.json">report.json</a>, '
        '<a href="summary.md">summary.md</a></p>',
        f'<p class="verdict" id="verdict"><b>Verdict:</b> {escape(env.get("verdict") or "")}</p>',
    ]
    parts += soundness.html_lines(env)
    parts += _gates(env) + _arms(env) + _forest(env) + _outcomes(env) + _tokens(env) + _trajectory(env)
    parts += _tasks(env) + _runs(env) + _provenance(env) + _warnings(env)
    parts.append("</body></html>\n")
    return "\n".join(parts)


# ---------------------------------------------------------------- numbers


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


def arm_cost(env: dict[str, Any], arm: str) -> tuple[float | None, int]:
    """Mean ``cost_usd`` over the arm's valid runs that reported one, and how many did."""
    costs = [
        r["cost_usd"]
        for r in env["runs"]
        if r["arm"] == arm and r["outcome"] != "harness_error" and isinstance(r.get("cost_usd"), (int, float))
    ]
    return (sum(costs) / len(costs) if costs else None), len(costs)


def outcome_counts(env: dict[str, Any], arm: str) -> dict[str, int]:
    counts = Counter(r["outcome"] for r in env["runs"] if r["arm"] == arm)
    return {o: counts.get(o, 0) for o in OUTCOMES}


def _ci(ci: dict[str, Any] | None, sign: bool = False) -> str:
    if not ci or ci.get("low") is None:
        return "n/a"
    f = signed if sign else num
    return f"[{f(ci['low'])}, {f(ci['high'])}]"


def _money(v: float | None) -> str:
    return "n/a" if v is None else f"${v:.4f}"


def _td(text: object, field: str | None = None, numeric: bool = False) -> str:
    cls = ' class="n"' if numeric else ""
    return f"<td{cls}{svg.attrs({'data-field': field})}>{escape(str(text))}</td>"


def _table(head: list[str], rows: list[str], table_id: str) -> str:
    return (
        f'<table id="{table_id}"><thead><tr>'
        + "".join(f"<th>{escape(h)}</th>" for h in head)
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def _legend(arms: list[str], colours: dict[str, str]) -> str:
    return (
        '<p class="legend">'
        + "".join(f'<span><i style="background:{colours.get(a, "#999")}"></i>{escape(a)}</span>' for a in arms)
        + "</p>"
    )


def _section(anchor: str, heading: str) -> str:
    return f'<h2 id="{anchor}">{escape(heading)}</h2>'


def _empty(text: str, plot: str) -> str:
    """Said in place of a plot that has nothing to show (the test knows it is not missing)."""
    return f'<p class="empty" data-empty-plot="{plot}">{escape(text)}</p>'


# ---------------------------------------------------------------- sections


def _gates(env: dict[str, Any]) -> list[str]:
    gates = env.get("gates") or []
    if not gates:
        return []
    rows = [
        f'<tr data-ok="{str(g["ok"]).lower()}">{_td(g["gate"])}<td class="{"ok" if g["ok"] else "bad"}">'
        f"{'pass' if g['ok'] else 'FAIL'}</td>{_td(g['message'])}</tr>"
        for g in gates
    ]
    failed = sum(not g["ok"] for g in gates)
    return [
        _section("gates", f"Gates: {len(gates) - failed} passed, {failed} failed"),
        _table(["gate", "result", "detail"], rows, "gates-table"),
    ]


def _arms(env: dict[str, Any]) -> list[str]:
    agg, arms = env["aggregate"], env["corpus"]["arms"]
    out = [_section("arms", "Pass rate per arm")]
    rows, marks = [], []
    for arm in arms:
        a = agg.get(arm)
        cost, _ = arm_cost(env, arm)
        if a is None:
            rows.append(f'<tr data-arm="{escape(arm)}">{_td(arm)}<td colspan="8">not run</td></tr>')
            continue
        ci = a.get("pass_rate_ci")
        rows.append(
            f'<tr data-arm="{escape(arm)}">{_td(arm)}{_td(num(a["pass_rate"]), "pass_rate", True)}{_td(_ci(ci), "pass_rate_ci")}'
            f"{_td(str(a['passes']) + '/' + str(a['valid_runs']), 'passes')}{_td(a['runs'], 'runs', True)}"
            f"{_td(a['harness_error_count'], 'harness_errors', True)}{_td(a['budget_exceeded_count'], 'budget_exceeded', True)}"
            f"{_td(num(a['tokens_per_run'], 0), 'tokens_per_run', True)}{_td(_money(cost), 'cost_per_run', True)}</tr>"
        )
        if a["pass_rate"] is not None:
            marks.append(
                svg.Interval(
                    arm,
                    a["pass_rate"],
                    ci["low"] if ci else None,
                    ci["high"] if ci else None,
                    f"{arm}: pass rate {num(a['pass_rate'])} {_ci(ci)}, {a['passes']}/{a['valid_runs']} valid runs",
                    svg.ARM_COLOURS.get(arm, "#333"),
                    {"data-arm": arm},
                )
            )
    out.append(
        _table(
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
        out.append(_empty("no arm has a valid run: no pass rate to plot", "arms"))
    out.append(
        '<p class="note">arm pass rate = mean of the per-task rates; intervals treat tasks as clusters; '
        "harness errors are left out of every figure.</p>"
    )
    return out


def _forest(env: dict[str, Any]) -> list[str]:
    out = [_section("forest", "Per-task delta (akm − noakm)")]
    if not {"akm", "noakm"} <= set(env["corpus"]["arms"]):
        return out + [_empty("the report has no akm − noakm comparison (one of the two arms did not run)", "forest")]
    rows = []
    for t in env["tasks"]:
        iv = task_delta_interval(t.get("akm"), t.get("noakm"))
        if iv is not None:
            rows.append((t, *iv))
    if not rows:
        return out + [_empty("no task has valid runs in both arms", "forest")]
    shown = sorted(rows, key=lambda r: (-abs(r[1]), r[0]["id"]))[:FOREST_CAP]
    shown.sort(key=lambda r: (-r[1], r[0]["id"]))
    marks = []
    for t, d, low, high in shown:
        a, n = t["akm"], t["noakm"]
        marks.append(
            svg.Interval(
                t["id"],
                d,
                low,
                high,
                f"{t['id']}: akm {a['passes']}/{a['valid_count']} − noakm {n['passes']}/{n['valid_count']} = {signed(d)} "
                f"[{signed(low)}, {signed(high)}]",
                "#d9822b" if d > 0 else "#5b7aa6" if d < 0 else "#666",
                {"data-task": t["id"]},
            )
        )
    paired = (env["aggregate"].get("delta") or {}).get("paired")
    if paired and paired.get("tasks") and paired.get("low") is not None:
        marks.append(
            svg.Interval(
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
        )
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
    left = len(rows) - len(shown)
    out.append(
        "<p class=\"note\">each row: a task's pass rate on akm minus noakm, with Newcombe's 95% interval from the "
        "two arms' Wilson intervals; the diamond is the paired mean over every task both arms ran, with the "
        "interval of the paired permutation test."
        + (
            f" Shown: the {len(shown)} tasks with the largest |delta|; the other {left} are in the per-task table "
            "and report.json."
            if left
            else ""
        )
        + "</p>"
    )
    return out


def _outcomes(env: dict[str, Any]) -> list[str]:
    arms = env["corpus"]["arms"]
    out = [_section("outcomes", "Outcomes and failure modes")]
    counts = {arm: outcome_counts(env, arm) for arm in arms}
    rows = [
        f'<tr data-arm="{escape(arm)}">{_td(arm)}' + "".join(_td(counts[arm][o], o, True) for o in OUTCOMES) + "</tr>"
        for arm in arms
    ]
    out.append(_table(["arm", *OUTCOMES], rows, "outcomes-table"))
    ran = [(arm, list(counts[arm].items())) for arm in arms if sum(counts[arm].values())]
    if ran:
        out.append(_legend(list(OUTCOMES), svg.OUTCOME_COLOURS))
        out.append(svg.stacked_bars("outcomes", "outcomes of the runs of each arm", ran, colours=svg.OUTCOME_COLOURS))
    else:
        out.append(_empty("no runs", "outcomes"))
    by_label = env["failure_modes"]["by_label"]
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
            _empty(
                "no classified failure: the akm arm did not run, every run passed, or no trajectory was observed",
                "failure-modes",
            )
        )
    return out


def _tokens(env: dict[str, Any]) -> list[str]:
    agg, arms = env["aggregate"], env["corpus"]["arms"]
    out = [_section("tokens", "Tokens and cost against pass rate")]
    points: list[svg.Point] = []
    tasks = env["tasks"] if len(env["tasks"]) <= SCATTER_TASK_CAP else []
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
    for arm in arms:
        a = agg.get(arm)
        if a and a.get("tokens_per_run") is not None and a.get("pass_rate") is not None:
            ci = a.get("pass_rate_ci") or {}
            points.append(
                svg.Point(
                    a["tokens_per_run"],
                    a["pass_rate"],
                    svg.ARM_COLOURS.get(arm, "#333"),
                    f"{arm}: {num(a['tokens_per_run'], 0)} tokens/run, pass rate {num(a['pass_rate'])} {_ci(ci)}",
                    ci.get("low"),
                    ci.get("high"),
                    6.0,
                    {"data-arm": arm, "data-summary": "arm"},
                )
            )
    if any(p.data.get("data-summary") for p in points):
        out.append(_legend(arms, svg.ARM_COLOURS))
        out.append(
            svg.scatter(
                "tokens",
                "mean tokens per run against pass rate",
                points,
                x_label="tokens per run (mean over tasks)",
                y_label="pass rate",
                x_hi=svg.nice_max(max(p.x for p in points) * 1.05),
            )
        )
        out.append(
            '<p class="note">large points: each arm (vertical bar: its 95% interval); small points: tasks'
            + ("" if tasks else f" (left out above {SCATTER_TASK_CAP} tasks)")
            + ". Tokens count measured runs only.</p>"
        )
    else:
        out.append(_empty("no valid run had measured tokens", "tokens"))
    costs = [(arm, *arm_cost(env, arm)) for arm in arms]
    cost_points = [
        svg.Point(
            c,
            agg[arm]["pass_rate"],
            svg.ARM_COLOURS.get(arm, "#333"),
            f"{arm}: {_money(c)} per run over {k} runs with a cost, pass rate {num(agg[arm]['pass_rate'])}",
            (agg[arm].get("pass_rate_ci") or {}).get("low"),
            (agg[arm].get("pass_rate_ci") or {}).get("high"),
            6.0,
            {"data-arm": arm, "data-summary": "arm"},
        )
        for arm, c, k in costs
        if c is not None and agg.get(arm) and agg[arm]["pass_rate"] is not None
    ]
    # opencode reports $0 for a model without a price: a cost is known when some run cost something.
    if any(p.x > 0 for p in cost_points):
        out.append(
            svg.scatter(
                "cost",
                "mean cost per run against pass rate",
                cost_points,
                x_label="cost per run (USD, mean)",
                y_label="pass rate",
                x_hi=svg.nice_max(max(p.x for p in cost_points) * 1.05),
                x_fmt=lambda v: f"${v:.3g}",
            )
        )
    else:
        out.append(_empty("no run reported a cost above $0 (the model's price is unknown)", "cost"))
    return out


def _trajectory(env: dict[str, Any]) -> list[str]:
    out = [_section("trajectory", "What the agent did with akm (akm arm)")]
    t = (env.get("trajectory") or {}).get("akm")
    if t is None:
        return out + [_empty("the akm arm did not run", "trajectory")]
    c = t["counts"]
    if not c["runs_with_trajectory"]:
        return out + [
            _empty(
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
    sb = env["searchBridge"]
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
        out.append(_empty("no akm search of a task with a gold asset was observed", "gold-rank"))
    return out


def _tasks(env: dict[str, Any]) -> list[str]:
    arms = env["corpus"]["arms"]
    both = "akm" in arms and "noakm" in arms
    rows = []
    for t in sorted(env["tasks"], key=lambda t: t["id"]):
        cells = [_td(t["id"])]
        for arm in arms:
            r = t.get(arm)
            text = (
                "not run"
                if r is None
                else "n/a (no valid run)"
                if r["pass_rate"] is None
                else (f"{num(r['pass_rate'])} {_ci(r.get('pass_rate_ci'))} ({r['passes']}/{r['valid_count']})")
            )
            cells.append(_td(text, arm))
        if both:
            iv = task_delta_interval(t.get("akm"), t.get("noakm"))
            cells.append(_td("n/a" if iv is None else f"{signed(iv[0])} [{signed(iv[1])}, {signed(iv[2])}]", "delta"))
        rows.append(f'<tr data-task="{escape(t["id"], quote=True)}">' + "".join(cells) + "</tr>")
    head = ["task", *arms] + (["delta akm − noakm [95%]"] if both else [])
    return [
        _section("tasks", f"Per-task pass rates ({len(rows)} tasks)"),
        "<details open><summary>table</summary>"
        if len(rows) <= 200
        else f"<details><summary>{len(rows)} tasks</summary>",
        _table(head, rows, "tasks-table"),
        "</details>",
        '<p class="note">pass rate [Wilson 95% interval] (passes/valid runs).</p>',
    ]


def transcript_href(rel: object) -> str | None:
    """A run's transcript link: a relative path inside the report directory, or None."""
    if not isinstance(rel, str) or not rel or "\\" in rel or ":" in rel:
        return None
    path = PurePosixPath(rel)
    return None if path.is_absolute() or ".." in path.parts else rel


def _runs(env: dict[str, Any]) -> list[str]:
    # One row per run, in the envelope's order; optional end tags are left out (valid HTML) to keep
    # a 10,000-run page small.
    rows = []
    for r in env["runs"]:
        href = transcript_href(r.get("transcript"))
        link = f'<a href="{escape(href, quote=True)}">transcript</a>' if href else "—"
        tokens = r["tokens"].get("total") if isinstance(r.get("tokens"), dict) else None
        wall = r.get("wallclock_ms")
        reason = str(r.get("reason") or "")
        cells = (
            escape(r["task_id"]),
            escape(r["arm"]),
            str(r["seed"]),
            escape(r["outcome"]),
            escape(r.get("failure_mode") or ""),
            "n/a" if tokens is None else str(tokens),
            _money(r.get("cost_usd")),
            "n/a" if wall is None else f"{wall / 1000:.1f}",
            link,
            escape(reason[:300] + ("…" if len(reason) > 300 else "")),
        )
        rows.append("<tr><td>" + "<td>".join(cells))
    return [
        _section("runs", f"Runs ({len(rows)})"),
        f"<details><summary>{len(rows)} runs with their transcripts</summary>",
        _table(
            ["task", "arm", "seed", "outcome", "failure mode", "tokens", "cost", "wall (s)", "transcript", "reason"],
            rows,
            "runs-table",
        ),
        "</details>",
    ]


def _provenance(env: dict[str, Any]) -> list[str]:
    prov = env.get("provenance") or {}
    keys = (
        "plugin_version",
        "python",
        "platform",
        "model",
        "opencode_version",
        "akm_version",
        "akm_search_mode",
        "sandbox",
        "samples_from_store",
    )
    rows = [f"<tr>{_td(k)}{_td(prov.get(k) if prov.get(k) is not None else 'n/a', k)}</tr>" for k in keys if k in prov]
    return [_section("provenance", "Provenance"), _table(["fact", "value"], rows, "provenance-table")] if rows else []


def _warnings(env: dict[str, Any]) -> list[str]:
    if not env.get("warnings"):
        return []
    return [
        _section("warnings", "Warnings"),
        '<ul id="warnings-list">' + "".join(f"<li>{escape(w)}</li>" for w in env["warnings"]) + "</ul>",
    ]
