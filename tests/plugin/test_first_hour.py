"""A newcomer's first hour: listing cells with nothing installed, a run config from any
directory, progress while cells run, and the --parallel messages."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import real_akm
from tests.support.agents import CALLS_AKM
from tests.support.bench import project
from tests.support.corpus import standard_corpus

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def bare(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A project with the standard corpus, run where neither opencode nor akm can be found."""
    project(pytester)
    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"]))
    for name in ("AKMBENCH_OPENCODE", "BENCH_OPENCODE_MODEL", "BENCH_MODEL", "BENCH_OPENCODE_CONFIG", "PYTEST_ADDOPTS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(pytester.path / "xdg"))  # no user providers file
    return pytester


def cells(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if "task.yaml::" in line]


class TestListingNeedsNothing:
    """--co lists cells without opencode, a model or akm."""

    def test_readme_example(self, bare: pytest.Pytester) -> None:
        """`pytest corpus -k akm --bench-seeds 3 --co -q` used to exit 4 with "no model chosen"."""
        result = bare.runpytest_subprocess("corpus", "-k", "akm", "--bench-seeds", "3", "--co", "-q")
        assert result.ret == 0, result.stdout.str()
        assert len(cells(result)) == 3 * 3 and all("::akm-s" in line for line in cells(result))
        assert not (bare.path / ".akmbench").exists()

    def test_run_config(self, bare: pytest.Pytester) -> None:
        (bare.path / "configs").mkdir()
        (bare.path / "configs" / "quick.json").write_text(json.dumps({"schemaVersion": 1, "seeds": 2}))
        result = bare.runpytest_subprocess("--bench-config", "configs/quick.json", "--co", "-q")
        assert result.ret == 0, result.stdout.str()
        assert len(cells(result)) == 3 * 2 * 2

    def test_noakm_never_demands_akm(self, bare: pytest.Pytester) -> None:
        """-k noakm runs the control arm of an agent that calls akm without any akm installed;
        -k akm stops with one line saying where to get akm."""
        bare.makeconftest(CALLS_AKM)
        result = bare.runpytest_subprocess("corpus", "--bench-agent", "echo", "--bench-seeds", "1", "-k", "noakm")
        result.assert_outcomes(passed=3, deselected=3)
        result = bare.runpytest_subprocess("corpus", "--bench-agent", "echo", "--bench-seeds", "1", "-k", "akm")
        assert result.ret == 4
        errors = [line for line in result.errlines + result.outlines if line.startswith("ERROR:")]
        assert (
            len(errors) == 1 and "install-tools --akm-bundles DIR" in errors[0] and "-k noakm runs without" in errors[0]
        )

    def test_marker_selecting_no_akm_cell_never_demands_akm(self, bare: pytest.Pytester) -> None:
        """-m "cell(arm='noakm')" lists and runs the control arm without any akm installed, as
        -k noakm does; it used to stop with "akm not found"."""
        bare.makeconftest(CALLS_AKM)
        args = ["corpus", "--bench-agent", "echo", "--bench-seeds", "1"]
        result = bare.runpytest_subprocess(*args, "-m", "cell(arm='noakm')", "--co", "-q")
        assert result.ret == 0 and len(cells(result)) == 3, result.stdout.str()
        result = bare.runpytest_subprocess(*args, "-m", "cell(arm='noakm') or (slow and cell(domain='nowhere'))")
        result.assert_outcomes(passed=3, deselected=3)
        # An akm cell a marker may still select (a conftest can add `slow`) needs akm.
        result = bare.runpytest_subprocess(*args, "-m", "cell(arm='noakm') or slow")
        assert result.ret == 4
        errors = [line for line in result.errlines + result.outlines if line.startswith("ERROR:")]
        assert len(errors) == 1 and "install-tools --akm-bundles DIR" in errors[0]

    def test_validate(self, tmp_path: Path) -> None:
        """validate checks the shipped corpus and configs with no opencode or akm to be found."""
        path = os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])
        proc = subprocess.run(
            [sys.executable, "-m", "pytest_akmbench", "validate", "configs/quick.json", "configs/oracle.json"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            env={"PATH": path, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "xdg")},
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert ": 0 errors" in proc.stdout

    def test_validate_from_another_directory(self, tmp_path: Path) -> None:
        """Without --corpus, validate checks a config against its own project's corpus, as a
        run does; it used to say "corpus/tasks: tasks root is not a directory" outside the repo."""
        proc = subprocess.run(
            [sys.executable, "-m", "pytest_akmbench", "validate", str(ROOT / "configs" / "quick.json")],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        tasks = len(list((ROOT / "corpus" / "tasks").glob("*/*/task.yaml")))
        assert f"{tasks} tasks in" in proc.stdout and ": 0 errors" in proc.stdout


class TestCorpusWithoutTheIni:
    """Issue 29, item 10: `pytest corpus` in a project without the ini collected the verifiers'
    own tests/ as the project's tests and failed them; naming the corpus runs the bench."""

    def test_naming_the_corpus_lists_its_cells_and_nothing_of_its_tasks(self, pytester: pytest.Pytester) -> None:
        standard_corpus(pytester.path)
        result = pytester.runpytest_subprocess("corpus", "--co", "-q", "-p", "no:cacheprovider")
        assert result.ret == 0, result.stdout.str()
        listed = [line for line in result.outlines if "::" in line]
        assert len(listed) == 3 * 2 * 3 and all("task.yaml::" in line for line in listed), listed
        result = pytester.runpytest_subprocess("corpus/tasks/alpha", "--bench-agent", "oracle", "--bench-seeds", "1")
        result.assert_outcomes(passed=4)  # alpha's two tasks on both arms; no verifier test of theirs

    def test_a_directory_called_corpus_without_tasks_stays_the_projects(self, pytester: pytest.Pytester) -> None:
        (pytester.path / "corpus" / "tasks").mkdir(parents=True)
        (pytester.path / "corpus" / "test_texts.py").write_text("def test_one():\n    pass\n")
        pytester.runpytest_subprocess("corpus", "-p", "no:cacheprovider").assert_outcomes(passed=1)


class TestToolsWhereTheSetUpPutThem:
    """Issue 29, item 3: .tools/akm/<version>/akm, which .ci/main and install-tools build, is
    found as .tools/opencode is (a run of the akm arm used to exit 4: no akm on PATH)."""

    def test_the_newest_supported_akm_in_tools_serves_the_akm_arm(self, bare: pytest.Pytester) -> None:
        bare.makeconftest(CALLS_AKM)
        for version in ("0.7.0", "0.9.0"):
            real = real_akm.get(version)
            (bare.path / ".tools" / "akm" / version).mkdir(parents=True)
            (bare.path / ".tools" / "akm" / version / "akm").symlink_to(real.path)
        result = bare.runpytest_subprocess(
            "corpus", "--bench-agent", "echo", "--bench-seeds", "1", "--bench-tasks", "alpha/script-task", "-k", "akm"
        )
        result.assert_outcomes(passed=1, deselected=1)
        assert "akmbench: akm 0.9.0 at " in result.stdout.str()
        report = json.loads((bare.path / ".akmbench" / "report" / "report.json").read_text())
        assert report["provenance"]["akm_version"] == "0.9.0"


class TestConfigFromAnywhere:
    """A run config finds its project's corpus and opencode wherever pytest starts."""

    @pytest.mark.parametrize("form", ["space", "equals"])
    def test_shipped_config_from_another_directory(self, tmp_path: Path, form: str) -> None:
        config = str(ROOT / "configs" / "quick.json")
        args = ["--bench-config", config] if form == "space" else [f"--bench-config={config}"]
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args, "--co", "-q"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, out
        listed = [line for line in out.splitlines() if "task.yaml::" in line]
        wanted = json.loads((ROOT / "configs" / "quick.json").read_text())
        assert len(listed) == len(wanted["tasks"]) * len(wanted["arms"]) * wanted["seeds"], out
        assert "conftest" not in out and "not a directory" not in out


class TestProgress:
    """What a run says while and after it runs."""

    def test_verbose_status_live_count_and_arm_totals(self, bare: pytest.Pytester) -> None:
        bare.makeconftest(CALLS_AKM)
        result = bare.runpytest_subprocess(
            "corpus", "--bench-agent", "echo", "--bench-seeds", "1", "--bench-arms", "noakm", "-v", "-n", "2"
        )
        out = result.stdout.str()
        status = [line for line in result.outlines if line.startswith("  cell ")]
        assert len(status) == 3, out
        assert all(": pass, " in line and " s, 120 tokens, $0.0125 [" in line for line in status), out
        assert any(line.endswith("[3 done, 0 running, 0 left]") for line in status), out
        # pytest's own word stays as tools parse it: "PASSED <node id>", nothing between.
        assert (
            len([line for line in result.outlines if re.search(r"\] PASSED corpus/tasks/\S+::noakm-s1\s*$", line)]) == 3
        )
        assert "noakm: 360 tokens over 3 of 3 runs, cost $0.0375" in out
        assert "akmbench: agent echo 1 started (" in out
        for name in ("report.json", "summary.md", "report.html"):
            assert name in out


class TestParallel:
    """The --parallel messages name what was asked and what is done."""

    def test_twelve_warns_about_twelve(self, bare: pytest.Pytester) -> None:
        result = bare.runpytest_subprocess(
            "corpus", "--bench-agent", "nop", "--bench-seeds", "1", "--bench-arms", "noakm", "--parallel", "12"
        )
        out = result.stdout.str()
        assert "--parallel 12: clamped to 8 workers" in out and "--parallel 8 exceeds" not in out

    def test_zero_is_clamped_not_refused(self, bare: pytest.Pytester) -> None:
        result = bare.runpytest_subprocess(
            "corpus", "--bench-agent", "nop", "--bench-seeds", "1", "--bench-arms", "noakm", "--parallel", "0"
        )
        result.assert_outcomes(failed=3)
        assert "--parallel 0: clamped to 1 worker (no xdist)" in result.stdout.str()

    def test_bringing_up_nodes_is_said_once(self, bare: pytest.Pytester) -> None:
        """Under -q, off a terminal, xdist says "bringing up nodes..." when it starts the workers
        and again once they have collected: a bench said it twice (issue 29, item 10)."""
        result = bare.runpytest_subprocess(
            "corpus", "--bench-agent", "nop", "--bench-seeds", "1", "--bench-arms", "noakm", "-n", "2", "-q"
        )
        result.assert_outcomes(failed=3)
        assert result.outlines.count("bringing up nodes...") == 1

    def test_disabled_xdist_is_not_a_missing_one(self, bare: pytest.Pytester) -> None:
        result = bare.runpytest_subprocess("corpus", "--bench-agent", "nop", "--parallel", "2", "-p", "no:xdist")
        assert result.ret == 4
        err = result.stderr.str()
        assert "pytest-xdist is installed but disabled (-p no:xdist)" in err and "pip install" not in err
