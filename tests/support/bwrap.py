"""Tests that need a working bubblewrap skip where it cannot run (in CI, ``.ci/run`` turns
any skip into a failure: see the root conftest.py)."""

from __future__ import annotations

import pytest

from pytest_akmbench.system import sandbox


def require_bwrap() -> None:
    problem = sandbox.probe()
    if problem is None:
        return
    pytest.skip(f"bwrap does not work here: {problem}")
