"""The evolve track's learning curve: the post pass rate after each episode, the slope across
episodes with its interval, and what the curve says (docs/report.md, "The evolve envelope").

Each episode's rate is the macro pass rate over the eval tasks (the mean of per-task rates)
with the report's cluster interval (tasks as clusters). The slope is the least-squares slope
of those rates against the episode number, over the tasks with valid runs in every episode.
Every task of an episode runs on that episode's one evolved stash, so the episodes, not the
tasks, are the independent units of a trend: a stash that happens to be a little better or
worse moves every task of its episode together, and a test over tasks would read that shock
as a trend. So the slope is tested across episodes: ordinary least squares on the E episode
means, t with E − 2 degrees of freedom (docs/tracks.md, "Episodes"). A trend is called only
when that interval excludes 0: ``improving`` or ``regressing``; otherwise ``plateau`` (no slope
the data can tell from 0; with 2 episodes there is no test, and every slope is a plateau).
Pure: no pytest.
"""

from __future__ import annotations

import math
from statistics import fmean
from typing import Any

from ...report import lift
from ...stats import intervals

IMPROVEMENT_MARGIN = 0.05  # the reference's time_to_improvement: first episode above pre + this

Outcomes = dict[str, list[bool]]  # task -> valid pass indicators of its runs


def _point(episode: int, runs: Outcomes, tasks: list[str]) -> dict[str, Any]:
    rates = [fmean(runs[t]) for t in tasks if runs.get(t)]
    total = sum(len(runs.get(t) or []) for t in tasks)
    interval = intervals.task_rate_interval(rates)  # the per-arm interval: holds on skewed task populations
    return {
        "episode": episode,
        "post_pass_rate": fmean(rates) if rates else None,
        "low": interval[0] if interval else None,
        "high": interval[1] if interval else None,
        "tasks": len(rates),
        "runs": total,
    }


def episode_trend(means: list[float]) -> tuple[float, float | None, float | None, float | None]:
    """Least-squares slope of the episode means against episodes 1..E, its 95% interval and
    two-sided p from t with E − 2 df (interval and p None below 3 episodes)."""
    n = len(means)
    xs = range(1, n + 1)
    x_bar, y_bar = (n + 1) / 2, fmean(means)
    sxx = math.fsum((x - x_bar) ** 2 for x in xs)
    value = math.fsum((x - x_bar) * (y - y_bar) for x, y in zip(xs, means)) / sxx
    if n < 3:
        return value, None, None, None
    df = n - 2
    se = math.sqrt(math.fsum((y - y_bar - value * (x - x_bar)) ** 2 for x, y in zip(xs, means)) / df / sxx)
    half = intervals.student_t_quantile(1 - lift.ALPHA / 2, df) * se
    if se <= 1e-12:  # the means lie on a line: no noise left to test against
        return value, value, value, 0.0 if abs(value) > 1e-12 else 1.0
    return value, value - half, value + half, 2 * (1 - intervals.student_t_cdf(abs(value) / se, df))


def slope(episodes: list[Outcomes], tasks: list[str]) -> dict[str, Any] | None:
    """The slope across episodes over the tasks with valid runs in every episode, its 95%
    interval and p-value from the episode means (None below two episodes or without such a
    task; no interval or p with two episodes, which leave no degree of freedom)."""
    kept = [t for t in tasks if all(runs.get(t) for runs in episodes)]
    if len(episodes) < 2 or not kept:
        return None
    value, low, high, p = episode_trend([fmean(fmean(runs[t]) for t in kept) for runs in episodes])
    return {
        "slope": value,
        "low": low,
        "high": high,
        "p_value": p,
        "tasks": len(kept),
        "episodes": len(episodes),
        "significant": p is not None
        and low is not None
        and high is not None
        and p < lift.ALPHA
        and not low <= 0 <= high,
        "method": "least squares over the episode means, t with episodes - 2 df",
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
    text = f"learning over {n} episodes: {learning['trend']}, slope {fit['slope']:+.2f}/episode " + (
        "(no test: a trend across episodes needs 3 or more)"
        if fit["low"] is None
        else f"[{fit['low']:+.2f}, {fit['high']:+.2f}] across episodes"
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
