"""The test suite's fixtures and plugins (pytester); the skip check is in the root conftest."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest

pytest_plugins = ["pytester"]
# Test material, not tests: akm-bench's task verifiers under data/ run only inside a bench cell.
collect_ignore = ["data"]


def pytest_configure(config: pytest.Config) -> None:
    """Under xdist, tests are handed out one at a time unless ``--maxschedchunk`` says otherwise
    (tests/support/schedule.py)."""
    if hasattr(config.option, "maxschedchunk") and config.option.maxschedchunk is None:
        config.option.maxschedchunk = 1


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under xdist, the longest tests first (tests/support/schedule.py); every worker sorts
    alike. A serial run keeps the collected order: it gains nothing from another, and a test
    moved out of its module would set the module's fixtures up twice."""
    if not hasattr(config, "workerinput"):
        return
    from tests.support.schedule import longest_first

    items[:] = [items[i] for i in longest_first(items)]


@pytest.fixture(scope="session", autouse=True)
def _reports_match_their_schema(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every report.json and attribute.json a test of this process wrote (under the session's
    temporary root) is checked against the package's schema of its track (report, evolve-report,
    attribute: closed, so a field the schema does not list fails) when the session ends
    (docs/testing.md)."""
    yield
    from tests.support.schemas import problems, schema_of, written_reports

    bad = []
    for path in written_reports(tmp_path_factory.getbasetemp()):
        data = json.loads(path.read_text())
        found = problems(data, schema_of(data))
        if found:
            bad.append(f"{path}: {found[0]}" + (f" (and {len(found) - 1} more)" if len(found) > 1 else ""))
    assert not bad, "reports that break their schema in pytest_akmbench/schemas/:\n" + "\n".join(bad)


@pytest.fixture
def bench(pytester: pytest.Pytester, request: pytest.FixtureRequest) -> pytest.Pytester:
    """A bench project (tests/support/bench.py): the standard three-task corpus and an ini naming
    it, plus what the test's module sets: ``BENCH_INI`` (more ini lines), ``BENCH_AGENT`` (a
    conftest of tests/support/agents.py) and ``BENCH_FILES`` (name to text at the project's root)."""
    from tests.support.bench import project

    module = request.module
    return project(
        pytester,
        ini=getattr(module, "BENCH_INI", ""),
        agent=getattr(module, "BENCH_AGENT", None),
        **getattr(module, "BENCH_FILES", {}),
    )


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths os.fsync is called on (the real fsync still runs)."""
    paths: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        paths.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return paths
