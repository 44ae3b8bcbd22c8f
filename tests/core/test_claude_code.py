"""Claude Code's stream parser, transcript reader and provider rules (agents/claude_code/,
docs/claude-code.md), on a transcript the real binary wrote (scripted/oracle on the akm arm of
workflow-compliance/drain-hold with akm 0.9.0) and on hand-made lines in its format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_akmbench.agents.claude_code import provider
from pytest_akmbench.agents.claude_code.events import ClaudeStream, tokens_of
from pytest_akmbench.agents.claude_code.transcript import read_transcript
from pytest_akmbench.agents.providers import ModelChoice, ProvidersFile
from pytest_akmbench.agents.transcript import Moment, ToolEvent
from pytest_akmbench.errors import ConfigError

RECORDED = Path(__file__).resolve().parents[1] / "data" / "transcripts" / "claude-code-oracle-akm-0.9.0.jsonl"


def _line(kind: str, **fields: Any) -> bytes:
    return json.dumps({"type": kind, **fields}).encode() + b"\n"


def _call(msg: str, call: str, command: str, ts: str = "2026-12-06T03:16:10.000Z", **usage: int) -> bytes:
    block = {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": command}}
    message = {"id": msg, "content": [block], "usage": {"input_tokens": 1000, "output_tokens": 1, **usage}}
    return _line("assistant", message=message, timestamp=ts)


def _result(call: str, content: str, ts: str = "2026-12-06T03:16:11.000Z", *, error: bool = False) -> bytes:
    block = {"type": "tool_result", "tool_use_id": call, "content": content, "is_error": error}
    return _line("user", message={"role": "user", "content": [block]}, timestamp=ts)


class TestRecordedRun:
    def test_the_transcript_reads_as_four_shell_calls_in_order(self) -> None:
        items = list(read_transcript(RECORDED))
        calls = [i for i in items if isinstance(i, ToolEvent)]
        assert [c.command.split()[:2] for c in calls if c.command] == [
            ["akm", "search"],
            ["akm", "show"],
            ["bash", "<<'AKMBENCH_SOLVE_EOF'"],
            ["akm", "feedback"],
        ]
        assert all(c.kind == "run-shell" and c.tool == "Bash" and c.ok and c.exit == 0 for c in calls)
        assert '"ref": "skills/tidectl"' in calls[0].output
        assert all(c.start_ms is not None and c.end_ms is not None and c.start_ms <= c.end_ms for c in calls)
        moments = [i.t_ms for i in items if isinstance(i, Moment)]
        assert moments == sorted(moments) and calls[0].start_ms in moments

    def test_the_stream_measures_the_results_usage(self, tmp_path: Path) -> None:
        stream = ClaudeStream(tmp_path / "t.jsonl")
        for line in RECORDED.read_bytes().splitlines(keepends=True):
            stream.feed(line)
        stream.close()
        assert stream.measured and stream.version == "2.1.332"
        # 1000 + 10*turn input and 20 output over five requests, as the scripted server reported them
        assert stream.tokens == {
            "input": 5100,
            "output": 100,
            "reasoning": 0,
            "cache_read": 0,
            "cache_write": 0,
            "total": 5200,
        }
        assert (stream.turns, stream.tool_calls, stream.pending_tools) == (5, 4, 0)
        assert stream.akm["searches"] == [{"query": "tidectl"}]  # akm searches the first word
        assert stream.akm["shows"] == ["skills/tidectl"]
        assert stream.akm["feedback"] == [{"ref": "skills/tidectl", "polarity": "positive"}]
        assert stream.final_text == "(Bash completed with no output)"
        assert (tmp_path / "t.jsonl").read_bytes() == RECORDED.read_bytes()


class TestStream:
    def test_before_the_result_tokens_are_counted_per_message(self) -> None:
        stream = ClaudeStream()
        stream.feed(_call("m1", "call_0", "ls", cache_read_input_tokens=5))
        stream.feed(_call("m1", "call_1", "pwd", cache_read_input_tokens=5))  # a second block, same request
        stream.feed(_call("m2", "call_2", "true", output_tokens=7))
        assert not stream.measured and stream.turns == 2 and stream.tool_calls == 3
        assert stream.tokens["input"] == 2000 and stream.tokens["cache_read"] == 5
        assert stream.total_tokens() == 2000 + 5 + 1 + 7
        assert stream.over_turns(1) and not stream.over_turns(2)

    def test_garbage_lines_are_counted_not_raised(self) -> None:
        stream = ClaudeStream()
        for line in (b"not json\n", b"[1]\n", b"\n"):
            stream.feed(line)
        assert stream.bad_lines == 2 and stream.tokens["total"] == 0 and stream.final_text == ""

    def test_thinking_is_reasoning_not_output(self) -> None:
        usage = {"input_tokens": 10, "output_tokens": 30, "output_tokens_details": {"thinking_tokens": 12}}
        assert tokens_of(usage) == {
            "input": 10,
            "output": 18,
            "reasoning": 12,
            "cache_read": 0,
            "cache_write": 0,
            "total": 40,
        }


class TestTranscript:
    def test_a_failed_command_has_its_exit_status(self, tmp_path: Path) -> None:
        path = tmp_path / "t.jsonl"
        path.write_bytes(_call("m1", "call_0", "exit 3") + _result("call_0", "Exit code 3\nout\nerr", error=True))
        (event,) = [i for i in read_transcript(path) if isinstance(i, ToolEvent)]
        assert (event.exit, event.output, event.finished, event.ok) == (3, "out\nerr", True, False)

    def test_a_call_cut_off_is_unfinished(self, tmp_path: Path) -> None:
        path = tmp_path / "t.jsonl"
        path.write_bytes(_call("m1", "call_0", "sleep 600") + b'{"broken": \n')
        (event,) = [i for i in read_transcript(path) if isinstance(i, ToolEvent)]
        assert event.command == "sleep 600" and not event.finished and event.exit is None

    def test_file_tools_have_their_kind_and_path(self, tmp_path: Path) -> None:
        block = {"type": "tool_use", "id": "c", "name": "Edit", "input": {"file_path": "/w/a.py"}}
        path = tmp_path / "t.jsonl"
        path.write_bytes(_line("assistant", message={"id": "m", "content": [block]}) + _result("c", "ok"))
        (event,) = [i for i in read_transcript(path) if isinstance(i, ToolEvent)]
        assert (event.kind, event.path, event.command, event.ok) == ("edit", "/w/a.py", None, True)


def _choice(entry: dict[str, Any] | None, key: str = "claude") -> ModelChoice:
    providers = ProvidersFile(source="p.json", providers={key: entry} if entry else {})
    return ModelChoice(
        model=f"{key}/sonnet",
        model_source="--bench-model",
        provider_key=key,
        providers=providers,
        provider_entry=entry,
        env_vars=frozenset({"CLAUDE_KEY"}),
    )


ENTRY = {
    "npm": "@ai-sdk/anthropic",
    "options": {"baseURL": "https://gw.example/{env:CLAUDE_KEY}/v1", "apiKey": "{env:CLAUDE_KEY}"},
}


class TestProvider:
    def test_an_anthropic_entry_gives_the_base_before_v1_and_a_placeholder_key(self) -> None:
        choice = _choice(ENTRY)
        provider.check_anthropic(choice)
        point = provider.endpoint(choice, {"CLAUDE_KEY": "secret"}, {"CLAUDE_KEY": "PH"})
        assert point.upstream == "https://gw.example/secret"
        assert point.cell_path == "/PH" and point.key == "PH" and "secret" not in repr(point.headers)
        assert provider.model_id(choice) == "sonnet"

    @pytest.mark.parametrize("entry", [None, {"npm": "@ai-sdk/openai-compatible", "options": {}}])
    def test_an_entry_claude_code_cannot_speak_to_is_refused(self, entry: dict[str, Any] | None) -> None:
        with pytest.raises(ConfigError, match="claude-code"):
            provider.check_anthropic(_choice(entry))

    def test_the_scripted_endpoint_stops_before_v1(self) -> None:
        point = provider.scripted("http://127.0.0.1:5/c/tok/v1")
        assert (point.upstream, point.cell_path, point.key) == ("http://127.0.0.1:5/c/tok", "/c/tok", "scripted")


def test_no_model_names_claude_code_and_bench_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Claude Code reads BENCH_MODEL, not opencode's BENCH_OPENCODE_MODEL, and its error says so."""
    from pytest_akmbench.agents import SessionInfo
    from pytest_akmbench.agents.claude_code import adapter
    from pytest_akmbench.errors import ConfigError

    monkeypatch.setattr(adapter, "locate_claude", lambda options: tmp_path / "claude")
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path), "BENCH_OPENCODE_MODEL": "scripted/oracle"}
    with pytest.raises(ConfigError) as err:
        adapter.ClaudeCodeAgent().start(SessionInfo(model=None, arms=("akm",), tasks=(), options={"env": env}))
    assert str(err.value).startswith(
        "no model chosen for claude-code; pass --bench-model PROVIDER/MODEL, set BENCH_MODEL,"
    )
