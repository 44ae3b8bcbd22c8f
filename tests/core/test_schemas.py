"""The shipped JSON Schemas are true to the code: what the code accepts they accept, what it
refuses they refuse, and every shipped config and task validates (issue 14)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import pytest
import tomllib
import yaml
from jsonschema import Draft202012Validator

from pytest_akmbench.agents import providers
from pytest_akmbench.agents.settings import table
from pytest_akmbench.corpus import config, config_fields, tasks
from pytest_akmbench.errors import BenchError
from pytest_akmbench.report import envelope as report
from tests.core.test_metrics import sample
from tests.core.test_report import inp
from tests.core.test_verdict_checks import TASKS
from tests.support.schemas import NAMES, problems, schema

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted((ROOT / "configs").glob("*.json"))
TASK_FILES = sorted((ROOT / "corpus" / "tasks").rglob("task.yaml"))


def test_the_schemas_are_package_data() -> None:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "schemas/*.json" in data["tool"]["setuptools"]["package-data"]["pytest_akmbench"]
    for name in NAMES:
        assert schema(name)["$schema"] == "https://json-schema.org/draft/2020-12/schema"


@pytest.mark.parametrize("name", NAMES)
def test_each_schema_is_identified_by_its_own_file(name: str, tmp_path: Path) -> None:
    """A relative $id, the file's name, resolves to the file wherever it is read from (the
    installed package, the repository, a project's copy); it was a URL on a made-up host, .invalid
    (issue 29, item 10)."""
    here = (tmp_path / "any" / f"{name}.schema.json").as_uri()
    assert urljoin(here, schema(name)["$id"]) == here


def test_a_project_names_a_schema_from_its_own_copy(tmp_path: Path) -> None:
    """A pip user's config cannot name ../pytest_akmbench/schemas/ (that is this repository's
    layout): `schemas --out DIR` copies them into the project, and a config there names the copy."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_akmbench", "schemas", "--out", "schemas"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [f"schemas/{n}.schema.json" for n in sorted(NAMES)]
    (tmp_path / "configs").mkdir()
    config = {"$schema": "../schemas/run-config.schema.json", "schemaVersion": 1, "seeds": 2}
    (tmp_path / "configs" / "x.json").write_text(json.dumps(config))
    copy = json.loads((tmp_path / "configs" / config["$schema"]).read_text())
    assert copy == schema("run-config")
    assert list(Draft202012Validator(copy).iter_errors(config)) == []
    assert list(Draft202012Validator(copy).iter_errors({**config, "seeds": 0})) != []


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_each_shipped_config_validates_and_points_at_the_schema(path: Path) -> None:
    data = json.loads(path.read_text())
    assert problems(data, "run-config") == []
    assert (path.parent / data["$schema"]).resolve() == ROOT / "pytest_akmbench" / "schemas" / "run-config.schema.json"


def test_each_corpus_task_validates() -> None:
    assert len(TASK_FILES) >= 20
    bad = {str(p): problems(yaml.safe_load(p.read_text()), "task") for p in TASK_FILES}
    assert {k: v for k, v in bad.items() if v} == {}


def test_the_schemas_name_exactly_the_fields_the_code_knows() -> None:
    assert set(schema("run-config")["properties"]) == set(config_fields.field_types(table()))
    assert set(schema("task")["properties"]) == set(tasks._KNOWN_KEYS)
    assert set(schema("providers")["properties"]) == set(providers.ALLOWED_KEYS)


def _code_accepts_config(data: dict[str, Any], tmp_path: Path) -> bool:
    return config.run_config_problems(data, tmp_path / "c.json", table()) == []


@pytest.mark.parametrize(
    "data",
    [
        {"schemaVersion": 1, "seedz": 3},
        {"schemaVersion": 2},
        {"schemaVersion": 1, "seeds": 0},
        {"schemaVersion": 1, "seeds": 1001},
        {"schemaVersion": 1, "arms": "akm"},
        {"schemaVersion": 1, "tasks": ["a/b", ""]},
        {"schemaVersion": 1, "track": "other"},
        {"schemaVersion": 1, "providersRef": "p.json", "opencodeConfigRef": "o.json"},
        {"schemaVersion": 1, "forceParallel": "yes"},
        {"schemaVersion": 1, "until": "never"},
        {"schemaVersion": 1, "maxSeeds": 0},
        {"schemaVersion": 1, "maxSeeds": 1001},
        {"schemaVersion": 1, "floor": 0},
        {"schemaVersion": 1, "budgetUsd": 0},
        {"schemaVersion": 1, "budgetUsd": "5"},
        {"schemaVersion": 1, "budgetRunTokens": 1.5},
        {"schemaVersion": 1, "budgetRunTokens": 0},
        {"schemaVersion": 1, "budgetTokens": 10**12 + 1},
        {"schemaVersion": 1, "budgetWallMs": 604800001},
        {"schemaVersion": 1, "budgetTurns": 100001},
    ],
)
def test_a_config_the_code_refuses_the_schema_refuses(data: dict[str, Any], tmp_path: Path) -> None:
    assert not _code_accepts_config(data, tmp_path)
    assert problems(data, "run-config") != []


def test_the_adaptive_and_cap_fields_are_accepted_by_both(tmp_path: Path) -> None:
    for extra in (
        {"budgetUsd": 2.5, "budgetRunTokens": 200000},
        {"until": "decisive", "floor": 2, "maxSeeds": 8, "budgetUsd": 3},
    ):
        data = {"schemaVersion": 1, **extra}
        assert _code_accepts_config(data, tmp_path) and problems(data, "run-config") == []


def _code_accepts_task(data: dict[str, Any], tmp_path: Path) -> bool:
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(data))
    try:
        tasks.load_task(path)
    except BenchError:
        return False
    return True


GOOD_TASK = {"id": "a/b", "title": "T", "domain": "a", "difficulty": "easy", "stash": "st", "verifier": "script"}


@pytest.mark.parametrize(
    "change",
    [
        {},
        {"budget": {"tokens": 1000, "wallMs": "20000"}},
        {"budget": {"tokens": 10**12, "wallMs": 604800000}},
        {"verifier": "regex", "expected_match": "x+"},
        {"slice": "eval", "gold_ref": "skill:x", "expected_transfer_from": ["skill:y"], "abstention_case": True},
    ],
)
def test_a_task_the_code_accepts_the_schema_accepts(change: dict[str, Any], tmp_path: Path) -> None:
    data = {**GOOD_TASK, **change}
    assert _code_accepts_task(data, tmp_path) and problems(data, "task") == []


@pytest.mark.parametrize(
    "change",
    [
        {"verifier": "regex"},
        {"difficulty": "trivial"},
        {"stash": "a b"},
        {"title": " "},
        {"budget": {"tokens": -1}},
        {"budget": {"tokens": float("inf")}},
        {"budget": {"wallMs": 1e23}},
        {"budget": {"turns": 3}},
        {"colour": "red"},
        {"expected_transfer_from": "skill:y"},
    ],
)
def test_a_task_the_code_refuses_the_schema_refuses(change: dict[str, Any], tmp_path: Path) -> None:
    data = {**GOOD_TASK, **change}
    assert not _code_accepts_task(data, tmp_path) and problems(data, "task") != []


README_PROVIDERS = {
    "schemaVersion": 1,
    "defaultModel": "local/qwen3-9b",
    "providers": {
        "local": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Local",
            "options": {"baseURL": "http://127.0.0.1:1234/v1", "apiKey": "{env:LOCAL_API_KEY}"},
            "models": {"qwen3-9b": {"name": "Qwen3 9B", "limit": {"context": 32768, "output": 8192}}},
        }
    },
}


def test_the_providers_schema_agrees_with_the_code() -> None:
    providers.validate_providers(README_PROVIDERS, "p.json")
    assert problems(README_PROVIDERS, "providers") == []
    for bad in (
        {**README_PROVIDERS, "schemaVersion": 2},
        {**README_PROVIDERS, "share": "auto"},
        {**README_PROVIDERS, "providers": {"scripted": {}}},
        {**README_PROVIDERS, "providers": {"a/b": {}}},
        {**README_PROVIDERS, "providers": {"local": {"options": {"apiKey": "literal-key"}}}},
    ):
        with pytest.raises(BenchError):
            providers.validate_providers(bad, "p.json")
        assert problems(bad, "providers") != []


def test_an_envelope_validates_and_a_broken_one_does_not() -> None:
    samples = [sample(t.id, a, s, "pass" if s > 1 else "fail") for t in TASKS for a in ("noakm", "akm") for s in (1, 2)]
    env = report.build(inp(TASKS, samples, seeds=2, baseline={"d0/t0": 0.5}, gates=("akm.pass_rate>=0.1",)))
    assert problems(json.loads(json.dumps(env)), "report") == []
    broken = json.loads(json.dumps(env))
    broken["runs"][0]["outcome"] = "passed"
    del broken["verdict"]
    assert len(problems(broken, "report")) == 2


def _open_objects(node: Any, path: str = "#") -> list[str]:
    """Where a schema lets an object hold keys it does not name (no additionalProperties)."""
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in _open_objects(v, f"{path}/{i}")]
    if not isinstance(node, dict):
        return []
    kinds = node.get("type") if isinstance(node.get("type"), list) else [node.get("type")]
    here = [path] if ("object" in kinds or "properties" in node) and "additionalProperties" not in node else []
    return here + [p for k, v in node.items() for p in _open_objects(v, f"{path}/{k}")]


@pytest.mark.parametrize("name", ["report", "evolve-report", "attribute"])
def test_the_report_schemas_are_closed(name: str) -> None:
    """Every object level says what it holds (issue 31, item 4): named fields and nothing else,
    or keys that are data (task ids, arms) with typed values."""
    assert _open_objects(schema(name)) == []


def test_a_field_the_report_schema_does_not_list_is_refused() -> None:
    samples = [sample(t.id, a, s, "pass" if s > 1 else "fail") for t in TASKS for a in ("noakm", "akm") for s in (1, 2)]
    env = json.loads(json.dumps(report.build(inp(TASKS, samples, seeds=2))))
    for where in (
        env,
        env["aggregate"]["akm"],
        env["aggregate"]["delta"]["paired"],
        env["runs"][0],
        env["spend"]["run"],
    ):
        where["unlisted"] = 1
    assert len(problems(env, "report")) == 5


def test_an_attribute_envelope_validates_and_an_unlisted_field_does_not(tmp_path: Path) -> None:
    from tests.core.test_attribute_html import envelope

    env = json.loads(json.dumps(envelope(tmp_path)))
    assert problems(env, "attribute") == []
    env["attributions"][0]["unlisted"] = 1
    env["attributions"][0]["comparison"]["tasks"] = -1
    assert len(problems(env, "attribute")) == 2
