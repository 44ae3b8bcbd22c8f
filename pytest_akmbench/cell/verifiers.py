"""Verifiers (docs/corpus.md, "Verifiers"): decide whether the agent solved the task.

Each returns a ``Verdict``. ``error`` is set only when the harness or the environment is at
fault (bash or pytest missing, verify.sh absent); a failing or hanging check is a plain
failure. Unlike the reference, an exit status of 127 from a script is a failure like any
other: only our own checks decide that the runtime is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..corpus.tasks import Task
from ..system.procs import ProcessTracker

TAIL_CHARS = 2000


@dataclass(frozen=True, slots=True)
class Verdict:
    passed: bool
    exit_code: int | None
    output: str
    error: str | None = None
    timed_out: bool = False

    @property
    def tail(self) -> str:
        return self.output[-TAIL_CHARS:]


def verify(
    task: Task,
    *,
    workspace: Path,
    final_text: str,
    scratch: Path,
    env: Mapping[str, str],
    procs: ProcessTracker,
    timeout_s: float,
) -> Verdict:
    """Run ``task``'s verifier against ``workspace`` (after the agent has finished).

    ``scratch`` is a directory outside the workspace where pytest verifiers get a private
    copy of the task's tests, so nothing the agent did can reach or alter them.
    """
    if task.verifier == "regex":
        return _regex(task, final_text, scratch, env, procs, timeout_s)
    if task.verifier == "script":
        return _script(task, workspace, env, procs, timeout_s)
    if task.verifier == "pytest":
        return _pytest(task, workspace, scratch, env, procs, timeout_s)
    return Verdict(False, None, "", error=f"unknown verifier kind {task.verifier!r}")


# The match runs in a child process: Python's re cannot be interrupted, and a pattern that
# backtracks catastrophically ((a+)+$ over a long run of a's) would otherwise hold the cell, and
# its wall budget, forever. Exit 0: match, 1: no match, 2: the pattern does not compile (a
# corpus fault, which must not count as the agent's failure; tasks.py checks it on load).
_REGEX_CHILD = """
import json, re, sys
with open(sys.argv[1], encoding="utf-8") as fh:
    pattern, text = json.load(fh)
try:
    found = re.search(pattern, text)
except re.error as err:
    print(f"invalid pattern: {err}")
    sys.exit(2)
sys.exit(0 if found else 1)
"""


def _regex(
    task: Task, final_text: str, scratch: Path, env: Mapping[str, str], procs: ProcessTracker, timeout_s: float
) -> Verdict:
    pattern = task.expected_match or ""
    scratch.mkdir(parents=True, exist_ok=True)
    payload = scratch / "regex.json"
    payload.write_text(json.dumps([pattern, final_text]), encoding="utf-8")
    argv = [sys.executable, "-I", "-S", "-c", _REGEX_CHILD, str(payload)]
    verdict = _run(procs, argv, scratch, {"PATH": env.get("PATH", os.defpath)}, timeout_s)
    if verdict.timed_out or verdict.error:
        return verdict
    if verdict.exit_code == 0:
        return Verdict(True, 0, f"regex match: {pattern}")
    if verdict.exit_code == 1:
        return Verdict(False, 1, f"regex did not match: {pattern}")
    return Verdict(
        False,
        None,
        verdict.output,
        error=f"regex verifier crashed (exit {verdict.exit_code}): {verdict.output.strip()[-300:]}",
    )


def _script(task: Task, workspace: Path, env: Mapping[str, str], procs: ProcessTracker, timeout_s: float) -> Verdict:
    script = task.task_dir / "verify.sh"
    if not script.is_file():
        return Verdict(False, None, "", error=f"verify.sh not found at {script}")
    bash = shutil.which("bash", path=env.get("PATH"))
    if bash is None:
        return Verdict(False, None, "", error="bash not found on PATH; install bash to run script verifiers")
    return _run(procs, [bash, str(script)], workspace, env, timeout_s)


def _pytest(
    task: Task, workspace: Path, scratch: Path, env: Mapping[str, str], procs: ProcessTracker, timeout_s: float
) -> Verdict:
    source = task.task_dir / "tests"
    if not source.is_dir():
        return Verdict(False, None, "", error=f"pytest verifier needs a tests/ directory at {source}")
    try:
        import pytest  # noqa: F401  (only to tell a missing runtime from a failing check)
    except ImportError:
        return Verdict(False, None, "", error="pytest is not installed in the bench's Python")
    tests = scratch / "tests"
    if tests.exists():
        shutil.rmtree(tests)
    shutil.copytree(source, tests, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    # Plugin autoloading off: a verifier pays only for pytest itself, not for every plugin
    # installed beside the bench (the reference paid about 2 s per cell for those).
    run_env = {**env, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "--tb=short",
        "-p",
        "no:cacheprovider",
        # No ini file, and no conftest.py from any directory above the copied tests.
        "--rootdir",
        str(scratch),
        "-c",
        os.devnull,
        "--confcutdir",
        str(scratch),
        str(tests),
    ]
    verdict = _run(procs, argv, workspace, run_env, timeout_s)
    if verdict.exit_code in (3, 4, 5):
        # internal error, usage error, no tests collected: the corpus or the harness is at
        # fault, not the agent, so this must not count as a failed attempt.
        why = {3: "pytest crashed", 4: "pytest usage error", 5: "no tests collected"}[verdict.exit_code]
        return Verdict(False, verdict.exit_code, verdict.output, error=f"pytest verifier: {why} in {source}")
    return verdict


def _run(procs: ProcessTracker, argv: list[str], cwd: Path, env: Mapping[str, str], timeout_s: float) -> Verdict:
    try:
        code, output, timed_out = procs.run(argv, cwd=cwd, env=env, timeout_s=timeout_s)
    except OSError as err:
        return Verdict(False, None, "", error=f"verifier failed to start: {err}")
    if timed_out:
        return Verdict(False, None, output + f"\nverifier timed out after {timeout_s:g}s", timed_out=True)
    return Verdict(code == 0, code, output)


def verifier_env(base: Mapping[str, str]) -> dict[str, str]:
    """The verifier's environment: the agent's, minus anything that points at a stash."""
    return {k: v for k, v in base.items() if not k.startswith("AKM_")}
