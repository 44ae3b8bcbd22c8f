"""The test suite's fixtures and plugins (pytester); the skip check is in the root conftest."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

pytest_plugins = ["pytester"]


@pytest.fixture(scope="session", autouse=True)
def _reports_match_their_schema(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every report.json a test of this process wrote (under the session's temporary root) is
    checked against the package's report schema (the evolve schema for an evolve envelope) when the
    session ends (docs/testing.md)."""
    yield
    from tests.support.schemas import problems, written_reports

    bad = []
    for path in written_reports(tmp_path_factory.getbasetemp()):
        data = json.loads(path.read_text())
        found = problems(data, "evolve-report" if data.get("track") == "evolve" else "report")
        if found:
            bad.append(f"{path}: {found[0]}" + (f" (and {len(found) - 1} more)" if len(found) > 1 else ""))
    assert not bad, "reports that break pytest_akmbench/schemas/report.schema.json:\n" + "\n".join(bad)
