"""Agents: the adapter interface (``base``), the neutral transcript events (``transcript``), the
model-free ``oracle`` and ``nop``, and one package per agent, each found by ``registry``.

The interface's names are importable from here (``pytest_akmbench.agents.AgentResult``), as the
README documents for plugins that register their own agent.
"""

from __future__ import annotations

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
