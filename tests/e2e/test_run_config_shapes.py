"""Both shapes of provider config drive a real run: a run config with a providers file (the
reference's shape) and a standalone akm-bench run config with a standard opencode config.

The real opencode binary talks to the project's scripted server as an ordinary provider,
its key reached through ``{env:...}`` like a real one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from pytest_akmbench.agents.opencode.binaries import locate_opencode
from pytest_akmbench.errors import ConfigError
from pytest_akmbench.scripted.server import ScriptedModel
from tests.support.corpus import write_stash, write_task

ROOT = Path(__file__).resolve().parents[2]

try:
    OPENCODE = locate_opencode({"rootdir": str(ROOT)})
except ConfigError as err:
    pytest.skip(f"opencode binary not installed ({err}); run bash .ci/setup", allow_module_level=True)


def provider(server: ScriptedModel) -> dict:
    return {
        "local": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Local",
            "options": {"baseURL": f"{server.root}/c/{{env:BENCH_CELL_TOKEN}}/v1", "apiKey": "{env:LOCAL_API_KEY}"},
            "models": {"m": {"name": "M", "tool_call": True, "limit": {"context": 100000, "output": 4096}}},
        }
    }


def run_config(shape: str, tmp_path: Path, server: ScriptedModel) -> dict:
    """The same run in each shape; only the provider source differs."""
    common = {"schemaVersion": 1, "name": f"shape-{shape}", "arms": ["noakm"], "seeds": 1}
    if shape == "providers-file":
        (tmp_path / "configs" / "providers.json").write_text(
            json.dumps({"schemaVersion": 1, "defaultModel": "local/m", "providers": provider(server)})
        )
        return {**common, "providersRef": "providers.json"}
    # A user's opencode.json: its permission, plugin and instructions must not reach a cell.
    (tmp_path / "configs" / "opencode.json").write_text(
        json.dumps(
            {
                "$schema": "https://opencode.ai/config.json",
                "model": "local/m",
                "provider": provider(server),
                "permission": {"bash": "deny"},
                "plugin": ["opencode-some-plugin"],
                "instructions": ["NOTES.md"],
            }
        )
    )
    return {
        **common,
        "track": "utility",
        "model": "local/m",
        "opencodeConfigRef": "opencode.json",
        "phase2Enabled": True,
        "phase2ReflectTimeoutMs": 180000,
    }


@pytest.mark.parametrize("shape", ["providers-file", "opencode-config"])
def test_each_shape_runs_a_cell(tmp_path: Path, shape: str) -> None:
    tasks, stashes = tmp_path / "corpus" / "tasks", tmp_path / "corpus" / "stashes"
    write_stash(stashes)
    write_task(tasks, "alpha/shape", extra={"budget": {"tokens": 100000, "wallMs": 120000}})
    (tmp_path / "configs").mkdir()
    token = uuid.uuid4().hex
    with ScriptedModel() as server:
        server.register(token, "oracle", commands=["echo hello > out.txt"])
        (tmp_path / "configs" / "run.json").write_text(json.dumps(run_config(shape, tmp_path, server)))
        env = {**os.environ, "LOCAL_API_KEY": f"key-{token}", "BENCH_CELL_TOKEN": token}
        for name in ("BENCH_OPENCODE_CONFIG", "BENCH_OPENCODE_MODEL", "BENCH_MODEL"):
            env.pop(name, None)
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-p",
                "no:cacheprovider",
                str(tasks),
                "--bench-config",
                "configs/run.json",
                "--bench-corpus",
                str(tasks),
                "--bench-stashes",
                str(stashes),
                "--bench-opencode",
                str(OPENCODE),
                "--rootdir",
                str(tmp_path),
                "--bench-store",
                "store",
                "--bench-report",
                "report",
                "--bench-tmp",
                str(tmp_path / "cells"),
                "--bench-keep-runs",
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    (run,) = report["runs"]
    assert run["outcome"] == "pass" and report["agent"]["model"] == "local/m"
    warnings = "\n".join(report["warnings"])
    (cell_config,) = (tmp_path / "cells").rglob("opencode/opencode.json")
    written = json.loads(cell_config.read_text())
    assert list(written["provider"]) == ["local"] and written["model"] == "local/m"
    if shape == "opencode-config":
        assert "phase2Enabled, phase2ReflectTimeoutMs: evolve-track settings, unused" in warnings
        assert "instructions, permission, plugin: not used" in warnings
        # The harness's own isolation settings, not the user's.
        assert written["permission"]["bash"] != "deny" and written["plugin"] == []
        assert "instructions" not in written
    else:
        assert "phase2" not in warnings and "not used" not in warnings


def test_literal_key_in_an_opencode_config_is_one_line_before_any_cell(tmp_path: Path) -> None:
    tasks, stashes = tmp_path / "corpus" / "tasks", tmp_path / "corpus" / "stashes"
    write_stash(stashes)
    write_task(tasks, "alpha/shape")
    literal = "sk-" + uuid.uuid4().hex
    (tmp_path / "opencode.json").write_text(
        json.dumps(
            {
                "model": "local/m",
                "provider": {
                    "local": {
                        "npm": "@ai-sdk/openai-compatible",
                        "options": {"baseURL": "http://127.0.0.1:9/v1", "apiKey": literal},
                        "models": {"m": {}},
                    }
                },
            }
        )
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            str(tasks),
            "--bench-corpus",
            str(tasks),
            "--bench-stashes",
            str(stashes),
            "--bench-opencode-config",
            "opencode.json",
            "--bench-arms",
            "noakm",
            "--bench-opencode",
            str(OPENCODE),
            "--rootdir",
            str(tmp_path),
            "--bench-store",
            "store",
            "--bench-report",
            "report",
            "--bench-tmp",
            str(tmp_path / "cells"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if not k.startswith("BENCH_OPENCODE")},
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4, out
    assert "provider.local.options.apiKey: must be an env-ref" in out and literal not in out
    assert "Traceback" not in out and not (tmp_path / "store" / "samples.jsonl").exists()
