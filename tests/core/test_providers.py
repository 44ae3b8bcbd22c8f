"""Unit tests of the providers file, its discovery chain and model precedence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_akmbench.agents.discovery import discover_providers
from pytest_akmbench.agents.model import check_model, describe, resolve_model
from pytest_akmbench.agents.providers import check_env_vars, load_providers_file, validate_providers
from pytest_akmbench.errors import ConfigError

SECRET = "sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2"


def local_entry(**options) -> dict:
    return {
        "npm": "@ai-sdk/openai-compatible",
        "name": "Local",
        "options": {"baseURL": "http://127.0.0.1:1234/v1", **options},
        "models": {"qwen/qwen3.5-9b": {"name": "q", "limit": {"context": 32768, "output": 8192}}},
    }


def write(path: Path, data) -> Path:
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def good(**extra) -> dict:
    return {"schemaVersion": 1, "defaultModel": "local/qwen/qwen3.5-9b", "providers": {"local": local_entry()}, **extra}


def test_valid_file_loads(tmp_path):
    data = good()
    data["providers"]["local"]["options"]["apiKey"] = "{env:local_key}"
    data["providers"]["local"]["options"]["headers"] = {"X-Org": "{env:ORG_ID}"}
    pf = load_providers_file(write(tmp_path / "p.json", data))
    assert pf.source == str((tmp_path / "p.json").resolve())
    assert pf.default_model == "local/qwen/qwen3.5-9b"
    assert pf.env_refs == {"local_key", "ORG_ID"}
    assert pf.env_refs_of("local") == {"local_key", "ORG_ID"}


@pytest.mark.parametrize("key", ["plugin", "mcp", "permission", "disabled_providers", "small_model", "snapshot"])
def test_forbidden_keys(key):
    with pytest.raises(ConfigError, match=f"f.json: {key}: not allowed"):
        validate_providers(good(**{key: {}}), "f.json")


def test_unknown_top_level_key_is_an_error():
    with pytest.raises(ConfigError, match=r"f.json: extra: unknown top-level key"):
        validate_providers(good(extra=1), "f.json")


@pytest.mark.parametrize("version", [None, 2, "1", True])
def test_schema_version(version):
    data = good()
    data["schemaVersion"] = version
    with pytest.raises(ConfigError, match="schemaVersion: must be 1"):
        validate_providers(data, "f.json")


@pytest.mark.parametrize("providers", [None, [], "x", {"local": "str"}, {"a/b": {}}, {"scripted": {}}])
def test_bad_providers(providers):
    data = good()
    data["providers"] = providers
    if providers is None:
        del data["providers"]
    with pytest.raises(ConfigError, match=r"f.json: providers"):
        validate_providers(data, "f.json")


def test_literal_api_key_rejected_without_echoing_it():
    data = good()
    data["providers"]["local"]["options"]["apiKey"] = "hunter2hunter2"
    with pytest.raises(ConfigError) as err:
        validate_providers(data, "f.json")
    assert "providers.local.options.apiKey: must be an env-ref" in str(err.value)
    assert "hunter2" not in str(err.value)


@pytest.mark.parametrize("where", ["defaultModel", "unknown", "deep", "list", "key"])
def test_sk_heuristic_scans_the_whole_file(where):
    data = good()
    if where == "defaultModel":
        data["defaultModel"] = f"local/{SECRET}"
    elif where == "unknown":
        data["notes"] = f"my key is {SECRET}"
    elif where == "deep":
        data["providers"]["local"]["options"]["headers"] = {"Authorization": f"Bearer {SECRET}"}
    elif where == "list":
        data["providers"]["local"]["models"]["qwen/qwen3.5-9b"]["tags"] = ["x", SECRET]
    else:
        data["providers"]["local"][SECRET] = 1
    with pytest.raises(ConfigError, match="credential heuristic") as err:
        validate_providers(data, "f.json")
    assert SECRET not in str(err.value)


def test_missing_and_invalid_files(tmp_path):
    with pytest.raises(ConfigError, match="not found") as err:
        load_providers_file(tmp_path / "nope.json")
    assert err.value.usage
    with pytest.raises(ConfigError, match=r"invalid JSON \(line 1") as err:
        load_providers_file(write(tmp_path / "bad.json", "{nope"))
    assert not err.value.usage
    with pytest.raises(ConfigError, match="defaultModel: must be"):
        validate_providers(good(defaultModel=3), "f.json")


def test_discovery_order(tmp_path):
    a = write(tmp_path / "a.json", good(defaultModel="local/a"))
    b = write(tmp_path / "b.json", good(defaultModel="local/b"))
    write(tmp_path / "c.json", good(defaultModel="local/c"))
    xdg = tmp_path / "xdg"
    (xdg / "akm").mkdir(parents=True)
    write(xdg / "akm" / "bench-providers.json", good(defaultModel="local/xdg"))
    env = {"BENCH_OPENCODE_CONFIG": str(b), "XDG_CONFIG_HOME": str(xdg)}
    cfg = tmp_path / "configs" / "run.json"
    cfg.parent.mkdir()
    inline = {"local": local_entry()}
    kw = dict(
        config_providers=inline, config_default_model="local/inline", config_providers_ref="../c.json", config_path=cfg
    )
    assert discover_providers(explicit=a, env=env, **kw).default_model == "local/a"
    assert discover_providers(env=env, **kw).default_model == "local/b"
    env.pop("BENCH_OPENCODE_CONFIG")
    pf = discover_providers(env=env, **kw)
    assert pf.default_model == "local/inline" and pf.source == f"{cfg}: providers"
    kw.pop("config_providers")
    assert discover_providers(env=env, **kw).default_model == "local/c"
    kw.pop("config_providers_ref")
    assert discover_providers(env=env, **kw).default_model == "local/xdg"
    assert discover_providers(env={"XDG_CONFIG_HOME": str(tmp_path / "empty")}) is None
    assert discover_providers(env={"HOME": str(tmp_path / "home")}) is None


def test_discovery_missing_sources_are_usage_errors(tmp_path):
    for kw in (
        {"explicit": tmp_path / "x.json"},
        {"env": {"BENCH_OPENCODE_CONFIG": "rel/x.json"}},
        {"config_providers_ref": "x.json", "config_path": tmp_path / "run.json"},
    ):
        kw.setdefault("env", {})
        with pytest.raises(ConfigError, match="not found") as err:
            discover_providers(cwd=tmp_path, **kw)
        assert err.value.usage


def test_inline_providers_are_scanned():
    with pytest.raises(ConfigError, match=r"run.json: providers: providers.local.options.apiKey"):
        discover_providers(env={}, config_providers={"local": local_entry(apiKey="literal")}, config_path="run.json")


def test_model_precedence(tmp_path):
    pf = validate_providers(good(defaultModel="local/p"), "f.json")
    env = {"BENCH_OPENCODE_MODEL": "local/env"}
    assert resolve_model(cli_model="local/cli", env=env, config_default_model="local/cfg", providers=pf) == (
        "local/cli",
        "--bench-model",
    )
    assert resolve_model(env=env, config_default_model="local/cfg", providers=pf)[0] == "local/env"
    assert resolve_model(env={}, config_default_model="local/cfg", providers=pf)[0] == "local/cfg"
    assert resolve_model(env={}, providers=pf) == ("local/p", "f.json defaultModel")
    with pytest.raises(ConfigError, match="no model chosen") as err:
        resolve_model(env={})
    assert err.value.usage


def test_check_model():
    pf = validate_providers(good(), "f.json")
    choice = check_model("scripted/oracle", "cli", None)
    assert choice.scripted and choice.policy == "oracle" and choice.providers is None
    with pytest.raises(ConfigError, match="unknown scripted policy 'smart'"):
        check_model("scripted/smart", "cli", None)
    choice = check_model("local/qwen/qwen3.5-9b", "cli", pf)
    assert choice.provider_key == "local" and choice.provider_entry["name"] == "Local"
    assert check_model("anthropic/claude-sonnet-4", "cli", pf).provider_entry is None
    assert check_model("openai/gpt-5", "cli", None).provider_key == "openai"
    with pytest.raises(ConfigError, match=r"provider 'lmstudio', which is not in f.json") as err:
        check_model("lmstudio/x", "cli", pf)
    assert not err.value.usage
    with pytest.raises(ConfigError, match="no providers file was found") as err:
        check_model("lmstudio/x", "cli", None)
    assert err.value.usage
    with pytest.raises(ConfigError, match="PROVIDER/MODEL"):
        check_model("justamodel", "cli", pf)


def test_env_vars_must_resolve_and_never_leak(tmp_path):
    data = good()
    data["providers"]["local"]["options"]["apiKey"] = "{env:LOCAL_KEY}"
    data["providers"]["other"] = local_entry(apiKey="{env:OTHER_KEY}")
    choice = check_model("local/qwen/qwen3.5-9b", "cli", validate_providers(data, "f.json"))
    assert choice.env_vars == {"LOCAL_KEY"}
    with pytest.raises(ConfigError, match=r"\{env:LOCAL_KEY\} but LOCAL_KEY is not set"):
        check_env_vars(choice, {})
    assert check_env_vars(choice, {"LOCAL_KEY": "s3cret", "OTHER_KEY": "x"}) == {"LOCAL_KEY": "s3cret"}
    assert "s3cret" not in json.dumps(describe(choice))


def test_choose_scripted_without_providers(tmp_path):
    """A scripted model needs no providers; otherwise the model comes from the providers file."""
    from pytest_akmbench.agents.model import choose_model

    choice = choose_model("scripted/oracle", {}, env={"HOME": str(tmp_path)})
    assert choice.scripted and describe(choice)["providers_source"] is None
    p = write(tmp_path / "p.json", good())
    choice = choose_model(None, {}, env={"BENCH_OPENCODE_CONFIG": str(p), "HOME": str(tmp_path)})
    assert choice.model == "local/qwen/qwen3.5-9b" and choice.model_source.endswith("p.json defaultModel")


def tree(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under root with its bytes and mtime: what "only read" must leave as it was."""
    return {
        str(f.relative_to(root)): (f.read_bytes(), f.stat().st_mtime_ns) for f in sorted(root.rglob("*")) if f.is_file()
    }


def test_user_default_file_is_only_read(tmp_path):
    """The user's default providers file is used when nothing else applies, and left exactly as it was;
    when there is none, nothing is created in its place (no directory, no file)."""
    home, xdg = tmp_path / "home", tmp_path / "xdg"
    home.mkdir()
    assert discover_providers(env={"HOME": str(home)}, cwd=tmp_path) is None
    assert discover_providers(env={"XDG_CONFIG_HOME": str(xdg), "HOME": str(home)}, cwd=tmp_path) is None
    assert not xdg.exists() and list(home.iterdir()) == []
    default = write(
        (home / ".config" / "akm").mkdir(parents=True) or home / ".config" / "akm" / "bench-providers.json",
        good(defaultModel="local/from-home"),
    )
    before = tree(home)
    found = discover_providers(env={"HOME": str(home)}, cwd=tmp_path)
    assert found is not None and found.source == str(default) and found.default_model == "local/from-home"
    assert tree(home) == before
    # XDG_CONFIG_HOME, when set, is where the default lives: the file under HOME is then not read.
    assert discover_providers(env={"XDG_CONFIG_HOME": str(xdg), "HOME": str(home)}, cwd=tmp_path) is None
    # Any explicit source wins over the default.
    inline = discover_providers(env={"HOME": str(home)}, cwd=tmp_path, config_providers={"local": local_entry()})
    assert inline is not None and inline.source == "run config: providers"


def test_opencode_reads_its_own_variable_before_bench_model() -> None:
    """opencode keeps BENCH_OPENCODE_MODEL (first), then BENCH_MODEL, which every agent reads."""
    env = {"BENCH_OPENCODE_MODEL": "local/own", "BENCH_MODEL": "local/all"}
    assert resolve_model(env=env) == ("local/own", "BENCH_OPENCODE_MODEL")
    assert resolve_model(env={"BENCH_MODEL": "local/all"}) == ("local/all", "BENCH_MODEL")
    assert resolve_model(env=env, agent="codex") == ("local/all", "BENCH_MODEL")
    with pytest.raises(ConfigError, match=r"no model chosen for opencode; .* set BENCH_OPENCODE_MODEL or BENCH_MODEL,"):
        resolve_model(env={})
