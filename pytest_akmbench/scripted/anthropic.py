"""The scripted model on Anthropic's Messages wire, as Claude Code speaks it (docs/claude-code.md,
"The model server protocol").

``POST {base}/v1/messages`` (Claude Code adds ``?beta=true``, which the server ignores) with a
JSON body: ``model``, ``system``, ``messages`` (user and assistant turns; a tool's output comes
back as a ``tool_result`` block of a user message), ``tools`` and ``stream``. A streamed answer is
the SSE events ``message_start``, per block ``content_block_start``/``content_block_delta``/
``content_block_stop``, then ``message_delta`` (stop reason and output tokens) and
``message_stop``. A tool action becomes a ``tool_use`` block of Claude Code's ``Bash`` tool with the
server's call id as its id; its output is read back from the ``tool_result`` block naming that id.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from .wire import Action, Reply, ToolOutput, Turn, Usage, json_reply, sse_reply

BASH = "Bash"  # Claude Code's shell tool
# Long tool inputs are streamed in pieces of this many characters, as Anthropic's API does.
INPUT_PIECE = 400


class Anthropic:
    """The Messages wire: ``parse`` a request into a neutral turn, ``answer`` an action."""

    name: str = "anthropic"
    route: tuple[str, ...] = ("v1", "messages")

    def parse(self, data: dict[str, Any]) -> Turn:
        messages = [m for m in data.get("messages") or () if isinstance(m, dict)]
        tools = tuple(str(t.get("name", "")) for t in data.get("tools") or () if isinstance(t, dict))
        outputs = tuple(
            ToolOutput(str(block.get("tool_use_id", "")), block_text(block.get("content")))
            for m in messages
            if m.get("role") == "user"
            for block in blocks(m.get("content"))
            if block.get("type") == "tool_result"
        )
        texts = [block_text(data.get("system"))] + [
            block_text(m.get("content")) for m in messages if m.get("role") == "user"
        ]
        return Turn(
            model=str(data.get("model", "scripted")),
            stream=bool(data.get("stream")),
            tools=tools,
            turn=sum(1 for m in messages if m.get("role") == "assistant"),
            outputs=outputs,
            prompt="\n".join(t for t in texts if t),
        )

    def answer(self, turn: Turn, action: Action, usage: Usage, call_id: str) -> Reply:
        message = {
            "id": f"msg_{uuid.uuid4().hex[:24]}",
            "type": "message",
            "role": "assistant",
            "model": turn.model,
            "content": [content_block(action, call_id)],
            "stop_reason": "tool_use" if action.kind == "tool" else "end_turn",
            "stop_sequence": None,
            "usage": usage_block(usage),
        }
        return sse_reply(stream_events(message)) if turn.stream else json_reply(200, message)

    def failure(self, message: str) -> Reply:
        # Anthropic's error shape; retry-after-ms keeps Claude Code's retries of a 5xx fast.
        body = {"type": "error", "error": {"type": "api_error", "message": message}}
        return json_reply(500, body, (("retry-after-ms", "50"),))


def content_block(action: Action, call_id: str) -> dict[str, Any]:
    """The one content block of an answer: Claude Code's Bash tool, or the text."""
    if action.kind == "tool":
        command = {"command": action.command, "description": action.description or "Run a command"}
        return {"type": "tool_use", "id": call_id, "name": BASH, "input": command}
    return {"type": "text", "text": action.text}


def usage_block(usage: Usage) -> dict[str, int]:
    """Usage in Anthropic's vocabulary: uncached input, cache reads apart, thinking inside output."""
    return {
        "input_tokens": usage.input - usage.cached,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": usage.cached,
        "output_tokens": usage.output,
    }


def stream_events(message: dict[str, Any]) -> list[bytes]:
    """The SSE events of a streamed message (its usage on ``message_start`` for the input and on
    ``message_delta`` for the output, as Anthropic's API sends them)."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 0}}
    events = [event("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message["content"]):
        events += block_events(index, block)
    delta = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    events.append(event("message_delta", {"type": "message_delta", "delta": delta, "usage": usage}))
    events.append(event("message_stop", {"type": "message_stop"}))
    return events


def block_events(index: int, block: dict[str, Any]) -> list[bytes]:
    """One content block: its start, its deltas (a tool's input as JSON in pieces), its stop."""
    if block["type"] == "tool_use":
        opening = {**block, "input": {}}
        text = json.dumps(block["input"])
        deltas = [
            {"type": "input_json_delta", "partial_json": text[i : i + INPUT_PIECE]}
            for i in range(0, len(text), INPUT_PIECE)
        ]
    else:
        opening = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": block["text"]}]
    return [
        event("content_block_start", {"type": "content_block_start", "index": index, "content_block": opening}),
        *(event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in deltas),
        event("content_block_stop", {"type": "content_block_stop", "index": index}),
    ]


def event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def blocks(content: Any) -> list[dict[str, Any]]:
    """A message's content as blocks: a plain string is one text block."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def block_text(content: Any) -> str:
    """The text of a message's or a tool result's content (its text blocks joined)."""
    return "".join(str(b.get("text", "")) for b in blocks(content) if b.get("type") == "text")


WIRE = Anthropic()
