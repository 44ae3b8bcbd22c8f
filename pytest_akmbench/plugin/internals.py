"""The one module that touches pytest's and pytest-xdist's private internals.

Neither project offers a public API for what is done here. Each function says what it relies
on; tests/core/test_internals.py checks every one of those against the installed releases, so
a release that changes one fails there first, and pyproject.toml pins both below their next
major version (docs/architecture.md, "pytest and xdist internals"). No other module imports
``_pytest`` or ``xdist``, or names a private attribute of theirs (tests/core/test_layers.py).
xdist is imported inside the functions: a run with ``-p no:xdist`` or without it never loads it.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import queue
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

# -k and -m: pytest's expression parser and its two matchers, so an expression means here what
# pytest's own passes make of it. Relied on: Expression.compile(text) (SyntaxError with offset
# and msg on a bad one) and .evaluate(matcher); a matcher is called as matcher(ident, **kwargs);
# KeywordMatcher.from_item(item) and MarkMatcher.from_markers(marks). Unchanged since pytest 8.3
# gave -m keyword arguments.
from _pytest._code.code import ReprEntry, ReprExceptionInfo, ReprFileLocation, ReprTraceback
from _pytest.mark import KeywordMatcher, MarkMatcher
from _pytest.mark.expression import Expression

Matcher = Callable[..., bool]


def compile_expression(text: str) -> Expression:
    """A ``-k`` or ``-m`` expression, parsed as pytest parses it (SyntaxError when it cannot)."""
    return Expression.compile(text)


def keyword_matcher(item: pytest.Item) -> Matcher:
    """pytest's own ``-k`` matching of an item that is not a cell."""
    return KeywordMatcher.from_item(item)


def mark_matcher(marks: Iterable[pytest.Mark]) -> Matcher:
    """pytest's own ``-m`` matching against these markers."""
    return MarkMatcher.from_markers(marks)


# ------------------------------------------------------------------ a cell's failure report


class ReprFunction(pytest.Function):
    """A ``pytest.Function`` whose failure text a subclass may replace (``cell_repr``).

    Relied on: pytest reports a failure in the test call through ``repr_failure`` and one in
    setup (a harness error fails the fixture) through the private ``_repr_failure_py``; the
    ``_pytest._code`` classes ReprFileLocation(path, lineno, message), ReprEntry(lines,
    reprfuncargs, reprlocals, reprfileloc, style), ReprTraceback(entries, extraline, style) and
    ReprExceptionInfo(reprtraceback, reprcrash), which render ``<path>:1: <message>``."""

    def cell_repr(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:
        return None

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        return self.cell_repr(excinfo) or super().repr_failure(excinfo)

    def _repr_failure_py(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        return self.cell_repr(excinfo) or super()._repr_failure_py(excinfo, style)


def failure_repr(path: str, message: str, lines: list[str], body: bool) -> ReprExceptionInfo:
    """A failure shown at ``path`` line 1 with ``message``, then ``lines`` (without ``body``,
    as ``--tb=line`` wants it, only the crash line)."""
    where = ReprFileLocation(path, 1, message)
    entry = ReprEntry(lines=lines, reprfuncargs=None, reprlocals=None, reprfileloc=where, style="value")
    return ReprExceptionInfo(reprtraceback=ReprTraceback([entry] if body else [], None, "value"), reprcrash=where)


def fixture_info(item: pytest.Function) -> Any:
    """The item's fixture closure, to give the next item of the same function and parent
    (``Function.from_parent(..., fixtureinfo=...)``, as parametrize does). Relied on: the private
    ``_fixtureinfo`` attribute every Function holds."""
    return item._fixtureinfo


def mark(name: str, kwargs: dict[str, Any]) -> pytest.MarkDecorator:
    """``pytest.mark.<name>(**kwargs)``, the same ``Mark`` without the decorator call's second
    ``Mark`` and merge: a cell's mark is made 10,000 times in a large collection
    (benchmarks/README.md, "Collection, third pass"). Relied on: ``Mark(name, args, kwargs,
    _ispytest=True)`` and ``MarkDecorator(mark, _ispytest=True)``."""
    from _pytest.mark.structures import Mark

    return pytest.MarkDecorator(Mark(name, (), kwargs, _ispytest=True), _ispytest=True)


# ------------------------------------------------------------------ rootdir and ini file


def parse_known_and_unknown(config: pytest.Config, args: list[str]) -> tuple[Any, list[str]]:
    """The command line parsed with every option known. Relied on: ``config._parser`` and its
    ``parse_known_and_unknown_args(args, namespace=)``."""
    return config._parser.parse_known_and_unknown_args(args, namespace=copy.copy(config.option))


def decide_setup(config: pytest.Config, ns: Any, unknown: list[str]) -> tuple[Path, Path | None, Any, list[Any]]:
    """(rootpath, inipath, ini config, the rest) pytest would choose for these arguments.
    Relied on: ``_pytest.config.findpaths.determine_setup``; pytest 9 takes ``override_ini`` and
    decides on the test paths alone, pytest 8 on them and the unknown flags."""
    from _pytest.config.findpaths import determine_setup

    params = inspect.signature(determine_setup).parameters
    setup: dict[str, Any] = {
        "inifile": ns.inifilename,
        "rootdir_cmd_arg": ns.rootdir or None,
        "invocation_dir": config.invocation_params.dir,
        "args": ns.file_or_dir if "override_ini" in params else [*ns.file_or_dir, *unknown],
    }
    if "override_ini" in params:
        setup["override_ini"] = ns.override_ini
    rootpath, inipath, inicfg, *ignored = determine_setup(**setup)
    return rootpath, inipath, inicfg, ignored


def replace_setup(config: pytest.Config, rootpath: Path, inipath: Path | None, inicfg: Any, ignored: list[Any]) -> None:
    """Make pytest's rootdir and ini file these. Relied on: the private Config attributes
    ``_rootpath``, ``_inipath``, ``_inicfg`` (pytest 9; ``inicfg`` in pytest 8),
    ``_ignored_config_files``, ``_inicache`` and ``_parser.extra_info``."""
    config._rootpath = rootpath
    config._inipath = inipath
    if hasattr(config, "_inicfg"):
        config._inicfg = inicfg  # pytest 9
    else:
        vars(config)["inicfg"] = inicfg  # pytest 8: an attribute, read-only property in 9
    if hasattr(config, "_ignored_config_files") and ignored:
        config._ignored_config_files = ignored[0]
    config._parser.extra_info["rootdir"] = str(rootpath)
    config._parser.extra_info["inifile"] = str(inipath)
    config._inicache.clear()


def parse_known(config: pytest.Config, args: list[str]) -> Any:
    """The known options of ``args``. Relied on: ``config._parser.parse_known_args``."""
    return config._parser.parse_known_args(args, namespace=copy.copy(config.option))


# ------------------------------------------------------------------ xdist schedulers


def scope_scheduler(config: pytest.Config, log: Any, scope: Callable[[str], str]) -> Any:
    """xdist's loadscope scheduling with ``scope(nodeid)`` as the work unit. Relied on: the
    private ``LoadScopeScheduling._split_scope(nodeid) -> str`` that names an item's unit."""
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    class ScopeScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return scope(nodeid)

    return ScopeScheduling(config, log)


def round_scheduler(config: pytest.Config, log: Any, lookahead: int) -> Any:
    """xdist's load scheduling handing out cells one at a time in collection order, each worker
    holding ``lookahead`` of them. Relied on: ``LoadScheduling.check_schedule(node, duration)``
    called after each report, its ``pending`` and ``node2pending`` lists, the private
    ``_send_tests(node, num)``, ``node.shutting_down`` and ``node.shutdown()``; the first
    hand-out is ``--maxschedchunk`` per worker."""
    from xdist.scheduler import LoadScheduling

    class RoundScheduling(LoadScheduling):  # type: ignore[misc]
        def check_schedule(self, node: Any, duration: float = 0) -> None:
            if node.shutting_down:
                return
            if not self.pending:
                node.shutdown()
                return
            # An xdist worker starts a test only once it knows the next: hold two.
            missing = lookahead - len(self.node2pending[node])
            if missing > 0:
                self._send_tests(node, missing)

    config.option.maxschedchunk = lookahead
    return RoundScheduling(config, log)


# ------------------------------------------------------------------ the xdist controller


def args_as_given(roots: Any, args: list[str]) -> list[str]:
    return list(args)


def keep_remote_args() -> Callable[[], None]:
    """Until the returned function is called, xdist passes a remote worker the path arguments
    as given, not rewritten against an rsync root. Relied on: ``xdist.workermanage``'s
    module-level ``make_reltoroot(roots, args)``, looked up when a worker is set up."""
    workermanage = importlib.import_module("xdist.workermanage")
    original = getattr(workermanage, "make_reltoroot")  # noqa: B009 - xdist ships no types
    setattr(workermanage, "make_reltoroot", args_as_given)  # noqa: B010

    def restore() -> None:
        setattr(workermanage, "make_reltoroot", original)  # noqa: B010

    return restore


def controller_events(config: pytest.Config) -> queue.Queue[tuple[str, dict[str, Any]]] | None:
    """The queue the controller reads its workers' events from (``(name, kwargs)``: a
    ``testreport`` with ``node`` and ``rep``, ``workerfinished``, ``errordown``), or None.
    Relied on: the ``dsession`` plugin's ``queue`` attribute."""
    events = getattr(config.pluginmanager.get_plugin("dsession"), "queue", None)
    return events if isinstance(events, queue.Queue) else None


def status_once(config: pytest.Config) -> None:
    """Make xdist's status line say each text once. Relied on: the ``terminaldistreporter``
    plugin's ``getstatus()`` and ``ensure_show_status()``, which prints the status."""
    reporter = config.pluginmanager.get_plugin("terminaldistreporter")
    show, status = getattr(reporter, "ensure_show_status", None), getattr(reporter, "getstatus", None)
    if show is None or status is None:
        return
    said: set[str] = set()

    def once() -> None:
        line = status()
        if line not in said:
            said.add(line)
            show()

    reporter.ensure_show_status = once  # type: ignore[union-attr]
