"""The pytest verifier (docs/corpus.md, "Verifiers"): the task's tests, run by the harness's own
pytest on the agent's workspace, and the verdict read from pytest's own report."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from xml.etree import ElementTree

from ..corpus.tasks import Task
from ..system.procs import ProcessTracker
from ..system.untrusted import read_inside
from .rundir import copy_workspace
from .verdict import Verdict, fresh, run, verifier_box

JUNIT_LIMIT = 16 * 1024 * 1024
# pytest's exit statuses that say it could not judge: internal error, usage error, no tests.
CANNOT_JUDGE = {3: "pytest crashed", 4: "pytest usage error", 5: "no tests collected"}


# pytest imported before the workspace is on the import path (and then only at its end), in
# isolated mode (no current directory, no PYTHON* variables): no file the agent wrote can stand
# in for pytest, its plugins or the standard library. Tests that import the agent's modules
# still find them.
_PYTEST_BOOT = """
import sys
try:
    import pytest
except ImportError as err:
    print(f"pytest cannot be imported in the verifier: {err}")
    sys.exit(3)
sys.path.append(sys.argv.pop(1))
sys.exit(pytest.console_main())
"""


def verify_pytest(
    task: Task,
    copy: Path,
    workspace: Path,
    *,
    sandbox: str,
    writable: Sequence[Path],
    env: Mapping[str, str],
    procs: ProcessTracker,
    timeout_s: float,
) -> Verdict:
    """The task's tests (the copy's ``tests/``) on ``workspace``.

    Where pytest cannot judge (it crashed, was misused, collected nothing), the same tests run
    once more on the task's starting workspace: if they run there, the agent's files are at
    fault and the attempt failed; only if they cannot run there either is it the corpus's or the
    harness's fault (an error, which does not count). An agent cannot turn its failure into a
    harness error that vanishes from every pass rate.
    """
    verdict = _run_tests(copy, workspace, sandbox, writable, env, procs, timeout_s)
    why = CANNOT_JUDGE.get(verdict.exit_code or 0)
    if why is None:
        return verdict
    pristine = fresh(copy.parent, "start-")
    copy_workspace(task, pristine)
    again = _run_tests(copy, pristine, sandbox, (), env, procs, timeout_s)
    if again.exit_code in CANNOT_JUDGE:
        return Verdict(
            False, verdict.exit_code, verdict.output, error=f"pytest verifier: {why} in {task.task_dir / 'tests'}"
        )
    note = f"{why} on the agent's workspace, while the tests run on the starting one: the agent's files are at fault"
    return Verdict(False, verdict.exit_code, f"{verdict.output}\n{note}")


def _run_tests(
    copy: Path,
    workspace: Path,
    sandbox: str,
    writable: Sequence[Path],
    env: Mapping[str, str],
    procs: ProcessTracker,
    timeout_s: float,
) -> Verdict:
    # Plugin autoloading off: a verifier pays only for pytest itself, not for every plugin
    # installed beside the bench (the reference paid about 2 s per cell for those).
    run_env = {**env, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    with verifier_box(sandbox, copy, workspace, writable, procs) as (_, out):
        junit = out / "junit.xml"
        argv = [
            sys.executable,
            "-I",
            "-B",
            "-c",
            _PYTEST_BOOT,
            str(workspace),
            "-q",
            "--tb=short",
            "-p",
            "no:cacheprovider",
            # No ini file, and no conftest.py from any directory above the copied tests.
            "--rootdir",
            str(copy),
            "-c",
            os.devnull,
            "--confcutdir",
            str(copy),
            "--junitxml",
            str(junit),
            str(copy / "tests"),
        ]
        verdict = run(procs, argv, workspace, run_env, timeout_s)
        if not verdict.passed:
            return verdict
        doubt, tampered = _results_doubt(junit, out)
    if doubt is None:
        return verdict
    return Verdict(False, verdict.exit_code, f"{verdict.output}\n{doubt}", tamper=doubt if tampered else None)


def _results_doubt(junit: Path, out: Path) -> tuple[str | None, bool]:
    """(why pytest's exit 0 is not a pass, whether that looks forged), or (None, False): its own
    report must show a test that passed and none that failed. Code of the agent's that ends the
    process early with status 0 leaves no report; one that skips every test, no passed test."""
    data = read_inside(junit, out, limit=JUNIT_LIMIT)
    if data is None:
        return "pytest exited 0 without writing its report (tamper suspected: the process ended early)", True
    try:
        root = ElementTree.fromstring(data)
    except ElementTree.ParseError:
        return "pytest exited 0 with an unreadable report (tamper suspected)", True
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    counts = {k: sum(int(s.get(k) or 0) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
    if counts["failures"] or counts["errors"]:
        bad = f"{counts['failures']} failure(s), {counts['errors']} error(s)"
        return f"pytest exited 0 but its report holds {bad} (tamper suspected)", True
    if counts["tests"] - counts["skipped"] < 1:
        return f"no test passed: {counts['tests']} collected, {counts['skipped']} skipped", False
    return None, False
