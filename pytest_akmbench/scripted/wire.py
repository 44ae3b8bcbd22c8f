"""What the scripted model's policies see of a request and answer, whatever the agent's protocol
(docs/scripted.md): a wire parses its protocol's request into a :class:`Turn` and renders the
policy's :class:`Action` as its protocol's :class:`Reply`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class ToolOutput:
    """One tool result of the conversation, under the call id the server gave the call."""

    call_id: str
    text: str


@dataclass(frozen=True)
class Turn:
    """One request, in the policies' terms."""

    model: str
    stream: bool
    tools: tuple[str, ...]  # tool names the request offers; () = a side call (title, akm's own LLM)
    turn: int  # assistant messages already in the conversation (0 on the first call)
    outputs: tuple[ToolOutput, ...]  # every tool result in the conversation, in order
    prompt: str  # every system and user text, joined by "\n" (akm's LLM prompts)


@dataclass(frozen=True)
class Usage:
    """What the server reports for one call, in no protocol's vocabulary."""

    input: int  # prompt tokens, cached ones included
    output: int
    cached: int = 0
    reasoning: int = 0


@dataclass(frozen=True)
class Reply:
    """An HTTP answer: its chunks are written in order, each flushed (SSE frames, or one JSON body)."""

    status: int
    headers: tuple[tuple[str, str], ...]
    chunks: tuple[bytes, ...]


@dataclass(frozen=True)
class Action:
    """What the model does at one turn: run a shell command, answer with text, hang or fail."""

    kind: str  # "tool" | "text" | "hang" | "error"
    command: str = ""
    description: str = ""
    text: str = ""


class Wire(Protocol):
    """One agent protocol the server speaks, at the path ``/c/<token>/<route>``."""

    name: str  # "chat" | "anthropic" | "responses"
    route: tuple[str, ...]  # the path after /c/<token>/, e.g. ("v1", "chat", "completions")

    def parse(self, body: dict[str, Any]) -> Turn: ...

    def answer(self, turn: Turn, action: Action, usage: Usage, call_id: str) -> Reply: ...

    def failure(self, message: str) -> Reply: ...


def json_reply(status: int, payload: Any, headers: tuple[tuple[str, str], ...] = ()) -> Reply:
    """One JSON body with its length."""
    data = json.dumps(payload).encode()
    head = (("Content-Type", "application/json"), ("Content-Length", str(len(data))), *headers)
    return Reply(status, head, (data,))


def sse_reply(frames: list[bytes]) -> Reply:
    """A stream of SSE frames; the connection closes after the last one."""
    head = (("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"), ("Connection", "close"))
    return Reply(200, head, tuple(frames))


def text_of(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""
