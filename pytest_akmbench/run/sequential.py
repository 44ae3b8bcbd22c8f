"""Adaptive seeds: which cells an adaptive run needs, its looks, and why it stopped (docs/adaptive.md).

The design is a pure function of the valid samples. Round r runs seed r of every task, so every
task has run the same seeds at every look and no outcome decides which task runs more: the
deepening cannot follow the direction of an effect. From round ``floor`` on, each round ends
with a look: a group-sequential sign test on the discordant akm/noakm pairs so far
(stats/boundary.py) decides, spending alpha with the share of the rounds run. The run stops
when it rejects (decisive), when every run so far passed (settled), when rejecting at a later
look has become unlikely at the trend so far (futile), or after round ``max_seeds``: never more
cells than a fixed run of ``max_seeds`` seeds. Every process computes the same plan from the
store, so a rerun continues where an interrupted run stopped.

Under the sharp null (akm changes no task's pass rate) the signs of the discordant pairs are
fair coins given which pairs were discordant, so the test's error rate is at most alpha
whenever and however the run stops. Under a null where akm helps some tasks and hurts others
by as much on average, every task weighs the same at every look, so the sum of the signs is
centred on 0 and its spread is at most the sign test's (benchmarks/adaptive_bench.py measures
the size there). The lift over seeds 1..floor of every task is unbiased whatever the stop; the
lift over all the cells used is not (a run stops early when its lift so far is large).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..report.envelope_types import AdaptiveBlock
from ..report.render.adaptive import STOP_TEXT
from ..stats import boundary
from ..stats.boundary import ALPHA

METHOD = "sign_group_sequential"
REFERENCE = (
    "Lan & DeMets (1983), Discrete sequential boundaries for clinical trials, Biometrika 70(3); "
    "an exact two-sided sign test on the discordant pairs at each look, O'Brien-Fleming-like spending"
)
STOPS = ("decisive", "futile", "max_seeds", "settled")
# Stop for futility once the conditional power (the chance of rejecting at a later look, were
# the discordant pairs to go on as they went so far) is below this. It only ever removes a
# rejection, so the error rate is untouched; the cells it saves and the power it costs are
# measured by benchmarks/adaptive_bench.py (docs/adaptive.md): at 5% the runs with a lift used
# 75.3% of the fixed design's cells on average, at 10% 72.8%, for the same power within 0.01.
FUTILITY = 0.10
# The trend the conditional power assumes: the leading arm's share of the discordant pairs so
# far, raised by this many standard errors (an early trend is noisy; taken as it is, the rule
# cost 0.03 of power at 40 tasks and +0.1 in the benchmark).
OPTIMISM = 1.0
Key = tuple[str, str, int]  # (task id, arm, seed)
# An adaptive run's first look and its most seeds unless the run sets them: at most 5 seeds,
# the fixed design the benchmark compares with; the floor is also the run's reporting floor.
DEFAULT_FLOOR = 2
DEFAULT_MAX_SEEDS = 5

__all__ = ["ALPHA", "FUTILITY", "STOP_TEXT", "Look", "Plan", "block", "plan"]


@dataclass
class Look:
    """The test read once a round's cells had all run."""

    round: int
    tasks: int  # tasks the round ran
    pairs: int  # paired akm/noakm outcomes so far
    plus: int  # pairs so far akm passed and noakm failed
    minus: int  # the reverse
    bound: int  # the lead |plus - minus| that rejects at this look (pairs + 1: none can)
    spent: float  # the alpha the looks so far may spend

    def as_dict(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "tasks": self.tasks,
            "pairs": self.pairs,
            "akm_only": self.plus,
            "noakm_only": self.minus,
            "lead_needed": self.bound,
            "alpha_spent": round(self.spent, 6),
        }


@dataclass
class Plan:
    """Where an adaptive run stands: the seeds each task needs, and the looks taken."""

    seeds: dict[str, int]  # seeds 1..n each task needs so far
    looks: list[Look] = field(default_factory=list)
    waiting: int | None = None  # the round whose cells have not all run yet
    stop: str | None = None  # one of STOPS once the run is over
    direction: str | None = None  # the arm the decisive test favours
    power: float | None = None  # at a futile stop: the conditional power it found
    floor_lift: float | None = None  # mean over tasks of akm - noakm over seeds 1..floor
    floor_tasks: int = 0  # tasks with a valid pair in the floor rounds

    def needs(self, task: str, seed: int) -> bool | None:
        """Whether seed ``seed`` of a task runs: None while an earlier round has not finished."""
        if self.waiting is not None and seed > self.waiting:
            return None
        return seed <= self.seeds.get(task, 0)

    def cells(self, arms: Sequence[str]) -> list[Key]:
        return [(t, arm, s) for t, n in self.seeds.items() for s in range(1, n + 1) for arm in arms]


@dataclass
class _Tally:
    """The pairs so far: all of them, the discordant ones each way, those where some run failed."""

    pairs: int = 0
    plus: int = 0
    minus: int = 0
    failed: int = 0
    sizes: list[int] = field(default_factory=list)  # discordant pairs at each look
    targets: list[float] = field(default_factory=list)  # alpha spent by each look


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
    state = Plan(seeds=dict.fromkeys(tasks, 0))
    tally = _Tally()
    for r in range(1, max_seeds + 1):
        for t in tasks:
            state.seeds[t] = r
        if any((t, a, r) not in outcomes and (t, a, r) not in errored for t in tasks for a in arms):
            state.waiting = r
            break
        for t in tasks:
            _count(tally, outcomes.get((t, "akm", r)), outcomes.get((t, "noakm", r)))
        if r == floor:
            state.floor_lift, state.floor_tasks = _floor_lift(tasks, outcomes, floor)
        if r < floor:
            continue
        state.stop = _look(state, tally, r, len(tasks), max_seeds, alpha, futility)
        if state.stop:
            break
    return state


def _count(tally: _Tally, mine: bool | None, theirs: bool | None) -> None:
    if mine is None or theirs is None:
        return  # a harness error on either side: no pair
    tally.pairs += 1
    tally.plus += mine and not theirs
    tally.minus += theirs and not mine
    tally.failed += not (mine and theirs)


def _look(state: Plan, tally: _Tally, r: int, m: int, most: int, alpha: float, futility: float) -> str | None:
    """Read the test after round ``r``; the reason to stop, or None to run the next round."""
    tally.sizes.append(tally.plus + tally.minus)
    tally.targets.append(boundary.spent(r / most, alpha))
    bars, _ = boundary.bounds(tuple(tally.sizes), tuple(tally.targets))
    state.looks.append(Look(r, m, tally.pairs, tally.plus, tally.minus, bars[-1], tally.targets[-1]))
    if abs(tally.plus - tally.minus) >= bars[-1]:
        state.direction = "akm" if tally.plus > tally.minus else "noakm"
        return "decisive"
    if r == most:
        return "max_seeds"
    if tally.pairs and not tally.failed:
        return "settled"
    if futility > 0:
        state.power = _conditional_power(tally, r, m, most, alpha)
        if state.power < futility:
            return "futile"
        state.power = None
    return None


def _conditional_power(tally: _Tally, r: int, m: int, most: int, alpha: float) -> float:
    """The chance of rejecting at a later look: the rounds left give discordant pairs at the rate
    so far, each favouring the leading arm at its rate so far raised by OPTIMISM standard errors."""
    n = tally.plus + tally.minus
    if n == 0:
        return 0.0
    rate = n / tally.pairs
    later = range(r + 1, most + 1)
    sizes = (*tally.sizes, *(n + round(rate * m * (k - r)) for k in later))
    targets = (*tally.targets, *(boundary.spent(k / most, alpha) for k in later))
    bars, _ = boundary.bounds(sizes, targets)
    lead = max(tally.plus, tally.minus)
    theta = min(1.0, lead / n + OPTIMISM * math.sqrt(lead * (n - lead) / n**3))
    future = list(zip(sizes[len(tally.sizes) :], bars[len(tally.sizes) :], strict=True))
    return boundary.conditional_power(lead, n - lead, future, theta)


def _floor_lift(tasks: Sequence[str], outcomes: Mapping[Key, bool], floor: int) -> tuple[float | None, int]:
    """Mean over tasks of akm - noakm over the valid pairs of seeds 1..floor: every task runs those
    seeds whatever the data, so this estimate is unbiased however the run stops."""
    per_task = []
    for t in tasks:
        pairs = [(outcomes.get((t, "akm", s)), outcomes.get((t, "noakm", s))) for s in range(1, floor + 1)]
        diffs = [int(a) - int(b) for a, b in pairs if a is not None and b is not None]
        if diffs:
            per_task.append(sum(diffs) / len(diffs))
    return (sum(per_task) / len(per_task) if per_task else None), len(per_task)


def block(
    state: Plan, *, arms: Sequence[str], floor: int, max_seeds: int, alpha: float = ALPHA, futility: float = FUTILITY
) -> AdaptiveBlock:
    """The envelope's ``adaptive`` block (docs/report.md)."""
    last = state.looks[-1] if state.looks else None
    return {
        "design": "adaptive",
        "until": "decisive",
        "method": METHOD,
        "reference": REFERENCE,
        "alpha": alpha,
        "spending": "obrien_fleming",
        "futility": futility,
        "conditional_power": state.power,
        "floor": floor,
        "max_seeds": max_seeds,
        "looks": len(state.looks),
        "stopping_reason": state.stop,
        "decisive": state.stop == "decisive",
        "direction": state.direction,
        "lead_needed": last.bound if last else None,
        "alpha_spent": round(last.spent, 6) if last else 0.0,
        "pairs": last.pairs if last else 0,
        "akm_only": last.plus if last else 0,
        "noakm_only": last.minus if last else 0,
        "floor_lift": state.floor_lift,
        "floor_lift_tasks": state.floor_tasks,
        "cells_used": len(state.cells(arms)),
        "cells_max": len(state.seeds) * len(arms) * max_seeds,
        "seeds_by_task": dict(state.seeds),
        "history": [look.as_dict() for look in state.looks],
    }
