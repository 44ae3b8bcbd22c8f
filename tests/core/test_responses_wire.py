"""The scripted model's OpenAI Responses wire (Codex CLI): a request Codex 0.171 sends read as a
Turn, and the policies' actions rendered as the SSE events and usage Codex reads."""

from __future__ import annotations

import json
from typing import Any

from pytest_akmbench.scripted.responses import SHELL_TOOL, WIRE, tool_output
from pytest_akmbench.scripted.wire import Action, Turn, Usage

# The shape of Codex's second request of a cell (abridged): its instructions, the user's
# prompt, the function call the server answered and its output with Codex's header.
REQUEST: dict[str, Any] = {
    "model": "oracle",
    "stream": True,
    "instructions": "You are Codex.",
    "input": [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions>"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Fix the bug."}]},
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_0",
            "name": "exec_command",
            "arguments": '{"cmd": "ls"}',
            "status": "completed",
        },
        {
            "type": "function_call_output",
            "call_id": "call_0",
            "output": "Chunk ID: 2bbe8e\nWall time: 0.0000 seconds\nProcess exited with code 3\n"
            "Original token count: 2\nOutput:\nREADME.md\nsrc\n",
        },
    ],
    "tools": [
        {"type": "function", "name": "exec_command", "parameters": {}},
        {"type": "function", "name": "write_stdin", "parameters": {}},
        {"type": "web_search"},
    ],
    "tool_choice": "auto",
}


def _events(chunks: tuple[bytes, ...]) -> list[dict[str, Any]]:
    """The SSE events of a reply, each checked to name its own type on its ``event:`` line."""
    found = []
    for chunk in chunks:
        head, data = chunk.decode().rstrip("\n").split("\n")
        event = json.loads(data.removeprefix("data: "))
        assert head == f"event: {event['type']}"
        found.append(event)
    return found


def test_parse_reads_codex_request() -> None:
    turn = WIRE.parse(REQUEST)
    assert turn.model == "oracle" and turn.stream
    assert turn.tools == ("exec_command", "write_stdin", "web_search")
    assert turn.turn == 1
    assert [(o.call_id, o.text) for o in turn.outputs] == [("call_0", "README.md\nsrc\n")]
    assert turn.prompt == "You are Codex.\n<permissions>\nFix the bug."


def test_parse_first_request_and_odd_input() -> None:
    first = WIRE.parse({"model": "m", "input": "hello", "tools": []})
    assert (first.turn, first.outputs, first.tools, first.prompt, first.stream) == (0, (), (), "hello", False)
    odd = WIRE.parse({"input": [1, None, {"type": "function_call_output", "output": 5}], "tools": "x"})
    assert odd.tools == () and [o.text for o in odd.outputs] == [""]


def test_tool_output_without_codex_header_is_kept() -> None:
    assert tool_output("plain text\nOutput:\n") == "plain text\nOutput:\n"
    assert tool_output([{"type": "input_text", "text": "a"}, {"type": "input_text", "text": "b"}]) == "ab"


def test_tool_action_streams_exec_command_call() -> None:
    turn = Turn("oracle", True, ("exec_command",), 0, (), "")
    command = "echo " + "x" * 1000
    reply = WIRE.answer(turn, Action("tool", command=command, description="d"), Usage(1000, 20), "call_7")
    assert reply.status == 200 and ("Content-Type", "text/event-stream") in reply.headers
    events = _events(reply.chunks)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "response.created" and kinds[1] == "response.output_item.added"
    assert kinds[-2:] == ["response.output_item.done", "response.completed"]
    args = "".join(e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta")
    assert kinds.count("response.function_call_arguments.delta") > 1  # streamed in pieces
    item = events[-2]["item"]
    assert (item["type"], item["name"], item["call_id"]) == ("function_call", SHELL_TOOL, "call_7")
    assert json.loads(args) == json.loads(item["arguments"])
    assert json.loads(args)["cmd"] == command and json.loads(args)["login"] is False
    done = events[-1]["response"]
    assert done["status"] == "completed" and done["output"] == [item]
    assert done["usage"] == {
        "input_tokens": 1000,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 20,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 1020,
    }


def test_text_action_streams_a_message_with_usage_details() -> None:
    turn = Turn("oracle", True, ("exec_command",), 2, (), "")
    reply = WIRE.answer(turn, Action("text", text="all done"), Usage(1020, 20, cached=7, reasoning=3), "call_2")
    events = _events(reply.chunks)
    deltas = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
    assert deltas == ["all done"]
    item = events[-1]["response"]["output"][0]
    assert item["role"] == "assistant" and item["content"][0]["text"] == "all done"
    usage = events[-1]["response"]["usage"]
    assert usage["input_tokens_details"] == {"cached_tokens": 7}
    assert usage["output_tokens_details"] == {"reasoning_tokens": 3}


def test_unstreamed_answer_is_one_response_object() -> None:
    turn = Turn("oracle", False, ("exec_command",), 0, (), "")
    reply = WIRE.answer(turn, Action("tool", command="ls"), Usage(1000, 20), "call_0")
    body = json.loads(b"".join(reply.chunks))
    assert body["object"] == "response" and body["output"][0]["name"] == SHELL_TOOL
    assert dict(reply.headers)["Content-Length"] == str(len(b"".join(reply.chunks)))


def test_failure_is_a_server_error() -> None:
    reply = WIRE.failure("the model is unavailable")
    assert reply.status == 500
    assert json.loads(b"".join(reply.chunks))["error"]["message"] == "the model is unavailable"
    assert WIRE.route == ("v1", "responses") and WIRE.name == "responses"
