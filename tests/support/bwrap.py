"""Tests that need a working bubblewrap skip where it cannot run, and fail instead when the
environment says the sandbox must work (``AKMBENCH_REQUIRE_SANDBOX=1``, set by ``.ci/run``)."""

from __future__ import annotations

import os

import pytest

from pytest_akmbench import sandbox


def require_bwrap() -> None:
    problem = sandbox.probe()
    if problem is None:
        return
    if os.environ.get("AKMBENCH_REQUIRE_SANDBOX"):
        pytest.fail(f"AKMBENCH_REQUIRE_SANDBOX is set but the sandbox does not work here: {problem}")
    pytest.skip(f"bwrap does not work here: {problem}")
