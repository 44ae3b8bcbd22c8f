"""What a run spent, per arm and in all, and what the lift cost (docs/report.md, "Spend").

Tokens and cost are the agent's own figures as each sample stores them: a run counts towards a
token total only when its tokens were measured (``token_measurement == "measured"``) and towards
a cost total only when it reported a cost. Totals say how many runs they cover, so an unmeasured
run is never a silent 0. Every reported run counts, harness errors included: what they spent was
spent. The efficiency figures divide the paired pass-rate lift by the extra spend per run of the
better-equipped arm, and are ``None`` when either is unknown or the extra spend is not positive.

Also the markdown and page sections of the ``spend`` block, and the terminal summary's lines.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from html import escape
from statistics import fmean

from ..records import Sample
from ..store.runs import CapRecord
from .envelope_types import AggregateBlock, Efficiency, Envelope, SpendBlock, SpendCap, SpendTotals
from .render.fmt import md_table, signed

TOKEN_FIELDS = ("input", "output", "reasoning", "cache_read", "cache_write", "total")
COMPARISONS = (("akm", "noakm"), ("akm", "synthetic"))


def run_tokens(sample: Sample) -> dict[str, int] | None:
    """The measured token counts of one run (the fields it has), or None when not measured."""
    tokens = sample.get("tokens")
    if sample.get("token_measurement") != "measured" or not isinstance(tokens, dict):
        return None
    return {k: int(v) for k, v in tokens.items() if k in TOKEN_FIELDS and isinstance(v, (int, float))}


def run_cost(sample: Sample) -> float | None:
    """The cost in USD the agent reported for one run, or None when it reported none."""
    cost = sample.get("cost_usd")
    return float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None


def totals(runs: Sequence[Sample]) -> SpendTotals:
    """Token and cost totals over ``runs``, with how many runs each covers.

    ``tokens.<field>`` sums that field over the measured runs that carry it (None when none
    does); ``cost_usd`` sums the reported costs (None when no run reported one).
    """
    measured = [t for t in (run_tokens(r) for r in runs) if t is not None]
    costs = [c for c in (run_cost(r) for r in runs) if c is not None]
    sums: dict[str, int | None] = {}
    for key in TOKEN_FIELDS:
        values = [t[key] for t in measured if key in t]
        sums[key] = sum(values) if values else None
    return {
        "runs": len(runs),
        "runs_with_tokens": len(measured),
        "runs_with_cost": len(costs),
        "token_coverage": len(measured) / len(runs) if runs else None,
        "cost_coverage": len(costs) / len(runs) if runs else None,
        "tokens": sums,
        "cost_usd": sum(costs) if costs else None,
        "tokens_per_run": fmean(t["total"] for t in measured if "total" in t) if sums["total"] is not None else None,
        "cost_per_run": fmean(costs) if costs else None,
    }


def _per_task_means(runs: Iterable[Sample], arm: str, figure: str) -> dict[str, float]:
    """Each task's mean tokens (total) or cost per valid run of ``arm``, over the runs measured."""
    values: dict[str, list[float]] = defaultdict(list)
    for r in runs:
        if r["arm"] != arm or r["outcome"] == "harness_error":
            continue
        if figure == "tokens":
            t = run_tokens(r)
            value: float | None = t.get("total") if t else None
        else:
            value = run_cost(r)
        if value is not None:
            values[r["task_id"]].append(float(value))
    return {task: fmean(v) for task, v in values.items()}


def extra_per_run(runs: Sequence[Sample], arm: str, other: str, figure: str) -> tuple[float | None, int]:
    """Mean over tasks measured in both arms of (``arm`` − ``other``) mean spend per valid run,
    and how many tasks that is; ``figure`` is ``tokens`` or ``cost``."""
    a, b = _per_task_means(runs, arm, figure), _per_task_means(runs, other, figure)
    both = [t for t in a if t in b]
    return (fmean(a[t] - b[t] for t in both) if both else None), len(both)


def per_unit(lift: float | None, extra: float | None, unit: float = 1.0) -> float | None:
    """``lift`` per ``unit`` of extra spend: None when either is unknown or extra ≤ 0."""
    if lift is None or extra is None or extra <= 0:
        return None
    return lift / (extra / unit)


def efficiency(runs: Sequence[Sample], arm: str, other: str, lift: float | None) -> Efficiency:
    """Lift per 1k extra tokens and per extra dollar of ``arm`` over ``other`` (docs/report.md)."""
    tokens, token_tasks = extra_per_run(runs, arm, other, "tokens")
    cost, cost_tasks = extra_per_run(runs, arm, other, "cost")
    return {
        "lift": lift,
        "extra_tokens_per_run": tokens,
        "extra_cost_per_run": cost,
        "token_tasks": token_tasks,
        "cost_tasks": cost_tasks,
        "lift_per_1k_tokens": per_unit(lift, tokens, 1000.0),
        "lift_per_usd": per_unit(lift, cost),
    }


def block(
    runs: Sequence[Sample], arms: Sequence[str], aggregate: AggregateBlock, cap: SpendCap | None = None
) -> SpendBlock:
    """The envelope's ``spend`` block: per arm, the whole run, the efficiency of each comparison
    the report makes (its ``lift`` is the report's paired pass-rate delta), and the spend cap."""
    lifts = {
        "noakm": (aggregate.get("delta") or {}).get("pass_rate"),
        "synthetic": aggregate.get("akm_over_synthetic_lift"),
    }
    return {
        "by_arm": {arm: totals([r for r in runs if r["arm"] == arm]) for arm in arms},
        "run": totals(runs),
        "efficiency": {
            f"{a}_vs_{b}": efficiency(runs, a, b, lifts[b]) for a, b in COMPARISONS if a in arms and b in arms
        },
        "cap": cap,
    }


# ---------------------------------------------------------------- rendering


def tokens_text(t: SpendTotals) -> str:
    """``5200 tokens (input 5000, output 200, cache read 0) over 3 of 4 runs`` or not measured."""
    tokens = t["tokens"]
    if tokens["total"] is None:
        return f"tokens not measured ({t['runs']} runs)"
    parts = [f"{k.replace('_', ' ')} {tokens[k]}" for k in TOKEN_FIELDS[:-1] if tokens[k] is not None]
    return f"{tokens['total']} tokens ({', '.join(parts)}) over {t['runs_with_tokens']} of {t['runs']} runs"


def cost_text(t: SpendTotals) -> str:
    if t["cost_usd"] is None:
        return "cost not reported"
    return f"${t['cost_usd']:.4f} over {t['runs_with_cost']} of {t['runs']} runs"


def efficiency_text(name: str, e: Efficiency) -> str:
    per_1k, per_usd = e["lift_per_1k_tokens"], e["lift_per_usd"]
    return (
        f"{name.replace('_vs_', ' over ')}: lift {signed(e['lift'])}, {signed(e['extra_tokens_per_run'], 0)} tokens and "
        f"{_usd(e['extra_cost_per_run'])} per run; lift per 1k tokens {signed(per_1k, 3)}, per dollar {signed(per_usd)}"
    )


def _usd(v: float | None) -> str:
    if v is None:
        return "n/a"
    return f"{'+' if v > 0 else '-' if v < 0 else ''}${abs(v):.4f}"


def cap_text(cap: SpendCap | None) -> str | None:
    """``stopped: spend cap …`` when the cap kept cells from starting, else where the run stood."""
    if not cap:
        return None
    spent = f"${cap['spent']:.4f}" if cap["kind"] == "usd" else f"{int(cap['spent'])} tokens"
    limit = f"${cap['limit']:.4f}" if cap["kind"] == "usd" else f"{int(cap['limit'])} tokens"
    if cap["not_run"]:
        return f"stopped: spend cap {limit} reached ({spent} spent by this run); {cap['not_run']} cells not run"
    if cap["reached"]:
        return f"spend cap {limit} reached ({spent} spent by this run) after the last cell had started"
    return f"spend cap {limit}: {spent} spent by this run, not reached"


def terminal_lines(block_: SpendBlock | None) -> list[str]:
    """The terminal summary's spend lines after the per-arm ones: the run, the efficiency, the cap."""
    if not block_:
        return []
    lines = [f"spend of the run: {tokens_text(block_['run'])}, {cost_text(block_['run'])}"]
    lines += [f"spend {efficiency_text(k, e)}" for k, e in block_["efficiency"].items()]
    capped = cap_text(block_.get("cap"))
    return lines + ([capped] if capped else [])


def markdown_lines(envelope: Envelope) -> list[str]:
    """The summary's ``## Spend`` section."""
    block_ = envelope.get("spend")
    if not block_ or not block_["run"]["runs"]:
        return []
    rows = [_row(name, t) for name, t in [*block_["by_arm"].items(), ("all", block_["run"])]]
    lines = ["", "## Spend", "", md_table(rows, SPEND_HEAD)]
    if block_["efficiency"]:
        lines += [""] + [f"- {efficiency_text(k, e)}" for k, e in block_["efficiency"].items()]
    capped = cap_text(block_.get("cap"))
    return lines + (["", f"**{capped}**"] if capped else [])


SPEND_HEAD = ["arm", "runs", "tokens measured", *(k.replace("_", " ") for k in TOKEN_FIELDS), "cost (USD)"]


def _row(name: str, t: SpendTotals) -> list[str]:
    tokens = t["tokens"]
    cost = "n/a" if t["cost_usd"] is None else f"{t['cost_usd']:.4f} ({t['runs_with_cost']} runs)"
    cells = ["n/a" if tokens[k] is None else str(tokens[k]) for k in TOKEN_FIELDS]
    return [name, str(t["runs"]), f"{t['runs_with_tokens']} of {t['runs']}", *cells, cost]


def html_lines(envelope: Envelope) -> list[str]:
    """The page's spend section: the same table, each figure in a ``data-field`` for checks."""
    block_ = envelope.get("spend")
    if not block_ or not block_["run"]["runs"]:
        return []
    head = "".join(f"<th>{escape(h)}</th>" for h in SPEND_HEAD)
    body = "".join(
        f'<tr data-arm="{escape(name)}">'
        + "".join(f"<td{' class=n' if i else ''}>{escape(c)}</td>" for i, c in enumerate(_row(name, t)))
        + "</tr>"
        for name, t in [*block_["by_arm"].items(), ("all", block_["run"])]
    )
    notes = [escape(efficiency_text(k, e)) for k, e in block_["efficiency"].items()]
    capped = cap_text(block_.get("cap"))
    notes += [f'<b class="bad">{escape(capped)}</b>'] if capped else []
    return [
        '<h2 id="spend">Spend</h2>',
        f'<table id="spend-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>',
        *(f'<p class="note">{n}</p>' for n in notes),
    ]


def spent(records: Sequence[Sample]) -> dict[str, float]:
    """What ``records`` spent: cost (USD, reported costs) and tokens (measured totals)."""
    tokens = [t.get("total", 0) for t in (run_tokens(r) for r in records) if t is not None]
    costs = [c for c in (run_cost(r) for r in records) if c is not None]
    return {"usd": sum(costs), "tokens": float(sum(tokens))}


def cap_block(caps: Sequence[CapRecord], records: Sequence[Sample], not_run: int) -> SpendCap:
    """The envelope's ``spend.cap`` from the run's own ``records``: the first cap they reach,
    else the first one set (each cap a ``{"kind": "usd"|"tokens", "limit": ...}``)."""
    so_far = spent(records)
    hit = next((c for c in caps if so_far[c["kind"]] >= c["limit"]), None)
    cap = hit or caps[0]
    return {
        "kind": cap["kind"],
        "limit": cap["limit"],
        "spent": so_far[cap["kind"]],
        "reached": hit is not None,
        "not_run": not_run,
    }
