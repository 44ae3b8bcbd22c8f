"""The built-in agents: ``nop`` and ``oracle``, and each package under ``agents/`` whose
``adapter`` module offers ``agents()`` (``agents/opencode/`` does).

Found by walking this package, so adding an agent is adding its folder (docs/architecture.md,
"Where to add"). The packages are imported by name, when the agents are asked for: they sit
above ``cell/`` (they may read a cell's files), and nothing below them names them.
"""

from __future__ import annotations

import importlib

from .base import Agent, NopAgent, OracleAgent, as_agent
from .settings import PACKAGE, agent_packages

ADAPTER = "adapter"  # the module of an agent's package that offers its agents


def builtin_agents() -> list[Agent]:
    """The adapters shipped with the plugin: each agent package's, then ``nop`` and ``oracle``.
    A package that cannot be imported (a dependency missing) offers none."""
    found: list[Agent] = []
    for name in agent_packages():
        try:
            module = importlib.import_module(f"{PACKAGE}.{name}.{ADAPTER}")
        except ImportError:
            continue
        offer = getattr(module, "agents", None)
        found += [as_agent(a) for a in (offer() if callable(offer) else ())]
    return [*found, NopAgent(), OracleAgent()]
