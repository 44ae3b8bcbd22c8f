"""The whole settings table: the bench's rows (``corpus/settings_table.py``), then each built-in
agent's own, which its folder declares as ``SETTINGS`` in its ``settings`` module
(docs/configuration.md, "An agent's settings").

The corpus sits below the agents and cannot name them, so the table is assembled here, above
both; the plugin, the commands and the tracks take it from here. Light on purpose: the pytest
entry point reads it to declare the options, before anything shows the run is a bench.
"""

from __future__ import annotations

import importlib
import pkgutil

from ..corpus.settings_table import CORE, Setting, Table

PACKAGE = str(__package__)  # also when run as a script (-m): its __name__ is then __main__
SETTINGS = "settings"  # the module of an agent's package that declares its settings


def agent_packages() -> list[str]:
    """The names of the agent packages under ``agents/`` (every folder of its path), sorted."""
    where = importlib.import_module(PACKAGE).__path__
    return sorted({m.name for m in pkgutil.iter_modules(where) if m.ispkg})


def agent_rows(package: str) -> tuple[Setting, ...]:
    """The rows an agent's folder declares (none without a ``settings`` module); each is the
    agent's own (``owner``), never the bench's."""
    try:
        module = importlib.import_module(f"{PACKAGE}.{package}.{SETTINGS}")
    except ModuleNotFoundError as err:
        if err.name != f"{PACKAGE}.{package}.{SETTINGS}":
            raise
        return ()
    rows = tuple(getattr(module, "SETTINGS", ()))
    for row in rows:
        if row.owner == "bench":
            raise ValueError(f"agents/{package}/settings.py: {row.name}: an agent's setting names its agent as owner")
    return rows


def table() -> Table:
    """The bench's rows and every agent folder's, in the folders' order (found anew each call,
    so a folder added to the package's path is read)."""
    whole = CORE
    for package in agent_packages():
        whole = whole.with_rows(agent_rows(package))
    return whole


if __name__ == "__main__":  # python -m pytest_akmbench.agents.settings > pytest_akmbench/schemas/run-config.schema.json
    from ..corpus.config_fields import schema_text  # it reads YAML's strict loader: not for the inert plugin

    print(schema_text(table()), end="")
