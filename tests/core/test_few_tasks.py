"""Few-task verdicts say why they cannot be significant, and the report says what the test's null
is (issue 30, item 10)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_akmbench.report import envelope as report
from pytest_akmbench.report import gates
from pytest_akmbench.report.render import notes
from pytest_akmbench.report.render.markdown import render_markdown
from pytest_akmbench.stats import significance
from tests.core.test_report import TS, _bench, inp


def build(tasks: int, seeds: int, arms: tuple[str, ...] = ("noakm", "akm")) -> dict:
    found, samples = _bench(tasks, seeds, lambda i, arm, s: "pass" if arm == "akm" else "fail")
    return report.build(inp(found, [x for x in samples if x["arm"] in arms], arms=arms, seeds=seeds), timestamp=TS)


def test_one_task_says_why_its_verdict_cannot_be_significant() -> None:
    """The issue's case: 1 task, akm 10/10 against noakm 0/10. Before, the verdict read `no significant
    difference (+1.00 [-1.00, +1.00], p=1)` and nothing more; now it says why."""
    env = build(1, 10)
    assert env["verdict"] == (
        "no significant difference between akm and noakm (+1.00 [-1.00, +1.00], paired permutation p=1), "
        "1 paired task; valid runs akm 10/10, noakm 10/10; with 1 paired task the exact test's smallest p is 1, "
        "above 0.05, so no difference can be significant: that takes at least 6 paired tasks"
    )
    assert env["verdict"] in render_markdown(env)


def test_with_holm_over_two_it_takes_seven() -> None:
    """Three arms and 6 tasks all won by akm: p = 2/2^6 = 0.031 alone, 0.0625 after Holm over two."""
    env = build(6, 3, ("noakm", "synthetic", "akm"))
    assert (
        "6 paired tasks; valid runs akm 18/18, noakm 18/18; with 6 paired tasks the exact test's smallest p is "
        "0.0625 (2 × 0.0312, Holm over 2 tests), above 0.05, so no difference can be significant: "
        "that takes at least 7 paired tasks"
    ) in env["verdict"]
    (low,) = gates.evaluate(env, ["lift.low>0"], Path("."))
    assert low["message"] == (
        "lift.low needs at least 7 paired tasks, Holm-adjusted over 2 comparisons (has 6): "
        "with fewer, the paired test can never reject"
    )
    assert "smallest p" not in build(7, 3, ("noakm", "synthetic", "akm"))["verdict"]
    assert "smallest p" not in build(6, 3)["verdict"]


@pytest.mark.parametrize(("family", "need"), [(1, 6), (2, 7), (3, 7), (4, 8)])
def test_the_minimum_is_the_tests_own(family: int, need: int) -> None:
    """The fewest tasks is where the test's smallest p (all deltas of one sign, exact enumeration)
    times the Holm family first falls below 0.05: 2^(1-m) × family < 0.05."""
    assert significance.min_paired_tasks(family) == need
    assert 2.0 ** (1 - need) * family < 0.05 <= 2.0 ** (2 - need) * family


def test_the_report_states_the_tests_null() -> None:
    """summary.md's note on the comparison says the null is symmetry of each task's difference, not a
    mean of zero."""
    text = render_markdown(build(8, 3))
    assert notes.SIGN_FLIP_NULL in text
    assert "not merely that the mean difference is 0" in notes.SIGN_FLIP_NULL


def test_the_page_states_the_tests_null_beside_the_diamond() -> None:
    """report.html's note under the per-task plot says the same."""
    from pytest_akmbench.report.render import html as html_report

    page = html_report.render(build(8, 3))
    assert notes.SIGN_FLIP_NULL.replace("'", "&#x27;") in page or notes.SIGN_FLIP_NULL in page


def test_one_sided_fisher_and_its_null_split_agree_with_scipy() -> None:
    """Every table with up to 6 runs a side: fisher_lower equals scipy's one-sided Fisher test and
    split_odds scipy's hypergeometric."""
    import scipy.stats as ss

    for n_a in range(1, 7):
        for n_b in range(1, 7):
            for c_a in range(n_a + 1):
                for c_b in range(n_b + 1):
                    want = ss.fisher_exact([[c_a, n_a - c_a], [c_b, n_b - c_b]], alternative="less").pvalue
                    assert significance.fisher_lower(c_a, n_a, c_b, n_b) == pytest.approx(want, abs=1e-12)
                    dist = ss.hypergeom(n_a + n_b, c_a + c_b, n_a)
                    for x, q in significance.split_odds(c_a, n_a, c_b, n_b):
                        assert float(q) == pytest.approx(dist.pmf(x), abs=1e-12)
