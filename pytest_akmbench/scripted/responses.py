"""The OpenAI Responses wire (Codex CLI): a request's ``input`` items read as a :class:`Turn`, and
a streamed response's SSE events, or a whole ``response`` object (docs/codex.md, "The model
server protocol").

A tool action is Codex's ``exec_command`` function with ``cmd`` (Codex 0.171 offers no other
shell tool with its default features): ``login`` false so a login shell's profile cannot reset
the PATH the harness gave, ``tty`` false for plain pipes, and the longest yield Codex allows so a
command's output comes back whole in one call.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from .wire import Action, Reply, ToolOutput, Turn, Usage, json_reply, sse_reply, text_of

SHELL_TOOL = "exec_command"
YIELD_MS = 30000  # the most Codex waits before it returns a running command's session instead
ARGUMENT_PIECE = 400  # long arguments are streamed in pieces, as real providers do
# Codex wraps a command's output in a header: "Chunk ID: …\nWall time: …\nProcess exited with
# code N\nOriginal token count: N\nOutput:\n<the output>".
_HEADER = re.compile(r"\AChunk ID: [^\n]*\n(?:[^\n]*\n){0,6}?Output:\n")


def usage_block(usage: Usage) -> dict[str, Any]:
    """The ``usage`` object of a response, in the Responses vocabulary."""
    return {
        "input_tokens": usage.input,
        "input_tokens_details": {"cached_tokens": usage.cached},
        "output_tokens": usage.output,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning},
        "total_tokens": usage.input + usage.output,
    }


def tool_output(value: Any) -> str:
    """A ``function_call_output``'s text without Codex's header: what the command printed."""
    text = value if isinstance(value, str) else text_of(value)
    return _HEADER.sub("", text, count=1)


def _tool_name(tool: Any) -> str:
    if not isinstance(tool, dict):
        return ""
    return str(tool.get("name") or tool.get("type") or "")


class Responses:
    """``POST /c/<token>/v1/responses``; a tool action is Codex's ``exec_command``."""

    name: str = "responses"
    route: tuple[str, ...] = ("v1", "responses")

    def parse(self, body: dict[str, Any]) -> Turn:
        raw = body.get("input")
        items = [i for i in raw if isinstance(i, dict)] if isinstance(raw, list) else []
        if isinstance(raw, str):
            items = [{"type": "message", "role": "user", "content": raw}]
        given = body.get("tools")
        tools = given if isinstance(given, list) else []
        said = [str(body["instructions"])] if isinstance(body.get("instructions"), str) else []
        said += [
            text_of(i.get("content"))
            for i in items
            if i.get("type", "message") == "message" and i.get("role") in ("system", "developer", "user")
        ]
        return Turn(
            model=str(body.get("model", "scripted")),
            stream=bool(body.get("stream")),
            tools=tuple(_tool_name(t) for t in tools),
            # One response of the scripted model is one function call or one message.
            turn=sum(1 for i in items if i.get("type") == "function_call" or i.get("role") == "assistant"),
            outputs=tuple(
                ToolOutput(str(i.get("call_id", "")), tool_output(i.get("output")))
                for i in items
                if i.get("type") == "function_call_output"
            ),
            prompt="\n".join(said),
        )

    def answer(self, turn: Turn, action: Action, usage: Usage, call_id: str) -> Reply:
        rid = f"resp_{uuid.uuid4().hex[:16]}"
        item = output_item(action, call_id)
        done = response(rid, turn.model, "completed", [item], usage_block(usage))
        if not turn.stream:
            return json_reply(200, done)
        return sse_reply(stream_events(rid, turn.model, item, done))

    def failure(self, message: str) -> Reply:
        payload = {"error": {"message": message, "type": "server_error", "code": "server_error"}}
        return json_reply(500, payload, (("retry-after-ms", "50"),))


WIRE = Responses()


def shell_args(action: Action) -> dict[str, Any]:
    """The arguments of Codex's ``exec_command`` for a tool action."""
    return {"cmd": action.command, "login": False, "tty": False, "yield_time_ms": YIELD_MS}


def output_item(action: Action, call_id: str) -> dict[str, Any]:
    """The one output item of a response: a ``function_call``, or an assistant ``message``."""
    if action.kind == "tool":
        return {
            "type": "function_call",
            "id": f"fc_{uuid.uuid4().hex[:12]}",
            "call_id": call_id,
            "name": SHELL_TOOL,
            "arguments": json.dumps(shell_args(action)),
            "status": "completed",
        }
    return {
        "type": "message",
        "id": f"msg_{uuid.uuid4().hex[:12]}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": action.text, "annotations": []}],
    }


def response(rid: str, model: str, status: str, output: list[dict[str, Any]], usage: Any) -> dict[str, Any]:
    return {"id": rid, "object": "response", "model": model, "status": status, "output": output, "usage": usage}


def stream_events(rid: str, model: str, item: dict[str, Any], done: dict[str, Any]) -> list[bytes]:
    """The SSE events of a streamed response: created, the item added, its deltas, the item
    done, then ``response.completed`` with the usage."""
    frames = [_event("response.created", response=response(rid, model, "in_progress", [], None))]
    if item["type"] == "function_call":
        args = item["arguments"]
        frames.append(_event("response.output_item.added", output_index=0, item={**item, "arguments": ""}))
        frames += [
            _event(
                "response.function_call_arguments.delta",
                output_index=0,
                item_id=item["id"],
                delta=args[i : i + ARGUMENT_PIECE],
            )
            for i in range(0, len(args), ARGUMENT_PIECE)
        ]
        frames.append(
            _event("response.function_call_arguments.done", output_index=0, item_id=item["id"], arguments=args)
        )
    else:
        text = item["content"][0]["text"]
        frames.append(_event("response.output_item.added", output_index=0, item={**item, "content": []}))
        frames.append(
            _event("response.output_text.delta", output_index=0, item_id=item["id"], content_index=0, delta=text)
        )
        frames.append(
            _event("response.output_text.done", output_index=0, item_id=item["id"], content_index=0, text=text)
        )
    frames.append(_event("response.output_item.done", output_index=0, item=item))
    frames.append(_event("response.completed", response=done))
    return frames


def _event(kind: str, **fields: Any) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n".encode()
