"""report.html on constructed envelopes (edge cases), the report directory as an artifact, and
the capped markdown summary. The page in a real browser: test_browser.py."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from statsmodels.stats.proportion import confint_proportions_2indep

from pytest_akmbench.report import envelope as report
from pytest_akmbench.report.render import files as report_files
from pytest_akmbench.report.render import html as html_report
from pytest_akmbench.report.render import html_plots, svg
from pytest_akmbench.report.render.markdown import render_markdown
from pytest_akmbench.report.render.sections import MD_TASK_ROWS
from tests.core.test_metrics import make_task, sample, traj
from tests.support.dom import Element, parse

TS = "2026-01-01T00:00:00.000Z"


def build(
    tasks: list[Any], samples: list[dict[str, Any]], arms: tuple[str, ...] = ("noakm", "akm"), **kw: Any
) -> dict[str, Any]:
    inp = report.ReportInput(
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
    return report.build(inp, timestamp=TS)


def bench(
    n_tasks: int = 4,
    arms: tuple[str, ...] = ("noakm", "akm"),
    outcome: Any = None,
    tokens: int | None = 900,
    **extra: Any,
) -> dict[str, Any]:
    """akm passes every task, noakm every other one (or ``outcome(task index, arm, seed)``)."""
    tasks = [make_task(f"d{i % 2}/t{i:03d}", gold_ref="skill:gold") for i in range(n_tasks)]
    samples = []
    for i, t in enumerate(tasks):
        for arm in arms:
            for seed in (1, 2, 3):
                out = outcome(i, arm, seed) if outcome else ("pass" if arm == "akm" or i % 2 else "fail")
                tr = traj(searches=[1], shown=["skill:gold"], feedback="positive") if arm == "akm" else None
                samples.append(
                    sample(
                        t.id,
                        arm,
                        seed,
                        out,
                        tokens=tokens,
                        trajectory=tr,
                        transcript=f"transcripts/r1/{t.id.replace('/', '_')}-{arm}-{seed}.jsonl",
                        **extra,
                    )
                )
    return build(tasks, samples, arms)


def plots(page: Element) -> dict[str, Element]:
    return {svg.attrs["data-plot"]: svg for svg in page.select("svg", class_="plot")}


def empty(page: Element) -> set[str]:
    return {p.attrs["data-empty-plot"] for p in page.select(data_empty_plot=None)}


class TestPage:
    def test_two_arms_every_plot(self) -> None:
        env = bench(cost_usd=0.01)
        page = parse(html_report.render(env))
        assert set(plots(page)) == {
            "arms",
            "forest",
            "outcomes",
            "failure-modes",
            "tokens",
            "cost",
            "trajectory",
            "gold-rank",
        } - {"failure-modes"}
        assert empty(page) == {"failure-modes"}  # every akm run passed
        assert all(svg.select(class_="mark") for svg in plots(page).values())
        forest = {
            m.attrs["data-task"]: float(m.attrs["data-value"])
            for m in plots(page)["forest"].select("g", data_task=None)
        }
        assert forest == {t["id"]: t["delta"]["pass_rate"] for t in env["tasks"]}
        assert page.one("p", id="verdict").text == f"Verdict: {env['verdict']}"

    def test_two_arms_with_equal_figures_both_show(self) -> None:
        """Both arms pass every run at the same tokens: the second arm's point is moved aside and
        drawn as a ring, not hidden under the first (issue 29)."""
        env = bench(outcome=lambda i, arm, seed: "pass")
        tokens = plots(parse(html_report.render(env)))["tokens"]
        arms = {m.attrs["data-arm"]: m for m in tokens.select("g", data_summary="arm")}
        assert set(arms) == {"noakm", "akm"}
        first, second = (c.one("circle") for c in (arms["noakm"], arms["akm"]))
        assert first.attrs["cx"] != second.attrs["cx"] and first.attrs["cy"] == second.attrs["cy"]
        assert second.attrs["fill"] == "none" and arms["akm"].attrs["data-dodged"] == "1"

    def test_warnings_come_before_the_figures(self) -> None:
        """A below-floor warning qualifies the verdict: it sits right under it, not at the bottom."""
        env = build(
            [make_task("d0/t000"), make_task("d1/t001")],
            [sample("d0/t000", a, 1, "pass") for a in ("noakm", "akm")],
        )
        assert any("below the reporting floor" in w for w in env["warnings"])
        html = html_report.render(env)
        assert html.index('id="warnings"') < html.index('data-plot="arms"') < html.index('id="provenance"')

    def test_a_paired_interval_over_few_tasks_says_why_it_spans_everything(self) -> None:
        env = bench(n_tasks=3)
        note = next(p.text for p in parse(html_report.render(env)).select("p", class_="note") if "diamond" in p.text)
        assert "With 3 paired tasks the exact test's smallest p is 0.25, above 0.05" in note
        assert "smallest p" not in next(
            p.text
            for p in parse(html_report.render(bench(n_tasks=6))).select("p", class_="note")
            if "diamond" in p.text
        )

    def test_no_akm_arm(self) -> None:
        env = bench(arms=("noakm",))
        page = parse(html_report.render(env))
        assert set(plots(page)) == {"arms", "outcomes", "tokens"}
        assert empty(page) == {"forest", "failure-modes", "cost", "trajectory"}
        assert "the report has no akm − noakm comparison" in page.one(data_empty_plot="forest").text
        assert page.one("table", id="tasks-table").one("thead").text == "tasknoakm"

    def test_all_harness_errors(self) -> None:
        env = bench(outcome=lambda i, arm, seed: "harness_error")
        assert env["verdict"].startswith("no valid runs")
        page = parse(html_report.render(env))
        assert set(plots(page)) == {"outcomes"}
        assert empty(page) == {"arms", "forest", "failure-modes", "tokens", "cost", "trajectory"}
        segments = plots(page)["outcomes"].select("rect", class_="segment")
        assert [(s.attrs["data-segment"], s.attrs["data-value"]) for s in segments] == [("harness_error", "12")] * 2
        assert "all 12 akm-arm runs ended in harness_error" in page.one(data_empty_plot="trajectory").text

    def test_no_tokens(self) -> None:
        page = parse(html_report.render(bench(tokens=None)))
        assert "tokens" not in plots(page) and {"tokens", "cost"} <= empty(page)
        assert {td.text for td in page.select("td", data_field="tokens_per_run")} == {"n/a"}

    def test_failures_and_costs_drawn(self) -> None:
        env = bench(outcome=lambda i, arm, seed: "fail" if seed == 1 else "pass", cost_usd=0.25)
        page = parse(html_report.render(env))
        modes = {
            m.attrs["data-label"]: int(m.attrs["data-count"])
            for m in plots(page)["failure-modes"].select("g", class_="mark")
        }
        assert modes == env["failure_modes"]["by_label"] and sum(modes.values()) == 4
        cost = plots(page)["cost"].select("g", data_summary="arm")
        assert [float(m.attrs["data-x"]) for m in cost] == [0.25, 0.25]

    def test_deterministic_and_escaped(self) -> None:
        env = bench()
        env["warnings"].append("<img src=x onerror=alert(1)> & more")
        a, b = html_report.render(env), html_report.render(json.loads(json.dumps(env)))
        assert a == b
        assert "<img" not in a and "&lt;img src=x onerror=alert(1)&gt; &amp; more" in a
        assert "<script" not in a and "default-src 'none'" in a

    def test_forest_shows_the_largest_deltas_when_there_are_many(self) -> None:
        env = bench(
            n_tasks=html_plots.FOREST_CAP + 30,
            outcome=lambda i, arm, seed: "pass" if arm == "akm" or seed <= i % 4 else "fail",
        )
        page = parse(html_report.render(env))
        marks = plots(page)["forest"].select("g", data_task=None)
        assert len(marks) == html_plots.FOREST_CAP
        shown = sorted(abs(float(m.attrs["data-value"])) for m in marks)
        left_out = sorted(abs(t["delta"]["pass_rate"]) for t in env["tasks"])[
            : len(env["tasks"]) - html_plots.FOREST_CAP
        ]
        assert max(left_out) <= min(shown)
        assert "the other 30 are in the per-task table" in page.text
        assert len(page.one("table", id="tasks-table").one("tbody").select("tr")) == html_plots.FOREST_CAP + 30

    def test_long_task_ids_fit(self) -> None:
        long_id = "domain/" + "a-very-long-task-name-" * 4
        tasks = [make_task(long_id)]
        samples = [sample(long_id, arm, 1, "pass" if arm == "akm" else "fail") for arm in ("noakm", "akm")]
        forest = plots(parse(html_report.render(build(tasks, samples, seeds=1))))["forest"]
        mark = forest.one("g", data_task=long_id)
        label = mark.one("text").text
        assert len(label) == svg.MAX_LABEL and label.startswith("domain/a-very") and "…" in label
        assert mark.attrs["data-label"] == long_id and long_id in mark.one("title").text
        assert float(mark.one("text").attrs["x"]) - len(label) * svg.CHAR_W >= 0  # starts inside the plot

    @pytest.mark.parametrize(
        "rel",
        [
            "/etc/passwd",
            "../x.jsonl",
            "transcripts/../../x",
            "https://example.com/t",
            "javascript:alert(1)",
            "a\\b",
            "",
            None,
            3,
        ],
    )
    def test_no_link_outside_the_report_dir(self, rel: object) -> None:
        assert html_report.transcript_href(rel) is None

    @pytest.mark.parametrize(
        ("c1", "n1", "c2", "n2"), [(3, 3, 0, 3), (1, 5, 4, 5), (0, 1, 1, 1), (7, 10, 7, 10), (2, 9, 5, 6)]
    )
    def test_task_interval_is_newcombes(self, c1: int, n1: int, c2: int, n2: int) -> None:
        """The forest plot's interval per task against statsmodels' Newcombe (hybrid score) interval."""
        tasks = [make_task("d/t")]
        samples = [sample("d/t", "akm", s + 1, "pass" if s < c1 else "fail") for s in range(n1)]
        samples += [sample("d/t", "noakm", s + 1, "pass" if s < c2 else "fail") for s in range(n2)]
        t = build(tasks, samples, seeds=max(n1, n2))["tasks"][0]
        d, low, high = html_plots.task_delta_interval(t["akm"], t["noakm"])  # type: ignore[misc]
        ref = confint_proportions_2indep(c1, n1, c2, n2, method="newcomb", compare="diff")
        assert d == pytest.approx(c1 / n1 - c2 / n2)
        assert (low, high) == pytest.approx((max(ref[0], -1), min(ref[1], 1)), abs=1e-9)


class TestReportDir:
    def _store(self, root: Path, env: dict[str, Any], skip: int = 0) -> Path:
        store = root / "store"
        store.mkdir(mode=0o700)
        store.chmod(0o700)
        for r in env["runs"][skip:]:
            path = store / r["transcript"]
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            path.write_text(f'{{"run": "{r["task_id"]} {r["arm"]} {r["seed"]}"}}\n')
            path.chmod(0o600)
        return store

    def test_files_readable_and_transcripts_copied(self, tmp_path: Path) -> None:
        env = bench()
        store = self._store(tmp_path, env)
        old = os.umask(0o077)  # a private umask must not make the artifact private
        try:
            paths = report_files.write(tmp_path / "out", env, store)
        finally:
            os.umask(old)
        assert [p.name for p in paths] == ["report.json", "summary.md", "report.html"]
        assert stat.S_IMODE((tmp_path / "out").stat().st_mode) == 0o755
        assert all(stat.S_IMODE(p.stat().st_mode) == 0o644 for p in paths)
        written = json.loads(paths[0].read_text())
        for r in written["runs"]:
            copy = tmp_path / "out" / r["transcript"]
            assert copy.read_bytes() == (store / r["transcript"]).read_bytes()
            assert stat.S_IMODE(copy.stat().st_mode) == 0o644 and stat.S_IMODE(copy.parent.stat().st_mode) == 0o755
        links = {a.attrs["href"] for a in parse(paths[2].read_text()).one("table", id="runs-table").select("a")}
        assert links == {r["transcript"] for r in written["runs"]}

    def test_missing_transcript_is_not_linked(self, tmp_path: Path) -> None:
        env = bench()
        store = self._store(tmp_path, env, skip=2)
        paths = report_files.write(tmp_path / "out", env, store)
        written = json.loads(paths[0].read_text())
        assert [r["transcript"] for r in written["runs"][:2]] == [None, None]
        assert all((tmp_path / "out" / r["transcript"]).is_file() for r in written["runs"][2:])
        assert env["runs"][0]["transcript"] is not None  # the caller's envelope is left alone

    def test_stale_transcripts_removed_and_store_never_touched(self, tmp_path: Path) -> None:
        env = bench()
        store = self._store(tmp_path, env)
        stale = tmp_path / "out" / "transcripts" / "old-run" / "x.jsonl"
        stale.parent.mkdir(parents=True)
        stale.write_text("old\n")
        report_files.write(tmp_path / "out", env, store)
        assert not stale.exists() and not stale.parent.exists()
        before = sorted(p.relative_to(store) for p in store.rglob("*"))
        report_files.write(store, env, store)  # the report written into the store itself: links already resolve
        assert sorted(p.relative_to(store) for p in store.rglob("*") if p.parent != store) == [
            p for p in before if (store / p).parent != store
        ]
        assert all(stat.S_IMODE((store / r["transcript"]).stat().st_mode) == 0o600 for r in env["runs"])
        assert stat.S_IMODE(store.stat().st_mode) == 0o700

    def test_store_from_provenance(self, tmp_path: Path) -> None:
        env = bench()
        store = self._store(tmp_path, env)
        env["provenance"]["store"] = str(store)
        report_files.write(tmp_path / "out", env)
        assert all((tmp_path / "out" / r["transcript"]).is_file() for r in env["runs"])


class TestSummaryCap:
    def test_small_report_lists_every_task(self) -> None:
        env = bench(n_tasks=MD_TASK_ROWS)
        md = render_markdown(env)
        assert (
            sum(line.startswith("| d") for line in md.split("## Per-task pass rates")[1].split("\n## ")[0].splitlines())
            == MD_TASK_ROWS
        )
        assert "tasks shown" not in md

    def test_large_report_lists_the_largest_deltas(self) -> None:
        n = MD_TASK_ROWS + 70
        env = bench(n_tasks=n, outcome=lambda i, arm, seed: "pass" if arm == "akm" or seed <= i % 4 else "fail")
        section = render_markdown(env).split("## Per-task pass rates")[1].split("\n## ")[0]
        rows = [line for line in section.splitlines() if line.startswith("| d")]
        assert len(rows) == MD_TASK_ROWS
        assert (
            f"{MD_TASK_ROWS} of {n} tasks shown (with the largest |delta|); all are in report.json and report.html"
            in section
        )
        shown = {line.split("|")[1].strip() for line in rows}
        biggest = sorted(env["tasks"], key=lambda t: (-abs(t["delta"]["pass_rate"]), t["id"]))[:MD_TASK_ROWS]
        assert shown == {t["id"] for t in biggest}
