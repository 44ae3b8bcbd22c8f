"""The layers of the package: the core never imports pytest, imports flow one way, no cycles, no
private names across modules (docs/architecture.md)."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_akmbench

CORE = [
    "agents",
    "agents.base",
    "agents.registry",
    "agents.transcript",
    "agents.watching",
    "agents.version",
    "agents.cellstart",
    "agents.linelog",
    "agents.locate",
    "agents.doctor_lines",
    "agents.boundary",
    "agents.claude_code.adapter",
    "agents.claude_code.binaries",
    "agents.claude_code.cell",
    "agents.claude_code.doctor",
    "agents.claude_code.events",
    "agents.claude_code.provider",
    "agents.claude_code.settings",
    "agents.claude_code.transcript",
    "agents.providers",
    "agents.settings",
    "agents.opencode.settings",
    "agents.codex.adapter",
    "agents.codex.config",
    "agents.codex.events",
    "agents.codex.transcript",
    "agents.codex.watch",
    "agents.opencode.config",
    "agents.opencode.doctor",
    "agents.opencode.transcript",
    "agents.opencode.adapter",
    "agents.opencode.binaries",
    "agents.discovery",
    "agents.opencode.events",
    "agents.model",
    "agents.opencode.agentlog",
    "agents.preflight",
    "agents.sources",
    "agents.opencode.watch",
    "cell.akm",
    "cell.akm_calls",
    "cell.akm_check",
    "cell.prompts",
    "cell.rundir",
    "cell.runner",
    "cell.shell",
    "cell.trajectory",
    "cell.transcript",
    "cell.checks",
    "cell.verifiers",
    "cli.compare",
    "cli.doctor",
    "cli.validate",
    "cli.inputs",
    "cli.main",
    "cli.tools",
    "corpus.config",
    "corpus.fields",
    "corpus.hashes",
    "corpus.strict",
    "corpus.tasks",
    "corpus.values",
    "errors",
    "records",
    "scripted",
    "scripted.anthropic",
    "scripted.chat",
    "scripted.policies",
    "scripted.responses",
    "scripted.server",
    "scripted.snoop",
    "scripted.wire",
    "report.akm_usage",
    "report.compare.changes",
    "report.compare.markdown",
    "report.compare.refusals",
    "report.compare.corpus_diff",
    "report.render.github",
    "report.envelope",
    "report.gates",
    "report.lift",
    "report.render.files",
    "report.render.fmt",
    "report.render.html",
    "report.render.html_parts",
    "report.render.html_plots",
    "report.render.markdown",
    "report.render.notes",
    "report.render.sections",
    "report.soundness",
    "report.verdict",
    "report.metrics",
    "run.resume",
    "stats.significance",
    "stats.intervals",
    "report.render.svg",
    "report.transfer",
    "store.claims",
    "store.integrity",
    "store.preflight",
    "store.samples",
    "store.scrub",
    "store.soundness",
    "system.cleaner",
    "system.interrupts",
    "system.lifecycle",
    "system.procs",
    "system.proctable",
    "system.reaper",
    "system.sandbox",
]


@pytest.mark.parametrize("module", CORE)
def test_core_module_does_not_import_pytest(module: str) -> None:
    """The CLI and the core run without pytest: importing them must not pull it in."""
    code = f"import sys, pytest_akmbench.{module}; print('pytest' in sys.modules or '_pytest' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


# Imports flow one way: each package may import only from packages of a lower rank (or its own).
# docs/architecture.md draws the same picture.
RANKS = {
    "errors": 0,
    "records": 0,
    "system": 1,
    "stats": 1,
    "corpus": 2,
    "store": 2,
    "agents": 3,
    "cell": 4,
    "scripted": 5,  # the scripted model: its policies read a cell's task, every agent speaks to it
    "agents.*": 6,  # each agent's own package (agents/opencode/, ...): it may read a cell's files
    "report": 6,
    "run": 7,
    "tracks": 7,
    "plugin": 8,
    "cli": 8,
    "__main__": 8,
}
PACKAGE = Path(pytest_akmbench.__file__).parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _unit(module: str) -> str:
    """The package (or top-level module) a module belongs to, for its rank."""
    rest = module.removeprefix("pytest_akmbench").lstrip(".")
    parts = rest.split(".")
    if len(parts) > 1 and parts[0] == "agents" and (PACKAGE / "agents" / parts[1]).is_dir():
        return "agents.*"  # a folder under agents/ is an agent, whatever its name
    best = ""
    for unit in RANKS:
        if (rest == unit or rest.startswith(unit + ".")) and len(unit) > len(best):
            best = unit
    return best


def _imports(module: str) -> list[tuple[str, str, bool]]:
    """(imported module, imported name, at run time) for every import of the package in ``module``.

    Function-level imports count: they hide a cycle, they do not remove it. Imports under
    ``if TYPE_CHECKING:`` only count for the direction of the layers, not for cycles.
    """
    path = MODULES[module]
    tree = ast.parse(path.read_text())
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            typing_only.update(id(sub) for stmt in node.body for sub in ast.walk(stmt))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if not base.startswith("pytest_akmbench"):
                continue
            for alias in node.names:
                target = f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
                found.append((target, alias.name if target == base else "", id(node) not in typing_only))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("pytest_akmbench"):
                    found.append((alias.name, "", id(node) not in typing_only))
    return found


def test_the_layer_map_covers_every_module() -> None:
    """A new package gets a rank here (and a line in docs/architecture.md) before it is used."""
    assert [m for m in MODULES if m != "pytest_akmbench" and not _unit(m)] == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_flow_down(module: str) -> None:
    """A package imports only from its own package or from packages below it."""
    if module == "pytest_akmbench":
        return
    rank = RANKS[_unit(module)]
    upward = [
        target for target, _, _ in _imports(module) if target != "pytest_akmbench" and RANKS[_unit(target)] > rank
    ]
    assert upward == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_private_name_crosses_a_module(module: str) -> None:
    """``_name`` is private to its module: no ``from x import _name``, no ``x._name``."""
    imported = {name for _, name, _ in _imports(module) if name.startswith("_") and not name.startswith("__")}
    tree = ast.parse(MODULES[module].read_text())
    modules_bound = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("pytest_akmbench"))
        for alias in node.names
    }
    reached = {
        f"{node.value.id}.{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in modules_bound
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
    }
    assert sorted(imported | reached) == []


def test_no_import_cycle() -> None:
    """The modules' run-time imports form a DAG (function-level imports included)."""
    graph = {m: {t for t, _, runtime in _imports(m) if runtime and t != m} for m in MODULES}
    done: set[str] = set()
    cycles = []

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            cycles.append(" -> ".join(path[path.index(module) :] + [module]))
            return
        if module in done:
            return
        for target in sorted(graph.get(module, ())):
            visit(target, path + [module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])
    assert cycles == []


# pytest's and xdist's private internals are reached only through plugin/internals.py, which
# tests/core/test_internals.py checks against every release (docs/architecture.md).
INTERNALS = "pytest_akmbench.plugin.internals"
PRIVATE_PACKAGES = ("_pytest", "xdist")
XDIST_NAMES = {
    "dsession",
    "terminaldistreporter",
    "make_reltoroot",
    "node2pending",
    "maxschedchunk",
    "shutting_down",
    "ensure_show_status",
    "getstatus",
}


def _private_uses(module: str) -> list[str]:
    tree = ast.parse(MODULES[module].read_text())
    found = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            # importlib.import_module("xdist.x"), get_plugin("dsession")
            if (node.value.split(".")[0] in PRIVATE_PACKAGES and "." in node.value) or node.value in XDIST_NAMES:
                found.append(repr(node.value))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and ".plugin." in module:
            # getattr(config, "_x"), hasattr(...), setattr(...)
            texts = [a.value for a in node.args[1:2] if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if node.func.id in ("getattr", "hasattr", "setattr", "delattr") and texts:
                found += [repr(t) for t in texts if re.fullmatch(r"_[a-z]\w*", t)]
        elif isinstance(node, ast.Attribute):
            private = node.attr.startswith("_") and not node.attr.startswith("__")
            own = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
            if node.attr in XDIST_NAMES or (private and not own and ".plugin." in module):
                found.append(ast.unparse(node))
        found += [name for name in names if name.split(".")[0] in PRIVATE_PACKAGES]
    return found


def _overrides(module: str) -> list[str]:
    """Private methods of a pytest or xdist class that a class of ``module`` replaces."""
    mod = importlib.import_module(module)
    found = []
    for cls in vars(mod).values():
        if not isinstance(cls, type) or cls.__module__ != module:
            continue
        theirs = [b for b in cls.__mro__[1:] if not b.__module__.startswith("pytest_akmbench") and b is not object]
        for name, value in vars(cls).items():
            private = name.startswith("_") and not name.startswith("__") and inspect.isfunction(value)
            if private and any(hasattr(b, name) for b in theirs):
                found.append(f"{cls.__name__}.{name}")
    return found


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m != INTERNALS))
def test_only_the_internals_module_touches_pytest_or_xdist_privates(module: str) -> None:
    """No ``_pytest`` or ``xdist`` import, no private attribute of another object in plugin/,
    no xdist internal by name, no private pytest method overridden, outside plugin/internals.py."""
    assert _private_uses(module) == []
    if ".plugin" in module:
        assert _overrides(module) == []
