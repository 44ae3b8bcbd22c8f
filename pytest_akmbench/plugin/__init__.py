"""pytest-akmbench's pytest entry point (``pytest11``): options, hook specs, and nothing else
until a run asks for a bench.

A pytest run that names no corpus and no ``--bench-*`` option imports only this module, the
options and the hook specs; the bench's own hooks (``bench.py``) and the core load only when
the options ask for a bench (docs/architecture.md, "Cheap when inert").
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from . import hooks, options

if TYPE_CHECKING:
    from ..agents.base import Agent


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hooks)


def pytest_akmbench_agents() -> list[Agent]:
    # Registered here, with the entry point, so that a conftest's agent of the same name
    # (registered later) replaces the built-in one.
    from ..agents.registry import builtin_agents

    return builtin_agents()


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    # The first hook after pytest chose its rootdir without knowing our options: a path given
    # as `--bench-akm PATH` may have moved it (plugin/rootdir.py).
    if not options.VALUE_FLAGS.isdisjoint(args):
        from . import rootdir

        rootdir.repair(early_config, args)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> Iterator[None]:
    if options.asked_for(config):
        from . import bench

        if bench.activate(config):
            config.pluginmanager.register(bench, "akmbench-bench")
    return (yield)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "cell(task, arm, seed, domain, slice): a benchmark cell; select with -m \"cell(arm='akm')\""
    )
