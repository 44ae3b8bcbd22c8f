"""Agents: the adapter interface (``base``), the neutral transcript events (``transcript``), the
model-free ``oracle`` and ``nop``, and one package per agent, each found by ``registry``.

The interface's names are importable from here (``pytest_akmbench.agents.AgentResult``), as the
README documents for plugins that register their own agent.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import Agent, AgentRequest, AgentResult, Limits, NopAgent, OracleAgent, SessionInfo, as_agent
    from .registry import builtin_agents
    from .transcript import Moment, ToolEvent

__all__ = [
    "Agent",
    "AgentRequest",
    "AgentResult",
    "Limits",
    "Moment",
    "NopAgent",
    "OracleAgent",
    "SessionInfo",
    "ToolEvent",
    "as_agent",
    "builtin_agents",
]

# Read on first use: the pytest entry point imports the settings module of this package
# (agents/settings.py) while a run may not be a bench at all (docs/architecture.md, "Cheap when inert").
_WHERE = {"builtin_agents": "registry", "Moment": "transcript", "ToolEvent": "transcript"}


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE.get(name, 'base')}"), name)
