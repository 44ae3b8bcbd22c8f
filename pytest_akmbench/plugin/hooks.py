"""Hook specifications other plugins and conftest files can implement.

Added with ``pytest_addhooks``; the built-in agents are registered through the same hook.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from ..agents.base import Agent

hookspec = pluggy.HookspecMarker("pytest")


@hookspec
def pytest_akmbench_agents() -> list[Agent]:  # type: ignore[empty-body]
    """Return agent adapters to offer under their ``name`` (``--bench-agent NAME``).

    An adapter has ``name``, ``version``, ``start(session)``, ``run(request)`` and
    ``stop()``; see ``pytest_akmbench.agents.Agent``. A later registration of the same
    name (e.g. in a conftest) replaces the built-in one.
    """
