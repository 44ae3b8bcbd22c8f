"""Tests for pytest_akmbench.cell.verifiers: each verifier kind really runs on a real workspace.

The rule under test: a check that fails is a fail (the agent's doing); only a fault of the corpus
or the environment (no verify.sh, a pytest verifier that collects nothing, pytest crashing) is an
``error``, which the runner records as a harness error and runs again.
"""

from __future__ import annotations

import ast
import os
import shutil
import sys
import sysconfig
import uuid
from pathlib import Path
from typing import Any

import pytest

from pytest_akmbench.cell.verifiers import TAIL_CHARS, Verdict, verifier_env, verify
from pytest_akmbench.corpus.tasks import Task, load_corpus
from pytest_akmbench.system.procs import ProcessTracker
from tests.support.bwrap import require_bwrap
from tests.support.corpus import write_stash, write_task


class Case:
    """A one-task corpus on disk and a workspace copy to verify."""

    def __init__(self, tmp_path: Path) -> None:
        self.base = tmp_path
        self.tasks, self.stashes = tmp_path / "corpus" / "tasks", tmp_path / "corpus" / "stashes"
        write_stash(self.stashes)

    def task(self, task_id: str, **kw: Any) -> Task:
        write_task(self.tasks, task_id, **kw)
        return load_corpus(self.tasks, self.stashes).by_id()[task_id]

    def verify(
        self,
        task: Task,
        *,
        files: dict[str, str] | None = None,
        final_text: str = "",
        env: dict[str, str] | None = None,
        timeout_s: float = 30.0,
    ) -> Verdict:
        workspace = self.base / "ws" / uuid.uuid4().hex
        workspace.mkdir(parents=True)
        for name, text in (files or {}).items():
            (workspace / name).write_text(text)
        scratch = self.base / "scratch" / uuid.uuid4().hex
        procs = ProcessTracker(f"test-verifiers/{uuid.uuid4().hex}")
        return verify(
            task,
            workspace=workspace,
            final_text=final_text,
            scratch=scratch,
            env=env if env is not None else {"PATH": os.environ["PATH"]},
            procs=procs,
            timeout_s=timeout_s,
        )


@pytest.fixture
def case(tmp_path: Path) -> Case:
    return Case(tmp_path)


class TestScript:
    def test_pass_and_fail(self, case: Case) -> None:
        task = case.task("a/s")
        ok = case.verify(task, files={"out.txt": "hello\n"})
        assert (ok.passed, ok.exit_code, ok.error, ok.timed_out) == (True, 0, None, False)
        bad = case.verify(task, files={"out.txt": "bye\n"})
        assert (bad.passed, bad.exit_code, bad.error) == (False, 1, None)

    def test_any_exit_status_is_a_plain_failure(self, case: Case) -> None:
        """Exit 127 from the script (a command it runs is missing) is the agent's failure, not ours."""
        verdict = case.verify(case.task("a/s127", verify="echo checking; exit 127\n"))
        assert (verdict.passed, verdict.exit_code, verdict.error) == (False, 127, None)
        assert "checking" in verdict.output

    def test_missing_script_is_an_error(self, case: Case) -> None:
        task = case.task("a/gone")
        (task.task_dir / "verify.sh").unlink()
        verdict = case.verify(task)
        assert verdict == Verdict(False, None, "", error=f"verify.sh not found at {task.task_dir / 'verify.sh'}")

    def test_no_bash_is_an_error(self, case: Case, tmp_path: Path) -> None:
        empty = tmp_path / "empty-bin"
        empty.mkdir()
        verdict = case.verify(case.task("a/nobash"), env={"PATH": str(empty)})
        assert verdict == Verdict(False, None, "", error="bash not found on PATH; install bash to run script verifiers")

    def test_a_bash_that_cannot_start_is_an_error(self, case: Case, tmp_path: Path) -> None:
        """A broken bash (not a program) is the environment's fault: an error, not the agent's fail."""
        broken = tmp_path / "broken-bin"
        broken.mkdir()
        (broken / "bash").write_bytes(b"\x00\x01 not a program")
        (broken / "bash").chmod(0o755)
        verdict = case.verify(case.task("a/badbash"), env={"PATH": str(broken)})
        assert (verdict.passed, verdict.exit_code, verdict.output, verdict.timed_out) == (False, None, "", False)
        assert verdict.error is not None and verdict.error.startswith("verifier failed to start: ")

    def test_hang_is_a_timed_out_failure(self, case: Case) -> None:
        verdict = case.verify(case.task("a/hang", verify="sleep 30\n"), timeout_s=0.5)
        assert (verdict.passed, verdict.timed_out, verdict.error) == (False, True, None)
        assert verdict.output.endswith("verifier timed out after 0.5s")

    def test_tail_is_the_end_of_the_output(self, case: Case) -> None:
        verdict = case.verify(case.task("a/loud", verify=f"yes x | head -c {TAIL_CHARS + 500}; echo END\n"))
        cut = len(verdict.output) - TAIL_CHARS
        assert cut > 0 and verdict.output.endswith("x\nEND\n")
        assert verdict.tail == f"[… {cut} earlier characters cut …]\n" + verdict.output[-TAIL_CHARS:]


class TestPytest:
    def test_pass_and_fail(self, case: Case) -> None:
        task = case.task("a/p", verifier="pytest")
        assert case.verify(task, files={"out.txt": "hello\n"}).passed is True
        failed = case.verify(task, files={"out.txt": "bye\n"})
        assert (failed.passed, failed.exit_code, failed.error) == (False, 1, None)
        assert "assert" in failed.output

    def test_no_tests_collected_is_an_error_not_a_fail(self, case: Case) -> None:
        """A tests/ directory without a test (a corpus fault) must not count against the agent."""
        task = case.task("a/empty", verifier="pytest", tests="def helper():\n    return 1\n")
        verdict = case.verify(task, files={"out.txt": "hello\n"})
        assert verdict.passed is False and verdict.exit_code == 5
        assert verdict.error == f"pytest verifier: no tests collected in {task.task_dir / 'tests'}"
        assert "no tests ran" in verdict.output  # pytest's own words stay in the transcript

    @pytest.mark.parametrize(
        ("conftest", "code", "why"),
        [
            ("def pytest_collection_modifyitems(items):\n    raise RuntimeError('corpus bug')\n", 3, "pytest crashed"),
            (
                "import pytest\n\ndef pytest_configure(config):\n    pytest.exit('bad', returncode=4)\n",
                4,
                "pytest usage error",
            ),
        ],
    )
    def test_pytest_crashing_on_the_corpus_is_an_error(self, case: Case, conftest: str, code: int, why: str) -> None:
        """A conftest.py of the task's tests that crashes pytest is the corpus's fault, not a failed attempt."""
        task = case.task("a/crash", verifier="pytest")
        (task.task_dir / "tests" / "conftest.py").write_text(conftest)
        verdict = case.verify(task, files={"out.txt": "hello\n"})
        assert (verdict.passed, verdict.exit_code) == (False, code)
        assert verdict.error == f"pytest verifier: {why} in {task.task_dir / 'tests'}"

    def test_tests_that_cannot_import_the_agents_code_fail(self, case: Case) -> None:
        """Tests importing a module the agent was to write, and did not, are a plain fail (exit 2)."""
        task = case.task(
            "a/imports", verifier="pytest", tests="import solution\n\ndef test_x():\n    assert solution.ok\n"
        )
        verdict = case.verify(task, files={"out.txt": "hello\n"})
        assert (verdict.passed, verdict.exit_code, verdict.error) == (False, 2, None)
        assert case.verify(task, files={"solution.py": "ok = True\n"}).passed is True

    def test_no_tests_directory_is_an_error(self, case: Case) -> None:
        task = case.task("a/notests", verifier="pytest")
        shutil.rmtree(task.task_dir / "tests")
        verdict = case.verify(task)
        error = f"pytest verifier needs a tests/ directory at {task.task_dir / 'tests'}"
        assert verdict == Verdict(False, None, "", error=error)

    def test_no_pytest_in_the_benchs_python_is_an_error(self, case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
        task = case.task("a/nopytest", verifier="pytest")
        monkeypatch.setitem(sys.modules, "pytest", None)  # what `import pytest` meets where it is not installed
        verdict = case.verify(task, files={"out.txt": "hello\n"})
        assert verdict == Verdict(False, None, "", error="pytest is not installed in the bench's Python")

    def test_the_corpus_caches_are_not_copied(self, case: Case) -> None:
        """Bytecode or a pytest cache left in the corpus's tests/ never reaches the run."""
        task = case.task("a/cached", verifier="pytest")
        for junk in ("__pycache__", ".pytest_cache"):
            (task.task_dir / "tests" / junk).mkdir()
            (task.task_dir / "tests" / junk / "stale").write_text("x")
        scratch = case.base / "scratch-kept"
        workspace = case.base / "ws-kept"
        workspace.mkdir()
        (workspace / "out.txt").write_text("hello\n")
        procs = ProcessTracker(f"test-verifiers/{uuid.uuid4().hex}")
        env = {"PATH": os.environ["PATH"]}
        verdict = verify(
            task, workspace=workspace, final_text="", scratch=scratch, env=env, procs=procs, timeout_s=30.0
        )
        assert verdict.passed is True
        (copy,) = scratch.glob("task-*")
        assert sorted(p.name for p in (copy / "tests").iterdir()) == sorted(
            p.name for p in (task.task_dir / "tests").iterdir() if p.name not in ("__pycache__", ".pytest_cache")
        )

    def test_the_tests_run_without_the_plugins_installed_beside_the_bench(self, case: Case) -> None:
        """The bench's own plugin, xdist and the rest are installed in the bench's Python, not in
        the task's: none of them is loaded into a verifier's pytest (nor paid for, per cell)."""
        check = (
            "def test_no_installed_plugin(pytestconfig):\n"
            "    assert pytestconfig.pluginmanager.list_plugin_distinfo() == []\n"
        )
        task = case.task("a/plugins", verifier="pytest", tests=check)
        verdict = case.verify(task)
        assert (verdict.passed, verdict.error) == (True, None), verdict.output

    def test_a_hanging_test_is_a_timed_out_failure(self, case: Case) -> None:
        """A test that never returns ends at the verifier's timeout, as a script does."""
        task = case.task("a/slow", verifier="pytest", tests="import time\n\ndef test_x():\n    time.sleep(30)\n")
        verdict = case.verify(task, timeout_s=1.0)
        assert (verdict.passed, verdict.timed_out, verdict.error) == (False, True, None)
        assert verdict.output.endswith("verifier timed out after 1s")

    def test_the_agent_cannot_change_the_tests(self, case: Case) -> None:
        """The tests run from a private copy: a tests/ the agent wrote into the workspace is not used."""
        task = case.task("a/p2", verifier="pytest")
        verdict = case.verify(task, files={"out.txt": "bye\n", "conftest.py": "collect_ignore_glob = ['*']\n"})
        assert verdict.passed is False and verdict.exit_code == 1


class TestRegex:
    def test_match_and_no_match(self, case: Case) -> None:
        task = case.task("a/r", verifier="regex", extra={"expected_match": r"answer is 4\d"})
        assert case.verify(task, final_text="so the answer is 42.").passed is True
        missed = case.verify(task, final_text="the answer is 50")
        assert (missed.passed, missed.exit_code, missed.error) == (False, 1, None)
        assert missed.output == r"regex did not match: answer is 4\d"

    def test_pattern_that_does_not_compile_is_an_error(self, case: Case) -> None:
        """A pattern that slipped past the corpus check is the corpus's fault, not a failed attempt."""
        task = case.task("a/r2", verifier="regex", extra={"expected_match": "x"})
        odd = Task(**{**{f: getattr(task, f) for f in task.__dataclass_fields__}, "expected_match": "(unclosed"})
        verdict = case.verify(odd, final_text="(unclosed")
        assert (verdict.passed, verdict.exit_code) == (False, None)
        assert verdict.error is not None
        assert verdict.error.startswith("regex verifier crashed (exit 2): invalid pattern: missing ), unterminated")
        # the child's own words are kept as the verifier's output, shown in the cell's transcript
        assert verdict.tail.startswith("invalid pattern: missing ), unterminated")

    def test_catastrophic_backtracking_times_out(self, case: Case) -> None:
        """A pattern that backtracks for ever ends at the verifier's timeout instead of holding the cell."""
        task = case.task("a/r3", verifier="regex", extra={"expected_match": "(a+)+$"})
        verdict = case.verify(task, final_text="a" * 60 + "b", timeout_s=0.5)
        assert (verdict.passed, verdict.timed_out, verdict.error) == (False, True, None)

    def test_runs_without_path_in_the_environment(self, case: Case) -> None:
        task = case.task("a/r4", verifier="regex", extra={"expected_match": "42"})
        assert case.verify(task, final_text="42", env={}).passed is True


class TestEnvironment:
    def test_verifier_env_drops_every_akm_variable(self) -> None:
        env = {"PATH": "/bin", "HOME": "/h", "AKM_STASH_DIR": "/s", "AKM_CONFIG_DIR": "/c", "XAKM_KEEP": "1"}
        assert verifier_env(env) == {"PATH": "/bin", "HOME": "/h", "XAKM_KEEP": "1"}

    def test_a_script_sees_the_environment_it_is_given(self, case: Case) -> None:
        task = case.task("a/env", verify='test "$BENCH_MARK" = yes\n')
        env = {"PATH": os.environ["PATH"], "BENCH_MARK": "yes"}
        assert case.verify(task, env=env).passed is True
        assert case.verify(task).passed is False


def test_unknown_kind_is_an_error(case: Case) -> None:
    task = case.task("a/s")
    odd = Task(**{**{f: getattr(task, f) for f in task.__dataclass_fields__}, "verifier": "manual"})
    verdict = case.verify(odd)
    assert verdict == Verdict(False, None, "", error="unknown verifier kind 'manual'")


class TestWhatTheAgentLeftBehind:
    """Files the agent wrote do not stand in for the verifier's tools (issue 28)."""

    def test_a_workspace_pytest_is_never_imported(self, case: Case) -> None:
        task = case.task("a/shadow", verifier="pytest")
        fake = "import sys\nprint('1 passed')\nsys.exit(0)\n"
        files = {"out.txt": "bye\n", "pytest.py": fake, "sitecustomize.py": fake, "_pytest.py": fake}
        verdict = case.verify(task, files=files)
        assert (verdict.passed, verdict.exit_code) == (False, 1) and "assert 'bye' == 'hello'" in verdict.output

    def test_the_agents_modules_are_still_importable_after_the_standard_library(self, case: Case) -> None:
        """Tests import the agent's module by name; a workspace json.py does not replace json."""
        tests = "import json\nimport solution\n\ndef test_x():\n    assert solution.ok and json.dumps(1) == '1'\n"
        task = case.task("a/imports2", verifier="pytest", tests=tests)
        verdict = case.verify(task, files={"solution.py": "ok = True\n", "json.py": "raise SystemExit(9)\n"})
        assert verdict.passed is True, verdict.output

    def test_exit_0_without_a_passed_test_is_not_a_pass(self, case: Case) -> None:
        tests = "import solution\n\ndef test_x():\n    assert solution.ok\n"
        task = case.task("a/exit0", verifier="pytest", tests=tests)
        verdict = case.verify(task, files={"solution.py": "import os\nos._exit(0)\n"})
        assert (verdict.passed, verdict.exit_code, verdict.error) == (False, 0, None)
        assert (
            verdict.tamper == "pytest exited 0 without writing its report (tamper suspected: the process ended early)"
        )

    def test_every_test_skipped_is_not_a_pass(self, case: Case) -> None:
        tests = "import pytest\n\ndef test_x():\n    pytest.skip('not today')\n"
        verdict = case.verify(case.task("a/skips", verifier="pytest", tests=tests))
        assert (verdict.passed, verdict.tamper) == (False, None)
        assert verdict.output.endswith("no test passed: 1 collected, 1 skipped")

    def test_an_agent_cannot_make_its_failure_a_harness_error(self, case: Case) -> None:
        """The tests collect nothing only because the agent's module skips them: the same tests
        run on the starting workspace, so the attempt failed (an error would not count)."""
        tests = "import solution\n\ndef test_x():\n    assert solution.ok\n"
        task = case.task("a/hide", verifier="pytest", tests=tests)
        skip = "import pytest\npytest.skip('no', allow_module_level=True)\n"
        verdict = case.verify(task, files={"solution.py": skip})
        assert (verdict.passed, verdict.exit_code, verdict.error) == (False, 5, None)
        assert verdict.output.endswith(
            "no tests collected on the agent's workspace, while the tests run on the starting one: "
            "the agent's files are at fault"
        )

    def test_tests_find_the_workspace_beside_them(self, case: Case) -> None:
        """akm-bench's tests read ``Path(__file__).parent.parent / "workspace"``: the task's own
        layout, with the agent's workspace in it."""
        tests = (
            "from pathlib import Path\n\n"
            "def test_x():\n"
            "    assert (Path(__file__).parent.parent / 'workspace' / 'out.txt').read_text() == 'hello\\n'\n"
        )
        task = case.task("a/layout", verifier="pytest", tests=tests)
        assert case.verify(task, files={"out.txt": "hello\n"}).passed is True
        assert case.verify(task, files={"out.txt": "bye\n"}).passed is False

    def test_the_solution_is_not_in_the_verifiers_copy(self, case: Case) -> None:
        task = case.task("a/nosolve", verify="test ! -e solution/solve.sh && test -e verify.sh && echo hello\n")
        (task.task_dir / "verify.sh").write_text(
            'cd "$(dirname "$0")" && test -e verify.sh && test ! -e solution && test -d workspace\n'
        )
        assert case.verify(task).passed is True

    def test_a_user_site_in_the_agents_home_does_not_reach_the_verifiers_python(self, case: Case) -> None:
        """A .pth the agent left in its HOME's user site would run in every python3 a script starts:
        the verifier has a HOME of its own."""
        home = case.base / "agent-home"
        site = home / ".local" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
        site.mkdir(parents=True)
        (site / "evil.pth").write_text("import sys; sys.stdout.write('PWNED ')\n")
        task = case.task("a/usersite", verify='out=$(python3 -c \'print(1)\'); echo "$out"; test "$out" = 1\n')
        verdict = case.verify(task, env={"PATH": os.environ["PATH"], "HOME": str(home)})
        assert verdict.passed is True and "PWNED" not in verdict.output, verdict.output

    def test_a_workspace_swapped_for_a_link_is_not_mounted(self, case: Case, tmp_path: Path) -> None:
        """A workspace the agent replaced by a link to a solved copy elsewhere is no pass, and no
        link is followed into the verifier's sandbox."""
        task = case.task("a/swap")
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        (elsewhere / "out.txt").write_text("hello\n")
        workspace = tmp_path / "cell" / "workspace"
        workspace.parent.mkdir()
        workspace.symlink_to(elsewhere)
        procs = ProcessTracker(f"test-verifiers/{uuid.uuid4().hex}")
        env = {"PATH": os.environ["PATH"]}
        verdict = verify(
            task, workspace=workspace, final_text="", scratch=tmp_path / "s", env=env, procs=procs, timeout_s=30
        )
        assert (verdict.passed, verdict.error) == (False, None)
        assert verdict.tamper == f"the workspace was replaced by a link or removed: {workspace}"

    def test_verifier_env_takes_nothing_of_the_run_dir_on_path(self, tmp_path: Path) -> None:
        run_dir = tmp_path / "cell"
        (run_dir / "bin").mkdir(parents=True)
        env = {"PATH": f"{run_dir / 'bin'}:/usr/bin:/bin", "HOME": str(run_dir / "home")}
        assert verifier_env(env, run_dir) == {"PATH": "/usr/bin:/bin", "HOME": str(run_dir / "home")}

    def test_verifier_env_drops_relative_path_entries(self, tmp_path: Path) -> None:
        """A relative entry is looked up from the verifier's working directory, the agent's
        workspace; an empty one means that directory too."""
        env = {"PATH": ".:bin:/usr/bin::./x:/bin:../up"}
        assert verifier_env(env, tmp_path / "cell") == {"PATH": "/usr/bin:/bin"}

    def test_a_path_link_moved_into_the_run_dir_between_cells_is_dropped(self, tmp_path: Path) -> None:
        """An entry's resolution is kept from cell to cell; a link moved since (into the next
        cell's run dir) or a directory renamed there is seen as a fresh resolution would."""
        tools, first, second = tmp_path / "tools", tmp_path / "cell-1", tmp_path / "cell-2"
        for d in (tools, first / "bin", second / "bin"):
            d.mkdir(parents=True)
        link = tmp_path / "link"
        link.symlink_to(tools)
        env = {"PATH": f"{link}:/usr/bin"}
        assert verifier_env(env, first) == env
        link.unlink()
        link.symlink_to(second / "bin")  # the same entry now leads into the next cell's run dir
        assert verifier_env(env, second) == {"PATH": "/usr/bin"}
        link.unlink()
        link.symlink_to(tools)
        assert verifier_env(env, second) == env
        tools.rename(second / "tools")  # the directory itself moved: the link now dangles
        link.unlink()
        link.symlink_to(second / "tools")  # and points at it in its new place, the same inode
        assert verifier_env(env, second) == {"PATH": "/usr/bin"}

    def test_bash_is_looked_up_again_when_the_one_found_is_gone(self, case: Case, tmp_path: Path) -> None:
        """The verifier's bash is found once for a PATH; if that file is removed, the next
        verifier finds the next bash on the PATH rather than failing to start."""
        first, second = tmp_path / "first", tmp_path / "second"
        real = shutil.which("bash")
        assert real is not None
        for d in (first, second):
            d.mkdir()
            (d / "bash").write_text(f'#!{real}\necho "bash of {d.name}" >&2\nexec {real} "$@"\n')
            (d / "bash").chmod(0o755)
        task = case.task("a/twobash", verify="echo checked\n")
        env = {"PATH": f"{first}:{second}:{os.environ['PATH']}"}
        verdict = case.verify(task, env=env)
        assert verdict.passed and "bash of first" in verdict.output, verdict.output
        (first / "bash").unlink()
        verdict = case.verify(task, env=env)
        assert verdict.passed and "bash of second" in verdict.output, verdict.output


class TestInItsSandbox:
    """With bubblewrap the verifier runs in a sandbox of its own (issue 28): nothing of the host
    but the system, the bench's Python and the task's copy; no network; not root."""

    @pytest.fixture(autouse=True)
    def _bwrap(self) -> None:
        require_bwrap()

    def boxed(self, case: Case, task: Task, files: dict[str, str]) -> tuple[Verdict, Path]:
        workspace = case.base / uuid.uuid4().hex / "workspace"
        workspace.mkdir(parents=True)
        for name, text in files.items():
            (workspace / name).write_text(text)
        procs = ProcessTracker(f"test-verifiers/{uuid.uuid4().hex}")
        verdict = verify(
            task,
            workspace=workspace,
            final_text="",
            scratch=case.base / "scratch",
            env={"PATH": os.environ["PATH"]},
            procs=procs,
            timeout_s=60.0,
            sandbox="bwrap",
        )
        return verdict, workspace

    def test_the_verifier_reaches_nothing_of_the_host(self, case: Case) -> None:
        site = sysconfig.get_paths()["purelib"]
        tag = uuid.uuid4().hex[:10]
        check = (
            "import os, socket, sys\n\n"
            "def attempt(fn):\n"
            "    try:\n        fn()\n        return 'OK'\n"
            "    except Exception as err:\n        return type(err).__name__\n\n"
            "def test_x():\n"
            "    s = socket.socket()\n    s.settimeout(2)\n"
            "    found = {\n"
            f"        'corpus': attempt(lambda: open({str(case.tasks)!r} + '/a/reach/solution/solve.sh').read()),\n"
            f"        'venv': attempt(lambda: open({site!r} + '/akmbench_probe_{tag}.py', 'w').write('x')),\n"
            "        'sysctl': attempt(lambda: open('/proc/sys/kernel/core_pattern', 'w').write("
            "open('/proc/sys/kernel/core_pattern').read())),\n"
            "        'net': attempt(lambda: s.connect(('1.1.1.1', 53))),\n"
            "        'uid0': 'yes' if os.getuid() == 0 else 'no',\n"
            "    }\n"
            "    open('found.txt', 'w').write(repr(found))\n"
        )
        task = case.task("a/reach", verifier="pytest", tests=check)
        verdict, workspace = self.boxed(case, task, {})
        assert verdict.passed is True, verdict.output
        found = ast.literal_eval((workspace / "found.txt").read_text())
        assert found["uid0"] == "no" and all(v != "OK" for k, v in found.items() if k != "uid0"), found
        assert not (Path(site) / f"akmbench_probe_{tag}.py").exists()

    def test_a_script_verifier_runs_in_the_tasks_layout(self, case: Case) -> None:
        task = case.task("a/boxed", verify='test -d "$(dirname "$0")/workspace" && grep -qx hello out.txt\n')
        assert self.boxed(case, task, {"out.txt": "hello\n"})[0].passed is True
        assert self.boxed(case, task, {"out.txt": "bye\n"})[0].passed is False
