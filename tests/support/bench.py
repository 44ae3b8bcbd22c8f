"""A bench project for a test: the standard corpus, an ini naming it, an agent; its report and
store read back; ``python -m pytest`` runs of it in a subprocess (docs/testing.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.corpus import standard_corpus

ROOT = Path(__file__).resolve().parents[2]
INI = "[pytest]\nbench_corpus = corpus/tasks\nbench_stashes = corpus/stashes\n"
STORE = ".akmbench/store"  # the store a project uses when no option or ini key names one


def project(pytester: pytest.Pytester, *, ini: str = "", agent: str | None = None, **files: str) -> pytest.Pytester:
    """The standard three-task corpus, ``INI`` plus ``ini``, ``agent`` as the conftest (a text of
    tests/support/agents.py) and each of ``files`` (name=text) at the project's root."""
    standard_corpus(pytester.path)
    pytester.makeini(INI + ini)
    if agent is not None:
        pytester.makeconftest(agent)
    for name, text in files.items():
        (pytester.path / name).write_text(text)
    return pytester


def read_report(base: Path, name: str = "out") -> dict[str, Any]:
    data: dict[str, Any] = json.loads((base / name / "report.json").read_text())
    return data


def samples(store: Path, *, torn_ok: bool = False, missing_ok: bool = True) -> list[dict[str, Any]]:
    """The records of ``store``/samples.jsonl in file order. A torn line fails the test unless
    ``torn_ok`` (a run killed mid-append may leave one, and the store skips it too); a missing
    file is no records unless ``missing_ok`` is false."""
    path = store / "samples.jsonl"
    if missing_ok and not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except ValueError:
            if not torn_ok:
                raise
    return out


def store_lines(store: Path) -> list[str]:
    """The lines of ``store``/samples.jsonl as written (none when there is no file)."""
    path = store / "samples.jsonl"
    return path.read_text().splitlines() if path.exists() else []


def cells(records: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    """(task, arm, seed) of each record, in order."""
    return [(r["task_id"], r["arm"], r["seed"]) for r in records]


def strip_times(obj: Any) -> Any:
    """The report without the values that legitimately differ between two runs."""
    volatile = {"timestamp", "transcript", "run_id", "timing_ms", "started_at", "finished_at", "store"}
    if isinstance(obj, dict):
        return {
            k: strip_times(v)
            for k, v in obj.items()
            if k not in volatile and "wallclock" not in k and not k.endswith("_ms")
        }
    if isinstance(obj, list):
        return [strip_times(v) for v in obj]
    return obj


def pytest_argv(*args: str) -> list[str]:
    """``python -m pytest`` without the cache provider, for a run in a subprocess."""
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]


def subprocess_env() -> dict[str, str]:
    """This environment with the checkout first on PYTHONPATH and no PYTEST_ADDOPTS."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("PYTEST_ADDOPTS", None)
    return env


def start(cwd: Path, *args: str, **kw: Any) -> subprocess.Popen[str]:
    """A bench run of ``pytest_argv(*args)`` in ``cwd``, started; its output (stderr merged) as text."""
    return subprocess.Popen(
        pytest_argv(*args), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw
    )
