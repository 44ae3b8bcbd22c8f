"""Adaptive seeds against a fixed design: cells used, size under the null, power; the barrier's idle time.

Seeded simulations of whole benches through the real code. Each task's noakm pass probability
is drawn from Beta(1/2, 1/2) (many tasks near 0 or 1, as agent benches have; ``--spread u``
draws Uniform(0.05, 0.75) instead), akm's is that plus the lift (capped at 1); every run is an
independent Bernoulli draw.

  fixed     5 seeds per task and arm; the report's paired sign-flip test over tasks
            (report/significance.py, p < 0.05; 2000 random sign vectors above 14 tasks).
  half      the same test with half the fixed design's cells (3 seeds on half the tasks, 2 on
            the others): what a fixed design can do with the adaptive target's budget.
  adaptive  --bench-until decisive --bench-max-seeds 10 at a floor of 2 (the default) and of 3
            seeds: the plan of report/sequential.py over outcomes drawn up front (it reads only
            those it needs), its futility stop at the default chance (``--futility``, 0: off).

Size is the share of null benches that claim a difference; power the share of benches with a
lift that claim akm ahead. Cells are the mean per bench, and the share of the fixed design's.

The barrier: a round's decision waits for the round before, so workers idle while a round's
last cells finish. With cell walls drawn from Uniform(10, 15) s (a cell of the scripted model
through real opencode), each adaptive run's cells are handed out in order to 2 workers, each
holding the cell after the one it runs (as xdist's load scheduling in chunks of 2 does: a
worker starts a test only once it knows the next), and the idle share of worker time is
compared with the same cells and scheduling without barriers.

    python benchmarks/adaptive_bench.py                  # 17 and 40 tasks, lifts 0, 0.1, 0.2; 400 benches each
    python benchmarks/adaptive_bench.py --reps 1000 --tasks 17
    python benchmarks/adaptive_bench.py --futility 0       # without the futility stop
"""

from __future__ import annotations

import argparse
import heapq
import random
import statistics
import sys
import time
from collections import Counter, deque
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_akmbench.report import sequential, significance

ARMS = ("noakm", "akm")
FIXED_SEEDS = 5
MOST = 10
FLOORS = (2, 3)
WORKERS = 2


def draw(rng: random.Random, m: int, lift: float, spread: str) -> dict[tuple[str, str, int], bool]:
    """Every outcome a bench could need: m tasks x 2 arms x MOST seeds."""
    outcomes = {}
    for i in range(m):
        p = rng.betavariate(0.5, 0.5) if spread == "beta" else rng.uniform(0.05, 0.75)
        for s in range(1, MOST + 1):
            outcomes[(f"t{i:02d}", "noakm", s)] = rng.random() < p
            outcomes[(f"t{i:02d}", "akm", s)] = rng.random() < min(1.0, p + lift)
    return outcomes


def fixed(outcomes: dict[tuple[str, str, int], bool], tasks: list[str], half: bool = False) -> tuple[bool, bool]:
    """(claims a difference, claims akm ahead) of the fixed design's first FIXED_SEEDS seeds, or
    with ``half`` of its first 3 seeds on the first half of the tasks and 2 on the others."""
    seeds = [(3 if i < (len(tasks) + 1) // 2 else 2) if half else FIXED_SEEDS for i in range(len(tasks))]
    deltas = [
        Fraction(sum(outcomes[(t, "akm", s)] for s in range(1, n + 1)), n)
        - Fraction(sum(outcomes[(t, "noakm", s)] for s in range(1, n + 1)), n)
        for t, n in zip(tasks, seeds, strict=True)
    ]
    test = significance.sign_flip_test(deltas, resamples=2000)
    claim = test["p_value"] is not None and test["p_value"] < significance.ALPHA
    return claim, claim and sum(deltas) > 0


def idle(rounds: list[int], rng: random.Random) -> tuple[float, float]:
    """Idle share of worker time with a barrier after each round, and without any."""
    items = [(r, rng.uniform(10, 15)) for r, n in enumerate(rounds) for _ in range(n)]
    busy = sum(wall for _, wall in items)
    return 1 - busy / (WORKERS * _makespan(items, True)), 1 - busy / (WORKERS * _makespan(items, False))


def _makespan(items: list[tuple[int, float]], barrier: bool) -> float:
    """xdist's load scheduling in small chunks: the cells are handed out in order, each worker
    holding the cell after the one it runs (an xdist worker starts a test only once it knows
    the next); with the barrier, a cell of round r starts only when round r - 1 has finished."""
    pending = deque(range(len(items)))
    left = Counter(r for r, _ in items)
    queues: list[deque[int]] = [deque() for _ in range(WORKERS)]
    for queue in queues:
        while len(queue) < 2 and pending:
            queue.append(pending.popleft())
    events: list[tuple[float, int, int]] = []
    blocked: dict[int, list[int]] = {}

    def start(w: int, now: float) -> None:
        if not queues[w]:
            return
        r, wall = items[queues[w][0]]
        if barrier and r > 0 and left[r - 1] > 0:
            blocked.setdefault(r - 1, []).append(w)
            return
        while len(queues[w]) < 2 and pending:
            queues[w].append(pending.popleft())
        heapq.heappush(events, (now + wall, w, queues[w][0]))

    for w in range(WORKERS):
        start(w, 0.0)
    end = 0.0
    while events:
        now, w, i = heapq.heappop(events)
        queues[w].popleft()
        end = max(end, now)
        left[items[i][0]] -= 1
        while len(queues[w]) < 2 and pending:
            queues[w].append(pending.popleft())
        start(w, now)
        if left[items[i][0]] == 0:
            for other in blocked.pop(items[i][0], []):
                start(other, now)
    return end


def scenario(m: int, lift: float, reps: int, spread: str, seed: int, futility: float) -> dict[str, float]:
    rng = random.Random(seed)
    walls = random.Random(seed + 1)  # the idle simulation's own draws: the benches stay the same for any design
    tasks = [f"t{i:02d}" for i in range(m)]
    fixed_claims = fixed_right = half_claims = half_right = 0
    stops: Counter[str | None] = Counter()
    adaptive = {f: {"claims": 0, "right": 0, "cells": [], "idle": [], "idle_free": []} for f in FLOORS}
    for _ in range(reps):
        outcomes = draw(rng, m, lift, spread)
        claim, right = fixed(outcomes, tasks)
        fixed_claims += claim
        fixed_right += right
        claim, right = fixed(outcomes, tasks, half=True)
        half_claims += claim
        half_right += right
        for floor in FLOORS:
            p = sequential.plan(tasks, ARMS, outcomes, floor=floor, max_seeds=MOST, futility=futility)
            stops[p.stop] += floor == FLOORS[0]
            a = adaptive[floor]
            a["claims"] += p.stop == "decisive"
            a["right"] += p.direction == "akm"
            a["cells"].append(len(p.cells(ARMS)))
            with_barrier, without = idle([look.tasks * len(ARMS) for look in p.looks], walls)
            a["idle"].append(with_barrier)
            a["idle_free"].append(without)
    fixed_cells = m * len(ARMS) * FIXED_SEEDS
    row = {"fixed_claims": fixed_claims / reps, "fixed_power": fixed_right / reps, "fixed_cells": fixed_cells}
    row |= {"half_claims": half_claims / reps, "half_power": half_right / reps}
    row |= {f"stop_{reason}": n / reps for reason, n in stops.items()}
    for floor, a in adaptive.items():
        cells = statistics.fmean(a["cells"])
        row |= {
            f"a{floor}_claims": a["claims"] / reps,
            f"a{floor}_power": a["right"] / reps,
            f"a{floor}_cells": cells,
            f"a{floor}_share": cells / fixed_cells,
            f"a{floor}_idle": statistics.fmean(a["idle"]),
            f"a{floor}_idle_free": statistics.fmean(a["idle_free"]),
        }
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--tasks", type=int, nargs="*", default=[17, 40])
    parser.add_argument("--lifts", type=float, nargs="*", default=[0.0, 0.1, 0.2])
    parser.add_argument("--spread", choices=("beta", "u"), default="beta")
    parser.add_argument("--futility", type=float, default=sequential.FUTILITY)
    args = parser.parse_args()
    started = time.monotonic()
    print(
        f"{args.reps} benches per row, pass rates {args.spread}, fixed {FIXED_SEEDS} seeds vs adaptive max {MOST}, "
        f"futility below {args.futility:g}"
    )
    head = "| tasks | lift | fixed: claims | fixed: cells | half: claims |"
    rule = "|---:|---:|---:|---:|---:|"
    for f in FLOORS:
        head += f" floor {f}: claims | floor {f}: cells (share) |"
        rule += "---:|---:|"
    print(head + " stops (floor 2): decisive/futile/max/settled | idle (no barrier) | target |")
    print(rule + "---|---:|---|")
    for m in args.tasks:
        for k, lift in enumerate(args.lifts):
            r = scenario(m, lift, args.reps, args.spread, seed=1000 * m + k, futility=args.futility)
            line = f"| {m} | {lift:+.1f} | {_rate(r, 'fixed', lift)} | {r['fixed_cells']} | {_rate(r, 'half', lift)} |"
            for f in FLOORS:
                line += f" {_rate(r, f'a{f}', lift)} | {r[f'a{f}_cells']:.0f} ({r[f'a{f}_share']:.0%}) |"
            stops = "/".join(f"{r.get('stop_' + why, 0):.2f}" for why in ("decisive", "futile", "max_seeds", "settled"))
            line += f" {stops} | {r['a2_idle']:.1%} ({r['a2_idle_free']:.1%}) | {_target(r, lift)} |"
            print(line, flush=True)
    print(f"claims: size under lift 0, else power (akm ahead); target: floor 2's; {time.monotonic() - started:.0f} s")


def _target(row: dict[str, float], lift: float) -> str:
    """The issue's target for the default design: size at most 5%; else at least the fixed
    design's power with at most half its cells."""
    if lift == 0:
        return "met" if row["a2_claims"] <= 0.05 else "size over 5%"
    misses = []
    if row["a2_power"] < row["fixed_power"]:
        misses.append("power")
    if row["a2_share"] > 0.5:
        misses.append("cells")
    return "met" if not misses else "missed: " + ", ".join(misses)


def _rate(row: dict[str, float], prefix: str, lift: float) -> str:
    return f"{row[prefix + ('_claims' if lift == 0 else '_power')]:.3f}"


if __name__ == "__main__":
    main()
