"""report.html of a real bench run, loaded in a real browser (headless Chromium).

One bench run through the real opencode binary, the scripted model and real akm writes the
report; Chromium loads report.html from the report directory as a CI artifact would be opened.
The test reads the DOM the browser built: every plot rendered (laid out with a non-zero size,
every mark drawn inside it), and the numbers shown are those of report.json. A screenshot is
kept in .akmbench/test-artifacts/ for a person to look at.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_akmbench.report.render.fmt import num, signed
from pytest_akmbench.report.render.html_plots import task_delta_interval
from tests.support import browser, real_akm
from tests.support import opencode as oc
from tests.support.corpus import write_stash, write_task
from tests.support.dom import Element, parse

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / ".akmbench" / "test-artifacts" / "report-screenshot.png"
BUDGET = {"budget": {"tokens": 60000, "wallMs": 120000}}

# Measures what the browser laid out; added to a copy of the page (the report itself has no script).
PROBE = """<script>
for (const svg of document.querySelectorAll('svg.plot')) {
  const box = svg.getBoundingClientRect();
  svg.setAttribute('data-rendered', box.width + 'x' + box.height);
  for (const mark of svg.querySelectorAll('.mark')) {
    const b = mark.getBoundingClientRect();
    const inside = b.left >= box.left - 1 && b.right <= box.right + 1 && b.top >= box.top - 1 && b.bottom <= box.bottom + 1;
    mark.setAttribute('data-drawn', (b.width > 0 && b.height > 0 && inside) ? 'yes' : 'no ' + b.width + 'x' + b.height);
  }
}
document.body.setAttribute('data-probe', 'done');
</script>"""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bench of four tasks × two arms through real opencode and real akm; its report dir.

    Under xdist the workers of one test session share it: the first one runs it, the others wait
    for it (a lock file) rather than run the same bench again."""
    browser.chromium()
    opencode = oc.binary()  # skips only when no opencode is installed; a lookup bug fails
    akm = real_akm.get()
    session = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if session is None:
        return _bench(tmp_path_factory.mktemp("html-bench"), opencode, akm.path)
    base = tmp_path_factory.getbasetemp().parent / f"html-bench-{session}"
    base.mkdir(exist_ok=True)
    with open(base / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (base / "report" / "report.html").is_file():
            _bench(base, opencode, akm.path)
    return base / "report"


def _bench(base: Path, opencode: Path, akm: Path) -> Path:
    tasks, stashes = base / "corpus" / "tasks", base / "corpus" / "stashes"
    write_stash(stashes)
    write_task(tasks, "alpha/script-task", extra={**BUDGET, "gold_ref": "skill:howto"})
    write_task(
        tasks,
        "beta/regex-task",
        verifier="regex",
        solve="echo 'the answer is 42'\n",
        extra={**BUDGET, "expected_match": r"answer is 4\d"},
    )
    # Solved only where akm answers: passes on the akm arm, fails on noakm (a real delta).
    write_task(
        tasks,
        "gamma/needs-akm",
        solve="akm --help >/dev/null 2>&1 && echo hello > out.txt\n",
        extra={**BUDGET, "gold_ref": "skill:howto"},
    )
    write_task(tasks, "gamma/wrong-answer", solve="echo nope > out.txt\n", extra={**BUDGET, "gold_ref": "skill:howto"})
    (base / "pytest.ini").write_text(
        "[pytest]\nbench_corpus = corpus/tasks\nbench_stashes = corpus/stashes\n"
        f"bench_tmp = {base / 'cells'}\nbench_store = {base / 'store'}\nbench_report = {base / 'report'}\n"
        f"bench_opencode = {opencode}\nbench_akm = {akm}\n"
    )
    # Serially: under the suite's two workers a nested -n 2 only adds two workers' start-up
    # (tests/support/schedule.py); the report of an xdist run is tested in tests/plugin.
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "--bench-model",
            "scripted/oracle",
            "--bench-seeds",
            "1",
            "--bench-floor",
            "1",
        ],
        cwd=base,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert "html: " in proc.stdout, proc.stdout + proc.stderr
    return base / "report"


@pytest.fixture(scope="module")
def report(run: Path) -> dict[str, Any]:
    return json.loads((run / "report.json").read_text())


@pytest.fixture(scope="module")
def dom(run: Path, tmp_path_factory: pytest.TempPathFactory) -> Element:
    page = (run / "report.html").read_text()
    probe_dir = tmp_path_factory.mktemp("probe")
    probe = probe_dir / "report.html"
    # The page forbids every script; the copy allows inline script for the probe only.
    probe.write_text(
        page.replace("default-src 'none';", "default-src 'none'; script-src 'unsafe-inline';", 1).replace(
            "</body>", PROBE + "</body>"
        )
    )
    root = parse(browser.dump_dom(probe))
    assert root.one("body").attrs.get("data-probe") == "done", "the browser did not run the probe"
    return root


def test_report_dir_is_a_readable_artifact(run: Path, report: dict[str, Any]) -> None:
    """Report files 0644 under a 0755 dir; every run's transcript copied in, linked relatively."""
    assert stat.S_IMODE(run.stat().st_mode) & 0o755 == 0o755
    for name in ("report.json", "summary.md", "report.html"):
        assert stat.S_IMODE((run / name).stat().st_mode) == 0o644, name
    store = run.parent / "store"
    assert stat.S_IMODE(store.stat().st_mode) == 0o700  # the store stays private
    linked = [r["transcript"] for r in report["runs"]]
    assert len(linked) == 8 and all(linked), "every opencode run has a transcript"
    for rel in linked:
        copy = run / rel
        assert not Path(rel).is_absolute() and copy.is_file(), rel
        assert stat.S_IMODE(copy.stat().st_mode) == 0o644
        assert stat.S_IMODE((store / rel).stat().st_mode) == 0o600
        assert copy.read_bytes() == (store / rel).read_bytes()
        for parent in copy.relative_to(run).parents:
            assert stat.S_IMODE((run / parent).stat().st_mode) & 0o755 == 0o755
    html = (run / "report.html").read_text()
    assert "<script" not in html and "default-src 'none'" in html
    assert set(re.findall(r"https?://[^\"' ]+", html)) == {"http://www.w3.org/2000/svg"}


def test_the_run_has_what_the_plots_show(report: dict[str, Any]) -> None:
    """The bench is not trivial: a real delta, a failure mode, tokens and trajectories."""
    tasks = {t["id"]: t for t in report["tasks"]}
    assert tasks["gamma/needs-akm"]["akm"]["pass_rate"] == 1 and tasks["gamma/needs-akm"]["noakm"]["pass_rate"] == 0
    assert report["failure_modes"]["by_label"], report["failure_modes"]
    assert report["aggregate"]["akm"]["tokens_per_run"] > 0
    assert report["trajectory"]["akm"]["counts"]["runs_with_trajectory"] == 4


def test_every_plot_rendered_in_the_browser(dom: Element, report: dict[str, Any]) -> None:
    plots = {svg.attrs["data-plot"]: svg for svg in dom.select("svg", class_="plot")}
    empty = {p.attrs["data-empty-plot"] for p in dom.select(data_empty_plot=None)}
    has_cost = any((r["cost_usd"] or 0) > 0 for r in report["runs"])
    assert set(plots) == {"arms", "forest", "outcomes", "failure-modes", "tokens", "trajectory", "gold-rank"} | (
        {"cost"} if has_cost else set()
    )
    assert empty == (set() if has_cost else {"cost"})
    for name, svg in plots.items():
        width, height = (float(v) for v in svg.attrs["data-rendered"].split("x"))
        assert width > 100 and height > 20, (name, svg.attrs["data-rendered"])
        marks = svg.select(class_="mark")
        assert marks, name
        assert all(m.attrs["data-drawn"] == "yes" for m in marks), (name, [m.attrs["data-drawn"] for m in marks])


def _cells(row: Element) -> list[str]:
    return [td.text.strip() for td in row.select("td")]


def test_numbers_shown_equal_report_json(dom: Element, report: dict[str, Any]) -> None:
    agg = report["aggregate"]
    assert dom.one("p", id="verdict").text.strip() == f"Verdict: {report['verdict']}"
    for arm in ("noakm", "akm"):
        row = dom.one("table", id="arms-table").one("tr", data_arm=arm)
        shown = {td.attrs["data-field"]: td.text for td in row.select("td", data_field=None)}
        a = agg[arm]
        assert shown["pass_rate"] == num(a["pass_rate"])
        assert shown["pass_rate_ci"] == f"[{num(a['pass_rate_ci']['low'])}, {num(a['pass_rate_ci']['high'])}]"
        assert shown["passes"] == f"{a['passes']}/{a['valid_runs']}"
        assert shown["tokens_per_run"] == num(a["tokens_per_run"], 0)
        mark = dom.one("svg", data_plot="arms").one("g", data_arm=arm)
        assert float(mark.attrs["data-value"]) == a["pass_rate"]
        assert float(mark.attrs["data-low"]) == a["pass_rate_ci"]["low"]
        outcomes = dom.one("svg", data_plot="outcomes").one("g", data_label=arm)
        counted = {
            s.attrs["data-segment"]: int(s.attrs["data-value"]) for s in outcomes.select("rect", class_="segment")
        }
        assert counted == {
            o: n
            for o in ("pass", "fail", "budget_exceeded", "harness_error")
            if (n := sum(r["outcome"] == o and r["arm"] == arm for r in report["runs"]))
        }


def test_forest_plot_draws_each_task_delta_where_report_json_puts_it(dom: Element, report: dict[str, Any]) -> None:
    forest = dom.one("svg", data_plot="forest")
    ticks = {float(t.attrs["data-value"]): float(t.one("line").attrs["x1"]) for t in forest.select("g", class_="tick")}
    x0, x1 = ticks[0.0], ticks[1.0]
    tasks = {t["id"]: t for t in report["tasks"]}
    marks = forest.select("g", data_task=None)
    assert {m.attrs["data-task"] for m in marks} == set(tasks)
    for mark in marks:
        t = tasks[mark.attrs["data-task"]]
        delta = t["akm"]["pass_rate"] - t["noakm"]["pass_rate"]
        assert float(mark.attrs["data-value"]) == delta == t["delta"]["pass_rate"]
        cx = float(mark.one("circle").attrs["cx"])
        assert abs(x0 + delta * (x1 - x0) - cx) <= 0.1, (t["id"], cx)
        _, low, high = task_delta_interval(t["akm"], t["noakm"])  # type: ignore[misc]
        line = mark.one("line", class_="ci")
        assert abs(x0 + low * (x1 - x0) - float(line.attrs["x1"])) <= 0.1
        assert f"= {signed(delta)} [{signed(low)}, {signed(high)}]" in mark.one("title").text
    paired = agg_paired = report["aggregate"]["delta"]["paired"]
    diamond = forest.one("g", data_summary="paired")
    assert float(diamond.attrs["data-value"]) == agg_paired["delta"]
    assert (float(diamond.attrs["data-low"]), float(diamond.attrs["data-high"])) == (paired["low"], paired["high"])


def test_trajectory_and_runs_match_report_json(dom: Element, report: dict[str, Any], run: Path) -> None:
    counts = report["trajectory"]["akm"]["counts"]
    bars = {m.attrs["data-label"]: m for m in dom.one("svg", data_plot="trajectory").select("g", class_="mark")}
    assert int(bars["correct_asset_loaded"].attrs["data-count"]) == counts["correct_asset_loaded"]
    assert int(bars["feedback_recorded"].attrs["data-count"]) == counts["feedback_recorded"]
    modes = {
        m.attrs["data-label"]: int(m.attrs["data-count"])
        for m in dom.one("svg", data_plot="failure-modes").select("g", class_="mark")
    }
    assert modes == report["failure_modes"]["by_label"]
    rows = dom.one("table", id="runs-table").one("tbody").select("tr")
    assert len(rows) == len(report["runs"])
    for row, r in zip(rows, report["runs"]):
        cells = _cells(row)
        assert cells[:4] == [r["task_id"], r["arm"], str(r["seed"]), r["outcome"]]
        assert cells[5] == str(r["tokens"]["total"])
        href = row.one("a").attrs["href"]
        assert href == r["transcript"] and (run / href).is_file()


def test_screenshot(run: Path, dom: Element) -> None:
    """A picture of the page as the browser drew it, kept for a person to look at."""
    png = browser.screenshot(run / "report.html", run.parent / "screenshot.png")
    head = png.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(head[16:20], "big") == 1100
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(png, SCREENSHOT)


def test_offline_report_command_writes_the_same_artifact(run: Path, report: dict[str, Any]) -> None:
    """``python -m pytest_akmbench report`` rebuilds the page and copies the transcripts too, of
    both arms: the akm arm's akm comes from its samples (issue 29)."""
    base = run.parent
    out = base / "offline-report"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_akmbench",
            "report",
            "--store",
            str(base / "store"),
            "--out",
            str(out),
            "--corpus",
            str(base / "corpus" / "tasks"),
            "--stashes",
            str(base / "corpus" / "stashes"),
            "--seeds",
            "1",
            "--floor",
            "1",
        ],
        cwd=base,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"html: {out / 'report.html'}" in proc.stdout
    offline = json.loads((out / "report.json").read_text())
    transcripts = [r["transcript"] for r in report["runs"]]
    assert [r["transcript"] for r in offline["runs"]] == transcripts and len(transcripts) == 8
    assert all((out / rel).read_bytes() == (run / rel).read_bytes() for rel in transcripts)
    page = (out / "report.html").read_text()
    assert all(f'href="{rel}"' in page for rel in transcripts)
    assert stat.S_IMODE((out / "report.html").stat().st_mode) == 0o644
