"""Agents: the adapter interface (``base``), the model-free ``oracle`` and ``nop``, and ``opencode/``.

The interface's names are importable from here (``pytest_akmbench.agents.AgentResult``), as the
README documents for plugins that register their own agent.
"""

from __future__ import annotations

from .base import Agent, AgentRequest, AgentResult, Limits, NopAgent, OracleAgent, SessionInfo, builtin_agents

__all__ = ["Agent", "AgentRequest", "AgentResult", "Limits", "NopAgent", "OracleAgent", "SessionInfo", "builtin_agents"]
