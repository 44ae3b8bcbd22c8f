"""attribute.html: the page beside attribute.json shows the same numbers, offline."""

from __future__ import annotations

import dataclasses
import json
import stat
from pathlib import Path
from typing import Any

from pytest_akmbench.tracks.attribute import core as attribute
from pytest_akmbench.tracks.attribute import report as attribute_report
from tests.core.test_attribute import base_of, row
from tests.support import dom


def envelope(tmp_path: Path) -> dict[str, Any]:
    tasks = [f"d/t{i}" for i in range(7)]
    base = base_of([row(t, s, "pass", ["skill:rule", "skill:lore"]) for t in tasks for s in (1, 2)], tmp_path)
    base = dataclasses.replace(base, config=tmp_path / "configs/x.json")
    targets, loaded = attribute.plan(base, set(tasks))
    masked_rule = {t: [row(t, s, "fail", None) for s in (1, 2)] for t in tasks}
    masked_lore = {t: [row(t, 1, "pass", None), row(t, 2, "fail" if t == "d/t0" else "pass", None)] for t in tasks}
    return attribute.build(
        base=base,
        targets=targets,
        assets_loaded=loaded,
        top=5,
        masked={"skill:rule": masked_rule, "skill:lore": masked_lore},
        reference={t: [row(t, s, "pass", None) for s in (3, 4)] for t in tasks},
        seeds=(3, 4),
        agent={"harness": "opencode", "version": "1", "model": "m/<x>"},
        complete=True,
        warnings=["a <warning>"],
        timestamp="t",
    )


def test_page_is_written_beside_the_json_and_its_numbers_are_the_json_s(tmp_path: Path) -> None:
    json_path, md_path, html_path = attribute_report.write(tmp_path / "report", envelope(tmp_path))
    assert html_path == json_path.parent / "attribute.html"
    # readable by the next CI step, as report.json, summary.md and report.html are
    assert [stat.S_IMODE(p.stat().st_mode) for p in (json_path, md_path, html_path)] == [0o644] * 3
    assert f"(the report of run config `{tmp_path / 'configs/x.json'}`)" in md_path.read_text()
    env = json.loads(json_path.read_text())
    page = dom.parse(html_path.read_text())
    assert page.one(id="verdict").text.endswith(env["verdict"])
    ranking = page.one(id="ranking").text
    assert env["attribution"]["ranking"] in ranking and f"top {env['attribution']['top']}" in ranking
    table = page.one("table", id="attribute-table")
    assert [th.text for th in table.select("th")] == [
        "asset",
        "tasks it was loaded on",
        "base rate",
        "masked rate",
        "delta [95% CI]",
        "p (Holm)",
        "matters",
    ]
    rows = table.select("tr", **{"data-asset": None})
    assert [r.attrs["data-asset"] for r in rows] == [a["asset_ref"] for a in env["attributions"]]
    for tr, a in zip(rows, env["attributions"]):
        cells = {td.attrs["data-field"]: td for td in tr.select("td")}
        c = a["comparison"]
        assert float(cells["base_rate"].attrs["data-value"]) == a["base_pass_rate"]
        assert float(cells["masked_rate"].attrs["data-value"]) == a["masked_pass_rate"]
        assert float(cells["delta"].attrs["data-value"]) == c["delta"]
        assert float(tr.attrs["data-low"]) == c["low"] and float(tr.attrs["data-high"]) == c["high"]
        assert float(cells["p_holm"].attrs["data-value"]) == c["p_value_holm"]
        assert cells["matters"].text == ("yes" if a["significant"] else "no")
        assert cells["tasks"].text == f"{len(a['loaded_on_tasks'])}: " + ", ".join(a["loaded_on_tasks"])
        assert cells["delta"].text.startswith(f"{c['delta']:+.2f} [")
    marks = page.select("g", class_="mark")
    assert {m.attrs["data-asset"]: float(m.attrs["data-value"]) for m in marks} == {
        a["asset_ref"]: a["comparison"]["delta"] for a in env["attributions"]
    }
    # Markup in a field is text, and the page loads nothing from anywhere.
    text = html_path.read_text()
    assert "m/&lt;x&gt;" in text and "a &lt;warning&gt;" in text and "<x>" not in text
    assert "default-src 'none'" in text and "configs/x.json" in text
    assert html_path.read_text() == attribute_report.html_attribute.render(env)  # a function of the envelope
