"""The opencode adapter's config and environment, built without running opencode."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_akmbench.agents import AgentRequest, Limits
from pytest_akmbench.agents.model import choose_model
from pytest_akmbench.agents.opencode.adapter import OpencodeAgent
from pytest_akmbench.agents.opencode.binaries import locate_opencode
from pytest_akmbench.cell.rundir import hide_akm
from pytest_akmbench.corpus.tasks import Task
from pytest_akmbench.errors import ConfigError
from pytest_akmbench.system.procs import ProcessTracker

TASK = Task(
    id="d/t", title="T", domain="d", difficulty="easy", stash="s", verifier="script", task_dir=Path("/x"), yaml_text=""
)


def exe(path: Path, text: str = "#!/bin/sh\nexit 0\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def providers_file(tmp_path: Path) -> Path:
    path = tmp_path / "p.json"
    path.write_text(
        json.dumps(
            {
                "schemaVersion": 1,
                "defaultModel": "local/m",
                "providers": {
                    "local": {
                        "npm": "@ai-sdk/openai-compatible",
                        "options": {"baseURL": "http://127.0.0.1:1/v1", "apiKey": "{env:LOCAL_KEY}"},
                        "models": {"m": {}},
                    }
                },
            }
        )
    )
    return path


def test_choose_model(tmp_path):
    home = {"HOME": str(tmp_path / "home")}
    assert choose_model("scripted/oracle", {"env": home}).scripted
    p = providers_file(tmp_path)
    choice = choose_model(None, {"providers": str(p), "env": home})
    assert choice.model == "local/m" and choice.env_vars == {"LOCAL_KEY"}
    choice = choose_model(None, {"env": {**home, "BENCH_OPENCODE_MODEL": "local/m", "BENCH_OPENCODE_CONFIG": str(p)}})
    assert choice.provider_entry is not None
    with pytest.raises(ConfigError, match="no model chosen"):
        choose_model(None, {"env": home})
    with pytest.raises(ConfigError, match="not found"):
        choose_model("scripted/oracle", {"providers": str(tmp_path / "missing.json"), "env": home})


def test_locate_opencode_explicit_missing(tmp_path):
    with pytest.raises(ConfigError, match="opencode binary not found") as err:
        locate_opencode({"opencode": str(tmp_path / "nope")})
    assert err.value.usage
    assert locate_opencode({"opencode": str(exe(tmp_path / "oc"))}) == (tmp_path / "oc").resolve()


def test_hide_akm(tmp_path):
    run_dir = tmp_path / "cell"
    shim = exe(run_dir / "bin" / "akm").parent
    user = exe(tmp_path / "user" / "akm").parent
    system = exe(tmp_path / "sys" / "akm").parent
    exe(system / "sh")
    plain = tmp_path / "plain"
    plain.mkdir()
    ours = run_dir / "opencode" / "bin"
    ours.mkdir(parents=True)
    warnings: list[str] = []
    kept = hide_akm([str(shim), str(user), str(plain), str(system)], ours, run_dir, "noakm", warnings)
    assert kept == [str(plain), str(system)]
    assert len(warnings) == 2 and (ours / "akm").read_text().endswith("exit 127\n")


def test_config_and_env(tmp_path, monkeypatch):
    agent = OpencodeAgent()
    agent.rg = exe(tmp_path / "tools" / "rg")
    agent.choice = choose_model(None, {"providers": str(providers_file(tmp_path)), "env": {"HOME": "/nowhere"}})
    agent._secret_env = {"LOCAL_KEY": "value"}
    agent._placeholders = {"LOCAL_KEY": "akmbench-placeholder-local_key-0123"}
    run_dir = tmp_path / "cell"
    (run_dir / "workspace").mkdir(parents=True)
    config = agent._config("local/m", "http://127.0.0.1:4780/v1", 5)
    # The key stays with the harness's forwarder: the cell's config holds a placeholder for it, and
    # the forwarder's address as the base URL (system/forwarder.py).
    options = config["provider"]["local"]["options"]
    assert options["apiKey"] == "akmbench-placeholder-local_key-0123" and "value" not in json.dumps(config)
    assert options["baseURL"] == "http://127.0.0.1:4780/v1"
    assert config["snapshot"] is False and config["share"] == "disabled" and config["$schema"]
    scripted = OpencodeAgent()
    scripted.choice = choose_model("scripted/hang", {})
    config = scripted._config("scripted/hang", "http://127.0.0.1:1/c/t/v1", 5)
    assert config["provider"]["scripted"]["options"]["headerTimeout"] == 5000
    assert config["provider"]["scripted"]["models"]["hang"]["tool_call"] is True

    def request(arm: str) -> AgentRequest:
        env = {
            "HOME": str(run_dir / "home"),
            "PATH": "/usr/bin:/bin",
            "AKM_STASH_DIR": "/s",
            "AKM_X": "1",
            "OPENCODE_CONFIG_CONTENT": "{}",
            "UNRELATED": "kept",
        }
        return AgentRequest(
            task=TASK,
            arm=arm,
            seed=1,
            workspace=run_dir / "workspace",
            run_dir=run_dir,
            env=env,
            prompt="p",
            prompt_version="v",
            limits=Limits(wall_s=5),
            transcript=run_dir / "t",
            procs=ProcessTracker("x"),
            stash_dir=Path("/stash") if arm == "akm" else None,
        )

    cfg_dir = run_dir / "opencode"
    cfg_dir.mkdir()
    env = agent._env(request("noakm"), cfg_dir, cfg_dir / "opencode.json", [])
    assert not any(k.startswith("AKM_") for k in env)
    assert "OPENCODE_CONFIG_CONTENT" not in env and env["OPENCODE_CONFIG"] == str(cfg_dir / "opencode.json")
    assert env["OPENCODE_DISABLE_PROJECT_CONFIG"] == "1" and env["npm_config_registry"] == "http://127.0.0.1:9/"
    assert "LOCAL_KEY" not in env and env["UNRELATED"] == "kept"
    assert env["PATH"].split(os.pathsep)[0] == str(cfg_dir / "bin")
    assert sorted(os.listdir(cfg_dir / "bin")) == ["rg"]
    assert env["XDG_CACHE_HOME"] == str(run_dir / "home" / ".cache")
    env = agent._env(request("akm"), cfg_dir, cfg_dir / "opencode.json", [])
    # The runner gives the akm arm its akm (on PATH) and akm's variables; the adapter keeps them.
    assert env["AKM_STASH_DIR"] == "/s" and env["AKM_X"] == "1" and sorted(os.listdir(cfg_dir / "bin")) == ["rg"]
