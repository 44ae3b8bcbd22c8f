"""The comparison of two reports as markdown, and its one-line verdict (docs/report.md, "compare")."""

from __future__ import annotations

from typing import Any

from tabulate import tabulate

from ..render.fmt import num, signed
from .changes import FLAT, sign
from .workflow import markdown_lines as workflow_lines

_GLYPH = {"improve": "▲", "regress": "▼", "flat": "▬"}


def _interval(change: dict[str, Any]) -> str:
    """The change's interval, with its level when Holm's step set it above 95%."""
    low, high, confidence = change["low"], change["high"], change.get("confidence")
    if low is None or high is None:
        return "n/a"
    level = "" if confidence is None or abs(confidence - 0.95) < 1e-9 else f" at {100 * confidence:.3g}%"
    return f"[{signed(low)}, {signed(high)}]{level}"


def verdict(result: dict[str, Any]) -> str:
    """One line per comparison: which arms changed beyond noise."""
    if not result["ok"]:
        return f"refused ({result['reason']}): {result['message']}"
    if not result["arms"]:
        return "no arm ran in both reports: nothing compared"
    parts = []
    for arm, c in result["arms"].items():
        p = c["paired"]
        change = (
            f"{num(c['base']['pass_rate'])} → {num(c['current']['pass_rate'])} "
            f"({signed(p['delta'])} {_interval(p)} over {p['tasks']} tasks in both, "
            f"p={_p(p['p_value_holm'])}{' Holm-adjusted' if p['holm_family'] > 1 else ''})"
        )
        if c["beyond_noise"]:
            word = "improved" if (p["delta"] or 0) > 0 else "regressed"
            parts.append(f"{arm} {word} beyond noise: {change}")
        else:
            parts.append(f"{arm} within noise: {change}")
    for wid, c in ((result.get("workflow") or {}).get("by_workflow") or {}).items():
        if c["beyond_noise"]:
            p = c["paired"]
            word = "improved" if (p["delta"] or 0) > 0 else "regressed"
            parts.append(
                f"workflow {wid} strict pass {word} beyond noise: {num(c['base']['pass_rate'])} → "
                f"{num(c['current']['pass_rate'])} ({signed(p['delta'])} {_interval(p)})"
            )
    return "; ".join(parts)


def _p(p: float | None) -> str:
    return "n/a" if p is None else f"{p:.2g}"


def render_markdown(result: dict[str, Any]) -> str:
    """The comparison as markdown (refusals included)."""
    if not result["ok"]:
        return _refused(result)
    model = result["currentModel"] or "<unknown>"
    lines = [f"# akm-bench compare — `{model}`", ""]
    if "baseAgent" in result:  # two agents' reports, compared on request
        lines += [f"agents differ: base=`{result['baseAgent']}`, current=`{result['currentAgent']}`", ""]
    bf, cf = result["baseFixtureContentHash"], result["currentFixtureContentHash"]
    if bf or cf:
        lines += [f"fixture-content hash: base={f'`{bf}`' if bf else 'n/a'}, current={f'`{cf}`' if cf else 'n/a'}", ""]
    lines.append(f"**Verdict:** {verdict(result)}")
    if result["arms"]:
        lines += ["", "## Aggregate (current − base)", "", _aggregate_table(result)]
        if "lift" in result:
            lift = result["lift"]
            lines += [
                "",
                f"lift (akm − noakm): base {signed(lift['base'])}, current {signed(lift['current'])}, change {signed(lift['change'])}",
            ]
        lines += ["", f"noise rule — {result['noise_rule']}"]
        for arm, c in result["arms"].items():
            lines += ["", f"## Per-task ({arm} arm)", "", _task_table(c)]
    lines += workflow_lines(result)
    return "\n".join(lines + _warnings(result)) + "\n"


def _refused(result: dict[str, Any]) -> str:
    lines = [f"# akm-bench compare — refused ({result['reason']})", "", result["message"]]
    for key in (
        "baseAgent",
        "currentAgent",
        "baseModel",
        "currentModel",
        "baseTaskCorpusHash",
        "currentTaskCorpusHash",
        "baseFixtureContentHash",
        "currentFixtureContentHash",
    ):
        if key in result:
            lines.append(f"- {key}: `{result[key]}`")
    for key in ("baseWorkflowDigests", "currentWorkflowDigests"):
        if key in result:
            lines.append(f"- {key}: " + ", ".join(f"{w} `{d}`" for w, d in result[key].items()))
    for key, label in (("onlyInCurrent", "only in current"), ("onlyInBase", "only in base")):
        if result.get(key):
            lines.append(f"- {label}: {', '.join(result[key])}")
    return "\n".join(lines + _warnings(result)) + "\n"


def _warnings(result: dict[str, Any]) -> list[str]:
    return ["", "## Warnings", ""] + [f"- {w}" for w in result["warnings"]] if result["warnings"] else []


def _aggregate_table(result: dict[str, Any]) -> str:
    rows = []
    for arm, c in result["arms"].items():
        p = c["paired"]
        rows.append(
            [
                arm,
                num(c["base"]["pass_rate"]),
                num(c["current"]["pass_rate"]),
                p["tasks"],
                signed(p["delta"]),
                _interval(p),
                _p(p["p_value_holm"]),
                _GLYPH[sign(p["delta"], True, FLAT)],
                "yes" if c["beyond_noise"] else "no",
                signed(c["tokens_per_pass_delta"], 0),
                signed(c["wallclock_ms_delta"], 0),
            ]
        )
    head = [
        "arm",
        "base",
        "current",
        "tasks in both",
        "delta (same tasks)",
        "CI (95%, or Holm's level)",
        "p (Holm)",
        "dir",
        "beyond noise",
        "tokens_per_pass Δ",
        "wallclock_ms Δ",
    ]
    return tabulate(rows, head, tablefmt="github", disable_numparse=True)


def _task_table(arm_comparison: dict[str, Any]) -> str:
    rows = []
    for t in arm_comparison["perTask"]:
        name = t["id"] if t["presence"] == "both" else f"{t['id']} _({t['presence']})_"
        rows.append(
            [
                name,
                num(t["base_pass_rate"]),
                num(t["current_pass_rate"]),
                signed(t["delta"]),
                _p(t["p_value_holm"]),
                _GLYPH[t["sign"]],
                "yes" if t["beyond_noise"] else "",
            ]
        )
    head = ["task", "base", "current", "delta", "p (Holm)", "dir", "beyond noise"]
    return tabulate(rows, head, tablefmt="github", disable_numparse=True)
