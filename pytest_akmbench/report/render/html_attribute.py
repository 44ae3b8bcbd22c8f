"""attribute.html: the attribute envelope as one self-contained page (docs/report.md, "The
attribute envelope"), with the building blocks and the head of report.html.

A pure function of the envelope, like attribute.md: the verdict, what was masked and the ranking
rule, the table (asset, tasks it was loaded on, base rate, masked rate, delta [95% CI], p (Holm),
matters) and the deltas as a forest plot. Every number cell carries its exact value in
``data-value``, so a test can compare the page with attribute.json.
"""

from __future__ import annotations

from html import escape

from ..envelope_rows import AttributionRow
from ..envelope_types import AttributeEnvelope
from . import notes, svg
from .fmt import fmt_p, num, signed
from .html import page_start
from .html_parts import empty, section, table


def _cell(text: str, field: str, value: float | None = None, numeric: bool = True) -> str:
    data: dict[str, object] = {
        "class": "n" if numeric else None,
        "data-field": field,
        "data-value": svg.exact(value) if value is not None else None,
    }
    return f"<td{svg.attrs(data)}>{escape(text)}</td>"


def matters(row: AttributionRow, rows: list[AttributionRow]) -> str:
    """The "matters" cell: yes, no, or no with the reason when the asset's paired tasks are too
    few for its test ever to be significant (report/render/notes.py)."""
    if row["significant"]:
        return "yes"
    c = row["comparison"]
    if c is not None and notes.asset_cannot_matter(c, [r["comparison"] or {} for r in rows]):
        n = c["tasks"]
        return f"no (cannot: {n} paired task{'s' if n != 1 else ''})"
    return "no"


def _row(r: AttributionRow, rows: list[AttributionRow]) -> str:
    c = r["comparison"] or {}
    delta = c.get("delta")
    ci = "" if c.get("low") is None else f" [{signed(c['low'])}, {signed(c['high'])}]"
    tasks = r["loaded_on_tasks"]
    cells = [
        _cell(f"{r['rank']}. {r['asset_ref']}", "asset", numeric=False),
        _cell(f"{len(tasks)}: {', '.join(tasks)}", "tasks", numeric=False),
        _cell(num(r["base_pass_rate"]), "base_rate", r["base_pass_rate"]),
        _cell(num(r["masked_pass_rate"]), "masked_rate", r["masked_pass_rate"]),
        _cell("n/a (no paired task)" if delta is None else signed(delta) + ci, "delta", delta),
        _cell(fmt_p(c.get("p_value_holm")), "p_holm", c.get("p_value_holm")),
        _cell(matters(r, rows), "matters", numeric=False),
    ]
    data: dict[str, object] = {
        "data-asset": r["asset_ref"],
        "data-low": svg.exact(c.get("low")),
        "data-high": svg.exact(c.get("high")),
    }
    return f"<tr{svg.attrs(data)}>" + "".join(cells) + "</tr>"


def _forest(rows: list[AttributionRow]) -> list[str]:
    marks = [
        svg.Interval(
            r["asset_ref"],
            r["comparison"]["delta"],
            r["comparison"]["low"],
            r["comparison"]["high"],
            f"{r['asset_ref']}: base − masked {signed(r['comparison']['delta'])} "
            f"[{signed(r['comparison']['low'])}, {signed(r['comparison']['high'])}] over "
            f"{r['comparison']['tasks']} paired tasks",
            "#d9822b" if r["significant"] else "#666",
            {"data-asset": r["asset_ref"]},
        )
        for r in rows
        if r["comparison"] is not None and r["comparison"].get("delta") is not None
    ]
    out = [section("forest", "Contribution of each masked asset (base − masked)")]
    if not marks:
        return out + [empty("no masked asset has a paired task", "attribute-forest")]
    plot = svg.interval_plot(
        "attribute-forest",
        "base − masked pass rate per asset with 95% interval",
        marks,
        lo=-1,
        hi=1,
        ticks=(-1, -0.5, 0, 0.5, 1),
        reference=0.0,
    )
    return out + [plot]


def render(envelope: AttributeEnvelope) -> str:
    """The whole page for an attribute envelope (same envelope, same bytes)."""
    agent, base, attr = envelope["agent"], envelope["base"], envelope["attribution"]
    title = f"akm-bench attribute — {agent.get('model') or agent.get('harness')}"
    source = f"<code>{escape(str(base['path']))}</code>"
    if base.get("config"):
        source += f" (the report of run config <code>{escape(str(base['config']))}</code>)"
    rows = envelope["attributions"]
    parts = [
        *page_start(title),
        f'<p class="meta">{escape(str(envelope.get("timestamp")))}'
        + ("" if envelope.get("complete", True) else ' — <span class="incomplete">incomplete run</span>')
        + f"<br>base: {source}, model {escape(str(base.get('model') or 'unknown'))}, akm "
        f"{escape(str(base.get('akm_version') or 'unknown'))}"
        + ("" if base.get("complete", True) else ' — <span class="incomplete">an incomplete base run</span>')
        + ' — files: <a href="attribute.json">attribute.json</a>, <a href="attribute.md">attribute.md</a></p>',
        f'<p class="verdict" id="verdict"><b>Verdict:</b> {escape(envelope["verdict"])}</p>',
        f'<p class="note" id="ranking">Masked: the top {len(attr["maskedRefs"])} of {attr["assets_loaded"]} loaded '
        f"assets (top {attr['top']}); ranking: {escape(attr['ranking'])}. Each asset is masked only on the tasks "
        "whose base akm runs loaded it; delta = base rate − masked rate per task, averaged over those tasks, with "
        f"the paired permutation interval of the utility report. Masked akm runs: {envelope['runsPerformed']}.</p>",
        section("assets", f"Masked assets ({len(rows)})"),
        table(
            ["asset", "tasks it was loaded on", "base rate", "masked rate", "delta [95% CI]", "p (Holm)", "matters"],
            [_row(r, rows) for r in rows],
            "attribute-table",
        ),
        *_forest(rows),
    ]
    if envelope.get("warnings"):
        parts += [
            section("warnings", "Warnings"),
            '<ul id="warnings-list">' + "".join(f"<li>{escape(w)}</li>" for w in envelope["warnings"]) + "</ul>",
        ]
    parts.append("</body></html>\n")
    return "\n".join(parts)
