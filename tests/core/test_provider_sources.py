"""Run configs and opencode configs of the standalone akm-bench: both provider shapes, every
accepted field, and the credential rules applied to a standard opencode config."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import ClassVar

import pytest

from pytest_akmbench.agents.discovery import discover_providers
from pytest_akmbench.agents.model import choose_model
from pytest_akmbench.agents.settings import table
from pytest_akmbench.agents.sources import OPENCODE_CONFIG, load_opencode_config, validate_opencode_config
from pytest_akmbench.cli.validate import validate
from pytest_akmbench.corpus import config
from pytest_akmbench.corpus.config import run_config_problems
from pytest_akmbench.errors import ConfigError

# The whole table (the agents' rows too): the run-config fields of every built-in agent load.
TABLE = table()
load_run_config = functools.partial(config.load_run_config, table=TABLE)


SECRET = "sk-" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2"


def entry(**options: object) -> dict:
    return {
        "npm": "@ai-sdk/openai-compatible",
        "name": "Local",
        "options": {"baseURL": "http://127.0.0.1:1234/v1", **options},
        "models": {"qwen3": {"name": "Qwen", "limit": {"context": 32768, "output": 8192}}},
    }


def opencode_json(**extra: object) -> dict:
    return {
        "$schema": "https://opencode.ai/config.json",
        "provider": {"local": entry(apiKey="{env:LOCAL_KEY}")},
        "model": "local/qwen3",
        **extra,
    }


def write(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


STANDALONE = {
    "$schema": "../schemas/bench-run-config.schema.json",
    "schemaVersion": 1,
    "track": "utility",
    "name": "qwen-9b",
    "description": "standalone akm-bench config",
    "opencodeConfigRef": "opencode.json",
    "model": "local/qwen3",
    "tasks": "all",
    "arms": ["noakm", "akm"],
    "seeds": 5,
    "budgetTokens": 30000,
    "budgetWallMs": 600000,
    "phase2Enabled": True,
    "phase2ReflectTimeoutMs": 180000,
    "phase2ReflectRetryTimeoutMs": 120000,
    "phase2SkipReflectOnAllNegative": True,
    "parallel": 4,
    "forceParallel": False,
}


class TestStandaloneRunConfig:
    def test_loads_unchanged_with_each_field_meaning_what_it_says(self, tmp_path: Path) -> None:
        """model is the run's model, opencodeConfigRef the provider source relative to the file,
        and the phase2 fields are named as unused."""
        write(tmp_path / "configs" / "opencode.json", opencode_json(model="local/other"))
        cfg = load_run_config(write(tmp_path / "configs" / "qwen.json", STANDALONE))
        assert cfg.default_model == "local/qwen3"
        (warning,) = cfg.warnings()
        assert all(key in warning for key in STANDALONE if key.startswith("phase2"))
        choice = choose_model(None, config.config_options(cfg, TABLE), env={"LOCAL_KEY": "k", "HOME": str(tmp_path)})
        assert (choice.model, choice.model_source) == ("local/qwen3", "run config model")
        assert choice.providers is not None and choice.providers.kind == OPENCODE_CONFIG
        assert choice.providers.source == str((tmp_path / "configs" / "opencode.json").resolve())
        assert choice.env_vars == {"LOCAL_KEY"}

    def test_without_a_model_the_opencode_configs_model_is_used(self, tmp_path: Path) -> None:
        write(tmp_path / "opencode.json", opencode_json())
        data = {k: v for k, v in STANDALONE.items() if k != "model"}
        cfg = load_run_config(write(tmp_path / "run.json", data))
        assert cfg.default_model is None and cfg.warnings()
        choice = choose_model(None, config.config_options(cfg, TABLE), env={"LOCAL_KEY": "k", "HOME": str(tmp_path)})
        assert choice.model == "local/qwen3" and choice.model_source.endswith("opencode.json model")

    def test_inline_opencode_config(self, tmp_path: Path) -> None:
        cfg = load_run_config(write(tmp_path / "run.json", {"schemaVersion": 1, "opencodeConfig": opencode_json()}))
        choice = choose_model(None, config.config_options(cfg, TABLE), env={"LOCAL_KEY": "k", "HOME": str(tmp_path)})
        assert choice.provider_key == "local" and choice.providers.source == f"{tmp_path / 'run.json'}: opencodeConfig"

    def test_an_evolve_config_of_the_standalone_bench_loads(self, tmp_path: Path) -> None:
        path = write(tmp_path / "run.json", {**STANDALONE, "track": "evolve"})
        assert run_config_problems(json.loads(path.read_text()), path, TABLE) == []
        assert load_run_config(path).get("track") == "evolve"

    @pytest.mark.parametrize(
        "fields, fragment",
        [
            ({"track": "speed"}, "track: must be one of utility, attribute, evolve"),
            ({"phase2Enabled": "yes"}, "phase2Enabled: expected bool"),
            ({"phase2ReflectTimeoutMs": 0}, "phase2ReflectTimeoutMs: must be a positive integer"),
            ({"model": "local/a", "defaultModel": "local/b"}, "model and defaultModel: both name the run's model"),
            ({"opencodeConfig": []}, "opencodeConfig: expected object"),
        ],
    )
    def test_bad_values(self, tmp_path: Path, fields: dict, fragment: str) -> None:
        path = write(tmp_path / "run.json", {"schemaVersion": 1, **fields})
        with pytest.raises(ConfigError, match=fragment):
            load_run_config(path)


class TestEveryProblem:
    BAD: ClassVar = {
        "schemaVersion": 1,
        "seedz": 3,
        "arms": ["akm", "ctrl"],
        "budgetTokens": -1,
        "colour": "blue",
        "providers": {},
        "opencodeConfigRef": "o.json",
    }

    def test_validate_lists_every_problem(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Five problems in one file: validate prints five error lines, not the first."""
        path = write(tmp_path / "run.json", self.BAD)
        assert validate(tmp_path / "none", tmp_path / "none", [path]) == 1
        errors = [line for line in capsys.readouterr().out.splitlines() if line.startswith(f"error: {path}")]
        for fragment in (
            "'seedz'",
            "'colour'",
            "unknown arm 'ctrl'",
            "budgetTokens: must be a positive",
            "providers and opencodeConfigRef",
        ):
            assert sum(fragment in line for line in errors) == 1, (fragment, errors)
        assert len(errors) == 5

    def test_a_run_names_the_first_and_counts_the_rest(self, tmp_path: Path) -> None:
        path = write(tmp_path / "run.json", self.BAD)
        with pytest.raises(ConfigError) as err:
            load_run_config(path)
        assert "seedz" in str(err.value) and "(and 4 more: python -m pytest_akmbench validate" in str(err.value)
        assert "\n" not in str(err.value)

    def test_validate_checks_the_provider_source_and_warns_of_unused_fields(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        write(tmp_path / "opencode.json", opencode_json(provider={"local": entry(apiKey=SECRET)}))
        path = write(tmp_path / "run.json", STANDALONE)
        assert validate(tmp_path / "none", tmp_path / "none", [path]) == 1
        out = capsys.readouterr().out
        assert "provider.local.options.apiKey: must be an env-ref" in out and SECRET not in out
        assert "warning: " in out and "phase2Enabled" in out


class TestOpencodeConfig:
    def test_takes_provider_and_model_and_names_what_it_ignores(self, tmp_path: Path) -> None:
        data = opencode_json(permission={"bash": "allow"}, plugin=["x"], mcp={}, instructions=["AGENTS.md"])
        found = load_opencode_config(write(tmp_path / "opencode.json", data))
        assert found.providers == data["provider"] and found.default_model == "local/qwen3"
        assert found.ignored == ("instructions", "mcp", "permission", "plugin")

    @pytest.mark.parametrize(
        "mutate, fragment",
        [
            (lambda d: d["provider"]["local"]["options"].update(apiKey="literal-key"), "apiKey: must be an env-ref"),
            (lambda d: d["provider"]["local"]["options"].update(apiKey=SECRET), "apiKey: must be an env-ref"),
            (
                lambda d: d["provider"]["local"]["options"].update(headers={"Authorization": "Bearer x"}),
                "credential header",
            ),
            (lambda d: d.update(small_model=SECRET), "credential heuristic"),
            (lambda d: d.update(provider=[]), "provider: must be an object"),
            (lambda d: d["provider"].update(scripted={}), "reserved"),
            (lambda d: d.update(model=3), "model: must be a model id string"),
        ],
    )
    def test_credential_and_shape_rules(self, mutate, fragment: str) -> None:
        data = opencode_json()
        mutate(data)
        with pytest.raises(ConfigError, match=fragment) as err:
            validate_opencode_config(data, "opencode.json")
        assert SECRET not in str(err.value) and "literal-key" not in str(err.value)
        assert str(err.value).startswith("opencode.json: ")


class TestPrecedence:
    def test_sources_in_order(self, tmp_path: Path) -> None:
        """Command line, then BENCH_OPENCODE_CONFIG (either shape), then the run config."""
        oc = write(tmp_path / "oc.json", opencode_json(model="local/from-oc"))
        pf = write(
            tmp_path / "pf.json", {"schemaVersion": 1, "defaultModel": "local/from-pf", "providers": {"local": entry()}}
        )
        env = {"BENCH_OPENCODE_CONFIG": str(oc)}
        inline = {"config_opencode": opencode_json(model="local/inline"), "config_path": tmp_path / "run.json"}
        assert discover_providers(explicit=pf, env=env, **inline).default_model == "local/from-pf"
        assert discover_providers(explicit_opencode=oc, env={}, **inline).default_model == "local/from-oc"
        assert discover_providers(env=env, **inline).default_model == "local/from-oc"
        assert discover_providers(env={"BENCH_OPENCODE_CONFIG": str(pf)}, **inline).default_model == "local/from-pf"
        assert discover_providers(env={}, **inline).default_model == "local/inline"

    def test_wrong_shape_for_the_option_says_which_option(self, tmp_path: Path) -> None:
        oc = write(tmp_path / "oc.json", opencode_json())
        pf = write(tmp_path / "pf.json", {"schemaVersion": 1, "providers": {"local": entry()}})
        with pytest.raises(
            ConfigError, match="is an opencode config, not a providers file; pass it with --bench-opencode-config"
        ):
            discover_providers(explicit=oc, env={})
        with pytest.raises(ConfigError, match="pass it with --bench-providers"):
            discover_providers(explicit_opencode=pf, env={})
        with pytest.raises(ConfigError, match="both name the providers; give one") as err:
            discover_providers(explicit=pf, explicit_opencode=oc, env={})
        assert err.value.usage
