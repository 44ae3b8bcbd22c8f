"""A wire of the scripted model: one agent's protocol, parsed into a neutral turn and answered
from a neutral action (placeholder of the scripted package's interface until it lands on main)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class ToolOutput:
    call_id: str
    text: str


@dataclass(frozen=True, slots=True)
class Turn:
    model: str
    stream: bool
    tools: tuple[str, ...]
    turn: int
    outputs: tuple[ToolOutput, ...]
    prompt: str


@dataclass(frozen=True, slots=True)
class Usage:
    input: int
    output: int
    cached: int = 0
    reasoning: int = 0


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    headers: dict[str, str]
    chunks: tuple[bytes, ...]


class Action(Protocol):
    kind: str
    command: str
    description: str
    text: str


class Wire(Protocol):
    name: str
    route: tuple[str, ...]

    def parse(self, body: bytes) -> Turn: ...

    def answer(self, turn: Turn, action: Action, usage: Usage, call_id: str) -> Reply: ...

    def failure(self, message: str) -> Reply: ...
