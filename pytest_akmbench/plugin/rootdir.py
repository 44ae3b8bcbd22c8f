"""A path given to a ``--bench-*`` option is never taken for a test path.

pytest decides its rootdir and ini file before it loads the plugins installed with it: it parses
the command line with only its own options known, so in ``--bench-akm /other/checkout/akm`` the
unknown ``--bench-akm`` is set aside and the path after it counts as a test path. The rootdir then
becomes an ancestor of that path, the ini file that of another project, and with them the
store, the report and the corpus move (``--bench-akm=/other/checkout/akm``, one word, never
did). No hook runs before that decision, so it cannot be prevented, only taken again.

So once this plugin is loaded, before the first conftest is, the decision is taken again with
every option known; when it differs, pytest's setup is set to the one it would have made, with
the ini file's ``addopts``, ``pythonpath`` and ``confcutdir`` of the right file. Only a run whose
``--bench-*`` value could have moved it is looked at: any other pytest run is left alone.
"""

from __future__ import annotations

import itertools
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from . import internals
from .options import VALUE_FLAGS


def taken_for_paths(args: Sequence[str]) -> list[tuple[str, str]]:
    """(option, value) of each ``--bench-*`` option given with its value as a separate word
    naming an existing file or directory: the words pytest's first look took for test paths."""
    found = []
    for word, value in itertools.pairwise(args):
        if word == "--":
            break
        if word in VALUE_FLAGS and not value.startswith("-") and _exists(value.split("::")[0]):
            found.append((word, value))
    return found


def _exists(path: str) -> bool:
    try:
        return Path(path).exists()
    except OSError:
        return False


def repair(config: pytest.Config, args: list[str]) -> None:
    """Set pytest's rootdir and ini file to those of the command line read with every option
    known, when a ``--bench-*`` value moved them; ``args`` is pytest's own list (ini
    ``addopts`` first), changed in place."""
    env = shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))
    given = list(config.invocation_params.args)
    if env and args[len(args) - len(env) - len(given) :] == [*env, *given]:
        given = [*env, *given]
    taken = taken_for_paths(given)
    if not taken:
        return
    ns, unknown = internals.parse_known_and_unknown(config, given)
    rootpath, inipath, inicfg, ignored = internals.decide_setup(config, ns, unknown)
    if rootpath == config.rootpath and inipath == config.inipath:
        return
    try:
        _apply(config, args, given, rootpath, inipath, inicfg, ignored)
    except (AttributeError, TypeError, ValueError):
        # A pytest whose internals differ: say what happened and how to avoid it, in one line.
        flag = taken[0][0]
        raise pytest.UsageError(
            f"{flag}: pytest took its value for a test path and chose the rootdir {config.rootpath}; "
            f"write {flag}=VALUE (one word)"
        ) from None


def _apply(
    config: pytest.Config,
    args: list[str],
    given: list[str],
    rootpath: Path,
    inipath: Path | None,
    inicfg: Any,
    ignored: list[Any],
) -> None:
    prefix = args[: len(args) - len(given)]
    if args[len(prefix) :] != given or prefix != list(config.getini("addopts") if prefix else []):
        raise ValueError("pytest's arguments are not the command line after its ini addopts")
    old_paths = [str(p) for p in config.getini("pythonpath")]
    internals.replace_setup(config, rootpath, inipath, inicfg, ignored)
    if prefix or config.getini("addopts"):
        args[:] = [*config.getini("addopts"), *given]
    for path in old_paths:
        if path in sys.path:
            sys.path.remove(path)
    for path in reversed(config.getini("pythonpath")):
        sys.path.insert(0, str(path))
    known = internals.parse_known(config, args)
    if known.confcutdir is None:
        known.confcutdir = str(inipath.parent if inipath is not None else rootpath)
    config.known_args_namespace = known
