"""The pytest verifier (docs/corpus.md, "Verifiers"): the task's tests, run by the harness's own
pytest on the agent's workspace, and the verdict read from pytest's own report."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..corpus.tasks import Task
from ..system.procs import ProcessTracker
from ..system.untrusted import read_inside
from .rundir import copy_workspace
from .verdict import Verdict, fresh, run, verifier_box

RESULTS_LIMIT = 1024 * 1024
# pytest's exit statuses that say it could not judge: internal error, usage error, no tests.
CANNOT_JUDGE = {3: "pytest crashed", 4: "pytest usage error", 5: "no tests collected"}


# pytest imported before the workspace is on the import path (and then only at its end), in
# isolated mode (no current directory, no PYTHON* variables): no file the agent wrote can stand
# in for pytest, its plugins or the standard library. Tests that import the agent's modules
# still find them. pytest's own tally of the test reports is written to the results file at the
# session's end (cheaper than --junitxml, which costs a verifier about 8 ms: benchmarks/README.md).
_PYTEST_BOOT = """
import json, sys
try:
    import pytest
except ImportError as err:
    print(f"pytest cannot be imported in the verifier: {err}")
    sys.exit(3)
results = sys.argv.pop(1)
sys.path.append(sys.argv.pop(1))

class Tally:
    def __init__(self):
        self.counts = {"tests": 0, "passed": 0, "failures": 0, "errors": 0, "skipped": 0}
        self.seen = set()

    def pytest_runtest_logreport(self, report):
        if report.nodeid not in self.seen:
            self.seen.add(report.nodeid)
            self.counts["tests"] += 1
        if report.when == "call" and report.passed:
            self.counts["passed"] += 1
        elif report.failed:
            self.counts["failures" if report.when == "call" else "errors"] += 1
        elif report.skipped:
            self.counts["skipped"] += 1

    def pytest_sessionfinish(self):
        with open(results, "w", encoding="utf-8") as fh:
            json.dump(self.counts, fh)

code = pytest.main(sys.argv[1:], plugins=[Tally()])
sys.stdout.flush()
sys.exit(int(code))
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
        assert out is not None  # verifier_box makes one unless told not to
        results = out / "results.json"
        argv = [
            sys.executable,
            "-I",
            "-B",
            "-c",
            _PYTEST_BOOT,
            str(results),
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
            str(copy / "tests"),
        ]
        verdict = run(procs, argv, workspace, run_env, timeout_s)
        if not verdict.passed:
            return verdict
        doubt, tampered = _results_doubt(results, out)
    if doubt is None:
        return verdict
    return Verdict(False, verdict.exit_code, f"{verdict.output}\n{doubt}", tamper=doubt if tampered else None)


def _results_doubt(results: Path, out: Path) -> tuple[str | None, bool]:
    """(why pytest's exit 0 is not a pass, whether that looks forged), or (None, False): its own
    tally must show a test that passed and none that failed. Code of the agent's that ends the
    process early with status 0 leaves no tally; one that skips every test, no passed test."""
    data = read_inside(results, out, limit=RESULTS_LIMIT)
    if data is None:
        return "pytest exited 0 without writing its report (tamper suspected: the process ended early)", True
    try:
        counts = json.loads(data)
        tests, passed, failures, errors, skipped = (
            int(counts[k]) for k in ("tests", "passed", "failures", "errors", "skipped")
        )
    except (ValueError, TypeError, KeyError):
        return "pytest exited 0 with an unreadable report (tamper suspected)", True
    if failures or errors:
        return f"pytest exited 0 but its report holds {failures} failure(s), {errors} error(s) (tamper suspected)", True
    if passed < 1:
        return f"no test passed: {tests} collected, {skipped} skipped", False
    return None, False
