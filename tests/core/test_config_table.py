"""Every setting is declared once, in the settings table (corpus/settings_table.py): the pytest
options and ini keys, the run-config fields, their schema, the report command's flags and the
defaults of Settings all come from it (issue 31, item 5; docs/configuration.md)."""

from __future__ import annotations

import argparse
import dataclasses
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_akmbench.agents.settings import table as whole_table
from pytest_akmbench.cli.main import build_parser
from pytest_akmbench.corpus import config, config_fields, settings_table
from pytest_akmbench.plugin import options

table = whole_table()  # the bench's rows and every built-in agent's
ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "pytest_akmbench"
# The report command's own inputs, which are no setting of a bench run.
REPORT_OWN = {"--store", "--out", "--config", "--corpus", "--stashes", "--agent-version", "--akm-version", "--run-id"}


class _Recorder:
    """What add_options declares: (option strings, keywords) and (ini name, help, keywords)."""

    def __init__(self) -> None:
        self.options: list[tuple[tuple[str, ...], dict[str, Any]]] = []
        self.inis: list[tuple[str, str, dict[str, Any]]] = []

    def getgroup(self, *_: Any) -> _Recorder:
        return self

    def addoption(self, *names: str, **kw: Any) -> None:
        self.options.append((names, kw))

    def addini(self, name: str, help: str, **kw: Any) -> None:
        self.inis.append((name, help, kw))


def _declared() -> _Recorder:
    recorder = _Recorder()
    options.add_options(recorder)  # type: ignore[arg-type]
    return recorder


def test_every_option_and_ini_key_is_a_row() -> None:
    got = _declared()
    rows = table.options
    assert [names for names, _ in got.options] == [(row.option_flag,) for row in rows]
    assert [kw["dest"] for _, kw in got.options] == [row.dest for row in rows]
    assert [kw["help"] for _, kw in got.options] == [row.help for row in rows]
    assert [name for name, _, _ in got.inis] == [row.dest for row in rows]
    assert all(kw["default"] is None for _, kw in got.options)  # None: "not given", whatever the default


def test_the_options_keep_their_names() -> None:
    """Users and the README name these: none is renamed or lost."""
    flags = {names[0] for names, _ in _declared().options}
    assert len(flags) == 42 and "--parallel" in flags
    assert all(f.startswith("--bench-") for f in flags - {"--parallel"})
    readme = (ROOT / "README.md").read_text()
    assert not {f for f in flags if f not in readme} - {"--bench-evolve-llm"}


def test_every_value_option_is_known_to_take_a_value() -> None:
    takes = {names[0] for names, kw in _declared().options if kw.get("action") != "store_true"}
    assert takes == options.VALUE_FLAGS


def test_every_run_config_field_is_a_row_and_in_the_schema() -> None:
    keys = [row.key for row in table.fields]
    assert len(keys) == len(set(keys)) == 33
    assert set(config_fields.field_types(table)) == set(keys)
    assert set(config_fields.schema(table)["properties"]) == set(keys)


def test_the_shipped_schema_is_the_generated_one() -> None:
    """Regenerate it with: python -m pytest_akmbench.agents.settings > pytest_akmbench/schemas/run-config.schema.json"""
    shipped = (PACKAGE / "schemas" / "run-config.schema.json").read_text(encoding="utf-8")
    assert shipped == config_fields.schema_text(table)


def test_the_report_commands_shared_flags_are_rows() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    report = sub.choices["report"]
    flags = {s for a in report._actions for s in a.option_strings} - {"-h", "--help"}
    shared = {"--" + row.name.replace("_", "-") for row in table.report}
    assert flags == shared | REPORT_OWN
    for row in table.report:  # and each is the bench's option of the same name
        assert row.option


def test_settings_defaults_are_the_tables() -> None:
    fields = {f.name: f for f in dataclasses.fields(config.Settings)}
    for row in settings_table.CORE.resolved:
        assert row.field in fields, f"{row.name}: a row with no Settings attribute"
        assert fields[row.field].default == row.default, row.name
    extra = set(fields) - {row.field for row in settings_table.CORE.resolved}
    assert extra == {"rootdir", "tasks_root", "stashes_root", "config", "tasks_override", "origins", "agent_settings"}
    # An agent's rows are its own: resolved into agent_settings, never a Settings attribute.
    assert not {row.field for row in table.resolved if row.owner != "bench"} & set(fields)


@pytest.mark.parametrize("row", table.resolved, ids=lambda r: r.name)
def test_each_setting_names_where_a_bad_value_came_from(row: settings_table.Setting, tmp_path: Path) -> None:
    """A value every parser refuses, from the command line and from the ini, names its origin."""
    bad = "-1 x"
    if row.parse in (str, tuple) or row.name in ("tasks", "sandbox_ro"):
        return  # any text is a value; sandbox_ro's check is of the path (test_config.py)
    for layer, origin in (("cli", row.option_flag), ("ini", "ini " + row.dest)):
        given = {"cli": {}, "ini": {}}
        given[layer] = {row.name: bad}
        with pytest.raises(config.ConfigError, match=f"^{re.escape(origin)}: "):
            config.resolve(
                rootdir=tmp_path,
                cwd=tmp_path,
                config=None,
                tasks_root=tmp_path,
                stashes_root=tmp_path,
                cli=given["cli"],
                ini=given["ini"],
                table=table,
            )


def test_nothing_rewrites_the_settings_after_resolution() -> None:
    """A track or mode keeps what it derives beside the settings (plugin/state.py)."""
    found = []
    for path in (PACKAGE / "plugin").rglob("*.py"):
        text = path.read_text()
        if re.search(r"\.settings\s*=", text) or re.search(r"replace\(\s*(state\.)?settings\b", text):
            found.append(path.name)
    assert found == []


def test_the_agents_settings_are_marked() -> None:
    """opencode's options are rows its folder declares, owned by the agent; the providers file is
    the bench's, whatever the agent (docs/configuration.md)."""
    owned = {row.name for row in table.rows if row.owner == "opencode"}
    assert {"opencode_config", "opencode", "opencodeConfig", "opencodeConfigRef"} <= owned
    assert {row.owner for row in settings_table.CORE.rows} == {"bench"}
    assert table.by_name["providers"].owner == table.by_name["providersRef"].owner == "bench"


def test_the_inert_plugin_stays_cheap() -> None:
    """The entry point loads the table and its parsers, nothing heavier (docs/architecture.md,
    "Cheap when inert")."""
    code = (
        "import sys, pytest_akmbench.plugin; "
        "print(sorted(m for m in sys.modules if m.startswith('pytest_akmbench')), 'yaml' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    names = [f"pytest_akmbench{m}" for m in ("", ".corpus", ".corpus.settings_table", ".corpus.values", ".errors")]
    names += [
        f"pytest_akmbench.agents{m}"
        for m in ("", ".settings", ".claude_code", ".claude_code.settings", ".opencode", ".opencode.settings")
    ]
    names += ["pytest_akmbench.agents.codex", "pytest_akmbench.agents.codex.settings"]
    names += [f"pytest_akmbench.plugin{m}" for m in ("", ".hooks", ".options")] + ["pytest_akmbench.records"]
    assert out.strip() == f"{sorted(names)} False"
