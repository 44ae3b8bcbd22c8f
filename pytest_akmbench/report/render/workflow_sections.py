"""The workflow compliance sections of the summary (markdown) and of report.html, from the
envelope's ``workflow`` block (docs/report.md, "Workflow compliance")."""

from __future__ import annotations

from html import escape
from typing import Any

from ..envelope_types import Envelope
from .fmt import fmt_ci, fmt_pct, md_table, num
from .html_parts import interval_text, table, td
from .html_parts import section as heading

OBSERVED_CHARS = 80


def _cell(text: Any) -> str:
    s = "" if text is None else str(text).replace("\n", " ").replace("|", "\\|")
    return s if len(s) <= OBSERVED_CHARS else s[:OBSERVED_CHARS] + "…"


def _ci(value: float | None, ci: dict[str, float] | None) -> str:
    return num(value) + (f" {fmt_ci(ci['low'], ci['high'])}" if ci else "")


def section(envelope: Envelope) -> list[str]:
    wf = envelope.get("workflow")
    if not wf:
        return []
    lines = ["", "## Workflow compliance", ""]
    if not wf["applicable_checks"]:
        return lines + [
            "_No workflow specs applied to this run's cells._",
            "",
            f"Loaded specs (none matched the run): {', '.join(wf['specs'])}",
        ]
    lines.append(
        f"overall_compliance={_ci(wf['overall_compliance'], wf['overall_compliance_ci'])}, "
        f"strict_pass_rate={_ci(wf['strict_pass_rate'], wf['strict_pass_rate_ci'])}, "
        f"partial_pass_rate={fmt_pct(wf['partial_pass_rate'])}, fail_rate={fmt_pct(wf['fail_rate'])}, "
        f"violations={wf['violation_count']} ({wf['applicable_checks']} applicable checks of {wf['total_checks']})"
    )
    rows = [
        [
            w["workflow_id"],
            w["count"],
            w["tasks"],
            _ci(w["score"], w["score_ci"]),
            _ci(w["pass_rate"], w["pass_rate_ci"]),
            fmt_pct(w["partial_rate"]),
            fmt_pct(w["fail_rate"]),
            w["violation_count"],
        ]
        for w in wf["by_workflow"].values()
    ]
    head = ["workflow_id", "applicable", "tasks", "score [95% CI]", "pass [95% CI]", "partial", "fail", "violations"]
    lines += ["", "### By workflow", "", md_table(rows, head)]
    if wf["top_violations"]:
        lines += ["", "### Top violations", ""]
        lines.append(md_table([[v["code"], v["count"]] for v in wf["top_violations"]], ["code", "count"]))
        evidence = [
            [
                v["code"],
                e["task_id"],
                e["arm"],
                e["seed"],
                e["workflow_id"],
                _cell(e.get("observed") or e.get("message")),
            ]
            for v in wf["top_violations"]
            for e in v["evidence"][:3]
        ]
        lines += ["", "### Violation evidence", ""]
        lines.append(md_table(evidence, ["code", "task", "arm", "seed", "workflow", "what", "observed"]))
    lines += ["", "### Task outcome × workflow outcome", ""]
    lines.append(
        md_table(
            [[r["task_outcome"], r["pass"], r["partial"], r["fail"], r["total"]] for r in wf["cross_tab"]],
            ["task_outcome", "wf_pass", "wf_partial", "wf_fail", "total"],
        )
    )
    lines += _reliability(wf["reliability"])
    if wf["traces_truncated"]:
        lines += ["", f"{wf['traces_truncated']} trace(s) were cut at the event cap; their checks saw a prefix."]
    return lines


def _reliability(rel: dict[str, Any]) -> list[str]:
    corpus = rel["corpus"]
    lines = ["", "### Reliability (pass@k / pass^k)", ""]
    lines.append(
        f"corpus: pass@k={num(corpus['pass_at_k'])}, pass^k={num(corpus['pass_all_k'])} "
        f"over {corpus['groups']} (workflow, task) groups, {corpus['tasks']} tasks"
    )
    rows = [
        [w["workflow_id"], w["tasks"], w["k"], num(w["pass_at_k"]), num(w["pass_all_k"])]
        for w in rel["by_workflow"].values()
    ]
    if rows:
        lines += ["", md_table(rows, ["workflow_id", "tasks", "k", "pass@k", "pass^k"])]
    shaky = [
        w["workflow_id"]
        for w in rel["by_workflow"].values()
        if w["pass_at_k"] is not None and w["pass_at_k"] >= 0.5 and w["pass_at_k"] - w["pass_all_k"] >= 0.25
    ]
    if shaky:
        lines += ["", f"**Inconsistent workflows** (followed on some seeds only): {', '.join(shaky)}"]
    return lines


def html_lines(envelope: Envelope) -> list[str]:
    """The page's section: a row per workflow, the top violations with evidence, the cross-tab."""
    wf = envelope.get("workflow")
    if not wf:
        return []
    out = [heading("workflow", "Workflow compliance")]
    if not wf["applicable_checks"]:
        return out + [
            f'<p class="empty">No workflow spec applied to this run\'s cells ({escape(", ".join(wf["specs"]))}).</p>'
        ]
    out.append(
        f"<p>overall compliance {num(wf['overall_compliance'])} {interval_text(wf['overall_compliance_ci'])}, "
        f"strict pass rate {num(wf['strict_pass_rate'])} {interval_text(wf['strict_pass_rate_ci'])}, "
        f"{wf['violation_count']} violations over {wf['applicable_checks']} applicable checks.</p>"
    )
    rows = [
        f'<tr data-workflow="{escape(w["workflow_id"], quote=True)}">'
        + td(w["workflow_id"])
        + td(w["count"], "count", True)
        + td(w["tasks"], "tasks", True)
        + td(f"{num(w['score'])} {interval_text(w['score_ci'])}", "score")
        + td(f"{num(w['pass_rate'])} {interval_text(w['pass_rate_ci'])}", "pass_rate")
        + td(fmt_pct(w["partial_rate"]), "partial_rate", True)
        + td(fmt_pct(w["fail_rate"]), "fail_rate", True)
        + td(w["violation_count"], "violations", True)
        + "</tr>"
        for w in wf["by_workflow"].values()
    ]
    head = ["workflow", "applicable", "tasks", "score [95%]", "pass [95%]", "partial", "fail", "violations"]
    out.append(table(head, rows, "workflow-table"))
    evidence = [
        "<tr>"
        + "".join(td(x) for x in (v["code"], e["task_id"], e["arm"], e["seed"], e["workflow_id"]))
        + td(e.get("message") or "")
        + td(e.get("observed") or "")
        + "</tr>"
        for v in wf["top_violations"]
        for e in v["evidence"]
    ]
    if evidence:
        head = ["violation", "task", "arm", "seed", "workflow", "what", "observed"]
        out.append(table(head, evidence, "workflow-violations"))
    cross = [
        "<tr>"
        + "".join(td(r[k], k, k != "task_outcome") for k in ("task_outcome", "pass", "partial", "fail", "total"))
        + "</tr>"
        for r in wf["cross_tab"]
    ]
    out.append(table(["task outcome", "workflow pass", "partial", "fail", "runs"], cross, "workflow-cross-tab"))
    return out
