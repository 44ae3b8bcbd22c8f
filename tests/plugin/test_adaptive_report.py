"""Adaptive runs and spend caps where a user meets them after the run: the offline ``report``
command, report.html, and the run config's fields (docs/adaptive.md, docs/report.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.plugin.test_adaptive import ARGS, BENCH_AGENT, BENCH_FILES, runs_logged
from tests.support.bench import read_report
from tests.support.dom import parse
from tests.support.remote import SLEEP_AGENT, agent_log, bench_argv, copy_project, make_project, records

ADAPTIVE = ["--bench-floor", "2", "--bench-max-seeds", "5"]
# The bench fixture reads these from this module: tests/plugin/test_adaptive.py's project.
BENCH_AGENT, BENCH_FILES = BENCH_AGENT, BENCH_FILES
SAME = ("adaptive", "complete", "spend", "verdict")


def offline(base: Path, *extra: str) -> tuple[int, str, dict[str, Any]]:
    """``python -m pytest_akmbench report`` on the bench's store, into ``offline/``."""
    cmd = [sys.executable, "-m", "pytest_akmbench", "report", "--agent", "policy", "--out", "offline", *extra]
    proc = subprocess.run(cmd, cwd=base, capture_output=True, text=True, timeout=120)
    path = base / "offline" / "report.json"
    return proc.returncode, proc.stdout + proc.stderr, json.loads(path.read_text()) if path.exists() else {}


def same_runs(a: dict[str, Any], b: dict[str, Any]) -> bool:
    cells = [{(r["task_id"], r["arm"], r["seed"], r["outcome"]) for r in e["runs"]} for e in (a, b)]
    return cells[0] == cells[1]


def config(base: Path, **fields: Any) -> Path:
    path = base / "run.json"
    path.write_text(json.dumps({"schemaVersion": 1, "agent": "policy", **fields}))
    return path


class TestOfflineReport:
    def test_a_decisive_run_rebuilds_to_the_same_report(self, bench: pytest.Pytester) -> None:
        """The store of a decisive run (floor 2, at most 5) gives the offline command the same adaptive
        block, completeness, spend and verdict: its 12 NOT NEEDED cells are not missing."""
        bench.runpytest(*ARGS, *ADAPTIVE, "--bench-report", "out").assert_outcomes(passed=9, failed=9)
        code, out, rebuilt = offline(bench.path)
        assert code == 0, out
        session = read_report(bench.path)
        assert {k: rebuilt[k] for k in SAME} == {k: session[k] for k in SAME}
        assert rebuilt["adaptive"]["stopping_reason"] == "decisive" and rebuilt["complete"] is True
        assert same_runs(rebuilt, session) and len(rebuilt["runs"]) == 18
        assert "## Adaptive seeds" in (bench.path / "offline" / "summary.md").read_text()

    def test_a_capped_adaptive_run_rebuilds_with_its_cap(self, bench: pytest.Pytester) -> None:
        """A cap that stopped the rounds: the offline report has the same spend block (cap reached,
        27 cells not run), the same unfinished adaptive block and is incomplete, as the session said."""
        cap = ["--bench-budget-run-tokens", "300"]
        bench.runpytest(*ARGS, *ADAPTIVE, *cap, "--bench-report", "out").assert_outcomes(passed=1, failed=2, skipped=27)
        code, out, rebuilt = offline(bench.path)
        assert code == 0, out
        session = read_report(bench.path)
        assert rebuilt["spend"]["cap"] == session["spend"]["cap"]
        assert session["spend"]["cap"]["not_run"] == 27 and session["spend"]["cap"]["reached"] is True
        assert {k: rebuilt[k] for k in SAME} == {k: session[k] for k in SAME}
        assert rebuilt["complete"] is False and rebuilt["adaptive"]["stopping_reason"] is None
        assert rebuilt["warnings"][0].startswith("stopped: spend cap 300 tokens reached")

    def test_a_run_without_its_record_is_rebuilt_from_the_run_config(self, bench: pytest.Pytester) -> None:
        """A run killed before it could record itself: the run config's until/maxSeeds, with the
        adaptive default floor the run used (2, not the fixed design's 3), give the same plan (the
        barrier's wait, known only to the session, is 0)."""
        path = config(bench.path, until="decisive", maxSeeds=5)
        bench.runpytest("corpus", "--bench-config", str(path), "--bench-report", "out", "-p", "no:cacheprovider")
        (bench.path / ".akmbench" / "store" / "runs.jsonl").unlink()
        code, out, rebuilt = offline(bench.path, "--config", str(path))
        assert code == 0, out
        session = read_report(bench.path)
        keep = [k for k in session["adaptive"] if k != "barrier_wait_s"]
        assert {k: rebuilt["adaptive"][k] for k in keep} == {k: session["adaptive"][k] for k in keep}
        assert rebuilt["complete"] is True and same_runs(rebuilt, session)
        _, _, fixed = offline(bench.path)  # without the config nothing says the run was adaptive
        assert "adaptive" not in fixed

    def test_the_page_has_the_looks_of_the_json(self, bench: pytest.Pytester) -> None:
        """report.html's "Adaptive seeds" section: the headline, the stopping reason and every look's
        figures are the JSON's; the spend section is there too."""
        bench.runpytest(*ARGS, *ADAPTIVE, "--bench-report", "out")
        block = read_report(bench.path)["adaptive"]
        page = parse((bench.path / "out" / "report.html").read_text())
        assert page.one("h2", id="adaptive").text == "Adaptive seeds"
        assert page.one("p", id="adaptive-headline").text.startswith("adaptive seeds: 2 looks, stopped: decisive")
        facts = {
            td.attrs["data-field"]: json.loads(td.attrs["data-value"])
            for td in page.one(id="adaptive-facts").select("td")
        }
        assert facts["stopping_reason"] == "decisive" == block["stopping_reason"]
        keys = ("lead_needed", "floor_lift", "cells_used", "cells_max")
        assert {k: facts[k] for k in keys} == {k: block[k] for k in keys}
        rows = page.one("table", id="adaptive-looks").select("tr", data_look=None)
        shown = [
            {td.attrs["data-field"]: json.loads(td.attrs["data-value"]) for td in row.select("td")} for row in rows
        ]
        assert shown == block["history"] and len(shown) == 2
        assert page.one("table", id="spend-table") is not None


class TestRunConfig:
    def test_the_config_sets_the_design_and_the_options_override_it(self, bench: pytest.Pytester) -> None:
        """until/floor/maxSeeds in the run config make the run adaptive; --bench-max-seeds wins over it."""
        (bench.path / "policy").write_text("all")  # settled after the floor
        path = config(bench.path, until="decisive", floor=2, maxSeeds=6)
        bench.runpytest("corpus", "--bench-config", str(path), "--bench-report", "out")
        block = read_report(bench.path)["adaptive"]
        assert (block["floor"], block["max_seeds"], block["cells_max"], block["stopping_reason"]) == (
            2,
            6,
            36,
            "settled",
        )
        bench.runpytest("corpus", "--bench-config", str(path), "--bench-max-seeds", "3", "--bench-report", "out")
        assert read_report(bench.path)["adaptive"]["max_seeds"] == 3

    def test_a_cap_in_the_config_and_its_override(self, bench: pytest.Pytester) -> None:
        """budgetRunTokens stops a fixed run as the option does; --bench-budget-run-tokens overrides it."""
        path = config(bench.path, seeds=2, budgetRunTokens=300)
        result = bench.runpytest(
            "corpus", "--bench-config", str(path), "--bench-report", "out", "-p", "no:xdist", "-rs"
        )
        result.assert_outcomes(passed=1, failed=2, skipped=9)
        cap = read_report(bench.path)["spend"]["cap"]
        assert (cap["kind"], cap["limit"], cap["reached"], cap["not_run"]) == ("tokens", 300, True, 9)
        assert f"{path}: budgetRunTokens)" in result.stdout.str()  # the skip reason says where the cap was set
        bench.runpytest(
            "corpus", "--bench-config", str(path), "--bench-budget-run-tokens", "100000", "--bench-report", "out"
        )
        assert read_report(bench.path)["spend"]["cap"]["reached"] is False

    @pytest.mark.parametrize(
        ("fields", "message"),
        [
            ({"until": "sometimes"}, "until: unknown value 'sometimes'; the one choice is decisive"),
            ({"until": "decisive", "maxSeeds": 0}, "maxSeeds: 0 is not a whole number of seeds of at least 1"),
            ({"budgetUsd": -1}, "budgetUsd: -1 is not a positive number of US dollars, e.g. 2.50"),
            ({"budgetRunTokens": "lots"}, 'budgetRunTokens: expected int, got "lots"'),
        ],
    )
    def test_bad_values_are_one_line_naming_the_file(
        self, bench: pytest.Pytester, fields: dict[str, Any], message: str
    ) -> None:
        path = config(bench.path, **fields)
        result = bench.runpytest("corpus", "--bench-config", str(path))
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert f"{path}: {message}" in result.stderr.str()
        assert "Traceback" not in result.stderr.str() and not runs_logged(bench.path)


class TestRemoteCap:
    def test_the_controller_enforces_the_cap_for_a_remote_worker(self, tmp_path: Path) -> None:
        """A remote worker (--tx popen//chdir=<copy>) cannot read the store: the controller checks the
        cap when the worker claims a cell. 110 tokens a cell under a 200-token cap: two cells run (one
        more may start as the second is stored, the overshoot a local worker has too), the rest are
        skipped as `not run: spend cap` on the worker and stored nowhere; the report has the cap block."""
        measured = 'token_measurement="measured", tokens={"input": 100, "output": 10, "total": 110}'
        ctl = make_project(tmp_path / "ctl")
        (ctl / "conftest.py").write_text(SLEEP_AGENT.replace('token_measurement="unsupported"', measured))
        far = copy_project(ctl, tmp_path / "far")
        argv = bench_argv("--tx", f"popen//chdir={far}", "--bench-budget-run-tokens", "200", "-rs")
        proc = subprocess.run(argv, cwd=ctl, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, out
        ran = [line for line in agent_log(far) if line[0] == "start"]
        stored = records(ctl)
        assert 2 <= len(ran) <= 3 and len(stored) == len(ran) and not agent_log(ctl), out
        assert "not run: spend cap 200 tokens reached" in out and f"{len(ran)} passed, {6 - len(ran)} skipped" in out
        cap = json.loads((ctl / "report" / "report.json").read_text())["spend"]["cap"]
        assert (cap["reached"], cap["not_run"], cap["spent"]) == (True, 6 - len(ran), 110.0 * len(ran))
