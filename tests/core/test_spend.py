"""Tests for pytest_akmbench.report.spend: totals, coverage and the lift per token and per dollar,
checked against numpy computations written independently of the module, and the envelope, summary
and page showing them."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from pytest_akmbench.report import envelope as report
from pytest_akmbench.report import spend
from pytest_akmbench.report.render import html
from pytest_akmbench.report.render.markdown import render_markdown
from tests.core.test_metrics import make_task, sample
from tests.core.test_report import TS, inp
from tests.support.dom import parse
from tests.support.schemas import problems

FIELDS = ("input", "output", "reasoning", "cache_read", "cache_write")


def random_runs(seed: int, n_tasks: int = 6, seeds: int = 4) -> list[dict[str, Any]]:
    """Runs of two arms with random token splits, some unmeasured, some without a cost, some errors."""
    rng = np.random.default_rng(seed)
    runs = []
    for t in range(n_tasks):
        for arm in ("noakm", "akm"):
            for s in range(1, seeds + 1):
                outcome = str(rng.choice(["pass", "fail", "budget_exceeded", "harness_error"], p=[0.5, 0.3, 0.1, 0.1]))
                r = sample(f"d/t{t}", arm, s, outcome)
                if rng.random() < 0.8:
                    parts = {k: int(rng.integers(0, 3000)) for k in FIELDS}
                    r["tokens"] = {**parts, "total": sum(parts.values())}
                    r["token_measurement"] = "measured"
                if rng.random() < 0.7:
                    r["cost_usd"] = float(rng.uniform(0, 0.05))
                runs.append(r)
    return runs


def np_totals(runs: list[dict[str, Any]]) -> dict[str, Any]:
    measured = [r for r in runs if r["token_measurement"] == "measured"]
    matrix = np.array([[r["tokens"][k] for k in (*FIELDS, "total")] for r in measured]).reshape(-1, 6)
    costs = np.array([r["cost_usd"] for r in runs if r["cost_usd"] is not None])
    return {"measured": len(measured), "sums": matrix.sum(axis=0), "cost": costs.sum(), "costs": len(costs)}


class TestTotals:
    @pytest.mark.parametrize("seed", [1, 2, 3])
    def test_against_numpy(self, seed: int) -> None:
        runs = random_runs(seed)
        for arm in ("noakm", "akm", None):
            mine = [r for r in runs if arm is None or r["arm"] == arm]
            got, want = spend.totals(mine), np_totals(mine)
            assert got["runs"] == len(mine)
            assert got["runs_with_tokens"] == want["measured"] and got["runs_with_cost"] == want["costs"]
            assert [got["tokens"][k] for k in (*FIELDS, "total")] == want["sums"].tolist()
            assert got["cost_usd"] == pytest.approx(want["cost"])
            assert got["token_coverage"] == pytest.approx(want["measured"] / len(mine))
            assert got["tokens_per_run"] == pytest.approx(want["sums"][-1] / want["measured"])
            assert got["cost_per_run"] == pytest.approx(want["cost"] / want["costs"])

    def test_harness_errors_count_in_the_spend(self) -> None:
        """What an errored run spent was spent: it is in the totals (not in the pass rates)."""
        runs = [sample("d/t", "akm", 1, "harness_error", tokens=500), sample("d/t", "akm", 2, "pass", tokens=300)]
        assert spend.totals(runs)["tokens"]["total"] == 800

    def test_unmeasured_is_none_never_zero(self) -> None:
        runs = [sample("d/t", "noakm", s, "pass") for s in (1, 2)]
        got = spend.totals(runs)
        assert got["tokens"] == dict.fromkeys((*FIELDS, "total"))
        assert got["cost_usd"] is None and got["tokens_per_run"] is None and got["cost_per_run"] is None
        assert got["runs_with_tokens"] == 0 and got["token_coverage"] == 0.0
        assert "tokens not measured (2 runs)" in spend.tokens_text(got)
        assert spend.cost_text(got) == "cost not reported"
        assert spend.totals([])["token_coverage"] is None

    def test_a_reported_zero_cost_is_zero(self) -> None:
        """opencode reports $0 for a model it has no price for: that is a figure, not a gap."""
        got = spend.totals([sample("d/t", "noakm", 1, "pass", tokens=100, cost_usd=0.0)])
        assert got["cost_usd"] == 0.0 and got["runs_with_cost"] == 1

    def test_a_field_the_agent_did_not_report_is_none(self) -> None:
        """An agent that reports only a total has no input/output split: None there, not 0."""
        r = sample("d/t", "noakm", 1, "pass", tokens=100)
        r["tokens"] = {"total": 120}
        got = spend.totals([r, sample("d/t", "noakm", 2, "pass", tokens=100)])
        assert got["tokens"]["total"] == 220 and got["tokens"]["input"] == 90


class TestEfficiency:
    def test_hand_computed(self) -> None:
        """Two tasks: akm spends 400 more tokens and $0.02 more per run on average, lift +0.2:
        0.5 per 1k tokens and 10 per dollar."""
        runs = []
        for task, (base, extra) in {"d/a": (1000, 300), "d/b": (2000, 500)}.items():
            for s in (1, 2):
                runs.append(sample(task, "noakm", s, "pass", tokens=base, cost_usd=0.01))
                runs.append(sample(task, "akm", s, "pass", tokens=base + extra, cost_usd=0.03))
        e = spend.efficiency(runs, "akm", "noakm", 0.2)
        assert e["extra_tokens_per_run"] == pytest.approx(400)
        assert e["extra_cost_per_run"] == pytest.approx(0.02)
        assert e["lift_per_1k_tokens"] == pytest.approx(0.5)
        assert e["lift_per_usd"] == pytest.approx(10.0)
        assert e["token_tasks"] == e["cost_tasks"] == 2

    @pytest.mark.parametrize("seed", [4, 5])
    def test_extra_per_run_against_numpy(self, seed: int) -> None:
        """Mean over tasks measured in both arms of the difference of per-task means over valid runs."""
        runs = random_runs(seed)
        diffs = []
        for t in sorted({r["task_id"] for r in runs}):
            means = []
            for arm in ("akm", "noakm"):
                xs = [
                    r["tokens"]["total"]
                    for r in runs
                    if r["task_id"] == t and r["arm"] == arm and r["outcome"] != "harness_error"
                    if r["token_measurement"] == "measured"
                ]
                means.append(np.mean(xs) if xs else None)
            if None not in means:
                diffs.append(means[0] - means[1])
        got, tasks = spend.extra_per_run(runs, "akm", "noakm", "tokens")
        assert tasks == len(diffs) and got == pytest.approx(np.mean(diffs))

    @pytest.mark.parametrize(
        ("lift", "extra", "want"),
        [(0.2, 0.0, None), (0.2, -50.0, None), (None, 100.0, None), (0.2, None, None), (-0.1, 200.0, -0.5)],
    )
    def test_undefined_when_no_extra_spend(self, lift: float | None, extra: float | None, want: float | None) -> None:
        """akm no dearer (extra ≤ 0) or a figure unknown: None; a negative lift stays negative."""
        assert spend.per_unit(lift, extra, 1000.0) == want

    def test_same_extra_tokens_as_the_paired_delta(self) -> None:
        """With every run measured and valid, the extra tokens equal aggregate.delta.tokens_per_run."""
        runs = [r for r in random_runs(6) if r["outcome"] != "harness_error" and r["token_measurement"] == "measured"]
        tasks = [make_task(f"d/t{i}") for i in range(6)]
        env = report.build(inp(tasks, runs, seeds=4), timestamp=TS)
        eff = env["spend"]["efficiency"]["akm_vs_noakm"]
        assert eff["extra_tokens_per_run"] == pytest.approx(env["aggregate"]["delta"]["tokens_per_run"])
        assert eff["lift"] == env["aggregate"]["delta"]["pass_rate"]


class TestShown:
    def envelope(self, cap: dict[str, Any] | None = None) -> dict[str, Any]:
        tasks = [make_task("d/a"), make_task("d/b")]
        runs = [
            sample(t.id, arm, s, "pass" if arm == "akm" or s == 1 else "fail", tokens=1000 + 500 * (arm == "akm"))
            for t in tasks
            for arm in ("noakm", "akm")
            for s in (1, 2)
        ]
        for r in runs:
            r["cost_usd"] = 0.004 if r["arm"] == "akm" else 0.001
        return report.build(inp(tasks, runs, seeds=2, spend_cap=cap), timestamp=TS)

    def test_envelope_markdown_html(self) -> None:
        env = self.envelope()
        assert problems(json.loads(json.dumps(env)), "report") == []
        block = env["spend"]
        assert block["by_arm"]["akm"]["tokens"]["total"] == 4 * 1500
        assert block["run"]["tokens"]["total"] == 4 * 1500 + 4 * 1000
        assert block["run"]["cost_usd"] == pytest.approx(4 * 0.004 + 4 * 0.001)
        eff = block["efficiency"]["akm_vs_noakm"]
        assert eff["lift"] == pytest.approx(0.5) and eff["lift_per_1k_tokens"] == pytest.approx(1.0)
        assert eff["lift_per_usd"] == pytest.approx(0.5 / 0.003)
        md = render_markdown(env)
        assert "## Spend" in md
        assert "| akm   | 4      | 4 of 4" in md and "| 6000    | 0.0160 (4 runs)" in md
        assert "akm over noakm: lift +0.50, +500 tokens and +$0.0030 per run; lift per 1k tokens +1.000" in md
        table = parse(html.render(env)).one("table", id="spend-table")
        for name, t in [*block["by_arm"].items(), ("all", block["run"])]:
            cells = [td.text for td in table.one("tr", data_arm=name).select("td")]
            assert cells[1] == str(t["runs"]) and cells[-2] == str(t["tokens"]["total"])
            assert cells[-1].startswith(f"{t['cost_usd']:.4f}")
        assert "stopped" not in md

    def test_cap_stop_is_said(self) -> None:
        cap = {"kind": "usd", "limit": 0.01, "spent": 0.012, "reached": True, "not_run": 3}
        env = self.envelope(cap)
        line = "stopped: spend cap $0.0100 reached ($0.0120 spent by this run); 3 cells not run"
        assert env["warnings"][0] == line and env["spend"]["cap"] == cap
        assert f"**{line}**" in render_markdown(env)
        assert problems(json.loads(json.dumps(env)), "report") == []
        tokens = {"kind": "tokens", "limit": 5000, "spent": 1200, "reached": False, "not_run": 0}
        assert spend.cap_text(tokens) == "spend cap 5000 tokens: 1200 tokens spent by this run, not reached"
        assert spend.terminal_lines(self.envelope(tokens)["spend"])[-1] == spend.cap_text(tokens)
