"""doctor's model line with each provider shape: the provider is really probed over HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_akmbench.agents.opencode.scripted import ScriptedModel
from pytest_akmbench.cli.main import main


def model_line(capsys: pytest.CaptureFixture[str]) -> str:
    (line,) = [line for line in capsys.readouterr().out.splitlines() if "] model:" in line]
    return line


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
    monkeypatch.delenv("BENCH_OPENCODE_CONFIG", raising=False)
    monkeypatch.setenv("DOCTOR_TEST_KEY", "k")
    with ScriptedModel() as server:
        monkeypatch.setenv("DOCTOR_TEST_URL", f"{server.root}/v1")
        main(["doctor", "--opencode-config", str(opencode_json("{env:DOCTOR_TEST_URL}"))])
    assert model_line(capsys) == "  [PASS] model: local/m at {env:DOCTOR_TEST_URL}: answers"


def test_a_dead_provider_or_a_missing_variable_fails(opencode_json, capsys, monkeypatch) -> None:
    monkeypatch.delenv("BENCH_OPENCODE_CONFIG", raising=False)
    monkeypatch.delenv("DOCTOR_TEST_KEY", raising=False)
    path = opencode_json("http://127.0.0.1:9/v1")
    assert main(["doctor", "--opencode-config", str(path)]) == 1
    assert "[FAIL] model:" in (line := model_line(capsys)) and "DOCTOR_TEST_KEY is not set" in line
    monkeypatch.setenv("DOCTOR_TEST_KEY", "k")
    assert main(["doctor", "--opencode-config", str(path)]) == 1
    assert "[FAIL] model: local/m at http://127.0.0.1:9/v1: unreachable" in model_line(capsys)
