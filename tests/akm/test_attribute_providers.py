"""The attribute track's base check covers the providers: real opencode, real akm, a providers
file whose provider is the project's scripted server, and base reports written by hand (the
check runs before any cell, so no cell needs to run)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from pytest_akmbench.agents.model import choice_digest, choose_model
from pytest_akmbench.scripted.server import ScriptedModel
from tests.akm.test_attribute import TASKS, corpus
from tests.support import opencode as oc
from tests.support import real_akm


def providers(path: Path, base_url: str, name: str) -> Path:
    entry = {
        "npm": "@ai-sdk/openai-compatible",
        "name": name,
        "options": {"baseURL": base_url, "apiKey": "{env:LOCAL_API_KEY}"},
        "models": {"m": {"name": "M", "tool_call": True, "limit": {"context": 100000, "output": 4096}}},
    }
    path.write_text(json.dumps({"schemaVersion": 1, "providers": {"local": entry}}))
    return path


def write_base(tmp: Path, setup: dict[str, Any] | None) -> Path:
    """A utility report of model local/m whose akm runs loaded the gold skill on every task."""
    runs = [
        {"task_id": t, "arm": "akm", "seed": 1, "outcome": "pass", "assets_loaded": ["skill:greeting-rule"]}
        for t in TASKS
    ]
    provenance: dict[str, Any] = {} if setup is None else {"providers": setup}
    path = tmp / f"base-{uuid.uuid4().hex[:6]}.json"
    path.write_text(
        json.dumps(
            {
                "track": "utility",
                "agent": {"model": "local/m"},
                "corpus": {"seedsPerArm": 1},
                "provenance": provenance,
                "runs": runs,
            }
        )
    )
    return path


def attribute(tmp: Path, base: Path, providers_file: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    tasks, stashes = tmp / "corpus" / "tasks", tmp / "corpus" / "stashes"
    args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", str(tasks), "--bench-corpus", str(tasks)]
    args += ["--bench-stashes", str(stashes), "--bench-akm", str(real_akm.get().path)]
    args += ["--bench-opencode", str(oc.binary()), "--bench-model", "local/m"]
    args += ["--bench-providers", str(providers_file), "--bench-track", "attribute", "--bench-base", str(base)]
    args += ["--bench-store", str(tmp / "store"), "--bench-report", str(tmp / "report")]
    args += ["--bench-tmp", str(tmp / "cells"), *extra]
    env = {**__import__("os").environ, "LOCAL_API_KEY": "k-" + uuid.uuid4().hex}
    return subprocess.run(args, cwd=tmp, env=env, capture_output=True, text=True, timeout=300)


def errors(proc: subprocess.CompletedProcess[str]) -> list[str]:
    # Other plugins may warn on stderr (pytest-benchmark does under xdist): ours is one line.
    return [line for line in proc.stderr.splitlines() if line.startswith("ERROR")]


def test_a_different_providers_file_for_the_same_model_is_refused(tmp_path: Path) -> None:
    corpus(tmp_path)
    with ScriptedModel() as server:
        token = uuid.uuid4().hex
        url = server.register(token, "oracle", commands=["true"])
        mine = providers(tmp_path / "here.json", url, "Local")
        # The base reached the same model name through another entry (another server).
        theirs = providers(tmp_path / "there.json", "http://127.0.0.1:9/v1", "Local")
        setup = choice_digest(choose_model("local/m", {"providers": str(theirs)}))
        refused = attribute(tmp_path, write_base(tmp_path, setup), mine)
        assert refused.returncode == 4 and "Traceback" not in refused.stderr, refused.stdout + refused.stderr
        (line,) = errors(refused)
        assert "this run's providers differ from the base run's in provenance.providers.digest" in line
        assert str(mine) in line and str(theirs) in line and "--bench-providers" in line

        # A base report written before the field existed: one line saying how to get one.
        old = attribute(tmp_path, write_base(tmp_path, None), mine)
        assert old.returncode == 4 and "Traceback" not in old.stderr, old.stdout + old.stderr
        (line,) = errors(old)
        assert "the base report records no single provenance.providers" in line and "rerun its utility run" in line

        # The same providers pass the check (no cell selected: nothing runs past it).
        same = choice_digest(choose_model("local/m", {"providers": str(mine)}))
        passed = attribute(tmp_path, write_base(tmp_path, same), mine, "-k", "no-such-cell")
        assert not errors(passed) and passed.returncode == 5, passed.stdout[-3000:] + passed.stderr
        envelope = json.loads((tmp_path / "report" / "attribute.json").read_text())
        assert envelope["agent"]["providers"] == same == envelope["base"]["providers"]
    assert not (tmp_path / "store" / "samples.jsonl").exists() or not any(
        "mask" in json.loads(line)["fingerprint"]
        for line in (tmp_path / "store" / "samples.jsonl").read_text().splitlines()
    )
