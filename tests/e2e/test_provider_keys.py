"""Item 12: a real provider's key never reaches a tool command, a stored text or a report.

A whole bench through pytest with the real opencode binary and a providers file whose provider
is the project's scripted server, reached through ``{env:...}`` references like a real one:
the base URL's path and the API key both come from the environment.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import uuid
from pathlib import Path

from pytest_akmbench.agents.opencode.scripted import ScriptedModel
from pytest_akmbench.store.scrub import REDACTED
from tests.support import opencode
from tests.support.corpus import write_stash, write_task

ROOT = Path(__file__).resolve().parents[2]

OPENCODE = opencode.binary()


def test_key_stays_out_of_tools_store_and_report(tmp_path: Path) -> None:
    """An agent running `env` and reading its own config finds and stores no key."""
    tasks, stashes = tmp_path / "corpus" / "tasks", tmp_path / "corpus" / "stashes"
    write_stash(stashes)
    write_task(tasks, "alpha/keys", extra={"budget": {"tokens": 100000, "wallMs": 120000}})
    secret = f"test-key-{uuid.uuid4().hex}"
    token = uuid.uuid4().hex
    with ScriptedModel() as server:
        # A curious agent: its environment, then the config opencode was given, then the task.
        server.register(token, "oracle", commands=["env | sort", 'cat "$OPENCODE_CONFIG"', "echo hello > out.txt"])
        (tmp_path / "providers.json").write_text(
            json.dumps(
                {
                    "schemaVersion": 1,
                    "providers": {
                        "local": {
                            "npm": "@ai-sdk/openai-compatible",
                            "name": "Local",
                            "options": {
                                "baseURL": f"{server.root}/c/{{env:BENCH_CELL_TOKEN}}/v1",
                                "apiKey": "{env:LOCAL_API_KEY}",
                            },
                            "models": {
                                "m": {"name": "M", "tool_call": True, "limit": {"context": 100000, "output": 4096}}
                            },
                        }
                    },
                }
            )
        )
        env = {**os.environ, "LOCAL_API_KEY": secret, "BENCH_CELL_TOKEN": token}
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-p",
                "no:cacheprovider",
                str(tasks),
                "--bench-stashes",
                str(stashes),
                "--bench-corpus",
                str(tasks),
                "--bench-model",
                "local/m",
                "--bench-providers",
                "providers.json",
                "--bench-arms",
                "noakm",
                "--bench-seeds",
                "1",
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
    assert secret not in out and token not in out
    store, report = tmp_path / "store", tmp_path / "report"
    (sample,) = [json.loads(line) for line in (store / "samples.jsonl").read_text().splitlines()]
    assert sample["outcome"] == "pass"
    transcript = (store / sample["transcript"]).read_text()
    assert "PATH=" in transcript and "LOCAL_API_KEY" not in transcript  # `env` ran, and had no key to show
    assert REDACTED in transcript  # the config the agent printed held the key: scrubbed
    for path in [*store.rglob("*"), *report.rglob("*")]:
        if path.is_file():
            data = path.read_bytes()
            assert secret.encode() not in data and token.encode() not in data, path
    # A kept run dir's config and opencode's stderr are rewritten without the key (opencode's
    # own database keeps what the agent printed: the README says to keep such dirs private).
    (config,) = (tmp_path / "cells").rglob("opencode/opencode.json")
    assert secret not in config.read_text() and "{env:LOCAL_API_KEY}" in config.read_text()
    assert secret.encode() not in (config.parent / "stderr.log").read_bytes()
    # Nothing in the store is readable by anyone but its owner.
    for path in [store, *store.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode & 0o077 == 0, f"{path} is {oct(mode)}"
