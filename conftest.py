"""The repository's root conftest: only what must hold for every pytest run of this checkout.

It defines no ``pytest_plugins`` (those live in tests/conftest.py): pytest refuses them in a
conftest that is not at the rootdir, and a bench started from another directory with a run
config of this repository (README, "Run configs") has its rootdir elsewhere.
"""

from __future__ import annotations

import os

import pytest


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
