"""The Codex agent's parts without the binary: its config.toml, the live event parser, the
transcript reader, the session log followed for the budgets, and the Responses preflight. The
event lines are Codex 0.171.0's, as ``codex exec --json`` printed them (docs/codex.md)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
import tomllib

from pytest_akmbench.agents.codex.config import KEY_VAR, cell_config, key_value, to_toml
from pytest_akmbench.agents.codex.events import EventStream, tokens_of
from pytest_akmbench.agents.codex.preflight import check_responses
from pytest_akmbench.agents.codex.transcript import agent_command, read_transcript
from pytest_akmbench.agents.codex.watch import Rollout
from pytest_akmbench.agents.model import check_model, choose_model
from pytest_akmbench.agents.providers import validate_providers
from pytest_akmbench.agents.transcript import Moment, ToolEvent
from pytest_akmbench.errors import ConfigError

SEARCH = "/bin/bash -c 'akm search greeting hello file'"
LINES = [
    {"type": "thread.started", "thread_id": "t1"},
    {"type": "item.completed", "item": {"id": "item_0", "type": "error", "message": "Model metadata not found"}},
    {"type": "turn.started"},
    {"type": "item.started", "item": {"id": "item_1", "type": "command_execution", "command": SEARCH,
                                      "aggregated_output": "", "exit_code": None, "status": "in_progress"}},
    {"type": "item.completed", "item": {"id": "item_1", "type": "command_execution", "command": SEARCH,
                                        "aggregated_output": "skill:hello-file\n", "exit_code": 0, "status": "completed"}},
    {"type": "item.completed", "item": {"id": "item_2", "type": "file_change", "status": "completed",
                                        "changes": [{"path": "/w/out.txt", "kind": "add"}, {"path": "/w/a", "kind": "update"}]}},
    {"type": "item.started", "item": {"id": "item_3", "type": "command_execution", "command": "/bin/bash -c 'exit 3'",
                                      "aggregated_output": "", "exit_code": None, "status": "in_progress"}},
    {"type": "item.completed", "item": {"id": "item_3", "type": "command_execution", "command": "/bin/bash -c 'exit 3'",
                                        "aggregated_output": "", "exit_code": 3, "status": "failed"}},
    {"type": "item.completed", "item": {"id": "item_4", "type": "agent_message", "text": "done"}},
    {"type": "turn.completed", "usage": {"input_tokens": 2010, "cached_input_tokens": 10, "cache_write_input_tokens": 0,
                                         "output_tokens": 40, "reasoning_output_tokens": 5}},
]  # fmt: skip


def test_tokens_in_the_harness_vocabulary() -> None:
    usage = {"input_tokens": 2010, "cached_input_tokens": 10, "output_tokens": 40, "reasoning_output_tokens": 5}
    assert tokens_of(usage) == {
        "input": 2000,
        "output": 35,
        "reasoning": 5,
        "cache_read": 10,
        "cache_write": 0,
        "total": 2050,
    }


def test_event_stream_stamps_and_counts(tmp_path: Path) -> None:
    clock = iter(range(100, 200))
    stream = EventStream(tmp_path / "t.jsonl", wall=lambda: float(next(clock)))
    for line in LINES:
        stream.feed(json.dumps(line).encode() + b"\n")
    stream.feed(b"not json\n")
    stream.close()
    assert stream.tokens["total"] == 2050 and stream.measured and stream.tool_calls == 3
    assert stream.final_text == "done" and not stream.calling and stream.failed is None
    assert stream.akm["searches"] == [{"query": "greeting"}] and stream.bad_lines == 1
    assert stream.warnings == ["codex: Model metadata not found"]
    written = (tmp_path / "t.jsonl").read_text().splitlines()
    assert [json.loads(w)["t_ms"] for w in written[:3]] == [100000, 101000, 102000] and written[-1] == "not json"


def test_transcript_reader_yields_neutral_events(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    stamped = [{**line, "t_ms": 1000 + i} for i, line in enumerate(LINES)]
    stamped.append({"type": "item.started", "t_ms": 2000, "item": {"id": "item_9", "type": "command_execution",
                                                                    "command": "sleep 9", "status": "in_progress"}})  # fmt: skip
    path.write_text("".join(json.dumps(s) + "\n" for s in stamped))
    items = list(read_transcript(path))
    assert [m.t_ms for m in items if isinstance(m, Moment)][:2] == [1000, 1001]
    tools = [t for t in items if isinstance(t, ToolEvent)]
    assert [(t.kind, t.tool) for t in tools] == [
        ("run-shell", "exec_command"),
        ("write", "apply_patch"),
        ("edit", "apply_patch"),
        ("run-shell", "exec_command"),
        ("run-shell", "exec_command"),
    ]
    search, _, _, failed, cut = tools
    assert search.command == "akm search greeting hello file" and search.ok and search.output == "skill:hello-file\n"
    assert (search.start_ms, search.end_ms) == (1003, 1004)
    assert tools[1].path == "/w/out.txt" and tools[1].finished
    assert failed.finished and failed.exit == 3 and not failed.ok
    assert cut.command == "sleep 9" and not cut.finished and cut.start_ms == 2000


def test_agent_command_unwraps_codex_shell() -> None:
    assert agent_command("/bin/bash -lc 'echo \"a b\"'") == 'echo "a b"'
    assert agent_command("bash -c ls") == "ls"
    assert agent_command("python -c 1") == "python -c 1"
    assert agent_command("/bin/bash -c 'unterminated") == "/bin/bash -c 'unterminated"
    assert agent_command(None) is None


def test_rollout_follows_token_counts_and_refuses_links(tmp_path: Path) -> None:
    log = tmp_path / "home" / "sessions" / "2026" / "12" / "06" / "rollout-x.jsonl"
    log.parent.mkdir(parents=True)
    count = {"type": "event_msg", "payload": {"type": "token_count", "info": {"total_token_usage": {
        "input_tokens": 1000, "output_tokens": 20}}}}  # fmt: skip
    log.write_bytes(
        json.dumps(count).encode() + b"\n" + json.dumps({"payload": {"type": "token_count", "info": None}}).encode()
    )
    rollout = Rollout(tmp_path / "home")
    rollout.poll()
    assert rollout.turns == 1 and rollout.tokens is not None and rollout.tokens["total"] == 1020
    with open(log, "ab") as fh:
        fh.write(b"\n" + json.dumps(count).encode()[:10])  # a line still being written
    rollout.poll()
    assert rollout.turns == 1
    linked = Rollout(tmp_path / "other")
    (tmp_path / "other" / "sessions" / "a" / "b" / "c").mkdir(parents=True)
    (tmp_path / "other" / "sessions" / "a" / "b" / "c" / "rollout-y.jsonl").symlink_to(log)
    linked.poll()
    assert linked.turns == 0


def _choice(entry: dict[str, Any]):
    providers = validate_providers({"schemaVersion": 1, "providers": {"local": entry}}, "providers.json")
    return check_model("local/qwen3", "--bench-model", providers)


def test_config_holds_placeholders_never_keys() -> None:
    choice = _choice({"options": {"baseURL": "http://x/v1", "apiKey": "{env:LOCAL_KEY}",
                                  "headers": {"X-Org": "{env:LOCAL_ORG}"}}})  # fmt: skip
    placeholders = {"LOCAL_KEY": "ph-key", "LOCAL_ORG": "ph-org"}
    config = tomllib.loads(to_toml(cell_config(choice, placeholders, "http://127.0.0.1:4780/v1")))
    provider = config["model_providers"][config["model_provider"]]
    assert provider == {
        "name": "local",
        "base_url": "http://127.0.0.1:4780/v1",
        "wire_api": "responses",
        "env_key": KEY_VAR,
        "http_headers": {"X-Org": "ph-org"},
    }
    assert config["model"] == "qwen3" and key_value(choice, placeholders) == "ph-key"
    assert config["features"]["plugins"] is False and config["analytics"] == {"enabled": False}
    assert config["shell_environment_policy"]["exclude"] == [KEY_VAR]
    scripted = check_model("scripted/oracle", "--bench-model", None)
    assert tomllib.loads(to_toml(cell_config(scripted, {}, "http://h/c/t/v1")))["model"] == "oracle"


class _Provider(BaseHTTPRequestHandler):
    status = 200
    seen: ClassVar[list[tuple[str, str | None, dict[str, Any]]]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append((self.path, self.headers.get("Authorization"), body))
        self.send_response(self.status)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")


@pytest.mark.parametrize(("status", "outcome"), [(200, "answers the Responses API"), (401, "refused"), (404, "404")])
def test_preflight_sends_a_responses_request(status: int, outcome: str) -> None:
    handler = type("Handler", (_Provider,), {"status": status, "seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/v1"
        choice = _choice({"options": {"baseURL": base, "apiKey": "{env:LOCAL_KEY}"}})
        if status == 200:
            assert outcome in check_responses(choice, {"LOCAL_KEY": "k1"})
        else:
            with pytest.raises(ConfigError, match=outcome) as err:
                check_responses(choice, {"LOCAL_KEY": "k1"})
            assert "k1" not in str(err.value)
    finally:
        server.shutdown()
        server.server_close()
    ((path, auth, body),) = handler.seen
    assert path == "/v1/responses" and auth == "Bearer k1" and body["model"] == "qwen3"
    assert "built-in" in check_responses(check_model("scripted/idle", "--bench-model", None), {})


def test_no_model_names_codex_and_bench_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Codex reads BENCH_MODEL, not opencode's BENCH_OPENCODE_MODEL, and its error says so."""
    from pytest_akmbench.agents import SessionInfo
    from pytest_akmbench.agents.codex import adapter

    monkeypatch.setattr(adapter, "locate_codex", lambda options: tmp_path / "codex")
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path), "BENCH_OPENCODE_MODEL": "scripted/oracle"}
    with pytest.raises(ConfigError) as err:
        adapter.CodexAgent().start(SessionInfo(model=None, arms=("akm",), tasks=(), options={"env": env}))
    assert str(err.value).startswith("no model chosen for codex; pass --bench-model PROVIDER/MODEL, set BENCH_MODEL,")
    choice = choose_model(None, {"env": {**env, "BENCH_MODEL": "scripted/idle"}}, agent="codex")
    assert (choice.model, choice.model_source) == ("scripted/idle", "BENCH_MODEL")
