"""The lift-per-agent document as markdown, and its one-line verdict (docs/report.md, "Lift per
agent")."""

from __future__ import annotations

from typing import Any

from .render.fmt import fmt_ci, fmt_p, md_table, num, signed
from .render.notes import too_few_paired_tasks


def _level(block: dict[str, Any]) -> str:
    """The interval's level, said only when Holm's step set it above 95%."""
    confidence = block.get("confidence")
    return "" if confidence is None or abs(confidence - 0.95) < 1e-9 else f" at {100 * confidence:.3g}%"


def _lift_clause(agent: dict[str, Any]) -> str:
    c = agent["lift"]
    text = f"{agent['agent']} {signed(c['delta'])} {fmt_ci(c['low'], c['high'], with_sign=True)}{_level(c)}"
    if not c["reliable"]:
        return text + " (unreliable)"
    return text + (" (significant)" if c["significant"] else "")


def _pair_clause(pair: dict[str, Any]) -> str:
    a, b = pair["agents"]
    interval = fmt_ci(pair["low"], pair["high"], with_sign=True) + _level(pair)
    holm = f" Holm-adjusted over {pair['holm_family']} pairs" if pair["holm_family"] > 1 else ""
    what = f"lift of {a} − lift of {b} = {signed(pair['delta'])} {interval}, p={fmt_p(pair['p_value_holm'])}{holm}"
    what += f", {pair['tasks']} task{'' if pair['tasks'] == 1 else 's'}"
    if not pair["reliable"]:
        return f"unreliable ({pair['unreliable_reason']}): no verdict on {a} vs {b} ({what})"
    if pair["significant"]:
        more = a if (pair["delta"] or 0) > 0 else b
        return f"akm helps {more} more, beyond noise ({what})"
    few = too_few_paired_tasks({"tasks": pair["tasks"], "holm_family": pair["holm_family"]})
    return f"no significant difference in lift between {a} and {b} ({what}{'; ' + few if few else ''})"


def verdict(doc: dict[str, Any]) -> str:
    """One line: each agent's lift, then whether the lifts differ, pair by pair."""
    lifted = [a for a in doc["agents"] if a["lift"] is not None]
    if not doc["tasks"]["shared"]:
        return "the reports share no task: nothing compared"
    lifts = "lift akm − noakm: " + ", ".join(_lift_clause(a) for a in lifted) if lifted else "no agent ran both arms"
    pairs = doc["interaction"]["pairs"]
    if not pairs:
        return f"{lifts}; fewer than two agents with a lift: whether the lifts differ is not tested"
    return f"{lifts}; " + "; ".join(_pair_clause(p) for p in pairs)


def _arm(arm: dict[str, Any] | None) -> str:
    if arm is None:
        return "not run"
    return f"{num(arm['pass_rate'])} {fmt_ci(arm['low'], arm['high'])}"


def _counts(agent: dict[str, Any], key: str) -> str:
    return " / ".join("–" if agent["arms"][arm] is None else str(agent["arms"][arm][key]) for arm in ("noakm", "akm"))


def _agents_table(doc: dict[str, Any]) -> str:
    rows = []
    for a in doc["agents"]:
        c = a["lift"]
        lift = "n/a" if c is None else f"{signed(c['delta'])} {fmt_ci(c['low'], c['high'], with_sign=True)}{_level(c)}"
        p = "n/a" if c is None else fmt_p(c["p_value_holm"]) + ("" if c["reliable"] else " (unreliable)")
        runs = " / ".join(
            "–" if a["arms"][arm] is None else f"{a['arms'][arm]['valid_runs']}/{a['arms'][arm]['runs']}"
            for arm in ("noakm", "akm")
        )
        rows.append(
            [
                f"{a['agent']} {a['version'] or ''}".strip(),
                a["model"] or "n/a",
                _arm(a["arms"]["noakm"]),
                _arm(a["arms"]["akm"]),
                lift,
                p,
                runs,
                _counts(a, "harness_errors"),
                _counts(a, "budget_exceeded"),
            ]
        )
    head = [
        "agent",
        "model",
        "noakm pass rate",
        "akm pass rate",
        "lift akm − noakm",
        "p (Holm)",
        "valid runs (noakm / akm)",
        "harness errors",
        "budget exceeded",
    ]
    return md_table(rows, head)


def _pairs_table(doc: dict[str, Any]) -> str:
    rows = [
        [
            " − ".join(p["agents"]),
            f"{signed(p['lifts'][0])} − {signed(p['lifts'][1])}",
            f"{signed(p['delta'])} {fmt_ci(p['low'], p['high'], with_sign=True)}{_level(p)}",
            fmt_p(p["p_value"]),
            fmt_p(p["p_value_holm"]),
            str(p["tasks"]),
            ("beyond noise" if p["significant"] else "within noise") if p["reliable"] else "unreliable",
        ]
        for p in doc["interaction"]["pairs"]
    ]
    return md_table(rows, ["agents", "lifts", "difference of lifts", "p", "p (Holm)", "tasks", "verdict"])


def render(doc: dict[str, Any]) -> str:
    tasks = doc["tasks"]
    lines = [f"# akm-bench lift per agent — {len(doc['agents'])} agents, {len(tasks['shared'])} shared tasks", ""]
    lines += [f"**Verdict:** {verdict(doc)}", "", "## Per agent", "", _agents_table(doc), ""]
    lines.append(
        "Pass rates are over the shared tasks, with the 95% interval over tasks; the lift is the report's "
        "paired akm − noakm comparison (sign-flip permutation test over tasks, Holm over the agents). Harness "
        "errors are out of every figure and counted; budget_exceeded runs are failures, counted."
    )
    if doc["interaction"]["pairs"]:
        lines += ["", "## Do the lifts differ between agents?", "", _pairs_table(doc), ""]
        lines.append(
            "Per task, the difference of the two agents' lifts; the paired sign-flip permutation test over "
            "tasks on those differences (tasks are the unit), its interval the test's inversion widened to the "
            "run noise, Holm over the pairs of agents."
        )
    if tasks["left_out"]:
        lines += ["", "## Tasks left out", ""] + [f"- {t['id']}: {t['reason']}" for t in tasks["left_out"]]
    lines += ["", "## Sources", ""] + [f"- {a['agent']}: `{a['source']}`" for a in doc["agents"]]
    if doc["warnings"]:
        lines += ["", "## Warnings", ""] + [f"- {w}" for w in doc["warnings"]]
    return "\n".join(lines) + "\n"
