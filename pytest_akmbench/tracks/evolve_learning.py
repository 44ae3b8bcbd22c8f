"""The evolve track's learning curve: the post pass rate after each episode, the slope across
episodes with its interval, and what the curve says (docs/report.md, "The evolve envelope").

Each episode's rate is the macro pass rate over the eval tasks (the mean of per-task rates)
with the report's cluster interval (tasks as clusters). The slope is the least-squares slope
of those rates against the episode number; as every task is seen at the same episodes, it is
the mean of the per-task least-squares slopes, so it is tested like a paired delta: the
sign-flip permutation test over tasks (report/significance.py), its inversion giving the
interval. A trend is called only when that interval excludes 0: ``improving`` or
``regressing``; otherwise ``plateau`` (no slope the data can tell from 0). Pure: no pytest.
"""

from __future__ import annotations

from fractions import Fraction
from statistics import fmean
from typing import Any

from ..report import lift, significance, stats

IMPROVEMENT_MARGIN = 0.05  # the reference's time_to_improvement: first episode above pre + this

Outcomes = dict[str, list[bool]]  # task -> valid pass indicators of its runs


def _point(episode: int, runs: Outcomes, tasks: list[str]) -> dict[str, Any]:
    rates = [fmean(runs[t]) for t in tasks if runs.get(t)]
    total = sum(len(runs.get(t) or []) for t in tasks)
    interval = stats.cluster_rate_interval(rates, total)
    return {
        "episode": episode,
        "post_pass_rate": fmean(rates) if rates else None,
        "low": interval[0] if interval else None,
        "high": interval[1] if interval else None,
        "tasks": len(rates),
        "runs": total,
    }


def task_slope(rates: list[Fraction]) -> Fraction:
    """Least-squares slope of one task's rates against episodes 1..n, exactly."""
    n = len(rates)
    mean_x = Fraction(n + 1, 2)
    sxx = sum((Fraction(x) - mean_x) ** 2 for x in range(1, n + 1))
    return Fraction(sum((Fraction(x) - mean_x) * r for x, r in zip(range(1, n + 1), rates))) / Fraction(sxx)


def slope(episodes: list[Outcomes], tasks: list[str]) -> dict[str, Any] | None:
    """The slope across episodes over the tasks with valid runs in every episode, its 95%
    interval and p-value (None below two episodes or without such a task)."""
    kept = [t for t in tasks if all(runs.get(t) for runs in episodes)]
    if len(episodes) < 2 or not kept:
        return None
    slopes = [task_slope([Fraction(sum(runs[t]), len(runs[t])) for runs in episodes]) for t in kept]
    test = significance.sign_flip_test(slopes)
    value = float(sum(slopes) / len(slopes))
    low, high = test["low"], test["high"]
    return {
        "slope": value,
        "low": low,
        "high": high,
        "p_value": test["p_value"],
        "tasks": len(kept),
        "significant": test["p_value"] is not None and test["p_value"] < lift.ALPHA and not low <= 0.0 <= high,
        "method": "sign_flip_permutation over per-task least-squares slopes",
    }


def curve(pre: Outcomes, episodes: list[Outcomes], tasks: list[str]) -> dict[str, Any]:
    """The ``learning`` block of the envelope."""
    points = [_point(i, runs, tasks) for i, runs in enumerate(episodes, 1)]
    pre_rates = [fmean(pre[t]) for t in tasks if pre.get(t)]
    baseline = fmean(pre_rates) if pre_rates else None
    fit = slope(episodes, tasks)
    trend = None
    if fit is not None:
        trend = ("improving" if fit["slope"] > 0 else "regressing") if fit["significant"] else "plateau"
    known = [p for p in points if p["post_pass_rate"] is not None]
    best = max(known, key=lambda p: p["post_pass_rate"]) if known else None  # the first of equals
    last = points[-1]["post_pass_rate"] if points else None
    below = best is not None and last is not None and last < best["post_pass_rate"]
    first_better = next(
        (p["episode"] for p in known if baseline is not None and p["post_pass_rate"] > baseline + IMPROVEMENT_MARGIN),
        None,
    )
    return {
        "episodes": points,
        "pre_pass_rate": baseline,
        "slope": fit,
        "trend": trend,
        "best_episode": best["episode"] if best else None,
        "last_below_best": below,
        "time_to_improvement": first_better,
    }


def verdict_part(learning: dict[str, Any]) -> str | None:
    """The verdict's words on the curve (None with one episode)."""
    fit = learning["slope"]
    if fit is None:
        return None
    n = len(learning["episodes"])
    text = (
        f"learning over {n} episodes: {learning['trend']}, slope {fit['slope']:+.2f}/episode "
        f"[{fit['low']:+.2f}, {fit['high']:+.2f}]"
    )
    if learning["last_below_best"]:
        text += f", last episode below the best (episode {learning['best_episode']})"
    return text


def warnings(learning: dict[str, Any]) -> list[str]:
    if not learning["last_below_best"]:
        return []
    best = learning["episodes"][learning["best_episode"] - 1]
    last = learning["episodes"][-1]
    return [
        f"evolve: the last episode's post pass rate {last['post_pass_rate']:.2f} is below the best, "
        f"{best['post_pass_rate']:.2f} after episode {best['episode']}: later proposals made the stash worse; "
        f"episode {best['episode']}'s evolved stash is the one to keep"
    ]
