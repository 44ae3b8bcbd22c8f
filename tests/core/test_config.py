from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_akmbench.corpus.config import load_run_config, resolve
from pytest_akmbench.corpus.values import clamp_parallel, parse_arms
from pytest_akmbench.errors import ConfigError


def write_config(tmp_path: Path, **fields: object) -> Path:
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"schemaVersion": 1, **fields}))
    return path


class TestRunConfig:
    """Schema v1 validation; every error names the file and the field."""

    def test_valid(self, tmp_path: Path) -> None:
        """A config with the reference's fields and ours loads."""
        cfg = load_run_config(
            write_config(
                tmp_path, name="quick", tasks=["a/b"], arms=["noakm", "akm"], seeds=2, agent="oracle", akm="bin/akm"
            )
        )
        assert cfg.name == "quick"
        assert cfg.resolve_path("akm") == tmp_path / "bin" / "akm"

    @pytest.mark.parametrize(
        "fields, fragment",
        [
            ({"seedz": 3}, "unknown field 'seedz'"),
            ({"seeds": "3"}, 'seeds: expected int, got "3"'),
            ({"seeds": 0}, "seeds: must be a positive integer"),
            ({"forceParallel": 1}, "forceParallel: expected bool"),
            ({"arms": ["akm", "akm"]}, "arms: arm 'akm' is listed twice"),
            ({"arms": ["akm", "control"]}, "arms: unknown arm 'control'"),
            ({"arms": []}, "arms: expected a non-empty list"),
            ({"tasks": [1]}, "tasks: every entry must be a task id string"),
            ({"schemaVersion": 2}, "schemaVersion: must be 1"),
        ],
    )
    def test_errors(self, tmp_path: Path, fields: dict, fragment: str) -> None:
        """Unknown fields, wrong types and duplicate arms are one-line errors."""
        path = write_config(tmp_path, **fields)
        with pytest.raises(ConfigError) as err:
            load_run_config(path)
        assert str(err.value).startswith(f"{path}: ")
        assert fragment in str(err.value)
        assert "\n" not in str(err.value)

    def test_missing_file_is_usage(self, tmp_path: Path) -> None:
        """A config that does not exist is a usage error."""
        with pytest.raises(ConfigError) as err:
            load_run_config(tmp_path / "nope.json")
        assert err.value.usage

    def test_bad_json(self, tmp_path: Path) -> None:
        """Invalid JSON names the line and column."""
        path = tmp_path / "bad.json"
        path.write_text('{"schemaVersion": 1,\n "seeds": }')
        with pytest.raises(ConfigError, match=r"invalid JSON at line 2 column"):
            load_run_config(path)

    @pytest.mark.parametrize(
        "fields",
        [
            {"providers": {}, "providersRef": "p.json"},
            {"opencodeConfig": {}, "opencodeConfigRef": "o.json"},
            {"providersRef": "p.json", "opencodeConfigRef": "o.json"},
        ],
    )
    def test_one_source_of_providers(self, tmp_path: Path, fields: dict) -> None:
        """Two provider sources in one config are refused, naming both fields."""
        with pytest.raises(ConfigError, match=r"give one source of providers, not 2") as err:
            load_run_config(write_config(tmp_path, **fields))
        assert all(key in str(err.value) for key in fields)


class TestPrecedence:
    """CLI beats config file beats ini beats default."""

    def settings(self, tmp_path: Path, cli: dict, ini: dict, **cfg: object):
        config = load_run_config(write_config(tmp_path, **cfg)) if cfg else None
        return resolve(
            rootdir=tmp_path,
            cwd=tmp_path,
            cli=cli,
            ini=ini,
            config=config,
            tasks_root=tmp_path / "t",
            stashes_root=tmp_path / "s",
        )

    def test_order(self, tmp_path: Path) -> None:
        """Each layer wins over the ones below it."""
        assert self.settings(tmp_path, {}, {}).seeds == 3
        assert self.settings(tmp_path, {}, {"seeds": "4"}).seeds == 4
        assert self.settings(tmp_path, {}, {"seeds": "4"}, seeds=5).seeds == 5
        s = self.settings(tmp_path, {"seeds": "6"}, {"seeds": "4"}, seeds=5)
        assert s.seeds == 6
        assert s.origins["seeds"] == "--bench-seeds"

    def test_error_names_the_source(self, tmp_path: Path) -> None:
        """A bad value says which layer it came from."""
        with pytest.raises(ConfigError, match=r"^ini bench_seeds: expected a positive integer, got 'many'$"):
            self.settings(tmp_path, {}, {"seeds": "many"})
        with pytest.raises(ConfigError, match=r"^--bench-arms: unknown arm 'ctrl'"):
            self.settings(tmp_path, {"arms": "ctrl"}, {})

    def test_config_tasks_with_cli_override(self, tmp_path: Path) -> None:
        """The config's tasks selector stays; --bench-tasks narrows it."""
        s = self.settings(tmp_path, {"tasks": "a/x,a/y"}, {}, tasks="a")
        assert s.tasks == "a"
        assert s.tasks_override == ["a/x", "a/y"]


class TestParallel:
    """--parallel is clamped to [1, 8] with a warning above 4 unless forced."""

    @pytest.mark.parametrize("value, expected, warns", [(1, 1, False), (4, 4, False), (6, 6, True), (20, 8, True)])
    def test_clamp(self, value: int, expected: int, warns: bool) -> None:
        """Values clamp and warn like the reference."""
        clamped, warning = clamp_parallel(value, force=False)
        assert clamped == expected
        assert (warning is not None) == warns

    def test_force(self) -> None:
        """Forcing silences the load warning but not the clamp, which the warning still names."""
        assert clamp_parallel(20, force=True) == (8, "--parallel 20: clamped to 8 workers, the most a run uses")

    def test_below_one_and_the_warning_text(self) -> None:
        """0 and negatives run one at a time, said so; the warning names the value asked for
        (not the clamped one), the limit and the way out."""
        assert clamp_parallel(0, force=False) == (1, "--parallel 0: clamped to 1 worker (no xdist)")
        assert clamp_parallel(-3, force=True)[0] == 1
        assert clamp_parallel(5, force=False) == (
            5,
            "--parallel 5 exceeds 4; high concurrency may overwhelm local "
            "providers. Pass --bench-force-parallel to suppress this warning.",
        )
        twelve = clamp_parallel(12, force=False)[1] or ""
        assert twelve.startswith("--parallel 12: clamped to 8 workers") and "--parallel 8" not in twelve
        assert "--bench-force-parallel" in twelve


class TestPathExpansion:
    """Paths in a run config: ${VAR}, $VAR and ~ expanded, then relative to the config's directory."""

    @pytest.mark.parametrize(
        ("raw", "expected"),
        [
            ("${BENCH_T_DIR}/akm", "/opt/bench/akm"),
            ("$BENCH_T_DIR/bin/akm", "/opt/bench/bin/akm"),
            ("${BENCH_T_SUB}/akm", "CFG/tools/akm"),
            ("$BENCH_T_SUB-x/akm", "CFG/tools-x/akm"),
            ("${BENCH_T_UNSET}/akm", "/akm"),
            ("pre$BENCH_T_UNSET/akm", "CFG/pre/akm"),
            ("~/akm", "HOME/akm"),
            ("bin/akm", "CFG/bin/akm"),
            ("/abs/akm", "/abs/akm"),
            ("$1/akm", "CFG/$1/akm"),
        ],
    )
    def test_expansion(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, raw: str, expected: str) -> None:
        monkeypatch.setenv("BENCH_T_DIR", "/opt/bench")
        monkeypatch.setenv("BENCH_T_SUB", "tools")
        monkeypatch.delenv("BENCH_T_UNSET", raising=False)
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        cfg = load_run_config(write_config(tmp_path, akm=raw))
        want = expected.replace("CFG", str(tmp_path)).replace("HOME", str(tmp_path / "home"))
        assert cfg.resolve_path("akm") == Path(want)

    def test_absent_or_empty_path_is_none(self, tmp_path: Path) -> None:
        assert load_run_config(write_config(tmp_path)).resolve_path("akm") is None
        assert load_run_config(write_config(tmp_path, akm="")).resolve_path("akm") is None


def test_parse_arms_from_text() -> None:
    """Comma-separated arms parse in order."""
    assert parse_arms("akm, noakm") == ("akm", "noakm")
