from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_akmbench.agents.settings import table
from pytest_akmbench.corpus.config import (
    Settings,
    config_options,
    corpus_near,
    expand_path,
    in_file,
    load_run_config,
    resolve,
    run_caps,
)
from pytest_akmbench.corpus.values import (
    check_matrix,
    clamp_parallel,
    load_baseline,
    parse_arms,
    parse_bool,
    parse_tasks,
    positive_int,
)
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
            load_run_config(write_config(tmp_path, **fields), table())
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
        assert clamp_parallel(12, force=False) == (
            8,
            "--parallel 12: clamped to 8 workers, the most a run uses; above 4, high concurrency may "
            "overwhelm local providers (--bench-force-parallel suppresses this part)",
        )


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
            ("~", "HOME"),
            ("~user/akm", "CFG/~user/akm"),
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

    def test_home_comes_from_the_environment_given(self, tmp_path: Path) -> None:
        """Provider discovery expands with the environment of the run it was given, `~` included."""
        env = {"HOME": "/home/bench-user", "REF": "x"}
        assert expand_path("~/providers/$REF.json", tmp_path, env) == Path("/home/bench-user/providers/x.json")

    def test_the_corpus_of_a_config_is_the_nearest_above_it(self, tmp_path: Path) -> None:
        """`--bench-config <project>/configs/x.json` finds <project>/corpus from anywhere."""
        (tmp_path / "p" / "corpus" / "tasks").mkdir(parents=True)
        (tmp_path / "p" / "configs" / "deep").mkdir(parents=True)
        assert corpus_near(tmp_path / "p" / "configs" / "deep" / "x.json") == tmp_path / "p" / "corpus"
        (tmp_path / "q").mkdir()
        assert corpus_near(tmp_path / "q" / "x.json") is None

    def test_absent_or_empty_path_is_none(self, tmp_path: Path) -> None:
        assert load_run_config(write_config(tmp_path)).resolve_path("akm") is None
        assert load_run_config(write_config(tmp_path, akm="")).resolve_path("akm") is None


def test_parse_arms_from_text() -> None:
    """Comma-separated arms parse in order."""
    assert parse_arms("akm, noakm") == ("akm", "noakm")


class TestMessages:
    """The exact line a user reads for each bad run config or option value (each names the fix)."""

    def test_one_problem_has_no_tail_and_more_are_counted(self, tmp_path: Path) -> None:
        path = write_config(tmp_path, seeds=0)
        with pytest.raises(ConfigError) as one:
            load_run_config(path)
        assert str(one.value) == f"{path}: seeds: must be a positive integer, got 0"
        path = write_config(tmp_path, seeds=0, parallel=0)
        with pytest.raises(ConfigError) as two:
            load_run_config(path)
        assert str(two.value) == (
            f"{path}: seeds: must be a positive integer, got 0"
            f" (and 1 more: python -m pytest_akmbench validate {path} lists them)"
        )

    def test_an_error_names_its_run_config_once(self, tmp_path: Path) -> None:
        """A task-selection error under a run config is prefixed with the config's path; one that
        already names it (a load error) is not named twice; without a config it is left as it is."""
        path = tmp_path / "run.json"
        selection = ValueError("tasks: no task matches 'nope/*'")
        assert in_file(path, selection) == f"{path}: tasks: no task matches 'nope/*'"
        assert in_file(str(path), ValueError(f"{path}: seeds: must be a positive integer, got 0")) == (
            f"{path}: seeds: must be a positive integer, got 0"
        )
        assert in_file(None, selection) == "tasks: no task matches 'nope/*'"

    def test_the_evolve_track_loads(self, tmp_path: Path) -> None:
        path = write_config(tmp_path, track="evolve")
        assert load_run_config(path).get("track") == "evolve"

    def test_evolve_episodes_from_the_config_the_option_wins_and_zero_is_refused(self, tmp_path: Path) -> None:
        path = write_config(tmp_path, track="evolve", evolveEpisodes=3)
        cfg = load_run_config(path)
        kw = {"rootdir": tmp_path, "ini": {}, "tasks_root": tmp_path, "stashes_root": tmp_path, "cwd": tmp_path}
        assert resolve(cli={}, config=cfg, **kw).evolve_episodes == 3
        assert resolve(cli={"evolve_episodes": "2"}, config=cfg, **kw).evolve_episodes == 2
        assert resolve(cli={}, config=None, **kw).evolve_episodes == 1
        with pytest.raises(ConfigError) as err:
            load_run_config(write_config(tmp_path, evolveEpisodes=0))
        assert str(err.value).endswith("evolveEpisodes: must be a positive integer, got 0")

    def test_attribute_track_and_its_base_load(self, tmp_path: Path) -> None:
        path = write_config(tmp_path, track="attribute", base="report/report.json")
        cfg = load_run_config(path)
        settings = resolve(
            rootdir=tmp_path, cli={}, ini={}, config=cfg, tasks_root=tmp_path, stashes_root=tmp_path, cwd=tmp_path
        )
        assert settings.track == "attribute" and settings.base == path.parent / "report" / "report.json"
        assert settings.top == 5

    @pytest.mark.parametrize(
        ("value", "words"),
        [
            ("speed", "must be one of utility, attribute, evolve"),
            ("Utility", "must be one of utility, attribute, evolve"),
        ],
    )
    def test_track_option_refuses_what_cannot_run(self, tmp_path: Path, value: str, words: str) -> None:
        with pytest.raises(ConfigError) as err:
            resolve(
                rootdir=tmp_path,
                cli={"track": value},
                ini={},
                config=None,
                tasks_root=tmp_path,
                stashes_root=tmp_path,
                cwd=tmp_path,
            )
        assert str(err.value).startswith("--bench-track: ") and words in str(err.value)

    def test_a_field_of_two_types_names_both(self, tmp_path: Path) -> None:
        path = write_config(tmp_path, tasks=3)
        with pytest.raises(ConfigError) as err:
            load_run_config(path)
        assert str(err.value) == f"{path}: tasks: expected str or array, got 3"

    def test_unreadable_files(self, tmp_path: Path) -> None:
        missing = tmp_path / "nope.json"
        with pytest.raises(ConfigError) as err:
            load_run_config(missing)
        assert str(err.value) == f"{missing}: run config not found; check the --bench-config path"
        folder = tmp_path / "dir.json"
        folder.mkdir()
        with pytest.raises(ConfigError) as err:
            load_run_config(folder)
        assert (str(err.value), err.value.usage) == (f"{folder}: cannot read run config: Is a directory", True)
        binary = tmp_path / "latin1.json"
        binary.write_bytes(b'{"name": "caf\xe9"}')
        with pytest.raises(ConfigError) as err:
            load_run_config(binary)
        assert str(err.value).startswith(f"{binary}: cannot read run config: 'utf-8' codec can't decode byte 0xe9")
        listed = tmp_path / "list.json"
        listed.write_text("[1]")
        with pytest.raises(ConfigError) as err:
            load_run_config(listed)
        assert (str(err.value), err.value.usage) == (f"{listed}: a run config is a JSON object, got list", False)

    def test_value_parsers(self) -> None:
        assert positive_int("1") == 1 and positive_int(2) == 2
        with pytest.raises(ValueError, match=r"^expected a positive integer, got '0'$"):
            positive_int("0")
        with pytest.raises(
            ValueError, match=r"^expected a task selector \(all, train, eval, a domain, or ids a/b,c/d\)$"
        ):
            parse_tasks("  ")
        for bad in ([1], [""], []):
            with pytest.raises(ValueError, match=r"^expected a non-empty list of arms \(noakm, akm, synthetic\)$"):
                parse_arms(bad)
        with pytest.raises(ValueError, match=r"^unknown arm 'ctrl'; arms are noakm, akm, synthetic$"):
            parse_arms(["ctrl"])


class TestConfigOptions:
    """The provider and model fields reach the agent adapter's discovery as the file gives them."""

    def test_fields_or_nothing(self, tmp_path: Path) -> None:
        providers = {"local": {"baseURL": "http://127.0.0.1:1/v1"}}
        cfg = load_run_config(write_config(tmp_path, providers=providers, model="local/m"))
        assert config_options(cfg, table()) == {
            "config_providers": providers,
            "config_providers_ref": None,
            "config_opencode": None,
            "config_opencode_ref": None,
            "config_default_model": "local/m",
            "config_path": str(tmp_path / "run.json"),
        }
        ref = load_run_config(write_config(tmp_path, providersRef="p.json", defaultModel="local/n"))
        assert config_options(ref)["config_providers_ref"] == "p.json"
        assert config_options(ref)["config_default_model"] == "local/n"
        assert set(config_options(None).values()) == {None}


def test_lower_case_variable_names_expand(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("bench_t_lower", "/opt/low")
    assert load_run_config(write_config(tmp_path, akm="${bench_t_lower}/a")).resolve_path("akm") == Path("/opt/low/a")
    assert load_run_config(write_config(tmp_path, akm="$bench_t_lower/b")).resolve_path("akm") == Path("/opt/low/b")


class TestResolvedExtras:
    """The run-level caps, the verifier timeout and the sandbox's read-only paths, as resolved."""

    def settings(self, tmp_path: Path, **cli: object) -> Settings:
        return resolve(
            rootdir=tmp_path, cwd=tmp_path, cli=cli, ini={}, config=None, tasks_root=tmp_path, stashes_root=tmp_path
        )

    def test_caps_only_when_set(self, tmp_path: Path) -> None:
        assert run_caps(self.settings(tmp_path)) == {"cap_tokens": None, "cap_wall_ms": None}
        assert run_caps(self.settings(tmp_path, budget_tokens="500")) == {"cap_tokens": 500, "cap_wall_ms": None}
        assert run_caps(self.settings(tmp_path, budget_wall_ms="9000")) == {"cap_tokens": None, "cap_wall_ms": 9000}

    def test_verify_timeout_is_a_positive_number(self, tmp_path: Path) -> None:
        assert self.settings(tmp_path, verify_timeout="0.5").verify_timeout == 0.5
        for bad in ("0", "-1", "nan", "soon"):
            with pytest.raises(ConfigError) as err:
                self.settings(tmp_path, verify_timeout=bad)
            assert str(err.value) == f"--bench-verify-timeout: expected a positive number, got {bad!r}"

    def test_sandbox_read_only_paths_must_exist(self, tmp_path: Path) -> None:
        (tmp_path / "data").mkdir()
        assert self.settings(tmp_path, sandbox_ro=["data"]).sandbox_ro == (tmp_path / "data",)
        with pytest.raises(ConfigError) as err:
            self.settings(tmp_path, sandbox_ro=["data", "gone"])
        assert str(err.value) == (
            f"--bench-sandbox-ro: {tmp_path / 'gone'} does not exist; "
            "give a file or directory the sandboxed agent may read"
        )


class TestBaseline:
    """A baseline file: {task_id: pass rate in [0, 1]}; anything else is a one-line error naming it."""

    def write(self, tmp_path: Path, text: str) -> Path:
        path = tmp_path / "baseline.json"
        path.write_text(text)
        return path

    def test_valid_rates_are_floats(self, tmp_path: Path) -> None:
        rates = load_baseline(self.write(tmp_path, '{"a/x": 1, "a/y": 0, "a/z": 0.25}'))
        assert rates == {"a/x": 1.0, "a/y": 0.0, "a/z": 0.25}
        assert all(type(v) is float for v in rates.values())

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ('{"a/x": 1.5}', "a/x: baseline pass rate must be a number in [0, 1], got 1.5"),
            ('{"a/x": -0.1}', "a/x: baseline pass rate must be a number in [0, 1], got -0.1"),
            ('{"a/x": true}', "a/x: baseline pass rate must be a number in [0, 1], got true"),
            ('{"a/x": "0.5"}', 'a/x: baseline pass rate must be a number in [0, 1], got "0.5"'),
            ("[0.5]", "a baseline is a JSON object mapping task ids to pass rates"),
            ('{"a/x": }', "baseline is not valid JSON: line 1: Expecting value"),
        ],
    )
    def test_bad_content(self, tmp_path: Path, text: str, message: str) -> None:
        path = self.write(tmp_path, text)
        with pytest.raises(ConfigError) as err:
            load_baseline(path)
        assert (str(err.value), err.value.usage) == (f"{path}: {message}", False)

    def test_missing_or_unreadable_is_a_usage_error(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError) as err:
            load_baseline(tmp_path / "none.json")
        assert (str(err.value), err.value.usage) == (
            f"{tmp_path / 'none.json'}: baseline file not found; fix the baseline path",
            True,
        )
        with pytest.raises(ConfigError) as err:
            load_baseline(tmp_path)
        assert str(err.value).startswith(f"{tmp_path}: cannot read baseline: [Errno 21] Is a directory")
        assert err.value.usage is True


class TestMoreMessages:
    def load_error(self, tmp_path: Path, **fields: object) -> str:
        path = write_config(tmp_path, **fields)
        with pytest.raises(ConfigError) as err:
            load_run_config(path)
        return str(err.value).removeprefix(f"{path}: ")

    def test_schema_version_track_and_unknown_field(self, tmp_path: Path) -> None:
        assert self.load_error(tmp_path, schemaVersion=2) == "schemaVersion: must be 1, got 2"
        assert (
            self.load_error(tmp_path, track="speed") == 'track: must be one of utility, attribute, evolve, got "speed"'
        )
        assert self.load_error(tmp_path, seedz=1).startswith(
            "unknown field 'seedz'; known fields: $schema, agent, akm, arms, base, baseline, budgetRunTokens, "
        )

    def test_limits_are_inclusive(self, tmp_path: Path) -> None:
        """1 is a positive integer and 1,000 seeds is the most a cell takes, not one too many."""
        cfg = load_run_config(write_config(tmp_path, seeds=1000, budgetTurns=1, parallel=1, budgetTokens=1))
        assert (cfg.get("seeds"), cfg.get("budgetTurns")) == (1000, 1)
        assert self.load_error(tmp_path, seeds=1001) == "seeds: 1001 seeds is too many: at most 1000 trials per cell"

    def test_evolve_settings_warn_in_one_line(self, tmp_path: Path) -> None:
        path = write_config(tmp_path, phase2Enabled=True, phase2ReflectTimeoutMs=5)
        assert load_run_config(path).warnings() == [
            f"{path}: phase2Enabled, phase2ReflectTimeoutMs: evolve-track settings, unused by the utility track "
            "this run executes (accepted so the config loads unchanged)"
        ]


class TestResolveDetails:
    def test_parse_bool_words(self) -> None:
        for word in ("1", "true", "YES", " On "):
            assert parse_bool(word) is True, word
        for word in ("0", "false", "No", "OFF", ""):
            assert parse_bool(word) is False, word
        assert (parse_bool(True), parse_bool(False)) == (True, False)
        with pytest.raises(ValueError, match=r"^expected true or false, got 'maybe'$"):
            parse_bool("maybe")

    def test_the_cell_limit(self) -> None:
        check_matrix(1000, 2, 100)  # 200,000 cells: the most one run holds
        with pytest.raises(ConfigError) as err:
            check_matrix(1000, 3, 100)
        assert str(err.value) == (
            "1000 tasks x 3 arms x 100 seeds = 300000 cells is more than the 200000 one run can hold; "
            "select fewer tasks or seeds"
        )

    def test_layers_paths_and_names(self, tmp_path: Path) -> None:
        (tmp_path / "cfgdir").mkdir()
        cfg = load_run_config(write_config(tmp_path / "cfgdir", tasks="a", akm="bin/akm"))
        s = resolve(
            rootdir=tmp_path / "root",
            cwd=tmp_path / "cwd",
            cli={"store": "out", "seeds": "", "force_parallel": "yes"},
            ini={"report": "rep", "seeds": "4"},
            config=cfg,
            tasks_root=tmp_path,
            stashes_root=tmp_path,
        )
        assert (s.store, s.report, s.akm) == (
            tmp_path / "cwd" / "out",
            tmp_path / "root" / "rep",
            tmp_path / "cfgdir" / "bin" / "akm",
        )
        assert (s.seeds, s.force_parallel, s.config, s.tasks, s.tasks_override) == (4, True, cfg, "a", None)
        assert s.origins["seeds"] == "ini bench_seeds" and s.origins["force_parallel"] == "--bench-force-parallel"
        with pytest.raises(ConfigError, match=r"^--parallel: expected a whole number of workers, got 'x'$"):
            resolve(
                rootdir=tmp_path,
                cwd=tmp_path,
                cli={"parallel": "x"},
                ini={},
                config=None,
                tasks_root=tmp_path,
                stashes_root=tmp_path,
            )
