"""The one-line verdict of a report envelope (docs/report.md, "The verdict line")."""

from __future__ import annotations

from typing import Any

from . import lift, metrics, soundness
from .envelope_types import Envelope
from .render import notes
from .render.fmt import fmt_ci, fmt_p, num, signed

# Agents that run no model: their runs check the corpus, they compare nothing.
CHECK_AGENTS = {"oracle": "solved by its own solution", "nop": "failed by doing nothing"}


def _provisional(envelope: Envelope) -> str:
    fc = envelope.get("floor_coverage")
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
        # The interval printed beside a Holm-adjusted p inverts the adjusted test (lift.adjust).
        level = f"{100 * (c.get('confidence') or 0.95):g}%"
        test = (
            f"paired permutation p={fmt_p(c['p_value_holm'])}, {level} interval, "
            f"Holm-adjusted over {c['holm_family']} comparisons"
        )
    else:
        test = f"paired permutation p={fmt_p(c['p_value'])}"
    vs = "" if b == "noakm" else f" over {b}"
    if not c["reliable"]:
        why = c.get("unreliable_reason") or lift.unreliable(c["harness_errors"])
        text = f"unreliable: {why}, no verdict on akm vs {b} (measured on the valid runs: {signed(d)} {ci}, {test}), {size}"
    elif c["significant"]:
        text = f"akm {'lifts' if d > 0 else 'lowers'} pass rate{vs} by {signed(d)} {ci} ({test}), {size}"
    else:
        text = f"no significant difference between akm and {b} ({signed(d)} {ci}, {test}), {size}"
    few = notes.too_few_paired_tasks(c)
    if few and c["reliable"]:
        text += f"; {few}"
    bounds = c.get("artefact_bounds")
    if bounds is not None:
        ea, eb = c["harness_errors"]["akm"], c["harness_errors"][b]
        text += (
            f"; artefact risk: harness errors differ between arms (akm {ea['harness_errors']}/{ea['runs']}, "
            f"{b} {eb['harness_errors']}/{eb['runs']}), counting them as failures on one side and passes on "
            f"the other puts the delta anywhere in {fmt_ci(bounds['low'], bounds['high'], with_sign=True)}"
        )
    return text


def verdict(envelope: Envelope) -> str:
    """One line a reader can act on: each comparison the report tests, and whether it is beyond
    noise; marked provisional, unreliable or at risk of artefact when it is (docs/report.md)."""
    agg = envelope["aggregate"]
    ran = [a for a in metrics.ARM_ORDER if agg.get(a) and agg[a]["pass_rate"] is not None]
    prefix = "" if envelope.get("complete", True) else "incomplete run — "
    sound = envelope.get("soundness")
    if not envelope["runs"] and sound:
        return prefix + soundness.headline(sound)
    suffix = f"; {soundness.headline(sound)}" if sound else ""
    if not ran:
        return prefix + "no valid runs: no arm produced a pass or fail outcome" + suffix
    shown = _what_it_shows(envelope, ran)
    if shown:
        return prefix + shown + suffix
    return prefix + _provisional(envelope) + _comparisons(agg, ran) + suffix


def _arm_passes(envelope: Envelope, ran: list[str]) -> tuple[int, int, str]:
    """(passes, valid runs, "noakm 3/4, akm 4/4") over the valid runs of the arms that ran."""
    counts = []
    for arm in ran:
        rows = [r for r in envelope["runs"] if r["arm"] == arm and r["outcome"] != "harness_error"]
        counts.append((arm, sum(r["outcome"] == "pass" for r in rows), len(rows)))
    text = ", ".join(f"{a} {p}/{n}" for a, p, n in counts)
    return sum(c[1] for c in counts), sum(c[2] for c in counts), text


def _what_it_shows(envelope: Envelope, ran: list[str]) -> str | None:
    """The verdict of a run that compares nothing: an oracle or nop check of the corpus, or a
    dry run with a scripted model (its answers do not depend on the arm)."""
    agent, model = envelope["agent"]["harness"], envelope["agent"].get("model") or ""
    passes, valid, per_arm = _arm_passes(envelope, ran)
    errors = sum(r["outcome"] == "harness_error" for r in envelope["runs"])
    errs = f", {errors} harness error{'s' if errors != 1 else ''}" if errors else ""
    if agent in CHECK_AGENTS:
        want_pass = agent == "oracle"
        wrong = [
            r for r in envelope["runs"] if r["outcome"] != "harness_error" and (r["outcome"] == "pass") != want_pass
        ]
        if not wrong:
            return (
                f"{agent} check: {passes} of {valid} valid cells pass ({per_arm}{errs}): "
                f"every selected task is {CHECK_AGENTS[agent]}"
            )
        names = ", ".join(f"{r['task_id']} {r['arm']} s{r['seed']}" for r in wrong[:3]) + (
            " …" if len(wrong) > 3 else ""
        )
        return (
            f"{agent} check FAILED: {len(wrong)} of {valid} valid cells are not {CHECK_AGENTS[agent]} "
            f"({names}); {passes} pass ({per_arm}{errs})"
        )
    if model.startswith("scripted/"):
        return (
            f"dry run with the scripted model {model}: {passes} of {valid} valid cells pass ({per_arm}{errs}); "
            "a scripted model follows its script whatever the arm, so no lift is measured"
        )
    return None


def _comparisons(agg: dict[str, Any], ran: list[str]) -> str:
    prefix = ""
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
