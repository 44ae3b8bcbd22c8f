"""The scripted model's replies in the OpenAI chat-completions wire format: a whole
``chat.completion``, or the SSE ``chat.completion.chunk`` frames of a streamed one
(docs/opencode.md, "The model server protocol")."""

from __future__ import annotations

import json
from typing import Any

from .policies import Action

# Long tool arguments are streamed in pieces of this many characters, as real providers do.
ARGUMENT_PIECE = 400


def completion(
    action: Action, model: str, usage: dict[str, Any], call_id: str, cid: str, created: int
) -> dict[str, Any]:
    """The whole ``chat.completion`` answering a request that did not ask for a stream."""
    message: dict[str, Any] = {"role": "assistant", "content": action.text if action.kind == "text" else None}
    if action.kind == "tool":
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": "bash", "arguments": json.dumps(bash_args(action))},
            }
        ]
    return {
        "id": cid,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if action.kind == "tool" else "stop",
            }
        ],
        "usage": usage,
    }


def stream_frames(
    action: Action, model: str, usage: dict[str, Any], call_id: str, cid: str, created: int
) -> list[bytes]:
    """The SSE frames of a streamed answer: the deltas, the finish reason, the usage, ``[DONE]``."""

    def chunk(choices: list[dict[str, Any]], **extra: Any) -> bytes:
        obj = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": choices,
            **extra,
        }
        return b"data: " + json.dumps(obj).encode() + b"\n\n"

    deltas = _tool_deltas(action, call_id) if action.kind == "tool" else _text_deltas(action.text)
    frames = [chunk([{"index": 0, "delta": delta, "finish_reason": None}]) for delta in deltas]
    finish = "tool_calls" if action.kind == "tool" else "stop"
    frames.append(chunk([{"index": 0, "delta": {}, "finish_reason": finish}]))
    frames.append(chunk([], usage=usage))
    frames.append(b"data: [DONE]\n\n")
    return frames


def _tool_deltas(action: Action, call_id: str) -> list[dict[str, Any]]:
    """A bash tool call: its id and name first, then its arguments in pieces."""
    args = json.dumps(bash_args(action))
    opening = {
        "role": "assistant",
        "tool_calls": [{"index": 0, "id": call_id, "type": "function", "function": {"name": "bash", "arguments": ""}}],
    }
    pieces = [
        {"tool_calls": [{"index": 0, "function": {"arguments": args[i : i + ARGUMENT_PIECE]}}]}
        for i in range(0, len(args), ARGUMENT_PIECE)
    ]
    return [opening, *pieces]


def _text_deltas(text: str) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": ""}, {"content": text}]


def bash_args(action: Action) -> dict[str, Any]:
    """The arguments of opencode's bash tool for a tool action."""
    return {"command": action.command, "description": action.description or "Run a command"}
