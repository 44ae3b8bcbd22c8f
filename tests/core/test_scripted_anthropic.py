"""The scripted model's Anthropic Messages wire (scripted/anthropic.py, docs/claude-code.md):
requests as Claude Code sends them parsed into neutral turns, actions answered as Messages
events Claude Code reads."""

from __future__ import annotations

import json

from pytest_akmbench.scripted.anthropic import WIRE
from pytest_akmbench.scripted.wire import Action, Turn, Usage


def _request(**extra: object) -> dict[str, object]:
    body = {
        "model": "claude-x",
        "stream": True,
        "system": [{"type": "text", "text": "You are Claude Code."}],
        "tools": [{"name": "Bash", "input_schema": {}}, {"name": "Read", "input_schema": {}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Fix the "}, {"type": "text", "text": "bug."}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "call_0", "name": "Bash", "input": {}}]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "call_0", "content": "hits\n", "is_error": False},
                ],
            },
            {"role": "assistant", "content": [{"type": "tool_use", "id": "call_1", "name": "Bash", "input": {}}]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "call_1", "content": [{"type": "text", "text": "done"}]},
                    {"type": "text", "text": "a reminder"},
                ],
            },
        ],
        **extra,
    }
    return body


def _events(chunks: tuple[bytes, ...]) -> list[tuple[str, dict[str, object]]]:
    found = []
    for chunk in chunks:
        name, data = chunk.decode().strip().split("\n")
        assert name.startswith("event: ") and data.startswith("data: ")
        payload = json.loads(data.removeprefix("data: "))
        assert payload["type"] == name.removeprefix("event: ")
        found.append((payload["type"], payload))
    return found


def test_parse_reads_the_turn_the_tools_and_every_tool_output() -> None:
    turn = WIRE.parse(_request())
    assert turn.model == "claude-x" and turn.stream is True
    assert turn.tools == ("Bash", "Read")
    assert turn.turn == 2  # two assistant messages already in the request
    assert [(o.call_id, o.text) for o in turn.outputs] == [("call_0", "hits\n"), ("call_1", "done")]
    assert turn.prompt == "You are Claude Code.\nFix the bug.\na reminder"


def test_parse_takes_a_plain_string_prompt_and_no_tools() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "title this"}]}
    turn = WIRE.parse(body)
    assert (turn.tools, turn.turn, turn.outputs, turn.prompt, turn.stream) == ((), 0, (), "title this", False)


def test_a_tool_action_streams_a_bash_tool_use_with_the_servers_call_id() -> None:
    command = "bash <<'EOF'\n" + "echo x\n" * 200 + "EOF"
    reply = WIRE.answer(
        WIRE.parse(_request()), Action("tool", command=command, description="Apply"), Usage(1020, 20), "call_2"
    )
    assert reply.status == 200 and dict(reply.headers)["Content-Type"] == "text/event-stream"
    events = _events(reply.chunks)
    kinds = [k for k, _ in events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    start = events[1][1]["content_block"]
    assert start == {"type": "tool_use", "id": "call_2", "name": "Bash", "input": {}}
    pieces = [e["delta"] for k, e in events if k == "content_block_delta"]  # type: ignore[index]
    assert len(pieces) > 1  # a long input comes in pieces
    assert json.loads("".join(p["partial_json"] for p in pieces)) == {"command": command, "description": "Apply"}
    delta = events[-2][1]
    assert delta["delta"] == {"stop_reason": "tool_use", "stop_sequence": None}


def test_usage_is_in_anthropics_vocabulary() -> None:
    reply = WIRE.answer(WIRE.parse(_request()), Action("text", text="Done."), Usage(1020, 20, cached=300), "call_2")
    events = dict(_events(reply.chunks))
    started = events["message_start"]["message"]  # type: ignore[index]
    assert started["usage"]["input_tokens"] == 720 and started["usage"]["cache_read_input_tokens"] == 300
    assert events["message_delta"]["usage"]["output_tokens"] == 20  # type: ignore[index]
    assert events["message_delta"]["delta"]["stop_reason"] == "end_turn"  # type: ignore[index]
    assert events["content_block_delta"]["delta"] == {"type": "text_delta", "text": "Done."}  # type: ignore[index]


def test_an_unstreamed_request_gets_one_message() -> None:
    turn = Turn(model="m", stream=False, tools=(), turn=0, outputs=(), prompt="")
    reply = WIRE.answer(turn, Action("text", text="akmbench"), Usage(1000, 20), "")
    message = json.loads(b"".join(reply.chunks))
    assert message["content"] == [{"type": "text", "text": "akmbench"}]
    assert message["stop_reason"] == "end_turn" and message["usage"]["output_tokens"] == 20


def test_a_failure_is_an_api_error_retried_fast() -> None:
    reply = WIRE.failure("the model is unavailable")
    assert reply.status == 500 and dict(reply.headers)["retry-after-ms"] == "50"
    body = json.loads(b"".join(reply.chunks))
    assert body == {"type": "error", "error": {"type": "api_error", "message": "the model is unavailable"}}


def test_the_route_is_the_messages_endpoint() -> None:
    assert WIRE.route == ("v1", "messages") and WIRE.name == "anthropic"
