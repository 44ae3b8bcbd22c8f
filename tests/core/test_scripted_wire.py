"""The scripted model without a server: the chat wire's parse and answer, and the policies on
hand-built neutral Turns (docs/scripted.md)."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from urllib.parse import urlparse

import pytest

from pytest_akmbench.corpus.tasks import Task
from pytest_akmbench.scripted import policies
from pytest_akmbench.scripted.chat import WIRE, usage_block
from pytest_akmbench.scripted.policies import ScriptedCell, next_action
from pytest_akmbench.scripted.server import WIRES, ScriptedModel, find_wire, turn_usage, usage_for_turn
from pytest_akmbench.scripted.wire import Action, ToolOutput, Turn, Usage


def make_task(tmp_path: Path, gold: str | None = "skill:hello") -> Task:
    (tmp_path / "solution").mkdir(exist_ok=True)
    (tmp_path / "solution" / "solve.sh").write_text("echo hi\n")
    return Task(
        id="demo/t",
        title="T",
        domain="demo-area",
        difficulty="easy",
        stash="s",
        verifier="regex",
        task_dir=tmp_path,
        yaml_text="",
        gold_ref=gold,
        akm_keywords=None,
    )


def turn(n: int, outputs: tuple[ToolOutput, ...] = (), tools: tuple[str, ...] = ("bash",), prompt: str = "") -> Turn:
    return Turn(model="m", stream=True, tools=tools, turn=n, outputs=outputs, prompt=prompt)


# ---------------------------------------------------------------- the chat wire


def test_chat_parse_reads_the_conversation_neutrally() -> None:
    body = {
        "model": "scripted/oracle",
        "stream": True,
        "tools": [
            {"type": "function", "function": {"name": "bash"}},
            {"type": "function", "function": {"name": "read"}},
        ],
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "do "}, {"type": "text", "text": "it"}]},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "call_0"}]},
            {"role": "tool", "tool_call_id": "call_0", "content": "out 0"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1"}]},
            {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "out 1"}]},
        ],
    }
    assert WIRE.parse(body) == Turn(
        model="scripted/oracle",
        stream=True,
        tools=("bash", "read"),
        turn=2,
        outputs=(ToolOutput("call_0", "out 0"), ToolOutput("call_1", "out 1")),
        prompt="be brief\ndo it",
    )
    side = WIRE.parse({"messages": "not a list"})
    assert side.tools == () and side.turn == 0 and side.outputs == () and not side.stream


def test_chat_answers_a_tool_action_with_opencodes_bash_tool() -> None:
    action = Action("tool", command="x" * 900, description="Run it")
    reply = WIRE.answer(turn(3), action, Usage(input=1030, output=20), "call_3")
    assert reply.status == 200 and ("Content-Type", "text/event-stream") in reply.headers
    assert reply.chunks[-1] == b"data: [DONE]\n\n"
    frames = [json.loads(c[len(b"data: ") :]) for c in reply.chunks[:-1]]
    opening = frames[0]["choices"][0]["delta"]["tool_calls"][0]
    assert opening["id"] == "call_3" and opening["function"]["name"] == "bash"
    args = "".join(f["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] for f in frames[1:-2])
    assert json.loads(args) == {"command": "x" * 900, "description": "Run it"}
    assert frames[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert frames[-1]["usage"] == usage_for_turn(3)


def test_chat_answers_text_whole_when_no_stream_was_asked() -> None:
    request = Turn(model="m", stream=False, tools=(), turn=0, outputs=(), prompt="")
    reply = WIRE.answer(request, Action("text", text="hello"), Usage(input=5, output=2, cached=1, reasoning=1), "")
    (body,) = reply.chunks
    assert dict(reply.headers)["Content-Length"] == str(len(body))
    data = json.loads(body)
    assert data["choices"][0]["message"] == {"role": "assistant", "content": "hello"}
    assert data["usage"] == usage_block(Usage(input=5, output=2, cached=1, reasoning=1))
    assert data["usage"]["total_tokens"] == 7 and data["usage"]["prompt_tokens_details"] == {"cached_tokens": 1}


def test_chat_failure_is_a_fast_retryable_500() -> None:
    reply = WIRE.failure("boom")
    assert reply.status == 500 and ("retry-after-ms", "50") in reply.headers
    assert json.loads(reply.chunks[0])["error"]["message"] == "boom"


def test_usage_per_turn_is_neutral_and_the_chat_block_matches() -> None:
    assert turn_usage(2) == Usage(input=1020, output=20)
    assert usage_for_turn(2)["prompt_tokens"] == 1020 and usage_for_turn(2)["total_tokens"] == 1040


def test_routes_pick_the_wire_and_ignore_a_query() -> None:
    assert WIRES[0] is WIRE
    assert find_wire("/c/tok/v1/chat/completions?beta=true") == ("tok", WIRE)
    assert find_wire("/c/tok/v1/nothing") is None and find_wire("/v1/chat/completions") is None


def test_server_records_the_api_key_header(tmp_path: Path) -> None:
    with ScriptedModel() as server:
        base = server.register("tok", "idle")
        url = urlparse(base + "/chat/completions?beta=true")
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
        conn.request("POST", f"{url.path}?{url.query}", json.dumps({"messages": []}), {"x-api-key": "k1"})
        assert conn.getresponse().status == 200
        conn.close()
        assert server.authorization("tok") == {"k1"}


# ---------------------------------------------------------------- the policies on neutral turns


def test_oracle_plan_on_neutral_turns(tmp_path: Path) -> None:
    cell = ScriptedCell(policy="oracle", task=make_task(tmp_path), arm="akm", run_dir=tmp_path, akm_line="0.7")
    assert next_action(cell, turn(0)).command == "akm search demo area"
    searched = ToolOutput("call_0", "no refs here")
    assert next_action(cell, turn(1, (searched,))).command == "akm show skill:hello"
    outputs = (searched, ToolOutput("call_1", "shown"), ToolOutput("call_2", "the answer\n"))
    assert next_action(cell, turn(2, outputs[:2])).description == policies.APPLY
    assert next_action(cell, turn(3, outputs)).command == "akm feedback skill:hello --positive"
    final = next_action(cell, turn(4, (*outputs, ToolOutput("call_3", "ok"))))
    assert final == Action("text", text="the answer")  # the solution's output, found by call id


def test_commands_plan_ends_with_the_last_output(tmp_path: Path) -> None:
    cell = ScriptedCell(policy="oracle", task=None, arm="noakm", run_dir=None, commands=["echo a", "echo b"])
    assert next_action(cell, turn(1, (ToolOutput("call_0", "a"),))).command == "echo b"
    final = next_action(cell, turn(2, (ToolOutput("call_0", "a"), ToolOutput("call_1", " b\n"))))
    assert final.text == "b"


@pytest.mark.parametrize(("policy", "kind"), [("idle", "text"), ("hang", "hang"), ("error", "error"), ("loop", "tool")])
def test_simple_policies(policy: str, kind: str) -> None:
    cell = ScriptedCell(policy=policy, task=None, arm="noakm", run_dir=None)
    assert next_action(cell, turn(5)).kind == kind


def test_needs_asset_reads_the_search_output(tmp_path: Path) -> None:
    task = make_task(tmp_path)
    cell = ScriptedCell(policy="needs-asset", task=task, arm="akm", run_dir=tmp_path)
    assert next_action(cell, turn(0)).command.startswith("akm search")
    nothing = ToolOutput("call_0", json.dumps({"hits": []}))
    assert next_action(cell, turn(1, (nothing,))).text == policies.NO_ASSET_TEXT


def test_akm_llm_reply_reads_the_prompt() -> None:
    assert policies.akm_llm_reply("garbage", "anything") == policies.GARBAGE_TEXT
    lesson = policies.akm_llm_reply("lesson", "system words\nAsset ref: skill:x\n")
    assert "description: Lesson on skill:x" in lesson
