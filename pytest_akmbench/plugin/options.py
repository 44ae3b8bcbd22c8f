"""The ``--bench-*`` options and their ini twins, made from the settings table
(``corpus/settings_table.py``): all the inert plugin defines.

Precedence (command line, run config, ini, default) is resolved later, in
``corpus.config.resolve``; here each value is only read, with where it came from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..agents.settings import table


def add_options(parser: pytest.Parser) -> None:
    """Every option and ini key, one of each per row of the settings table (agents' rows included)."""
    group = parser.getgroup("akmbench", "agent benchmark cells (pytest-akmbench)")
    for row in table().options:
        if row.many:
            group.addoption(
                row.option_flag, dest=row.dest, action="append", default=None, metavar=row.metavar, help=row.help
            )
            parser.addini(row.dest, row.ini_help or row.help, type="linelist", default=[])
        elif row.metavar is None:
            group.addoption(row.option_flag, dest=row.dest, action="store_true", default=None, help=row.help)
            parser.addini(row.dest, row.ini_help or row.help, default=None)
        else:
            group.addoption(row.option_flag, dest=row.dest, metavar=row.metavar, default=None, help=row.help)
            parser.addini(row.dest, row.ini_help or row.help, default=None)


OPTIONS = table().options
# Every setting read as (command line, ini) pair.
SETTINGS = [row.name for row in OPTIONS]


# Every option that takes a value as the next word: pytest's first look at the command line,
# before this plugin is loaded, takes that word for a test path (plugin/rootdir.py).
VALUE_FLAGS = frozenset(row.option_flag for row in OPTIONS if row.metavar is not None)


def raw(config: pytest.Config, name: str) -> tuple[Any, Any]:
    """(command-line value, ini value) of setting ``name``; an empty ini value is None."""
    dest = "bench_" + name
    cli = config.getoption(dest, None)
    ini = config.getini(dest)
    return cli, (ini if ini not in (None, "", []) else None)


def asked_for(config: pytest.Config) -> bool:
    """Whether this run may be a bench run: a ``--bench-*`` option, a corpus or run config in
    the ini file, or a corpus named on the command line. Cheap on purpose: everything else waits
    until this says yes."""
    if config.option.help or config.option.version:
        return False
    if any(config.getoption("bench_" + name, None) is not None for name in SETTINGS):
        return True
    return raw(config, "corpus")[1] is not None or raw(config, "config")[1] is not None or bool(named_corpus(config))


def named_corpus(config: pytest.Config) -> Path | None:
    """The corpus a path on the command line is, or is inside: a directory named ``corpus``
    holding ``tasks/`` (the default layout). `pytest corpus` in a project without the ini runs
    the bench, instead of collecting the verifiers' own tests as the project's."""
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        return None  # testpaths or the current directory: the project's own tests
    for arg in config.args:
        path = Path(config.invocation_params.dir, arg.split("::")[0]).resolve()
        for folder in (path, *path.parents):
            if folder.name == "corpus" and (folder / "tasks").is_dir():
                return folder
    return None
