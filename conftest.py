from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest

pytest_plugins = ["pytester"]


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """With AKMBENCH_FAIL_ON_SKIP=1 (set by .ci/run) a skipped test fails the run: in CI every
    prerequisite (opencode, real akm, bun) is installed, so a skip means a test that did not run."""
    if os.environ.get("AKMBENCH_FAIL_ON_SKIP") != "1" or exitstatus != 0:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter is not None else []
    if skipped:
        reasons = sorted({str(r.longrepr[-1]) if isinstance(r.longrepr, tuple) else str(r.longrepr) for r in skipped})
        reporter.write_line(f"AKMBENCH_FAIL_ON_SKIP: {len(skipped)} test(s) skipped: " + "; ".join(reasons), red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session", autouse=True)
def _reports_match_their_schema(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every report.json a test of this process wrote (under the session's temporary root) is
    checked against the package's report schema when the session ends (docs/testing.md)."""
    yield
    from tests.support.schemas import problems, written_reports

    bad = []
    for path in written_reports(tmp_path_factory.getbasetemp()):
        found = problems(json.loads(path.read_text()), "report")
        if found:
            bad.append(f"{path}: {found[0]}" + (f" (and {len(found) - 1} more)" if len(found) > 1 else ""))
    assert not bad, "reports that break pytest_akmbench/schemas/report.schema.json:\n" + "\n".join(bad)
