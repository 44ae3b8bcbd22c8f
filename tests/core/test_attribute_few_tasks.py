"""attribute's count of the assets that matter says when its tasks are too few to show one
(issue 29, item 10: "0 of 3 masked assets matter" beside an asset whose masking took the pass
rate from 1.00 to 0.00, on 2 tasks that no test could call significant), and masks.holds_assets."""

from __future__ import annotations

import itertools
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from statsmodels.stats.multitest import multipletests

from pytest_akmbench.cell import masks
from pytest_akmbench.report.render import notes
from pytest_akmbench.stats import significance
from pytest_akmbench.tracks.attribute import core as attribute
from pytest_akmbench.tracks.attribute import report as attribute_report
from tests.core.test_attribute import base_of, exact_sign_flip_p, row
from tests.support import dom

ASSETS = ["skill:rule", "skill:lore", "skill:tips"]


def envelope(tmp_path: Path, tasks: int, assets: list[str] = ASSETS) -> dict[str, Any]:
    """Every asset loaded on every task; masking the first takes the pass rate from 1 to 0, the
    others change nothing."""
    ids = [f"d/t{i}" for i in range(tasks)]
    base = base_of([row(t, s, "pass", assets) for t in ids for s in (1, 2)], tmp_path)
    targets, loaded = attribute.plan(base, set(ids))
    masked = {
        a: {t: [row(t, s, "fail" if a == assets[0] else "pass", None) for s in (1, 2)] for t in ids} for a in assets
    }
    seeds = attribute.reference_seeds(base, 2)
    return attribute.build(
        base=base,
        targets=targets,
        assets_loaded=loaded,
        top=5,
        masked=masked,
        reference={t: [row(t, s, "pass", assets) for s in seeds] for t in ids},
        seeds=seeds,
        agent={"harness": "opencode", "version": "1", "model": "m"},
        complete=True,
        warnings=[],
        timestamp="t",
    )


def test_the_issue_s_case_says_no_asset_could_matter(tmp_path: Path) -> None:
    env = envelope(tmp_path, tasks=2)
    decisive = env["attributions"][[r["asset_ref"] for r in env["attributions"]].index("skill:rule")]
    assert decisive["base_pass_rate"] == 1.0 and decisive["masked_pass_rate"] == 0.0
    assert decisive["significant"] is False
    assert env["verdict"].startswith(
        "0 of 3 masked assets matter (none could: with 2 paired tasks the exact test's smallest p is 1 "
        "(3 × 0.5, Holm over 3 tests), above 0.05, so these tasks cannot show an asset that matters; "
        "7 paired tasks are the fewest that can): "
    )
    _, md_path, html_path = attribute_report.write(tmp_path / "report", env)
    page = dom.parse(html_path.read_text())
    assert "none could: with 2 paired tasks" in page.one(id="verdict").text
    cells = {
        tr.attrs["data-asset"]: {td.attrs["data-field"]: td.text for td in tr.select("td")}
        for tr in page.one("table", id="attribute-table").select("tr", **{"data-asset": None})
    }
    assert {a: c["matters"] for a, c in cells.items()} == {a: "no (cannot: 2 paired tasks)" for a in ASSETS}
    assert "| no (cannot: 2 paired tasks) |" in md_path.read_text()


@pytest.mark.parametrize("assets", [1, 2, 3])
def test_the_note_goes_exactly_where_the_test_can_first_reject(tmp_path: Path, assets: int) -> None:
    """At the fewest tasks the note names, the decisive asset is found to matter, and the note is
    gone; one task fewer, it is not found and the note says why."""
    refs = ASSETS[:assets]
    fewest = significance.min_paired_tasks(assets)
    enough = envelope(tmp_path, tasks=fewest, assets=refs)
    assert enough["verdict"].startswith(f"1 of {assets} masked asset") and "none could" not in enough["verdict"]
    few = envelope(tmp_path, tasks=fewest - 1, assets=refs)
    assert (
        few["verdict"].startswith(f"0 of {assets} masked asset")
        and f"{fewest} paired tasks are the fewest" in (few["verdict"])
    )


@pytest.mark.parametrize(("tasks", "family"), list(itertools.product(range(1, 9), range(1, 5))))
def test_smallest_p_is_the_exact_test_s_holm_adjusted(tasks: int, family: int) -> None:
    """Against an enumeration of every sign assignment and statsmodels' Holm."""
    one_sign = exact_sign_flip_p([Fraction(1)] * tasks)
    holm = multipletests([one_sign] + [1.0] * (family - 1), method="holm")[1][0]
    assert significance.smallest_p(tasks, family) == pytest.approx(holm)
    assert (significance.min_paired_tasks(family) <= tasks) == (holm < 0.05)


def test_the_main_report_s_note_is_unchanged() -> None:
    assert notes.few_paired_tasks({"tasks": 3}) == (
        " With 3 paired tasks the exact test's smallest p is 0.25, above 0.05, so its 95% interval cannot exclude "
        "any difference: the diamond spans the whole range whatever the tasks show (6 paired tasks are the fewest "
        "that can)."
    )
    assert notes.few_paired_tasks({"tasks": 6}) == ""


def test_holds_assets(tmp_path: Path) -> None:
    """A stash copy whose only asset was masked holds none; metadata and the manifest are no asset."""
    stash = tmp_path / "stash"
    (stash / "skills" / "rule").mkdir(parents=True)
    (stash / "skills" / "rule" / "SKILL.md").write_text("x")
    (stash / "skills" / ".stash.json").write_text('{"entries": [{"type": "skill", "name": "rule"}]}')
    (stash / "MANIFEST.json").write_text("{}")
    (stash / "knowledge").mkdir()
    (stash / "knowledge" / ".gitkeep").write_text("")
    assert masks.holds_assets(stash)
    assert masks.mask(stash, "skill:rule") > 0
    assert not masks.holds_assets(stash)
