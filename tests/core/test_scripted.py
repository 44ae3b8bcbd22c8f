"""Unit tests of the scripted model server (no opencode: a stdlib HTTP client plays its part)."""

from __future__ import annotations

import http.client
import json
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest

from pytest_akmbench.corpus.tasks import Task
from pytest_akmbench.scripted.server import ERROR_MESSAGE, IDLE_TEXT, TITLE_TEXT, ScriptedModel, usage_for_turn
from tests.support.waiting import settle

TOOLS = [{"type": "function", "function": {"name": "bash", "parameters": {}}}]


@pytest.fixture
def server():
    model = ScriptedModel()
    model.start()
    yield model
    model.stop()


def make_task(tmp_path: Path, gold: str | None = "skill:hello") -> Task:
    (tmp_path / "solution").mkdir(exist_ok=True)
    (tmp_path / "solution" / "solve.sh").write_text("#!/usr/bin/env bash\necho hi > out.txt\necho done\n")
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


def post(base: str, body: dict, timeout: float = 10) -> tuple[int, dict[str, str], bytes]:
    url = urlparse(base + "/chat/completions")
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=timeout)
    conn.request("POST", url.path, json.dumps(body), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data


def sse(data: bytes) -> list[dict]:
    frames = [f[len("data: ") :] for f in data.decode().split("\n\n") if f.startswith("data: ")]
    assert frames[-1] == "[DONE]"
    return [json.loads(f) for f in frames[:-1]]


def call(base: str, messages: list[dict]) -> list[dict]:
    status, headers, data = post(
        base,
        {
            "model": "oracle",
            "messages": messages,
            "tools": TOOLS,
            "stream": True,
            "stream_options": {"include_usage": True},
        },
    )
    assert status == 200 and headers["content-type"] == "text/event-stream"
    return sse(data)


def tool_call_of(chunks: list[dict]) -> tuple[str, str, dict]:
    first = chunks[0]["choices"][0]["delta"]["tool_calls"][0]
    assert first["type"] == "function" and first["function"]["arguments"] == ""
    args = "".join(c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] for c in chunks[1:-2])
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    return first["id"], first["function"]["name"], json.loads(args)


def text_of(chunks: list[dict]) -> str:
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks[:-1])


def conversation_step(messages: list[dict], call_id: str, args: dict, output: str) -> list[dict]:
    return messages + [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": "bash", "arguments": json.dumps(args)}}
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": output},
    ]


def test_oracle_on_akm_arm(server, tmp_path):
    task = make_task(tmp_path)
    base = server.register("tok1", "oracle", task, "akm", tmp_path)
    assert base == f"{server.root}/c/tok1/v1"
    messages = [{"role": "user", "content": "do it"}]
    commands = []
    for turn in range(4):
        chunks = call(base, messages)
        assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == usage_for_turn(turn)
        call_id, name, args = tool_call_of(chunks)
        assert name == "bash" and call_id == f"call_{turn}"
        commands.append(args["command"])
        output = "the answer is 42\n" if turn == 2 else "ok\n"
        messages = conversation_step(messages, call_id, args, output)
    assert commands[0] == "akm search demo area"  # the words, as akm-bench's prompt shows them
    assert commands[1] == "akm show skill:hello"
    assert commands[2].startswith("bash <<'AKMBENCH_SOLVE_EOF'\n#!/usr/bin/env bash\necho hi > out.txt\n")
    assert commands[2].endswith("\nAKMBENCH_SOLVE_EOF")
    assert commands[3] == "akm feedback skill:hello --positive"
    chunks = call(base, messages)
    assert text_of(chunks) == "the answer is 42"
    totals = server.totals("tok1")
    assert totals["requests"] == 5
    assert totals["input"] == sum(1000 + 10 * t for t in range(5)) and totals["output"] == 100
    assert totals["total"] == totals["input"] + totals["output"]


def test_oracle_on_control_arm_only_solves(server, tmp_path):
    base = server.register("tok2", "oracle", make_task(tmp_path, gold=None), "noakm", tmp_path)
    messages = [{"role": "user", "content": "do it"}]
    call_id, _, args = tool_call_of(call(base, messages))
    assert "akm" not in args["command"]
    chunks = call(base, conversation_step(messages, call_id, args, "(no output)"))
    assert text_of(chunks) == "Done."


def test_idle_title_and_non_streaming(server):
    base = server.register("tok3", "idle")
    assert text_of(call(base, [{"role": "user", "content": "x"}])) == IDLE_TEXT
    status, _, data = post(base, {"model": "m", "messages": [{"role": "user", "content": "title?"}], "stream": True})
    assert status == 200 and text_of(sse(data)) == TITLE_TEXT
    status, _, data = post(base, {"model": "m", "messages": [], "tools": TOOLS})
    body = json.loads(data)
    assert body["choices"][0]["message"]["content"] == IDLE_TEXT and body["usage"]["prompt_tokens"] == 1000
    totals = server.totals("tok3")
    assert totals["requests"] == 2 and totals["title_requests"] == 1


def test_loop_never_repeats_a_command(server):
    base = server.register("tok4", "loop")
    messages = [{"role": "user", "content": "x"}]
    seen = set()
    for _ in range(5):
        call_id, _, args = tool_call_of(call(base, messages))
        seen.add(args["command"])
        messages = conversation_step(messages, call_id, args, "still working")
    assert len(seen) == 5
    assert server.totals("tok4")["total"] == sum(1020 + 10 * t for t in range(5))


def test_error_policy_is_a_fast_retryable_500(server):
    base = server.register("tok5", "error")
    status, headers, data = post(base, {"model": "m", "messages": [], "tools": TOOLS, "stream": True})
    assert status == 500 and headers["retry-after-ms"] == "50"
    body = json.loads(data)
    assert body["error"]["message"] == ERROR_MESSAGE
    assert "invalid_request_error" not in data.decode()
    assert server.totals("tok5")["errors"] == 1


def test_hang_releases_on_stop(tmp_path):
    model = ScriptedModel()
    model.start()
    base = model.register("tok6", "hang")
    outcome: dict = {}

    def client() -> None:
        try:
            outcome["r"] = post(base, {"model": "m", "messages": [], "tools": TOOLS, "stream": True}, timeout=20)
        except Exception as err:
            outcome["e"] = err

    thread = threading.Thread(target=client)
    thread.start()
    # Wait for the request to arrive rather than sleeping a fixed time: on a loaded machine the
    # client thread may not have sent it yet.
    settle(lambda: model.totals("tok6")["requests"] >= 1, within=15)
    assert thread.is_alive() and model.totals("tok6")["requests"] == 1
    started = time.monotonic()
    model.stop()
    thread.join(timeout=19)
    # Well short of the client's 20 s timeout: the stop released the hung request.
    assert not thread.is_alive() and time.monotonic() - started < 15
    assert "e" in outcome or outcome["r"][0] != 200


def test_unknown_cell_and_path(server):
    status, _, data = post(f"{server.root}/c/nope/v1", {"messages": [], "tools": TOOLS})
    assert status == 404 and b"invalid_request_error" in data
    status, _, _ = post(f"{server.root}/v1", {"messages": []})
    assert status == 404
    server.register("tok7", "idle")
    server.unregister("tok7")
    assert server.totals("tok7")["requests"] == 0


def test_register_validates():
    model = ScriptedModel()
    model.start()
    try:
        with pytest.raises(ValueError, match="unknown scripted policy"):
            model.register("t", "genius")
        with pytest.raises(ValueError, match="needs the task"):
            model.register("t", "oracle")
    finally:
        model.stop()
