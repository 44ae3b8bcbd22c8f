"""A real provider's key never enters the cell: not its environment, not its config, not a file of
its run dir; so no tool command, transform of it, stored text or report can hold it.

A whole bench through pytest with the real opencode binary and a providers file whose provider
is the project's scripted server, reached through ``{env:...}`` references like a real one:
the base URL's path and the API key both come from the environment. The cell's config holds a
placeholder; the harness's forwarder (system/forwarder.py) puts the key on the request on its way
out, which the server confirms.
"""

from __future__ import annotations

import base64
import json
import os
import re
import stat
import subprocess
import sys
import uuid
from pathlib import Path

from pytest_akmbench.scripted.server import ScriptedModel
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
        server.register(
            token,
            "oracle",
            commands=[
                "env | sort",
                'cat "$OPENCODE_CONFIG"',
                'cat "$OPENCODE_CONFIG" | base64 -w0',
                'cat "$OPENCODE_CONFIG" | rev',
                "echo hello > out.txt",
            ],
        )
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
        seen = server.authorization(token)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert seen == {f"Bearer {secret}"}  # the key reached the model, through the forwarder
    assert secret not in out and token not in out
    store, report = tmp_path / "store", tmp_path / "report"
    (sample,) = [json.loads(line) for line in (store / "samples.jsonl").read_text().splitlines()]
    assert sample["outcome"] == "pass"
    transcript = (store / sample["transcript"]).read_text()
    assert "PATH=" in transcript and "LOCAL_API_KEY" not in transcript  # `env` ran, and had no key to show
    assert "akmbench-placeholder-local_api_key-" in transcript  # the config the agent printed held no key
    # Nothing the run wrote or kept holds the key, as it is, reversed or base64-encoded: neither
    # the store, nor the report, nor the kept run dir (opencode's database and its WAL included).
    kept = tmp_path / "cells"
    files = [p for p in [*store.rglob("*"), *report.rglob("*"), *kept.rglob("*")] if p.is_file() and not p.is_symlink()]
    assert any(p.name.endswith("-wal") or p.suffix == ".db" for p in files)  # opencode's database was kept
    for path in files:
        data = path.read_bytes()
        for form in (secret, secret[::-1], token):
            assert form.encode() not in data, path
        for run in re.findall(rb"[A-Za-z0-9+/]{24,}", data):
            for start in range(4):  # the key may sit at any offset of an encoded run
                piece = run[start:][: (len(run) - start) // 4 * 4]
                assert secret.encode() not in base64.b64decode(piece), path
    # Nothing in the store is readable by anyone but its owner.
    for path in [store, *store.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode & 0o077 == 0, f"{path} is {oct(mode)}"
