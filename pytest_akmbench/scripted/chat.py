"""The OpenAI chat-completions wire (opencode, akm's own LLM): a request's ``messages`` read as a
:class:`Turn`, and a whole ``chat.completion`` or the SSE ``chat.completion.chunk`` frames of a
streamed one (docs/opencode.md, "The model server protocol")."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from .wire import Action, Reply, ToolOutput, Turn, Usage, json_reply, sse_reply, text_of

# Long tool arguments are streamed in pieces of this many characters, as real providers do.
ARGUMENT_PIECE = 400


def usage_block(usage: Usage) -> dict[str, Any]:
    """The ``usage`` object of a chat completion."""
    return {
        "prompt_tokens": usage.input,
        "completion_tokens": usage.output,
        "total_tokens": usage.input + usage.output,
        "prompt_tokens_details": {"cached_tokens": usage.cached},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning},
    }


class Chat:
    """``POST /c/<token>/v1/chat/completions``; a tool action is opencode's ``bash`` tool."""

    # Annotated as the Wire protocol declares them, so mypy takes Chat for a Wire.
    name: str = "chat"
    route: tuple[str, ...] = ("v1", "chat", "completions")

    def parse(self, body: dict[str, Any]) -> Turn:
        raw = body.get("messages")
        messages = [m for m in raw if isinstance(m, dict)] if isinstance(raw, list) else []
        raw_tools = body.get("tools")
        tools = raw_tools if isinstance(raw_tools, list) else []
        names = tuple(str((t.get("function") or {}).get("name", "")) for t in tools if isinstance(t, dict))
        return Turn(
            model=str(body.get("model", "scripted")),
            stream=bool(body.get("stream")),
            tools=names,
            turn=sum(1 for m in messages if m.get("role") == "assistant"),
            outputs=tuple(
                ToolOutput(str(m.get("tool_call_id", "")), text_of(m.get("content")))
                for m in messages
                if m.get("role") == "tool"
            ),
            prompt="\n".join(text_of(m.get("content")) for m in messages if m.get("role") in ("system", "user")),
        )

    def answer(self, turn: Turn, action: Action, usage: Usage, call_id: str) -> Reply:
        cid = f"chatcmpl-{uuid.uuid4().hex[:12]}"
        created = int(time.time())
        block = usage_block(usage)
        if not turn.stream:
            return json_reply(200, completion(action, turn.model, block, call_id, cid, created))
        return sse_reply(stream_frames(action, turn.model, block, call_id, cid, created))

    def failure(self, message: str) -> Reply:
        # retry-after-ms keeps opencode's retries fast before it gives up.
        payload = {"error": {"message": message, "type": "server_error", "code": "unavailable"}}
        return json_reply(500, payload, (("retry-after-ms", "50"),))


WIRE = Chat()


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
