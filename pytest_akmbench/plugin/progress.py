"""Progress of a bench run on the controller: cells done, running and left, and each cell's status.

xdist sends every worker's ``logstart``/``logfinish`` and reports to the controller, so the same
counts hold with and without ``-n``. Under ``-v`` a cell's status line carries its wall time,
tokens and cost and the live count; the terminal summary adds the tokens and
cost of each arm.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

LIVE = "akmbench_live"  # set on a report while the terminal shows it live (not in the short summary)


def describe(sample: dict[str, Any]) -> str:
    """``12.3 s, 4512 tokens, $0.0123`` of one sample (what was measured only)."""
    parts = [f"{(sample.get('wallclock_ms') or 0) / 1000:.1f} s"]
    tokens = sample.get("tokens")
    if isinstance(tokens, dict) and isinstance(tokens.get("total"), int):
        parts.append(f"{tokens['total']} tokens")
    if isinstance(sample.get("cost_usd"), (int, float)):
        parts.append(f"${sample['cost_usd']:.4f}")
    return ", ".join(parts)


def arm_totals(runs: list[dict[str, Any]], arms: list[str]) -> list[str]:
    """One line per arm: the tokens and cost of the report's runs (measured ones only)."""
    lines = []
    for arm in arms:
        mine = [r for r in runs if r.get("arm") == arm]
        if not mine:
            continue
        tokens = [r["tokens"]["total"] for r in mine if isinstance(r.get("tokens"), dict) and "total" in r["tokens"]]
        costs = [r["cost_usd"] for r in mine if isinstance(r.get("cost_usd"), (int, float))]
        spent = f"{sum(tokens)} tokens over {len(tokens)} of {len(mine)} runs" if tokens else "tokens not measured"
        lines.append(f"{arm}: {spent}, " + (f"cost ${sum(costs):.4f}" if costs else "cost not reported"))
    return lines


class Progress:
    """Counts the cells of this run as their reports reach the controller."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.total = 0
        self.running: set[str] = set()
        self.done = 0

    def set_total(self, total: int) -> None:
        self.total = max(self.total, total)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.set_total(len(session.items))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Iterator[None]:
        setattr(report, LIVE, True)
        try:
            return (yield)
        finally:
            setattr(report, LIVE, False)

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self.running.add(nodeid)

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        if nodeid in self.running:
            self.running.discard(nodeid)
            self.done += 1

    def count(self, finishing: str | None = None) -> str:
        """``5 done, 2 running, 9 left``; ``finishing`` counts as done (its status is being shown)."""
        done = self.done + (1 if finishing in self.running else 0)
        running = len(self.running) - (1 if finishing in self.running else 0)
        return f"{done} done, {running} running, {max(0, self.total - done - running)} left"
