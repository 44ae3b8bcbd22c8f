"""Adaptive seeds: which cells an adaptive run needs, its looks, and why it stopped (docs/adaptive.md).

The design is a pure function of the valid samples: the first round (the floor) runs every
task; each later round adds one seed to every task not settled (a task is settled once every
run of both arms so far passed: there is no room left for akm to do better); after each round
the sign e-process on the paired akm − noakm outcomes is read, and the run stops when it reaches
the level its horizon needs (decisive), when it is unlikely to get there within the most seeds
(futile), when the most seeds ran, or when no task is left to deepen. Every process computes the
same plan from the store, so a rerun continues where an interrupted run stopped.

The test: each (task, seed) pair of the two arms is one observation D in {-1, 0, +1}, in the
fixed order (round, task). Under the null that akm changes no task's pass rate, D is
symmetric given everything before it, whichever tasks earlier rounds chose to deepen; the
discordant pairs' signs are then fair coin flips, and a Beta(2, 2) mixture of the bets
prod(1 + lambda * D) is a test martingale. The level it must reach is the one a fair-coin
stream of at most tasks x max seeds discordant pairs reaches with a chance of at most alpha
(report/boundary.py): whenever and however the run stops, its error rate stays at most alpha.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import boundary
from .boundary import ALPHA, log_e_value

METHOD = "sign_e_process"
REFERENCE = (
    "Waudby-Smith & Ramdas (2023), Estimating means of bounded random variables by betting, "
    "JRSS B 86(1); a Beta(2, 2) mixture of constant bets on the paired signs, its level computed "
    "exactly for the run's horizon"
)
STOPS = ("decisive", "futile", "max_seeds", "settled")
# Stop for futility once the chance of becoming decisive within the most seeds, were the
# discordant pairs to go on as they went so far, is below this. It only ever removes a
# rejection, so the error rate is untouched; the cells it saves and the power it costs are
# measured by benchmarks/adaptive_bench.py (docs/adaptive.md).
FUTILITY = 0.05
# The trend the futility chance assumes: the leading arm's share of the discordant pairs so far,
# raised by this many standard errors. An early trend is noisy; taken as it is, it stopped 2% of
# the runs with a +0.2 lift over 40 tasks that would have been decisive (the benchmark's).
OPTIMISM = 0.5
Key = tuple[str, str, int]  # (task id, arm, seed)
# An adaptive run's first round and its most seeds unless the run sets them: with the futility
# stop, a floor of 2 reaches the fixed design's power with fewer cells than 3 (docs/adaptive.md).
# The floor is also the run's reporting floor, so no task of the run is below it.
DEFAULT_FLOOR = 2
DEFAULT_MAX_SEEDS = 10

__all__ = ["ALPHA", "FUTILITY", "Look", "Plan", "block", "headline", "log_e_value", "markdown_lines", "plan"]


@dataclass
class Look:
    """The test read once a round's cells had all run."""

    round: int
    tasks: int  # tasks the round ran
    pairs: int  # paired akm/noakm outcomes so far
    plus: int  # pairs so far akm passed and noakm failed
    minus: int  # the reverse
    e_value: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "tasks": self.tasks,
            "pairs": self.pairs,
            "akm_only": self.plus,
            "noakm_only": self.minus,
            "e_value": _finite(self.e_value),
        }


@dataclass
class Plan:
    """Where an adaptive run stands: the seeds each task needs, and the looks taken."""

    seeds: dict[str, int]  # seeds 1..n each task needs so far
    looks: list[Look] = field(default_factory=list)
    waiting: int | None = None  # the round whose cells have not all run yet
    stop: str | None = None  # one of STOPS once the run is over
    direction: str | None = None  # the arm the decisive test favours
    e_max: float = 1.0  # the largest e-value the stream reached
    level: float = 1 / ALPHA  # the e-value that is decisive for the run's horizon
    horizon: int = 0  # the most paired outcomes the run can take (tasks x max seeds)
    chance: float | None = None  # at a futile stop: the chance of becoming decisive it found

    def needs(self, task: str, seed: int) -> bool | None:
        """Whether seed ``seed`` of a task runs: None while an earlier round has not finished."""
        if self.waiting is not None and seed > self.waiting:
            return None
        return seed <= self.seeds.get(task, 0)

    def cells(self, arms: Sequence[str]) -> list[Key]:
        return [(t, arm, s) for t, n in self.seeds.items() for s in range(1, n + 1) for arm in arms]


@dataclass
class _Tally:
    """Per task: paired outcomes, discordant ones, and pairs where some run failed."""

    paired: dict[str, int]
    discordant: dict[str, int]
    failed: dict[str, int]

    def settled(self, task: str) -> bool:
        return self.paired[task] > 0 and self.failed[task] == 0


def plan(
    tasks: Sequence[str],
    arms: Sequence[str],
    outcomes: Mapping[Key, bool],
    errored: frozenset[Key] | set[Key] = frozenset(),
    *,
    floor: int,
    max_seeds: int,
    alpha: float = ALPHA,
    futility: float = FUTILITY,
) -> Plan:
    """The plan the valid ``outcomes`` (True: pass) imply; ``errored`` cells ended in a harness
    error in this run and count as run (their pair is left out). ``arms`` are every arm whose
    cells a round runs; the test pairs akm with noakm. ``futility`` 0 never stops for futility."""
    horizon = len(tasks) * max_seeds
    level = boundary.log_threshold(horizon, alpha)
    state = Plan(seeds=dict.fromkeys(tasks, 0), level=math.exp(level), horizon=horizon)
    tally = _Tally(*(dict.fromkeys(tasks, 0) for _ in range(3)))
    active = list(tasks)
    plus = minus = pairs = 0
    best = 0.0
    for r in range(1, max_seeds + 1):
        chosen = list(tasks) if r <= floor else active
        if not chosen:
            state.stop = "settled"
            break
        for t in chosen:
            state.seeds[t] = r
        if any((t, a, r) not in outcomes and (t, a, r) not in errored for t in chosen for a in arms):
            state.waiting = r
            break
        for t in chosen:
            mine, theirs = outcomes.get((t, "akm", r)), outcomes.get((t, "noakm", r))
            if mine is None or theirs is None:
                continue  # a harness error on either side: no pair
            pairs += 1
            tally.paired[t] += 1
            tally.discordant[t] += mine != theirs
            tally.failed[t] += not (mine and theirs)
            plus += mine and not theirs
            minus += theirs and not mine
            best = max(best, log_e_value(plus, minus))  # the whole path counts
        state.looks.append(Look(r, len(chosen), pairs, plus, minus, math.exp(log_e_value(plus, minus))))
        if best >= level:
            state.stop, state.direction = "decisive", "akm" if plus > minus else "noakm"
            break
        if r >= floor:
            active = [t for t in chosen if not tally.settled(t)]
        if r == max_seeds:
            state.stop = "max_seeds"
        elif r >= floor and active and futility > 0:
            state.chance = _chance(tally, active, max_seeds - r, plus, minus, horizon, alpha, futility)
            if state.chance < futility:
                state.stop = "futile"
                break
            state.chance = None
    state.e_max = math.exp(best)
    return state


def _chance(
    tally: _Tally, active: list[str], rounds: int, plus: int, minus: int, horizon: int, alpha: float, enough: float
) -> float:
    """The chance of becoming decisive in the rounds left: the tasks still deepened would give
    discordant pairs at their rate so far, each favouring the leading arm at its rate so far."""
    paired = sum(tally.paired[t] for t in active)
    rate = sum(tally.discordant[t] for t in active) / paired if paired else 0.0
    more = round(len(active) * rounds * rate)
    return boundary.chance(plus, minus, more, horizon, alpha, enough, OPTIMISM)


def block(
    state: Plan, *, arms: Sequence[str], floor: int, max_seeds: int, alpha: float = ALPHA, futility: float = FUTILITY
) -> dict[str, Any]:
    """The envelope's ``adaptive`` block (docs/report.md)."""
    last = state.looks[-1] if state.looks else None
    return {
        "design": "adaptive",
        "until": "decisive",
        "method": METHOD,
        "reference": REFERENCE,
        "alpha": alpha,
        "threshold": state.level,
        "horizon_pairs": state.horizon,
        "futility": futility,
        "chance": state.chance,
        "floor": floor,
        "max_seeds": max_seeds,
        "looks": len(state.looks),
        "stopping_reason": state.stop,
        "decisive": state.stop == "decisive",
        "direction": state.direction,
        "e_value": _finite(last.e_value) if last else 1.0,
        "e_value_max": _finite(state.e_max),
        "pairs": last.pairs if last else 0,
        "akm_only": last.plus if last else 0,
        "noakm_only": last.minus if last else 0,
        "cells_used": len(state.cells(arms)),
        "cells_max": len(state.seeds) * len(arms) * max_seeds,
        "seeds_by_task": dict(state.seeds),
        "history": [look.as_dict() for look in state.looks],
    }


def _finite(value: float) -> float:
    return value if math.isfinite(value) else 1e308


STOP_TEXT = {
    "decisive": "decisive",
    "futile": "futile, unlikely to become decisive within the most seeds",
    "max_seeds": "the most seeds ran",
    "settled": "no task left to deepen",
    None: "not finished (interrupted, or cells still to run)",
}


def headline(adaptive: Mapping[str, Any]) -> str:
    """One line: the design, its looks, why it stopped and what the test says."""
    reason = STOP_TEXT.get(adaptive["stopping_reason"], str(adaptive["stopping_reason"]))
    if adaptive.get("chance") is not None:
        reason += f" (chance {adaptive['chance']:.1%})"
    looks = adaptive["looks"]
    text = (
        f"adaptive seeds: {looks} look{'s' if looks != 1 else ''}, stopped: {reason}; "
        f"{adaptive['cells_used']} of at most {adaptive['cells_max']} cells; "
        f"e-value {adaptive['e_value_max']:.3g} (decisive at {adaptive['threshold']:.3g})"
    )
    if adaptive["decisive"]:
        text += f": {adaptive['direction']} ahead"
    return text


def markdown_lines(envelope: Mapping[str, Any]) -> list[str]:
    """The summary's section on an adaptive run; nothing for a fixed design."""
    adaptive = envelope.get("adaptive")
    if not adaptive:
        return []
    lines = ["", "## Adaptive seeds", "", headline(adaptive) + ".", ""]
    lines += [
        f"Design: the first {adaptive['floor']} seeds on every task, then one more seed per round on each task "
        f"where some run failed, up to {adaptive['max_seeds']}; the test is the sign e-process on the paired "
        f"akm − noakm outcomes, decisive at {adaptive['threshold']:.3g} (the level a run of at most "
        f"{adaptive.get('horizon_pairs', '?')} pairs needs for alpha {adaptive['alpha']:g}, whenever it stops), "
        f"futile once the chance of getting there falls below {adaptive.get('futility', 0):.0%} (docs/adaptive.md). "
        "The p-values and intervals above assume a fixed design: under adaptive stopping the e-value decides.",
        "",
        "| look | tasks run | pairs | akm only | noakm only | e-value |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for look in adaptive["history"]:
        lines.append(
            f"| {look['round']} | {look['tasks']} | {look['pairs']} | {look['akm_only']} | "
            f"{look['noakm_only']} | {look['e_value']:.3g} |"
        )
    return lines
