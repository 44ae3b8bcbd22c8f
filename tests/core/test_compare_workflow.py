"""compare's workflow compliance: per workflow base vs current, the change and its test, checked
against independent computations (scipy's hypergeometric law convolved with numpy, the
interval from that law and scipy's t quantile at the Holm step's level, statsmodels' Holm)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import hypergeom, t
from statsmodels.stats.multitest import multipletests

from pytest_akmbench.cli.compare import main
from pytest_akmbench.corpus.workflows import WorkflowSpec
from pytest_akmbench.report import envelope as report
from pytest_akmbench.report.compare import workflow as compare_workflow
from pytest_akmbench.report.compare.changes import compare
from pytest_akmbench.report.compare.markdown import render_markdown, verdict
from tests.core.test_metrics import make_task, sample
from tests.core.test_report import TS, inp
from tests.core.test_workflow import LOOKUP, spec
from tests.support.schemas import problems

SEEDS = 4


def specs(tmp_path: Path, *ids: str, title: str = "Look it up first") -> dict[str, WorkflowSpec]:
    return {i: spec(tmp_path, {**LOOKUP, "id": i, "title": title}, f"{i}-{title[:4]}.yaml") for i in ids}


def wf_envelope(workflows: dict[str, WorkflowSpec], passes: dict[str, list[int]]) -> dict[str, Any]:
    """A report of the akm arm where, on task i, workflow w passes ``passes[w][i]`` of the
    seeds' checks (score 1.0) and fails the others (score 0.25)."""
    n_tasks = len(next(iter(passes.values())))
    tasks = [make_task(f"d/t{i}", workflows=tuple(workflows.values())) for i in range(n_tasks)]
    samples = []
    for i, task in enumerate(tasks):
        for seed in range(1, SEEDS + 1):
            checks = [
                {
                    "workflow_id": w,
                    "status": "pass" if seed <= passes[w][i] else "fail",
                    "score": 1.0 if seed <= passes[w][i] else 0.25,
                    "violations": [] if seed <= passes[w][i] else [{"code": "x", "message": "x"}],
                }
                for w in workflows
            ]
            samples.append(sample(task.id, "akm", seed, "pass", workflow={"checks": checks}))
    return report.build(inp(tasks, samples, arms=("akm",), seeds=SEEDS), timestamp=TS)


def counts_block(passes: list[int]) -> dict[str, Any]:
    """The part of a report compare_workflow reads: workflow lookup passing ``passes[i]`` of the
    SEEDS checks of task i."""
    per_task = [{"task_id": f"d/t{i}", "checks": SEEDS, "passes": c, "score": None} for i, c in enumerate(passes)]
    rate = sum(passes) / (SEEDS * len(passes))
    return {
        "workflow": {"digests": {"lookup": "d"}, "by_workflow": {"lookup": {"pass_rate": rate, "per_task": per_task}}}
    }


def null_law(strata: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray, int]:
    """The law of T = Σ (2 a − k) over tasks (a = current passes of k pooled, n runs a side):
    with equal runs, n·S of the stratified test. scipy's pmf, numpy's convolution. Returns the
    values, their probabilities and the observed T."""
    dist = np.array([1.0])
    offset = 0
    observed = 0
    for a, b in strata:
        k = a + b
        support = np.arange(max(0, k - SEEDS), min(k, SEEDS) + 1)
        pmf = np.zeros(2 * SEEDS + 1)
        for x in support:
            pmf[2 * x - k + SEEDS] = hypergeom.pmf(x, 2 * SEEDS, k, SEEDS)
        dist = np.convolve(dist, pmf)
        offset += SEEDS
        observed += 2 * a - k
    return np.arange(len(dist)) - offset, dist, observed


def independent_p(strata: list[tuple[int, int]]) -> float:
    """P(|T| >= |T_obs|)."""
    values, probs, observed = null_law(strata)
    return float(probs[np.abs(values) >= abs(observed) - 1e-9].sum())


def independent_interval(strata: list[tuple[int, int]], level: float) -> tuple[float, float]:
    """The interval at 1 − ``level`` (docs/report.md, "compare"): the end towards 0 is the delta
    minus the largest change the test at ``level`` does not reject, the other end the wider of
    that and scipy's t(m − 1) interval of the per-task run variances (unbiased, or Agresti–Caffo's
    where that is larger)."""
    values, probs, observed = null_law(strata)
    m = len(strata)
    critical = max(v for v in np.abs(values) if probs[np.abs(values) >= v - 1e-9].sum() >= level)
    d, h = observed / SEEDS / m, critical / SEEDS / m
    tilde = [(x + 1) / (SEEDS + 2) for s in strata for x in s]
    unbiased = [x / SEEDS * (1 - x / SEEDS) / (SEEDS - 1) for s in strata for x in s]
    var = sum(max(u, q * (1 - q) / (SEEDS + 2)) for u, q in zip(unbiased, tilde))
    far = max(h, t.ppf(1 - level / 2, m - 1) * var**0.5 / m)
    if abs(observed) <= critical:
        low, high = d - far, d + far
    else:
        low, high = (d - h, d + far) if d > 0 else (d - far, d + h)
    return max(-1.0, low), min(1.0, high)


def mean_score(passes: list[int]) -> float:
    checks = len(passes) * SEEDS
    return (sum(passes) + 0.25 * (checks - sum(passes))) / checks


class TestStatistics:
    def test_change_per_workflow_matches_independent_computation(self, tmp_path: Path) -> None:
        wfs = specs(tmp_path, "lookup", "feedback")
        before = {"lookup": [1, 0, 1, 0, 0, 1, 0, 0], "feedback": [2, 3, 2, 2, 1, 3, 2, 2]}
        after = {"lookup": [4, 4, 3, 4, 3, 4, 4, 3], "feedback": [2, 2, 3, 2, 2, 3, 1, 2]}
        base, head = wf_envelope(wfs, before), wf_envelope(wfs, after)
        assert problems(base, "report") == [] and base["workflow"]["by_workflow"]["lookup"]["per_task"][0] == {
            "task_id": "d/t0",
            "checks": SEEDS,
            "passes": 1,
            "score": pytest.approx((1 + 3 * 0.25) / SEEDS),
        }
        result = compare(base, head)
        assert result["ok"] is True
        wf = result["workflow"]
        assert wf["only_in_base"] == wf["only_in_current"] == []
        ps = {}
        for w in ("lookup", "feedback"):
            c, strata = wf["by_workflow"][w], list(zip(after[w], before[w]))
            assert c["base"]["pass_rate"] == pytest.approx(sum(before[w]) / (8 * SEEDS))
            assert c["current"]["pass_rate"] == pytest.approx(sum(after[w]) / (8 * SEEDS))
            assert c["base"]["score"] == pytest.approx(mean_score(before[w]))
            assert c["score_delta"] == pytest.approx(mean_score(after[w]) - mean_score(before[w]))
            p = c["paired"]
            delta = sum(a - b for a, b in strata) / SEEDS / len(strata)
            assert p["tasks"] == 8 and p["delta"] == pytest.approx(delta)
            assert p["exact"] is True and p["p_value"] == pytest.approx(independent_p(strata))
            ps[w] = p["p_value"]
        holm = multipletests([ps["lookup"], ps["feedback"]], method="holm")[1]
        lookup, feedback = wf["by_workflow"]["lookup"], wf["by_workflow"]["feedback"]
        assert lookup["paired"]["p_value_holm"] == pytest.approx(holm[0])
        assert feedback["paired"]["p_value_holm"] == pytest.approx(holm[1])
        assert lookup["beyond_noise"] is True and feedback["beyond_noise"] is False
        assert lookup["paired"]["holm_family"] == 2
        # lookup is rejected at Holm's first step (0.05/2), feedback's step (0.05) does not reject
        assert (lookup["paired"]["low"], lookup["paired"]["high"]) == pytest.approx(
            independent_interval(list(zip(after["lookup"], before["lookup"])), 0.025)
        )
        assert (feedback["paired"]["low"], feedback["paired"]["high"]) == pytest.approx(
            independent_interval(list(zip(after["feedback"], before["feedback"])), 0.05)
        )
        assert lookup["paired"]["confidence"] == 0.975 and feedback["paired"]["confidence"] == 0.95
        assert lookup["paired"]["low"] > 0 and feedback["paired"]["low"] <= 0 <= feedback["paired"]["high"]
        assert "workflow lookup strict pass improved beyond noise: 0.09 → 0.91" in verdict(result)
        md = render_markdown(result)
        assert "## Workflow compliance (current − base)" in md
        assert "| lookup     | 0.32 → 0.93  | +0.61" in md and "workflow noise rule — per workflow" in md

    def test_calibrated_under_no_change(self) -> None:
        """Seeded size check: with the same pass probability per task on both sides, the workflow
        change is called beyond noise in at most 5% of comparisons, up to 3 Monte Carlo SEs
        (0.0646 at 2,000 comparisons). A test of size 10% exceeds that bound with probability
        above 0.9999 (the 200 comparisons and 8% ceiling before let a test of twice its 2.25% size
        through); every interval excludes 0 exactly when the change is called."""
        rng = np.random.default_rng(7)
        calls, trials = 0, 2000
        for _ in range(trials):
            probs = rng.uniform(0.1, 0.9, 6)
            base, head = ([int(rng.binomial(SEEDS, q)) for q in probs] for _ in range(2))
            paired = compare_workflow.compare(counts_block(base), counts_block(head), [])["by_workflow"]["lookup"]
            calls += paired["beyond_noise"]
            assert paired["beyond_noise"] == (not paired["paired"]["low"] <= 0 <= paired["paired"]["high"])
        assert calls / trials <= 0.05 + 3 * (0.05 * 0.95 / trials) ** 0.5


class TestPresenceAndRefusals:
    def test_a_workflow_on_one_side_is_named(self, tmp_path: Path) -> None:
        wfs = specs(tmp_path, "lookup", "feedback", "review")
        base = wf_envelope({k: wfs[k] for k in ("lookup", "feedback")}, {"lookup": [2, 2], "feedback": [1, 1]})
        head = wf_envelope({k: wfs[k] for k in ("lookup", "review")}, {"lookup": [2, 3], "review": [4, 4]})
        wf = compare(base, head)["workflow"]
        assert list(wf["by_workflow"]) == ["lookup"]
        assert wf["only_in_base"] == ["feedback"] and wf["only_in_current"] == ["review"]
        md = render_markdown(compare(base, head))
        assert "only in the base report: feedback" in md and "only in the current report: review" in md
        plain = dict(head)
        del plain["workflow"]
        one_sided = compare(base, plain)
        assert "workflow" not in one_sided
        assert "only the base report has workflow compliance; not compared" in one_sided["warnings"]

    def test_a_changed_spec_is_refused_unless_allowed(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        base = wf_envelope(specs(tmp_path, "lookup"), {"lookup": [2, 2]})
        head = wf_envelope(specs(tmp_path, "lookup", title="Look it up, then act"), {"lookup": [2, 2]})
        bd, hd = base["workflow"]["digests"]["lookup"], head["workflow"]["digests"]["lookup"]
        assert bd != hd and len(bd) == 64
        refused = compare(base, head)
        assert refused["ok"] is False and refused["reason"] == "workflow_mismatch"
        assert refused["message"] == (
            f'workflow spec digests differ for lookup (base="{bd}", current="{hd}"); '
            "use --allow-workflow-mismatch to diff anyway"
        )
        allowed = compare(base, head, allow_workflow_mismatch=True)
        assert allowed["ok"] is True and "lookup" in allowed["workflow"]["by_workflow"]
        assert any("diff requested via --allow-workflow-mismatch" in w for w in allowed["warnings"])
        paths = []
        for name, env in (("b.json", base), ("h.json", head)):
            paths.append(tmp_path / name)
            paths[-1].write_text(json.dumps(env))
        assert main([str(paths[0]), str(paths[1])]) == 1
        assert "compare: refused (workflow_mismatch): workflow spec digests differ" in capsys.readouterr().err
        assert main([str(paths[0]), str(paths[1]), "--allow-workflow-mismatch", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["workflow"]["by_workflow"]["lookup"]["paired"]["tasks"] == 2

    def test_an_older_report_without_digests_or_per_task_counts(self, tmp_path: Path) -> None:
        base = wf_envelope(specs(tmp_path, "lookup"), {"lookup": [2, 2]})
        head = json.loads(json.dumps(base))
        del head["workflow"]["digests"]
        del head["workflow"]["by_workflow"]["lookup"]["per_task"]
        result = compare(base, head)
        assert result["ok"] is True
        assert (
            "current report has no workflow.digests; proceeding without workflow-spec pin check" in (result["warnings"])
        )
        c = result["workflow"]["by_workflow"]["lookup"]
        assert c["paired"]["p_value"] is None and c["pass_rate_delta"] == 0 and c["beyond_noise"] is False
        assert any("per-task checks" in w for w in result["warnings"])


class TestWhatAReaderSees:
    def test_a_refused_spec_names_both_digests(self, tmp_path: Path) -> None:
        """The refusal's JSON and markdown give each report's digest of the changed workflow."""
        base = wf_envelope(specs(tmp_path, "lookup"), {"lookup": [2, 2]})
        head = wf_envelope(specs(tmp_path, "lookup", title="Look it up, then act"), {"lookup": [2, 2]})
        bd, hd = base["workflow"]["digests"]["lookup"], head["workflow"]["digests"]["lookup"]
        refused = compare(base, head)
        assert refused["baseWorkflowDigests"] == {"lookup": bd} and refused["currentWorkflowDigests"] == {"lookup": hd}
        md = render_markdown(refused)
        assert f"- baseWorkflowDigests: lookup `{bd}`\n- currentWorkflowDigests: lookup `{hd}`\n" in md

    def test_a_base_report_without_digests_is_said(self, tmp_path: Path) -> None:
        base = wf_envelope(specs(tmp_path, "lookup"), {"lookup": [2, 2]})
        head = json.loads(json.dumps(base))
        del base["workflow"]["digests"]
        assert compare(base, head)["warnings"] == [
            "base report has no workflow.digests; proceeding without workflow-spec pin check"
        ]

    def test_each_side_keeps_its_checks_and_tasks(self, tmp_path: Path) -> None:
        wfs = specs(tmp_path, "lookup")
        base, head = wf_envelope(wfs, {"lookup": [2, 2]}), wf_envelope(wfs, {"lookup": [4, 4, 4]})
        c = compare(base, head, allow_corpus_mismatch=True)["workflow"]["by_workflow"]["lookup"]
        for side, env in (("base", base), ("current", head)):
            row = env["workflow"]["by_workflow"]["lookup"]
            assert (c[side]["count"], c[side]["tasks"]) == (row["count"], row["tasks"])
        assert (c["base"]["tasks"], c["current"]["tasks"]) == (2, 3)

    def test_a_score_on_one_side_only_has_no_change(self) -> None:
        """An older report without the compliance score: its change is n/a, not an error."""
        base, head = counts_block([2, 2]), counts_block([3, 3])
        head["workflow"]["by_workflow"]["lookup"]["score"] = 0.8
        c = compare_workflow.compare(base, head, [])["by_workflow"]["lookup"]
        assert c["score_delta"] is None and c["pass_rate_delta"] == pytest.approx(0.25)

    def test_every_workflow_on_one_side_is_listed(self, tmp_path: Path) -> None:
        wfs = specs(tmp_path, "lookup", "feedback", "review")
        base = wf_envelope(wfs, {"lookup": [2, 2], "feedback": [1, 1], "review": [3, 3]})
        head = wf_envelope({"lookup": wfs["lookup"]}, {"lookup": [2, 3]})
        assert "only in the base report: feedback, review\n" in render_markdown(compare(base, head))
