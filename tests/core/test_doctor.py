"""doctor's model line with each provider shape: the provider is really probed over HTTP."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from pytest_akmbench.cli.main import main
from pytest_akmbench.scripted.server import ScriptedModel
from tests.support.http import answering, free_port


def model_lines(out: str) -> dict[str, str]:
    """doctor's model lines by agent: one per agent that has one, ``model`` alone when only one does."""
    found: dict[str, list[str]] = {}
    for line in out.splitlines():
        head = line.split(": ", 1)[0]
        if "] " in head and head.endswith(" model"):
            name = head.split("] ", 1)[1].removesuffix("model").strip() or "only"
            found.setdefault(name, []).append(line.replace(f"] {name} model:", "] model:"))
    assert all(len(lines) == 1 for lines in found.values()), found
    return {name: lines[0] for name, lines in found.items()}


def model_line(capsys: pytest.CaptureFixture[str], agent: str = "opencode") -> str:
    """The ``agent``'s model line, named ``model:`` as when it is the only agent checked."""
    lines = model_lines(capsys.readouterr().out)
    return lines.get(agent) or lines["only"]


@pytest.fixture
def opencode_json(tmp_path: Path):
    def write(base_url: str) -> Path:
        path = tmp_path / "opencode.json"
        path.write_text(
            json.dumps(
                {
                    "model": "local/m",
                    "provider": {
                        "local": {
                            "npm": "@ai-sdk/openai-compatible",
                            "options": {"baseURL": base_url, "apiKey": "{env:DOCTOR_TEST_KEY}"},
                            "models": {"m": {}},
                        }
                    },
                }
            )
        )
        return path

    return write


def test_a_live_provider_answers(opencode_json, capsys, monkeypatch) -> None:
    """doctor sends the run's preflight request: the model answers at the URL as written."""
    monkeypatch.delenv("BENCH_OPENCODE_CONFIG", raising=False)
    monkeypatch.setenv("DOCTOR_TEST_KEY", "k")
    with ScriptedModel() as server:
        monkeypatch.setenv("DOCTOR_TEST_URL", server.register("doctor", "idle"))
        argv = ["doctor", "--agent", "opencode", "--opencode-config", str(opencode_json("{env:DOCTOR_TEST_URL}"))]
        assert main(argv) in (0, 1)
        assert model_line(capsys) == "  [PASS] model: local/m at {env:DOCTOR_TEST_URL}: answers"
        assert server.totals("doctor")["title_requests"] == 1  # one minimal request, no tools


def test_each_agent_has_its_own_model_line(opencode_json, capsys, monkeypatch) -> None:
    """Codex sends its own preflight (one Responses request), Claude Code its own (an entry it can
    speak to); unless doctor --agent asked for that agent, its failure only warns."""
    monkeypatch.delenv("BENCH_OPENCODE_CONFIG", raising=False)
    monkeypatch.setenv("DOCTOR_TEST_KEY", "k")
    monkeypatch.setenv("AKMBENCH_CODEX", "/nonexistent/codex")  # named: its lines are printed
    monkeypatch.setenv("AKMBENCH_CLAUDE", "/nonexistent/claude")
    with ScriptedModel() as server:
        monkeypatch.setenv("DOCTOR_TEST_URL", server.register("doctor", "idle"))
        config = str(opencode_json("{env:DOCTOR_TEST_URL}"))
        assert main(["doctor", "--agent", "codex", "--opencode-config", config]) == 1  # no codex binary
        assert model_line(capsys) == "  [PASS] model: local/m at {env:DOCTOR_TEST_URL}: answers the Responses API"
        assert server.totals("doctor")["title_requests"] == 1
        assert main(["doctor", "--agent", "claude-code", "--opencode-config", config]) == 1
        assert model_line(capsys).startswith("  [FAIL] model: model 'local/m': claude-code speaks only")
        main(["doctor", "--opencode-config", config])
        lines = model_lines(capsys.readouterr().out)
        assert {"opencode", "codex", "claude-code"} <= set(lines)
        assert lines["claude-code"].startswith("  [WARN] model:")
        assert lines["claude-code"].endswith("(only a claude-code run needs it)")


def test_a_dead_provider_or_a_missing_variable_fails(opencode_json, capsys, monkeypatch) -> None:
    monkeypatch.delenv("BENCH_OPENCODE_CONFIG", raising=False)
    monkeypatch.delenv("DOCTOR_TEST_KEY", raising=False)
    path = opencode_json(f"http://127.0.0.1:{free_port()}/v1")
    assert main(["doctor", "--opencode-config", str(path)]) == 1
    assert "[FAIL] model:" in (line := model_line(capsys)) and "DOCTOR_TEST_KEY is not set" in line
    monkeypatch.setenv("DOCTOR_TEST_KEY", "k")
    assert main(["doctor", "--opencode-config", str(path)]) == 1
    line = model_line(capsys)
    assert "[FAIL] model: preflight: model 'local/m' at http://127.0.0.1:" in line and "is unreachable" in line


def test_a_refused_key_fails_naming_the_variable(opencode_json, capsys, monkeypatch) -> None:
    """A provider answering 401 is a FAIL naming the variable to check, never its value."""
    monkeypatch.delenv("BENCH_OPENCODE_CONFIG", raising=False)
    monkeypatch.setenv("DOCTOR_TEST_KEY", "not-the-key-123")
    with answering(401) as (url, seen):
        assert main(["doctor", "--agent", "opencode", "--opencode-config", str(opencode_json(url))]) == 1
    line = model_line(capsys)
    assert "refused the credentials (HTTP 401: Incorrect API key provided); check DOCTOR_TEST_KEY" in line
    assert "not-the-key-123" not in line
    assert seen[0]["path"] == "/v1/chat/completions" and seen[0]["headers"]["Authorization"] == "Bearer not-the-key-123"


def test_a_cloud_model_without_providers_fails(capsys, monkeypatch, tmp_path: Path) -> None:
    """`doctor --model openai/gpt-4o` with no providers file used to say every check passed; a
    run with it errored in every cell. Both now stop on the same line."""
    monkeypatch.delenv("BENCH_OPENCODE_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # no user default providers file
    assert main(["doctor", "--model", "openai/gpt-4o"]) == 1
    line = model_line(capsys)
    assert "[FAIL] model: preflight: model 'openai/gpt-4o': no providers entry for 'openai'" in line
    assert "so the agent gets no credentials" in line  # any agent's line: no agent named wrongly
    assert "--bench-providers FILE" in line


@pytest.mark.parametrize(
    ("arms", "agent", "status", "code"),
    [(None, None, "FAIL", 1), (["noakm"], None, "WARN", 0), (None, "oracle", "WARN", 0)],
)
def test_a_config_whose_akm_arm_has_no_akm_fails(
    capsys, monkeypatch, tmp_path: Path, arms: list[str] | None, agent: str | None, status: str, code: int
) -> None:
    """`doctor --config` said "All needed checks passed" (exit 0) for a config whose akm arm had
    no akm, and the run then stopped at its start (issue 29, item 10); a config that runs no akm
    cell, or an agent that never calls akm, needs none."""
    from tests.support import opencode

    monkeypatch.delenv("BENCH_OPENCODE_CONFIG", raising=False)
    monkeypatch.delenv("BENCH_OPENCODE_MODEL", raising=False)
    monkeypatch.delenv("BENCH_MODEL", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("AKMBENCH_OPENCODE", str(opencode.binary()))
    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"]))
    monkeypatch.chdir(tmp_path)
    config = {"schemaVersion": 1, "model": "scripted/oracle"}
    config.update({"arms": arms} if arms else {})
    config.update({"agent": agent} if agent else {})
    (tmp_path / "c.json").write_text(json.dumps(config))
    assert main(["doctor", "--config", str(tmp_path / "c.json")]) == code
    out = capsys.readouterr().out
    (line,) = [line for line in out.splitlines() if "] akm:" in line]
    assert line.startswith(f"  [{status}] akm: the akm arm needs the akm executable and found none"), line
    assert ("needs it)" in line) == (status == "FAIL")
    assert ("All needed checks passed." in out) == (code == 0)
