"""Unit tests of the opencode event-stream parser, on lines recorded from opencode 1.18.33."""

from __future__ import annotations

import json

from pytest_akmbench.agents.opencode.events import EventStream
from tests.support.events import parse_lines

SID = "ses_dd6cbcafbffe1JT4qfbNffL2mb"


def step_start() -> str:
    return json.dumps(
        {
            "type": "step_start",
            "timestamp": 1,
            "sessionID": SID,
            "part": {"id": "prt_1", "messageID": "msg_1", "sessionID": SID, "type": "step-start"},
        }
    )


def step_finish(
    inp: int,
    out: int,
    *,
    reason: str = "tool-calls",
    reasoning: int = 0,
    read: int = 0,
    write: int = 0,
    cost: float = 0,
) -> str:
    total = inp + out + reasoning + read + write
    return json.dumps(
        {
            "type": "step_finish",
            "timestamp": 2,
            "sessionID": SID,
            "part": {
                "id": "prt_2",
                "reason": reason,
                "messageID": "msg_1",
                "sessionID": SID,
                "type": "step-finish",
                "tokens": {
                    "total": total,
                    "input": inp,
                    "output": out,
                    "reasoning": reasoning,
                    "cache": {"write": write, "read": read},
                },
                "cost": cost,
            },
        }
    )


def tool_use(command: str, output: str = "(no output)", status: str = "completed") -> str:
    state = {
        "status": status,
        "input": {"command": command, "description": "d"},
        "output": output,
        "metadata": {"output": output, "exit": 0, "truncated": False},
        "title": command,
        "time": {"start": 1, "end": 2},
    }
    if status == "error":
        state = {"status": "error", "input": {"command": command}, "error": output, "time": {"start": 1, "end": 2}}
    return json.dumps(
        {
            "type": "tool_use",
            "timestamp": 3,
            "sessionID": SID,
            "part": {
                "type": "tool",
                "tool": "bash",
                "callID": "call_0",
                "state": state,
                "id": "prt_3",
                "sessionID": SID,
                "messageID": "msg_1",
            },
        }
    )


def text(value: str) -> str:
    return json.dumps(
        {
            "type": "text",
            "timestamp": 4,
            "sessionID": SID,
            "part": {
                "id": "prt_4",
                "messageID": "msg_2",
                "sessionID": SID,
                "type": "text",
                "text": value,
                "time": {"start": 1, "end": 2},
            },
        }
    )


# Recorded verbatim (idle policy): one step, text, stop.
IDLE = [
    '{"type":"step_start","timestamp":1795987619742,"sessionID":"ses_dd6cbcafbffe1JT4qfbNffL2mb","part":{"id":"prt_229343f500014qlHO5I0iF0ppJ","messageID":"msg_229343d360018PbUEssQt4cZbl","sessionID":"ses_dd6cbcafbffe1JT4qfbNffL2mb","type":"step-start"}}',
    '{"type":"text","timestamp":1795987619742,"sessionID":"ses_dd6cbcafbffe1JT4qfbNffL2mb","part":{"id":"prt_229343f5a001R57lnpRuZQHZet","messageID":"msg_229343d360018PbUEssQt4cZbl","sessionID":"ses_dd6cbcafbffe1JT4qfbNffL2mb","type":"text","text":"I have looked at the task and will not change anything.","time":{"start":1795987619674,"end":1795987619690}}}',
    '{"type":"step_finish","timestamp":1795987619743,"sessionID":"ses_dd6cbcafbffe1JT4qfbNffL2mb","part":{"id":"prt_229343f78001RoKzQr7EJl4q9c","reason":"stop","messageID":"msg_229343d360018PbUEssQt4cZbl","sessionID":"ses_dd6cbcafbffe1JT4qfbNffL2mb","type":"step-finish","tokens":{"total":1020,"input":1000,"output":20,"reasoning":0,"cache":{"write":0,"read":0}},"cost":0}}',
]
# Recorded (error policy), shortened responseHeaders.
ERROR = (
    '{"type":"error","timestamp":1795987608898,"sessionID":"ses_dd6cbff24ffeIwCZNkHBaKL49h","error":{"name":"APIError",'
    '"data":{"message":"scripted provider failure: the model is unavailable (policy error)","statusCode":500,'
    '"isRetryable":true,"responseHeaders":{"retry-after-ms":"50"},"responseBody":"{}"}}}'
)


def test_recorded_idle_stream(tmp_path):
    stream = parse_lines(IDLE, tmp_path / "t.jsonl")
    assert stream.turns == 1 and stream.tool_calls == 0
    assert stream.tokens == {
        "input": 1000,
        "output": 20,
        "reasoning": 0,
        "cache_read": 0,
        "cache_write": 0,
        "total": 1020,
    }
    assert stream.final_text == "I have looked at the task and will not change anything."
    assert stream.last_finish_reason == "stop"
    assert stream.session_id == "ses_dd6cbcafbffe1JT4qfbNffL2mb"
    assert (tmp_path / "t.jsonl").read_text() == "\n".join(IDLE) + "\n"
    assert stream.measured and not stream.errors


def test_sums_tokens_and_cost_over_steps():
    lines = [
        step_start(),
        tool_use("echo hi > out.txt"),
        step_finish(1000, 30, read=200, cost=0.00351),
        step_start(),
        text("Created out.txt containing hi."),
        step_finish(1300, 6, reasoning=3, reason="stop", cost=0.004035),
    ]
    stream = parse_lines(lines)
    assert stream.tokens == {
        "input": 2300,
        "output": 36,
        "reasoning": 3,
        "cache_read": 200,
        "cache_write": 0,
        "total": 1230 + 1309,
    }
    assert abs(stream.cost - 0.007545) < 1e-12
    assert stream.turns == 2 and stream.tool_calls == 1
    assert stream.final_text == "Created out.txt containing hi."


def test_final_text_is_text_after_last_tool_call():
    lines = [
        step_start(),
        text("Let me look."),
        tool_use("ls"),
        step_finish(10, 1),
        step_start(),
        text("Answer:"),
        text("42"),
        step_finish(10, 1, reason="stop"),
    ]
    assert parse_lines(lines).final_text == "Answer:\n42"
    lines = [step_start(), text("thinking aloud"), tool_use("ls"), step_finish(10, 1)]
    assert parse_lines(lines).final_text == ""


def test_error_events_are_recorded():
    stream = parse_lines([ERROR])
    assert stream.errors == [
        {
            "name": "APIError",
            "statusCode": 500,
            "message": "scripted provider failure: the model is unavailable (policy error)",
        }
    ]
    assert stream.errors_after_last_step == 1
    assert not stream.measured


def test_permission_rejection_and_bad_lines():
    lines = [
        step_start(),
        tool_use("cat /etc/hostname", "The user rejected permission to use this specific tool call.", status="error"),
        "not json at all",
        "[1,2]",
        "",
    ]
    stream = parse_lines(lines)
    assert stream.tool_calls == 1 and stream.tool_errors == 1
    assert len(stream.permission_rejections) == 1
    assert stream.bad_lines == 2


def test_akm_usage_from_bash_commands():
    lines = [
        step_start(),
        tool_use("akm search 'shipyard lint manifest'"),
        tool_use("akm search --limit 5 docker healthcheck && akm show skill:docker-health | head -50"),
        tool_use("cd /ws && /usr/local/bin/akm show knowledge:tiers; cat README.md"),
        tool_use("akm feedback skill:docker-health --positive --note 'worked well'"),
        tool_use("AKM_STASH_DIR=/x akm feedback knowledge:tiers --negative"),
        tool_use("echo akm search not-a-call; grep akm README.md"),
        step_finish(1, 1),
    ]
    stream = parse_lines(lines)
    # Unquoted, akm searches only the first word ("docker"): what akm received is what counts.
    assert stream.akm == {
        "searches": [{"query": "shipyard lint manifest"}, {"query": "docker"}],
        "shows": ["skill:docker-health", "knowledge:tiers"],
        "feedback": [
            {"ref": "skill:docker-health", "polarity": "positive"},
            {"ref": "knowledge:tiers", "polarity": "negative"},
        ],
    }


def test_transcript_cap_stops_writing_but_keeps_parsing(tmp_path):
    path = tmp_path / "t.jsonl"
    line = step_finish(10, 1)
    cap = (len(line) + 1) * 3 + 5
    stream = EventStream(path, cap=cap)
    for _ in range(10):
        stream.feed(line + "\n")
    stream.close()
    assert stream.turns == 10 and stream.tokens["total"] == 110
    assert path.stat().st_size == (len(line) + 1) * 3
    assert stream.truncated
    assert stream.warnings == [f"transcript truncated at {cap} bytes"]


def test_idle_clock():
    now = [100.0]
    stream = EventStream(clock=lambda: now[0])
    now[0] = 130.0
    assert stream.idle_for() == 30.0
    stream.feed(IDLE[0].encode())
    now[0] = 131.5
    assert stream.idle_for() == 1.5
