"""Simulated benches for the statistics tests: seeded, built from the real per-task metrics.

Each task has a true pass probability; every run is an independent Bernoulli draw. Null
benches give both sides the same probabilities; alternatives shift one side.
"""

from __future__ import annotations

import random
from typing import Any

from pytest_akmbench.report import lift, metrics
from tests.core.test_metrics import sample


def task_rates(rng: random.Random, m: int, dist: str) -> list[float]:
    """True pass probabilities of m tasks: ``u`` Uniform(0.05, 0.75) (room for +0.2), ``beta``
    Beta(0.5, 0.5) (many tasks near 0 or 1, as agent benches have), ``high`` Beta(4, 1)."""
    if dist == "u":
        return [rng.uniform(0.05, 0.75) for _ in range(m)]
    if dist == "beta":
        return [rng.betavariate(0.5, 0.5) for _ in range(m)]
    if dist == "high":
        return [rng.betavariate(4, 1) for _ in range(m)]
    raise ValueError(dist)


def runs(rng: random.Random, rates: list[float], n: int) -> list[list[bool]]:
    return [[rng.random() < min(1.0, p) for _ in range(n)] for p in rates]


def rows(arm: str, outcomes: list[list[bool]], errors: list[int] | None = None) -> list[dict[str, Any] | None]:
    """Per-task metric rows (metrics.per_task) of ``outcomes``, plus ``errors[i]`` harness errors."""
    out = []
    errors = errors or [0] * len(outcomes)
    for i, o in enumerate(outcomes):
        samples = [sample(f"d/t{i:03d}", arm, s + 1, "pass" if ok else "fail") for s, ok in enumerate(o)]
        samples += [sample(f"d/t{i:03d}", arm, len(o) + e + 1, "harness_error") for e in range(errors[i])]
        out.append(metrics.per_task(samples, seeds=len(samples)))
    return out


def paired(a: list[list[bool]], b: list[list[bool]], resamples: int = 2000) -> dict[str, Any]:
    """The report's akm − noakm comparison of two outcome tables (Holm family of one)."""
    block = lift.compare_arms(("akm", "noakm"), rows("akm", a), rows("noakm", b), a, b, resamples=resamples)
    lift.adjust([block])
    return block


def envelope(arms: dict[str, list[list[bool]]], seeds: int) -> dict[str, Any]:
    """The part of a report envelope that compare and the gates read, from the real metrics."""
    per_arm = {arm: rows(arm, o) for arm, o in arms.items()}
    m = len(next(iter(arms.values())))
    return {
        "schemaVersion": 1,
        "track": "utility",
        "agent": {"model": "sim/model"},
        "corpus": {"seedsPerArm": seeds, "taskCorpusHash": "h", "fixtureContentHash": "f"},
        "aggregate": {arm: metrics.aggregate(r) for arm, r in per_arm.items()},
        "tasks": [{"id": f"d/t{i:03d}", **{arm: per_arm[arm][i] for arm in arms}} for i in range(m)],
    }
