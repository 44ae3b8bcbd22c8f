"""Progress of a bench run on the controller: cells done, running and left, and each cell's status.

xdist sends every worker's ``logstart``/``logfinish`` and reports to the controller, so the same
counts hold with and without ``-n``. Under ``-v`` each cell gets a status line of its own after
pytest's (whose ``PASSED <node id>`` stays as tools parse it): outcome, wall time, tokens, cost
and the live count. The terminal summary adds the tokens and cost of each arm.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest


def describe(sample: dict[str, Any]) -> str:
    """``12.3 s, 4512 tokens, $0.0123`` of one sample (what was measured only)."""
    parts = [f"{(sample.get('wallclock_ms') or 0) / 1000:.1f} s"]
    tokens = sample.get("tokens")
    if isinstance(tokens, dict) and isinstance(tokens.get("total"), int):
        parts.append(f"{tokens['total']} tokens")
    if isinstance(sample.get("cost_usd"), (int, float)):
        parts.append(f"${sample['cost_usd']:.4f}")
    return ", ".join(parts)


def arm_totals(runs: Sequence[Mapping[str, Any]], arms: list[str]) -> list[str]:
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

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Under -v, after the terminal's own word for a cell, one status line of its sample."""
        sample = getattr(report, "akmbench_sample", None)
        if report.when != "teardown" or sample is None or self.config.get_verbosity() <= 0:
            return
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            mask = (sample.get("fingerprint") or {}).get("mask")
            name = f"{sample['task_id']} {sample['arm']}" + (f"-mask[{mask}]" if mask else "") + f"-s{sample['seed']}"
            stored = " (from store)" if sample.get("from_store") else ""
            reporter.write_line(
                f"  cell {name}: {sample['outcome']}{stored}, {describe(sample)} [{self.count(report.nodeid)}]"
            )

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
