"""The scripted model, agent-neutral (docs/scripted.md): the server (``server``), the neutral
request and actions every wire speaks (``wire``), the chat-completions wire (``chat``), the
policies (``policies``, with the ``snoop`` policy's probe in ``snoop``)."""

from .policies import AKM_LLM_POLICIES, IDLE_TEXT, POLICIES, ScriptedCell, akm_llm_reply, next_action
from .server import ERROR_MESSAGE, TITLE_TEXT, WIRES, ScriptedModel, turn_usage, usage_for_turn
from .wire import Action, Reply, ToolOutput, Turn, Usage, Wire

__all__ = [
    "AKM_LLM_POLICIES",
    "ERROR_MESSAGE",
    "IDLE_TEXT",
    "POLICIES",
    "TITLE_TEXT",
    "WIRES",
    "Action",
    "Reply",
    "ScriptedCell",
    "ScriptedModel",
    "ToolOutput",
    "Turn",
    "Usage",
    "Wire",
    "akm_llm_reply",
    "next_action",
    "turn_usage",
    "usage_for_turn",
]
