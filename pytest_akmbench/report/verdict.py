"""The one-line verdict of a report envelope (docs/report.md, "The verdict line")."""

from __future__ import annotations

from typing import Any

from . import lift, metrics
from .fmt import fmt_ci, fmt_p, num, signed


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
    d, ci = c["delta"], fmt_ci(c["low"], c["high"], with_sign=True)
    size = f"{c['tasks']} paired task{'' if c['tasks'] == 1 else 's'}" + (
        f" ({c['tasks_unpaired']} unpaired)" if c.get("tasks_unpaired") else ""
    )
    size += "; " + _runs(agg, ("akm", b))
    if c["holm_family"] > 1:
        test = f"paired permutation p={fmt_p(c['p_value_holm'])}, Holm-adjusted over {c['holm_family']} comparisons"
    else:
        test = f"paired permutation p={fmt_p(c['p_value'])}"
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
            f"the other puts the delta anywhere in {fmt_ci(bounds['low'], bounds['high'], with_sign=True)}"
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
            f"{fmt_ci(ci.get('low'), ci.get('high'))} over {a['tasks_with_valid_runs']} tasks, "
            f"{_runs(agg, (ran[0],))}; no lift measured"
        )
    return (
        prefix + f"arms {', '.join(ran)} ran, but akm and another arm share no task with valid runs: no lift measured"
    )
