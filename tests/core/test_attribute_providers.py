"""The providers digest the attribute track checks: what the agent is given, never a secret."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_akmbench.agents.model import choice_digest, choose_model


def write(path: Path, base_url: str, key_ref: str = "{env:LOCAL_API_KEY}") -> Path:
    entry = {
        "npm": "@ai-sdk/openai-compatible",
        "options": {"baseURL": base_url, "apiKey": key_ref},
        "models": {"m": {}},
    }
    other = {"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": "http://elsewhere/v1"}, "models": {"x": {}}}
    path.write_text(json.dumps({"schemaVersion": 1, "providers": {"local": entry, "other": other}}))
    return path


def digest(path: Path, env: dict[str, str]) -> dict[str, object]:
    return choice_digest(choose_model("local/m", {"providers": str(path), "env": env}))


def test_same_entry_same_digest_whatever_the_key_and_the_other_entries(tmp_path: Path) -> None:
    a = digest(write(tmp_path / "a.json", "http://127.0.0.1:1/v1"), {"LOCAL_API_KEY": "secret-one"})
    b = digest(write(tmp_path / "b.json", "http://127.0.0.1:1/v1"), {"LOCAL_API_KEY": "secret-two"})
    assert a["digest"] == b["digest"] and a["source"] != b["source"]
    assert "secret" not in json.dumps(a) + json.dumps(b)
    # Entries the model does not use are not given to the agent: they do not count.
    c_path = write(tmp_path / "c.json", "http://127.0.0.1:1/v1")
    data = json.loads(c_path.read_text())
    data["providers"]["other"]["options"]["baseURL"] = "http://changed/v1"
    c_path.write_text(json.dumps(data))
    assert digest(c_path, {"LOCAL_API_KEY": "k"})["digest"] == a["digest"]


def test_another_entry_for_the_same_model_name_has_another_digest(tmp_path: Path) -> None:
    a = digest(write(tmp_path / "a.json", "http://127.0.0.1:1/v1"), {"LOCAL_API_KEY": "k"})
    for changed in (
        write(tmp_path / "b.json", "http://127.0.0.1:2/v1"),
        write(tmp_path / "c.json", "http://127.0.0.1:1/v1", "{env:OTHER_KEY}"),
    ):
        b = digest(changed, {"LOCAL_API_KEY": "k", "OTHER_KEY": "k"})
        assert b["model"] == a["model"] == "local/m" and b["digest"] != a["digest"]


def test_scripted_model_digest_names_the_policy_only() -> None:
    one = choice_digest(choose_model("scripted/oracle", {}))
    assert one == choice_digest(choose_model("scripted/oracle", {}))
    assert one["source"] is None and one["provider"] == "scripted"
    assert choice_digest(choose_model("scripted/needs-asset", {}))["digest"] != one["digest"]
