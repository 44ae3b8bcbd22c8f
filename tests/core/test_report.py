"""Tests for pytest_akmbench.report.envelope: the envelope and the markdown summary."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from pytest_akmbench.report import envelope as report
from pytest_akmbench.report import lift, metrics
from pytest_akmbench.report.render import files as report_files
from pytest_akmbench.report.render.markdown import render_markdown
from pytest_akmbench.stats import significance
from tests.core.test_metrics import Z, make_task, sample, traj, wilson

TS = "2026-01-01T00:00:00.000Z"
REFERENCE_KEYS = [
    "schemaVersion",
    "track",
    "branch",
    "commit",
    "timestamp",
    "agent",
    "corpus",
    "aggregate",
    "trajectory",
    "failure_modes",
    "token_measurement",
    "tasks",
    "negative_transfer_count",
    "negative_transfer_severity",
    "top_regressed_tasks",
    "domain_level_deltas",
    "asset_regression_candidates",
    "corpus_coverage",
    "warnings",
    "searchBridge",
    "runs",
    "baseline_by_task_id",
    "perAsset",
    "akm_overhead",
]


def inp(
    tasks: list[Any], samples: list[dict[str, Any]], arms: tuple[str, ...] = ("noakm", "akm"), **kw: Any
) -> report.ReportInput:
    return report.ReportInput(
        tasks=tasks,
        arms=arms,
        seeds=kw.pop("seeds", 3),
        slice="all",
        stashes_root=Path("/nonexistent"),
        samples=samples,
        model="local/m",
        agent="opencode",
        agent_version="1.18.33",
        **kw,
    )


def lift_corpus(n_tasks: int = 10) -> tuple[list[Any], list[dict[str, Any]]]:
    """akm passes every task 3/3; noakm passes only the first two tasks."""
    tasks = [
        make_task(
            f"d{i % 2}/t{i:02d}",
            gold_ref="skill:gold",
            memory_ability="procedural_lookup" if i < 4 else None,
            task_family="fam-a" if i % 2 else "fam-b",
        )
        for i in range(n_tasks)
    ]
    samples = []
    for i, t in enumerate(tasks):
        for seed in (1, 2, 3):
            samples.append(
                sample(
                    t.id,
                    "akm",
                    seed,
                    "pass",
                    tokens=1000,
                    trajectory=traj(searches=[1], shown=["skill:gold"], feedback="positive"),
                )
            )
            samples.append(sample(t.id, "noakm", seed, "pass" if i < 2 else "fail", tokens=800))
    return tasks, samples


class TestEnvelope:
    def test_reference_keys_in_order(self) -> None:
        """Every reference key we fill appears, in the reference's order; additions follow."""
        tasks, samples = lift_corpus()
        env = report.build(inp(tasks, samples, baseline={"d0/t00": 0.5}), timestamp=TS)
        keys = [k for k in env if k in REFERENCE_KEYS]
        assert keys == REFERENCE_KEYS
        assert "workflow" not in env
        assert list(env)[list(env).index("akm_overhead") :] == [
            "akm_overhead",
            "flaky_tasks",
            "floor_coverage",
            "provenance",
            "soundness",
            "verdict",
        ]
        assert list(env).index("complete") == 5
        json.dumps(env)  # plain builtins only

    def test_lift_statistics(self) -> None:
        """akm − noakm = 0.8 over 10 tasks, p = 2/2^8, significant; Wilson per task."""
        tasks, samples = lift_corpus()
        env = report.build(inp(tasks, samples), timestamp=TS)
        agg = env["aggregate"]
        assert agg["akm"]["pass_rate"] == 1.0 and agg["noakm"]["pass_rate"] == pytest.approx(0.2)
        assert agg["delta"]["pass_rate"] == pytest.approx(0.8)
        paired = agg["delta"]["paired"]
        # 8 tasks at +1, 2 at 0: the sign-flip test reaches |sum| >= 8 only with all eight signs equal: p = 2/2^8.
        assert paired["p_value"] == 2 / 2**8 and paired["significant"] is True and paired["tasks"] == 10
        assert paired["p_value_holm"] == paired["p_value"] and paired["holm_family"] == 1
        assert paired["low"] > 0 and paired["high"] == 1.0
        assert paired["diagnostics"]["sign_test_p"] == 2 / 2**8
        t0 = env["tasks"][0]
        assert t0["akm"]["pass_rate_ci"]["low"] == pytest.approx(wilson(3, 3)[0])
        assert env["verdict"].startswith("akm lifts pass rate by +0.80 [")
        assert env["verdict"].endswith(
            "(paired permutation p=0.0078), 10 paired tasks; valid runs akm 30/30, noakm 30/30"
        )
        assert agg["akm"]["pass_at_1"] == 1.0 and agg["noakm"]["pass_at_1"] == pytest.approx(0.2)

    def test_arm_not_run_is_null(self) -> None:
        """Only akm ran: noakm and delta are null everywhere, never 0, never in deltas."""
        tasks, samples = lift_corpus(3)
        env = report.build(inp(tasks, [s for s in samples if s["arm"] == "akm"], arms=("akm",)), timestamp=TS)
        assert env["aggregate"]["noakm"] is None and env["aggregate"]["delta"] is None
        assert all(t["noakm"] is None and t["delta"] is None for t in env["tasks"])
        assert env["negative_transfer_count"] == 0
        assert all(r["pass_rate_noakm"] is None and r["pass_rate_delta"] is None for r in env["domain_level_deltas"])
        assert env["verdict"].startswith("only one arm ran (akm): pass rate 1.00 [")

    def test_harness_errors_and_budget(self) -> None:
        """harness_error leaves the denominator, budget_exceeded stays; both counted per task."""
        task = make_task("a/t")
        samples = [
            sample("a/t", "akm", 1, "pass"),
            sample("a/t", "akm", 2, "harness_error"),
            sample("a/t", "akm", 3, "budget_exceeded", budget_tag="hung"),
        ]
        env = report.build(inp([task], samples, arms=("akm",)), timestamp=TS)
        row = env["tasks"][0]["akm"]
        assert row["pass_rate"] == 0.5 and row["harness_error_count"] == 1 and row["budget_exceeded_count"] == 1
        assert env["failure_modes"]["by_label"] == {"hung": 1}
        assert any("1 of 3 runs ended in harness_error" in w for w in env["warnings"])

    def test_floor_coverage(self) -> None:
        """Cells: covered (3 valid), partial (2 valid + 1 error), missing (only errors), missing (no run)."""
        tasks = [make_task(f"a/t{i}") for i in range(4)]
        samples = [sample("a/t0", "akm", s, "pass") for s in (1, 2, 3)]
        samples += [
            sample("a/t1", "akm", 1, "pass"),
            sample("a/t1", "akm", 2, "fail"),
            sample("a/t1", "akm", 3, "harness_error"),
        ]
        samples += [sample("a/t2", "akm", 1, "harness_error")]
        env = report.build(inp(tasks, samples, arms=("akm",), floor=3), timestamp=TS)
        fc = env["floor_coverage"]
        assert fc["by_arm"]["akm"] == {"cells": 4, "covered": 1, "partial": 1, "missing": 2}
        assert [(n["task_id"], n["status"], n["samples_needed"]) for n in fc["needs_deepening"]] == [
            ("a/t1", "partial", 1),
            ("a/t2", "missing", 3),
            ("a/t3", "missing", 3),
        ]

    def test_flaky_tasks(self) -> None:
        """A task that both passes and fails with stdev > 0.2 is listed."""
        samples = [sample("a/t", "akm", 1, "pass"), sample("a/t", "akm", 2, "fail"), sample("a/t", "akm", 3, "pass")]
        env = report.build(inp([make_task("a/t")], samples, arms=("akm",)), timestamp=TS)
        assert env["flaky_tasks"] == [
            {
                "task_id": "a/t",
                "arm": "akm",
                "pass_rate": 2 / 3,
                "passes": 2,
                "valid_count": 3,
                "pass_rate_stdev": pytest.approx(3**-0.5),
            }
        ]

    def test_negative_transfer_and_assets(self) -> None:
        """noakm 5/5 vs akm 0/5 on one task: regressed beyond noise (one-sided Fisher p = 1/252),
        severity 1, its loaded asset is a candidate."""
        task = make_task("x/t", gold_ref="skill:gold")
        samples = [sample("x/t", "noakm", s, "pass") for s in range(1, 6)]
        samples += [
            sample("x/t", "akm", s, "fail", trajectory=traj(searches=[4], shown=["skill:bad"])) for s in range(1, 6)
        ]
        env = report.build(inp([task], samples, seeds=5), timestamp=TS)
        assert env["negative_transfer_count"] == 1 and env["negative_transfer_severity"] == 1.0
        assert env["top_regressed_tasks"][0]["task_id"] == "x/t"
        assert env["asset_regression_candidates"] == [
            {"asset_ref": "skill:bad", "regressed_task_count": 1, "regressed_task_ids": ["x/t"], "total_load_count": 5}
        ]
        assert env["failure_modes"] == {"by_label": {"loaded_wrong": 5}, "by_task": {"x/t": {"loaded_wrong": 5}}}
        assert env["domain_level_deltas"][0]["regression_count"] == 1

    def test_transfer_by_domain_and_family(self) -> None:
        """Task x/a ties (both arms pass every run), x/b regresses (akm fails, noakm passes, 5 seeds:
        beyond noise), both in family f. A tie is no negative transfer; the domain's and the
        family's rows give akm − noakm for pass rate, tokens per pass and time."""
        tasks = [make_task("x/a", task_family="f"), make_task("x/b", task_family="f")]
        seeds = range(1, 6)
        samples = [sample("x/a", "akm", s, "pass", tokens=1000, wallclock_ms=2000) for s in seeds]
        samples += [sample("x/b", "akm", s, "fail", tokens=900, wallclock_ms=2000) for s in seeds]
        samples += [
            sample(t, "noakm", s, "pass", tokens=1500, wallclock_ms=3000) for t in ("x/a", "x/b") for s in seeds
        ]
        env = report.build(inp(tasks, samples, seeds=5), timestamp=TS)
        assert env["negative_transfer_count"] == 1 and env["top_regressed_tasks"][0]["task_id"] == "x/b"
        (domain,) = env["domain_level_deltas"]
        assert (domain["pass_rate_akm"], domain["pass_rate_noakm"], domain["pass_rate_delta"]) == (0.5, 1.0, -0.5)
        assert (domain["tokens_per_pass_delta"], domain["wallclock_ms_delta"]) == (-500.0, -1000.0)
        (family,) = env["corpus_coverage"]["by_task_family"]
        assert (family["category"], family["pass_rate_delta"], family["negative_transfer_count"]) == ("f", -0.5, 1)

    def test_corpus_coverage_camel_case(self) -> None:
        """coverage keeps camelCase inner keys; rows per tag value."""
        tasks, samples = lift_corpus()
        cc = report.build(inp(tasks, samples), timestamp=TS)["corpus_coverage"]
        assert cc["coverage"]["totalTasks"] == 10
        assert cc["coverage"]["memoryAbilityCounts"]["procedural_lookup"] == 4
        assert cc["coverage"]["memoryAbilityCounts"]["untagged"] == 6
        assert cc["coverage"]["taskFamilyCounts"] == {"fam-b": 5, "fam-a": 5}
        assert [r["category"] for r in cc["by_task_family"]] == ["fam-a", "fam-b"]
        assert cc["by_memory_ability"][0]["workflow_compliance"] is None

    def test_trajectory_and_runs(self) -> None:
        """trajectory.akm comes from akm runs; runs[] rows carry trajectory, assets and failure mode."""
        tasks, samples = lift_corpus(2)
        env = report.build(inp(tasks, samples), timestamp=TS)
        t = env["trajectory"]["akm"]
        assert t["correct_asset_loaded"] == 1.0 and t["feedback_recorded"] == 1.0 and t["counts"]["runs"] == 6
        akm_row = next(r for r in env["runs"] if r["arm"] == "akm")
        assert akm_row["trajectory"]["correct_asset_loaded"] is True and akm_row["assets_loaded"] == ["skill:gold"]
        noakm_row = next(r for r in env["runs"] if r["arm"] == "noakm")
        assert noakm_row["trajectory"]["correct_asset_loaded"] is None and noakm_row["assets_loaded"] is None

    def test_samples_without_trajectory(self) -> None:
        """Oracle-style samples: trajectory figures are null, a warning says why."""
        task = make_task("a/t", gold_ref="skill:gold")
        env = report.build(
            inp([task], [sample("a/t", "akm", s, "pass") for s in (1, 2, 3)], arms=("akm",)), timestamp=TS
        )
        assert env["trajectory"]["akm"]["correct_asset_loaded"] is None
        assert env["searchBridge"]["runs_observed"] == 0 and env["perAsset"]["rows"] == []
        assert env["akm_overhead"]["aggregate"]["mean_search_count"] is None
        assert any(w.startswith("akm trajectory not observed for 3 of 3") for w in env["warnings"])

    def test_token_measurement(self) -> None:
        """coverage counts measured runs only."""
        task = make_task("a/t")
        samples = [sample("a/t", "akm", 1, "pass", tokens=10), sample("a/t", "akm", 2, "pass")]
        env = report.build(inp([task], samples, arms=("akm",)), timestamp=TS)
        assert env["token_measurement"]["coverage"] == 0.5 and env["token_measurement"]["reliable"] is False
        assert env["aggregate"]["akm"]["tokens_per_pass"] == 10

    def test_synthetic_arm(self) -> None:
        """With the synthetic arm: its aggregate, the lift and a paired comparison."""
        task = make_task("a/t")
        samples = [
            sample("a/t", "akm", 1, "pass"),
            sample("a/t", "synthetic", 1, "fail"),
            sample("a/t", "noakm", 1, "fail"),
        ]
        env = report.build(inp([task], samples, arms=("noakm", "akm", "synthetic"), seeds=1), timestamp=TS)
        assert env["aggregate"]["akm_over_synthetic_lift"] == 1.0
        assert env["aggregate"]["akm_over_synthetic_paired"]["tasks"] == 1
        assert "synthetic" in env["tasks"][0]

    def test_provenance(self) -> None:
        """Versions passed in and fingerprints seen."""
        tasks, samples = lift_corpus(2)
        env = report.build(
            inp(tasks, samples, provenance={"opencode_version": "1.18.33", "akm_version": "0.7.0"}), timestamp=TS
        )
        prov = env["provenance"]
        assert prov["opencode_version"] == "1.18.33" and prov["akm_version"] == "0.7.0"
        assert prov["fingerprints"] == ["fp-akm", "fp-noakm"] and prov["python"]

    def test_gates_in_envelope(self) -> None:
        """Gate results are part of the envelope."""
        tasks, samples = lift_corpus()
        env = report.build(
            inp(tasks, samples, gates=("lift.low>0", "akm.pass_rate>=0.99", "noakm.pass_rate>0.5")), timestamp=TS
        )
        assert [g["ok"] for g in env["gates"]] == [True, True, False]


class TestMarkdown:
    def test_sections_and_verdict(self) -> None:
        """Verdict first, intervals in the tables, sections in order, baseline columns."""
        tasks, samples = lift_corpus()
        env = report.build(inp(tasks, samples, baseline={"d0/t00": 0.5}, gates=("noakm.pass_rate>0.5",)), timestamp=TS)
        md = render_markdown(env)
        lines = md.splitlines()
        assert lines[0] == "# akm-bench utility — local/m"
        assert lines[5].startswith("**Verdict:** akm lifts pass rate by +0.80 [")
        assert lines[6].startswith("**Gates:** 0 passed, 1 failed: `noakm.pass_rate>0.5`")
        order = [
            "## Aggregate",
            "## Gates",
            "## Trajectory (akm)",
            "## Per-task pass rates",
            "## Coverage vs reporting floor",
            "## Corpus coverage",
            "## Negative transfer",
            "## Search → outcome bridge",
            "## AKM overhead",
            "## Token measurement",
            "## Provenance",
        ]
        positions = [md.index(h) for h in order]
        assert positions == sorted(positions)
        per_task = md[md.index("## Per-task pass rates") :]
        header = per_task.splitlines()[2]
        assert [c.strip() for c in header.strip("|").split("|")] == [
            "task",
            "noakm",
            "akm",
            "delta",
            "baseline",
            "vs base",
        ]
        row = next(line for line in per_task.splitlines() if line.startswith("| d0/t00"))
        assert "1.00 [0.44, 1.00]" in row and "+0.50" in row

    def test_deterministic(self) -> None:
        """Same input, same bytes."""
        tasks, samples = lift_corpus()
        a = render_markdown(report.build(inp(tasks, samples), timestamp=TS))
        b = render_markdown(report.build(inp(tasks, list(reversed(samples))), timestamp=TS))
        assert a == b

    def test_no_difference_verdict(self) -> None:
        """Equal arms: no significant difference, with the interval and p."""
        tasks, samples = lift_corpus(4)
        samples = [dict(s, outcome="pass") for s in samples]
        env = report.build(inp(tasks, samples), timestamp=TS)
        # With 4 tasks no sign vector is rare enough (p >= 2/2^4), so the interval is every possible lift.
        assert env["verdict"] == (
            "no significant difference between akm and noakm (0.00 [-1.00, +1.00], paired permutation p=1), "
            "4 paired tasks; valid runs akm 12/12, noakm 12/12; with 4 paired tasks the exact test's smallest p is "
            "0.125, above 0.05, so no difference can be significant: that takes at least 6 paired tasks"
        )

    def test_incomplete_and_empty(self) -> None:
        """An incomplete run says so; no valid run at all says so."""
        task = make_task("a/t")
        env = report.build(
            inp([task], [sample("a/t", "akm", 1, "harness_error")], arms=("akm",), complete=False), timestamp=TS
        )
        assert env["verdict"] == "incomplete run — no valid runs: no arm produced a pass or fail outcome"
        assert "**incomplete run**" in render_markdown(env)

    def test_write_and_step_summary(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """report.json and summary.md are written; the summary is appended to $GITHUB_STEP_SUMMARY."""
        step = tmp_path / "step.md"
        step.write_text("before\n")
        monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
        tasks, samples = lift_corpus(2)
        env = report.build(inp(tasks, samples), timestamp=TS)
        json_path, md_path, _ = report_files.write(tmp_path / "out", env)
        assert json.loads(json_path.read_text())["verdict"] == env["verdict"]
        assert step.read_text() == "before\n" + md_path.read_text() + "\n"


def _bench(n_tasks: int, seeds: int, outcome: Any) -> tuple[list[Any], list[dict[str, Any]]]:
    """Tasks × arms × seeds with ``outcome(task_index, arm, seed)``."""
    tasks = [make_task(f"d/t{i:02d}") for i in range(n_tasks)]
    samples = [
        sample(t.id, arm, s, outcome(i, arm, s))
        for i, t in enumerate(tasks)
        for arm in ("noakm", "akm", "synthetic")
        for s in range(1, seeds + 1)
    ]
    return tasks, samples


class TestVerdictClaims:
    """What the verdict line must say about itself (provisional, valid runs, unreliable, artefacts)."""

    def test_provisional_below_the_floor(self) -> None:
        """6 tasks × 1 seed: significant (p = 2/2^6), but every cell is below the floor of 3."""
        tasks, samples = _bench(6, 1, lambda i, arm, s: "pass" if arm == "akm" else "fail")
        env = report.build(inp(tasks, [x for x in samples if x["arm"] != "synthetic"], seeds=1), timestamp=TS)
        assert env["verdict"].startswith(
            "provisional: 12 of 12 cells below the floor of 3 — akm lifts pass rate by +1.00 ["
        )
        assert "p=0.031" in env["verdict"] and "6 paired tasks; valid runs akm 6/6, noakm 6/6" in env["verdict"]

    def test_unreliable_when_harness_errors_dominate(self) -> None:
        """68 of 85 akm runs are harness errors: no lift is claimed, the share and the valid runs are stated,
        and so is how far an artefact could move the delta; the lift gates refuse."""
        tasks, samples = _bench(
            17, 5, lambda i, arm, s: "pass" if s == 1 else "harness_error" if arm == "akm" else "fail"
        )
        env = report.build(
            inp(
                tasks,
                [x for x in samples if x["arm"] != "synthetic"],
                seeds=5,
                gates=("lift.low>0", "lift.significant", "lift>0"),
            ),
            timestamp=TS,
        )
        v = env["verdict"]
        assert "unreliable: 68 of 85 akm runs are harness errors (over the 10% limit), no verdict on akm vs noakm" in v
        assert "akm lifts" not in v and "valid runs akm 17/85, noakm 85/85" in v
        assert "artefact risk: harness errors differ between arms (akm 68/85, noakm 0/85)" in v and "[0.00, +0.80]" in v
        # Every gate fails on an unreliable comparison, lift>0 too (it held before: the lift of the
        # valid runs is +0.80 while akm's 68 harness errors took its failures out of its pass rate).
        assert [g["ok"] for g in env["gates"]] == [False, False, False]
        assert env["gates"][2]["message"].startswith(
            "not passed: unreliable, 68 of 85 akm runs are harness errors (over the 10% limit); lift = 0.8, holds > 0"
        )
        assert "refused: 68 of 85 akm runs are harness errors" in env["gates"][0]["message"]

    def test_artefact_risk_stated_when_errors_differ(self) -> None:
        """3 akm harness errors, none in noakm: the claim stands, with the artefact bounds."""
        tasks, samples = _bench(
            17,
            5,
            lambda i, arm, s: (
                "harness_error"
                if arm == "akm" and s == 5 and i < 3
                else "pass"
                if s <= (3 if arm == "akm" else 2)
                else "fail"
            ),
        )
        env = report.build(inp(tasks, [x for x in samples if x["arm"] != "synthetic"], seeds=5), timestamp=TS)
        paired = env["aggregate"]["delta"]["paired"]
        assert paired["reliable"] is True
        # Every akm error a fail and noakm as run: 3/5 - 2/5 on each task; every akm error a pass:
        # 4/5 - 2/5 on the 3 tasks with an error, 3/5 - 2/5 on the other 14.
        assert paired["artefact_bounds"] == pytest.approx({"low": 0.2, "high": (3 * 0.4 + 14 * 0.2) / 17})
        assert env["verdict"].startswith("akm lifts pass rate by +0.23")
        assert "artefact risk: harness errors differ between arms (akm 3/85, noakm 0/85)" in env["verdict"]

    def test_every_comparison_reported_with_holm(self) -> None:
        """Three arms: both comparisons in the verdict, Holm-adjusted over 2; only akm and synthetic:
        that comparison is the verdict."""
        tasks, samples = _bench(10, 3, lambda i, arm, s: "pass" if arm == "akm" or (s == 1 and i < 5) else "fail")
        env = report.build(inp(tasks, samples, arms=("noakm", "akm", "synthetic")), timestamp=TS)
        assert env["verdict"].count("Holm-adjusted over 2 comparisons") == 2
        assert "; akm lifts pass rate over synthetic by +0.83" in env["verdict"]
        syn = env["aggregate"]["akm_over_synthetic_paired"]
        assert syn["holm_family"] == 2 and syn["p_value_holm"] >= syn["p_value"]
        only = report.build(
            inp(tasks, [x for x in samples if x["arm"] != "noakm"], arms=("akm", "synthetic")), timestamp=TS
        )
        assert only["verdict"].startswith("akm lifts pass rate over synthetic by +0.83")

    def test_delta_and_interval_on_the_same_paired_tasks(self) -> None:
        """akm ran x (fails) and y (passes); noakm only y (passes). The delta is over y alone (0.00, not
        0.50 − 1.00), and the report says one task was left unpaired."""
        tasks = [make_task("a/x"), make_task("a/y")]
        samples = (
            [sample("a/x", "akm", s, "fail") for s in (1, 2, 3)]
            + [sample("a/y", "akm", s, "pass") for s in (1, 2, 3)]
            + [sample("a/y", "noakm", s, "pass") for s in (1, 2, 3)]
        )
        env = report.build(inp(tasks, samples), timestamp=TS)
        assert (
            env["aggregate"]["delta"]["pass_rate"] == 0.0 and env["aggregate"]["delta"]["paired"]["tasks_unpaired"] == 1
        )
        assert "1 paired task (1 unpaired)" in env["verdict"]
        assert "| **delta** | 0.00        | [-1.00, +1.00]" in render_markdown(env)


def test_interval_of_a_total_win_stays_within_one() -> None:
    """akm passes every run of 6 tasks and noakm fails every one: the lift is 1 and its interval,
    widened by the run noise, is still clipped to [-1, 1]."""
    outcomes_a, outcomes_b = [[True] * 3] * 6, [[False] * 3] * 6
    rows_a = [metrics.per_task([sample("a/t", "akm", s, "pass") for s in (1, 2, 3)])] * 6
    rows_b = [metrics.per_task([sample("a/t", "noakm", s, "fail") for s in (1, 2, 3)])] * 6
    result = lift.compare_arms(("akm", "noakm"), rows_a, rows_b, outcomes_a, outcomes_b)
    assert result["delta"] == 1.0 and result["high"] == 1.0 and 0 < result["low"] < 1
    # Alone (as the attribute and evolve tracks use it) a comparison is its own Holm family, and
    # its diagnostics say how to reproduce its bootstrap.
    assert result["holm_family"] == 1 and result["p_value_holm"] == result["p_value"]
    # The block names its test and how it ran: 6 tasks, all 2^6 sign vectors.
    assert (result["method"], result["exact"], result["iterations"]) == ("sign_flip_permutation", True, 2**6)
    assert result["seed"] == significance.SEED
    diagnostics = result["diagnostics"]
    # the sign-flip interval itself, before the run noise widened it
    alone = significance.sign_flip_test([Fraction(1)] * 6)
    assert (diagnostics["permutation_low"], diagnostics["permutation_high"]) == (alone["low"], alone["high"])
    assert (diagnostics["bootstrap_iterations"], diagnostics["bootstrap_seed"]) == (
        lift.BOOTSTRAP_ITERATIONS,
        lift.BOOTSTRAP_SEED,
    )


def test_a_side_without_runs_compares_nothing_without_failing() -> None:
    """A comparison where one side ran none of the tasks (an evolve condition that missed them):
    no paired task, no interval, and each side's harness errors still counted."""
    rows_a = [metrics.per_task([sample("a/t", "akm", s, "pass") for s in (1, 2)]), None]
    outcomes_a: list[list[bool]] = [[True, True], []]
    result = lift.compare_arms(("akm", "noakm"), rows_a, [None, None], outcomes_a, [[], []])
    assert (result["tasks"], result["delta"], result["artefact_bounds"]) == (0, None, None)
    assert result["diagnostics"]["sign_test_p"] is None
    assert result["harness_errors"]["noakm"] == {"runs": 0, "harness_errors": 0, "share": None}
    assert result["harness_errors"]["akm"] == {"runs": 2, "harness_errors": 0, "share": 0.0}


def test_artefact_bounds_count_both_arms_errors_on_shared_tasks_only() -> None:
    """The bounds a difference in harness errors can reach: each arm's errors counted as fails on
    one side and as passes on the other, over the tasks both arms ran (not one-sided tasks)."""

    def row(passes: int, count: int, errors: int) -> dict[str, Any]:
        return {"passes": passes, "count": count, "harness_error_count": errors}

    rows_a = [row(2, 4, 1), row(3, 3, 0), row(0, 2, 2), None]
    rows_b = [row(1, 4, 2), row(1, 3, 1), None, row(0, 3, 0)]
    outcomes_a = [[True, True, False], [True, True, True], [], []]
    outcomes_b = [[True, False], [True, False], [], [False, False, False]]
    result = lift.compare_arms(("akm", "noakm"), rows_a, rows_b, outcomes_a, outcomes_b)
    # low: 2/4 - 3/4 and 3/3 - 2/3; high: 3/4 - 1/4 and 3/3 - 1/3.
    assert result["artefact_bounds"] == pytest.approx({"low": (-1 / 4 + 1 / 3) / 2, "high": (1 / 2 + 2 / 3) / 2})
    assert result["harness_errors"] == {
        "akm": {"runs": 9, "harness_errors": 3, "share": 3 / 9},
        "noakm": {"runs": 10, "harness_errors": 3, "share": 3 / 10},
    }


def test_resamples_of_a_monte_carlo_comparison_are_the_callers() -> None:
    """Above 14 paired tasks the p-value is Monte Carlo over the number of sign vectors the caller
    asks for (the simulations ask for fewer to run faster), and the block says how many."""
    outcomes_a = [[True, True, i % 3 != 0] for i in range(16)]
    outcomes_b = [[i % 2 == 0, False, False] for i in range(16)]
    rows_a = [metrics.per_task([sample("a/t", "akm", s, "pass") for s in (1, 2, 3)])] * 16
    rows_b = [metrics.per_task([sample("a/t", "noakm", s, "fail") for s in (1, 2, 3)])] * 16
    result = lift.compare_arms(("akm", "noakm"), rows_a, rows_b, outcomes_a, outcomes_b, resamples=500)
    assert (result["tasks"], result["exact"], result["iterations"]) == (16, False, 500)


def test_interval_of_a_total_loss_stays_within_minus_one() -> None:
    """The mirror of a total win: akm fails every run that noakm passes; the lift is −1 and its
    interval, widened by the run noise, is clipped to −1 from below."""
    outcomes_a, outcomes_b = [[False] * 3] * 6, [[True] * 3] * 6
    rows_a = [metrics.per_task([sample("a/t", "akm", s, "fail") for s in (1, 2, 3)])] * 6
    rows_b = [metrics.per_task([sample("a/t", "noakm", s, "pass") for s in (1, 2, 3)])] * 6
    result = lift.compare_arms(("akm", "noakm"), rows_a, rows_b, outcomes_a, outcomes_b)
    assert result["delta"] == -1.0 and result["low"] == -1.0 and -1 < result["high"] < 0


def test_equal_arms_get_the_run_noise_on_both_sides() -> None:
    """Every task passes 1 of 3 runs on both arms: the task deltas are all 0, so the sign-flip
    interval alone would be [0, 0]; the run noise widens it to ±1.96·sqrt(Σ p̃(1−p̃)/(n+2))/m on
    both sides, with p̃ = (1+1)/(3+2) per side (Agresti–Caffo) over m = 6 tasks."""
    outcomes = [[True, False, False]] * 6
    rows_a = [metrics.per_task([sample("a/t", "akm", s, o) for s, o in ((1, "pass"), (2, "fail"), (3, "fail"))])] * 6
    rows_b = [metrics.per_task([sample("a/t", "noakm", s, o) for s, o in ((1, "pass"), (2, "fail"), (3, "fail"))])] * 6
    result = lift.compare_arms(("akm", "noakm"), rows_a, rows_b, outcomes, outcomes)
    half = Z * math.sqrt(12 * 0.4 * 0.6 / 5) / 6
    assert result["delta"] == 0.0 and result["significant"] is False
    assert (result["low"], result["high"]) == (pytest.approx(-half), pytest.approx(half))


def test_a_tenth_of_harness_errors_is_still_reliable() -> None:
    """The limit is a share above 10%: 1 harness error in 10 runs keeps the verdict, 2 refuse it."""

    def row(passes: int, count: int, errors: int) -> dict[str, Any]:
        return {"passes": passes, "count": count, "harness_error_count": errors}

    noakm = [row(5, 10, 0)], [[True] * 5 + [False] * 5]
    at_limit = lift.compare_arms(("akm", "noakm"), [row(9, 10, 1)], noakm[0], [[True] * 9], noakm[1])
    assert (at_limit["reliable"], at_limit["unreliable_arms"]) == (True, [])
    over = lift.compare_arms(("akm", "noakm"), [row(8, 10, 2)], noakm[0], [[True] * 8], noakm[1])
    assert (over["reliable"], over["unreliable_arms"]) == (False, ["akm"])
