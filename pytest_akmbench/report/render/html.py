"""report.html: the envelope as one self-contained page (docs/report.md, "The HTML report").

A pure function of the envelope, like the markdown summary: no script, no network, no
timestamp of its own, charts drawn inline by :mod:`svg`. Transcript links are the envelope's
``runs[].transcript`` paths, relative to the report directory that holds the page (report.write
copies the transcripts there). The sections drawn as plots are in :mod:`html_plots`, the
building blocks (cells, tables, headings) in :mod:`html_parts`.
"""

from __future__ import annotations

from html import escape
from pathlib import PurePosixPath

from .. import soundness, spend
from ..envelope_types import Envelope
from . import adaptive, workflow_sections
from .fmt import num, signed
from .html_parts import interval_text, money, section, table, td
from .html_plots import (
    arms_section,
    forest_section,
    outcomes_section,
    task_delta_interval,
    tokens_section,
    trajectory_section,
)

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


def page_start(title: str) -> list[str]:
    """The page's head and heading: every page of the report directory shares them."""
    return [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        # No network: nothing may load from anywhere, even if a field sneaks markup in.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">",
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
    ]


def render(envelope: Envelope) -> str:
    """The whole page for ``envelope`` (same envelope, same bytes)."""
    agent, corpus = envelope["agent"], envelope["corpus"]
    title = f"akm-bench utility — {agent.get('model') or agent['harness']}"
    parts = [
        *page_start(title),
        f'<p class="meta">branch <code>{escape(str(envelope.get("branch")))}</code> @ <code>{escape(str(envelope.get("commit")))}</code>'
        f" — {escape(str(envelope.get('timestamp')))}"
        + ("" if envelope.get("complete", True) else ' — <span class="incomplete">incomplete run</span>')
        + "<br>"
        f"corpus: {corpus['tasks']} tasks across {corpus['domains']} domains (slice={escape(str(corpus['slice']))}, "
        f"seedsPerArm={corpus['seedsPerArm']}, arms {escape(', '.join(corpus['arms']))}), agent: {escape(agent['harness'])} "
        f'{escape(str(agent.get("version") or ""))} — files: <a href="report.json">report.json</a>, '
        '<a href="summary.md">summary.md</a></p>',
        f'<p class="verdict" id="verdict"><b>Verdict:</b> {escape(envelope.get("verdict") or "")}</p>',
    ]
    # Warnings first, beside the verdict they qualify (a below-floor or tamper warning at the
    # page's bottom went unread).
    parts += _warnings(envelope)
    parts += soundness.html_lines(envelope)
    parts += (
        _gates(envelope)
        + arms_section(envelope)
        + forest_section(envelope)
        + outcomes_section(envelope)
        + tokens_section(envelope)
        + spend.html_lines(envelope)
        + adaptive.html_lines(envelope)
    )
    parts += trajectory_section(envelope)
    parts += workflow_sections.html_lines(envelope)
    parts += _tasks(envelope) + _runs(envelope) + _provenance(envelope)
    parts.append("</body></html>\n")
    return "\n".join(parts)


# ---------------------------------------------------------------- sections


def _gates(envelope: Envelope) -> list[str]:
    gates = envelope.get("gates") or []
    if not gates:
        return []
    rows = [
        f'<tr data-ok="{str(g["ok"]).lower()}">{td(g["gate"])}<td class="{"ok" if g["ok"] else "bad"}">'
        f"{'pass' if g['ok'] else 'FAIL'}</td>{td(g['message'])}</tr>"
        for g in gates
    ]
    failed = sum(not g["ok"] for g in gates)
    return [
        section("gates", f"Gates: {len(gates) - failed} passed, {failed} failed"),
        table(["gate", "result", "detail"], rows, "gates-table"),
    ]


def _tasks(envelope: Envelope) -> list[str]:
    arms = envelope["corpus"]["arms"]
    both = "akm" in arms and "noakm" in arms
    rows = []
    for t in sorted(envelope["tasks"], key=lambda t: t["id"]):
        cells = [td(t["id"])]
        for arm in arms:
            r = t.get(arm)
            text = (
                "not run"
                if r is None
                else "n/a (no valid run)"
                if r["pass_rate"] is None
                else (
                    f"{num(r['pass_rate'])} {interval_text(r.get('pass_rate_ci'))} ({r['passes']}/{r['valid_count']})"
                )
            )
            cells.append(td(text, arm))
        if both:
            iv = task_delta_interval(t.get("akm"), t.get("noakm"))
            cells.append(td("n/a" if iv is None else f"{signed(iv[0])} [{signed(iv[1])}, {signed(iv[2])}]", "delta"))
        rows.append(f'<tr data-task="{escape(t["id"], quote=True)}">' + "".join(cells) + "</tr>")
    head = ["task", *arms] + (["delta akm − noakm [95%]"] if both else [])
    return [
        section("tasks", f"Per-task pass rates ({len(rows)} tasks)"),
        "<details open><summary>table</summary>"
        if len(rows) <= 200
        else f"<details><summary>{len(rows)} tasks</summary>",
        table(head, rows, "tasks-table"),
        "</details>",
        '<p class="note">pass rate [Wilson 95% interval] (passes/valid runs).</p>',
    ]


def transcript_href(rel: object) -> str | None:
    """A run's transcript link: a relative path inside the report directory, or None."""
    if not isinstance(rel, str) or not rel or "\\" in rel or ":" in rel:
        return None
    path = PurePosixPath(rel)
    return None if path.is_absolute() or ".." in path.parts else rel


def _runs(envelope: Envelope) -> list[str]:
    # One row per run, in the envelope's order; optional end tags are left out (valid HTML) to keep
    # a 10,000-run page small.
    rows = []
    for r in envelope["runs"]:
        href = transcript_href(r.get("transcript"))
        link = f'<a href="{escape(href, quote=True)}">transcript</a>' if href else "—"
        tokens = counts.get("total") if isinstance(counts := r.get("tokens"), dict) else None
        wall = r.get("wallclock_ms")
        reason = str(r.get("reason") or "")
        cells = (
            escape(r["task_id"]),
            escape(r["arm"]),
            str(r["seed"]),
            escape(r["outcome"]),
            escape(r.get("failure_mode") or ""),
            "n/a" if tokens is None else str(tokens),
            money(r.get("cost_usd")),
            "n/a" if wall is None else f"{wall / 1000:.1f}",
            link,
            escape(reason[:300] + ("…" if len(reason) > 300 else "")),
        )
        rows.append("<tr><td>" + "<td>".join(cells))
    return [
        section("runs", f"Runs ({len(rows)})"),
        f"<details><summary>{len(rows)} runs with their transcripts</summary>",
        table(
            ["task", "arm", "seed", "outcome", "failure mode", "tokens", "cost", "wall (s)", "transcript", "reason"],
            rows,
            "runs-table",
        ),
        "</details>",
    ]


def _provenance(envelope: Envelope) -> list[str]:
    prov = envelope.get("provenance") or {}
    keys = (
        "plugin_version",
        "python",
        "platform",
        "model",
        "opencode_version",
        "akm_version",
        "akm_search_mode",
        "sandbox",
        "network",
        "samples_from_store",
    )
    rows = [f"<tr>{td(k)}{td(prov.get(k) if prov.get(k) is not None else 'n/a', k)}</tr>" for k in keys if k in prov]
    return [section("provenance", "Provenance"), table(["fact", "value"], rows, "provenance-table")] if rows else []


def _warnings(envelope: Envelope) -> list[str]:
    if not envelope.get("warnings"):
        return []
    return [
        section("warnings", "Warnings"),
        '<ul id="warnings-list">' + "".join(f"<li>{escape(w)}</li>" for w in envelope["warnings"]) + "</ul>",
    ]
