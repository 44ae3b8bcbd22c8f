from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from pytest_akmbench.cell.checks import behaviour_problems, static_problems
from pytest_akmbench.cli.validate import validate
from pytest_akmbench.corpus.tasks import load_corpus
from pytest_akmbench.system.procs import ProcessTracker
from tests.support.corpus import standard_corpus, write_stash, write_task


@pytest.fixture
def roots(tmp_path: Path) -> tuple[Path, Path]:
    return standard_corpus(tmp_path)


class TestStatic:
    """`validate` finds what would make a benchmark unsound, without running anything."""

    def test_clean_corpus(self, roots: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
        """A sound corpus validates with exit status 0."""
        assert validate(*roots, []) == 0
        assert "3 tasks in 2 domains, 0 configs: 0 errors, 0 warnings" in capsys.readouterr().out

    def test_workspace_mentioning_akm(self, roots: tuple[Path, Path]) -> None:
        """A workspace file that tells the agent about akm is an error naming the file."""
        tasks_root, stashes = roots
        write_task(
            tasks_root, "alpha/leaky", workspace={"README.md": "Task.\n", "AGENTS.md": "Run `AKM search` first.\n"}
        )
        _, errors, _ = static_problems(tasks_root, stashes)
        assert errors == [
            f"{tasks_root / 'alpha/leaky/workspace/AGENTS.md'}: workspace mentions akm; workspaces must be arm-neutral (the arm adds akm)"
        ]

    def test_layer_mentioning_akm_is_reported_once(self, roots: tuple[Path, Path]) -> None:
        """A shared workspace layer that tells every arm to use akm is an error, named once."""
        tasks_root, stashes = roots
        layer = tasks_root / "base" / "domains" / "alpha" / "workspace"
        layer.mkdir(parents=True)
        (layer / "AGENTS.md").write_text("Always run akm search before coding.\n")
        _, errors, _ = static_problems(tasks_root, stashes)
        assert errors == [
            f"{layer / 'AGENTS.md'}: workspace mentions akm; workspaces must be arm-neutral (the arm adds akm)"
        ]

    def test_missing_solution_and_gold_ref(self, roots: tuple[Path, Path]) -> None:
        """Every task needs a solution; a gold_ref must name an asset of its stash."""
        tasks_root, stashes = roots
        write_task(tasks_root, "alpha/unsolved", solve=None, extra={"gold_ref": "skill:nowhere"})
        _, errors, _ = static_problems(tasks_root, stashes)
        assert any("alpha/unsolved/task.yaml: solution: no solution/solve.sh" in e for e in errors)
        assert any("gold_ref: 'skill:nowhere' is not an asset of stash 'st'" in e for e in errors)
        write_task(tasks_root, "alpha/found", extra={"gold_ref": "skill:howto"})
        _, errors, _ = static_problems(tasks_root, stashes)
        assert not any("alpha/found" in e for e in errors)

    def test_asset_leaking_the_answer_warns(self, tmp_path: Path) -> None:
        """A stash asset that contains a literal the verifier pins is a warning."""
        answer = "tidectl drain --window 15m --target cell-7"
        write_stash(tmp_path / "stashes", assets={"knowledge/cheat.md": f"Just run: {answer}\n"})
        write_task(tmp_path / "tasks", "a/drain", verify=f'grep -qF "{answer}" commands.txt\n')
        write_task(tmp_path / "tasks", "a/regexy", verifier="regex", extra={"expected_match": r"run: tidectl drain"})
        _, errors, warnings = static_problems(tmp_path / "tasks", tmp_path / "stashes")
        assert errors == []
        assert any(f"verifier pins {answer!r}" in w and "cheat.md" in w for w in warnings)
        assert any("a/regexy/task.yaml: expected_match: the answer pattern matches stash asset" in w for w in warnings)

    def test_config_checked_too(
        self, roots: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A config naming an unknown task fails validation, naming the file."""
        cfg = tmp_path / "bad.json"
        cfg.write_text('{"schemaVersion": 1, "tasks": ["gamma/x"]}')
        assert validate(*roots, [cfg]) == 1
        assert f"error: {cfg}: tasks: task not found: 'gamma/x'" in capsys.readouterr().out


class TestBehaviour:
    """Soundness: the untouched workspace fails, the solution passes, the verifier repeats itself."""

    def problems(self, tmp_path: Path, **task: object) -> list[str]:
        write_stash(tmp_path / "stashes")
        write_task(tmp_path / "tasks", "a/t", **task)  # type: ignore[arg-type]
        task_obj = load_corpus(tmp_path / "tasks", tmp_path / "stashes").tasks[0]
        (tmp_path / "work").mkdir()
        return behaviour_problems(task_obj, tmp_path / "work", ProcessTracker(f"test-validate/{uuid.uuid4().hex}"))

    def test_sound_task(self, tmp_path: Path) -> None:
        """The standard script task has no problem."""
        assert self.problems(tmp_path) == []

    def test_verifier_passing_on_untouched_workspace(self, tmp_path: Path) -> None:
        """A verifier that accepts doing nothing is reported."""
        assert self.problems(tmp_path, verify="exit 0\n") == [
            "verifier passes on the untouched workspace: doing nothing would solve the task"
        ]

    def test_solution_that_does_not_pass(self, tmp_path: Path) -> None:
        """A solution that does not satisfy the verifier is reported with the verifier's words."""
        found = self.problems(
            tmp_path,
            solve="echo goodbye > out.txt\n",
            verify='grep -qx hello out.txt || { echo "out.txt is wrong"; exit 1; }\n',
        )
        assert found == ["solution does not pass its verifier (exit 1): out.txt is wrong"]

    def test_nondeterministic_verifier(self, tmp_path: Path) -> None:
        """A verifier whose answer changes between two runs is reported."""
        # It flips its answer through a file in the workspace (each run has a HOME of its own):
        # pass, then fail.
        verify = 'f=.flip; if [ -e "$f" ]; then rm "$f"; exit 1; else touch "$f"; grep -qx hello out.txt; fi\n'
        found = self.problems(tmp_path, verify=verify)
        assert found == ["verifier is not deterministic on the solution: pass then fail"]


def test_soundness_mode_names_the_broken_task(pytester: pytest.Pytester) -> None:
    """--bench-soundness gives one item per task and fails the broken one by name."""
    standard_corpus(pytester.path)
    write_task(pytester.path / "corpus" / "tasks", "beta/too-easy", verify="exit 0\n")
    pytester.makeini("[pytest]\nbench_corpus = corpus/tasks\nbench_stashes = corpus/stashes\n")
    pytester.runpytest("corpus", "--bench-agent", "nop", "--bench-arms", "noakm", "--bench-seeds", "1")
    bench_report = (pytester.path / ".akmbench" / "report" / "report.json").read_bytes()
    result = pytester.runpytest("corpus", "--bench-soundness")
    result.assert_outcomes(passed=3, failed=1)
    # Its own report, beside the bench's, which it leaves as it was (issue 29, item 10: it was
    # replaced by the soundness report).
    assert (pytester.path / ".akmbench" / "report" / "report.json").read_bytes() == bench_report
    result.stdout.fnmatch_lines(
        [
            "beta/too-easy: verifier passes on the untouched workspace*",
            "FAILED corpus/tasks/beta/too-easy/task.yaml::soundness*",
        ]
    )
    # The results are the report's: one row per task, the broken one named, no runs.
    env = json.loads((pytester.path / ".akmbench" / "report" / "soundness" / "report.json").read_text())
    assert env["runs"] == []
    assert env["verdict"].startswith("corpus NOT sound: 1 of 4 checked tasks fail their checks (beta/too-easy: ")
    rows = {r["task_id"]: r for r in env["soundness"]["by_task"]}
    assert rows["beta/too-easy"]["checks"] == {
        "nop_fails": False,
        "solution_passes": True,
        "repeatable": True,
        "akm_finds_gold": None,
    }
    assert sum(r["sound"] for r in rows.values()) == 3
    assert "## Corpus soundness" in (pytester.path / ".akmbench" / "report" / "soundness" / "summary.md").read_text()
    result.stdout.fnmatch_lines([f"report: {pytester.path / '.akmbench' / 'report' / 'soundness' / 'report.json'}"])
    # The terminal summary says what the check showed; a soundness run has no arm to call "not run".
    result.stdout.fnmatch_lines(["corpus NOT sound: 1 of 4 checked tasks*"])
    result.stdout.no_fnmatch_line("*: not run")


def test_listing_soundness_items_writes_no_report(pytester: pytest.Pytester) -> None:
    """--co runs no check: the last report stays as it was."""
    standard_corpus(pytester.path)
    pytester.makeini("[pytest]\nbench_corpus = corpus/tasks\nbench_stashes = corpus/stashes\n")
    result = pytester.runpytest("corpus", "--bench-soundness", "--co", "-q")
    result.stdout.fnmatch_lines(["*beta/regex-task/task.yaml::soundness"])
    assert not (pytester.path / ".akmbench" / "report").exists()
