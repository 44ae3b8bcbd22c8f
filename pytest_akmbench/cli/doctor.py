"""``python -m pytest_akmbench doctor``: what is installed, where, and whether the model answers."""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from ..agents.base import Agent
from ..agents.registry import builtin_agents
from ..agents.settings import table
from ..cell import akm
from ..cell.akm_check import check_index
from ..corpus.config import RunConfig, config_options, corpus_near, load_run_config
from ..corpus.tasks import load_lenient
from ..corpus.values import parse_arms
from ..errors import BenchError, ConfigError
from ..system import sandbox, sandbox_doctor


def _pkg(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _line(status: str, name: str, detail: str) -> None:
    print(f"  [{status}] {name}: {detail}")


DEFAULT_ARMS = ("noakm", "akm")  # a run's arms when neither its config nor an option names them


def _needs_akm(cfg: RunConfig | None) -> bool:
    """Whether the config's run has akm cells whose agent calls akm (its arms, by default
    noakm and akm; every agent but the built-in oracle and nop)."""
    if cfg is None:
        return False
    try:
        arms = parse_arms(cfg.get("arms")) if cfg.get("arms") else DEFAULT_ARMS
    except ValueError:
        return False  # validate names a bad arms field; the run refuses it before akm matters
    calls_akm = {a.name: a.uses_akm for a in builtin_agents()}.get(cfg.get("agent") or "", True)
    return "akm" in arms and calls_akm


def _akm_check(options: dict[str, Any], cfg: RunConfig | None) -> tuple[str, str]:
    """akm's version and, as the run's preflight does, an index of one stash of the corpus here."""
    try:
        info = akm.detect(akm.locate(options["akm"], Path(options["rootdir"])))
    except BenchError as err:
        if _needs_akm(cfg):  # the run this config describes would stop at its start
            return "FAIL", f"{err} (the akm arm of {cfg.path if cfg else ''} needs it)"
        return "WARN", str(err)  # only the akm arm needs it; other arms and agents run without
    line = f"{info.version} at {info.path} (keyword search pinned)" + (f"; {info.warning}" if info.warning else "")
    corpus = (corpus_near(cfg.path) if cfg else None) or Path.cwd() / "corpus"
    try:
        tasks = [t for t in load_lenient(corpus / "tasks", corpus / "stashes")[0].tasks if t.stash]
    except BenchError:
        tasks = []
    if not tasks:
        return ("WARN" if info.warning else "PASS"), line + "; no corpus here to index a stash of"
    with tempfile.TemporaryDirectory(prefix="akmbench-doctor-") as work:
        try:
            # In a cell's sandbox where one works here, as the run's preflight does.
            mode = "bwrap" if sandbox.probe() is None else "none"
            indexed = check_index(
                info, tasks[0], corpus / "stashes", Path(work), f"doctor-{os.getpid()}/", sandbox=mode
            )
        except BenchError as err:
            return "FAIL", str(err)
    return ("WARN" if info.warning else "PASS"), f"{line}; {indexed}"


def _tools(options: dict[str, Any], agents: list[Agent]) -> bool:
    """Python packages, what each built-in agent needs, bash and the sandbox; True when something
    needed is missing."""
    failed = False
    _line("PASS", "python", f"{platform.python_version()} at {sys.executable}")
    for pkg in ("pytest-akmbench", "pytest", "pytest-xdist", "pluggy", "PyYAML", "tabulate"):
        found = _pkg(pkg)
        failed |= found is None
        _line("PASS" if found else "FAIL", pkg, found or "not installed; pip install -e .")
    for name, find in [check for agent in agents for check in agent.doctor_tools(options)]:
        try:
            _line("PASS", name, find())
        except BenchError as err:
            failed = True
            _line("FAIL", name, str(err))
    status, detail = sandbox_doctor.doctor_line()  # a missing sandbox only warns: --bench-sandbox auto runs without
    _line(status, "sandbox", detail)
    bash = shutil.which("bash")
    _line("PASS" if bash else "FAIL", "bash", bash or "not found; script verifiers need it")
    return failed or bash is None


def doctor(args: argparse.Namespace) -> int:
    """Print one line per check; exit 1 when something a run needs is missing or the run's
    preflight would stop it (the model does not answer, akm cannot index)."""
    rows = table()
    cfg = load_run_config(Path(args.config), rows) if args.config else None
    # The command's own flags (an agent's binary, its providers) are the agents' options.
    flags = {k: v for k, v in vars(args).items() if k not in ("func", "command", "config", "model", "agent")}
    options: dict[str, Any] = {
        **flags,
        "rootdir": str(near.parent if cfg and (near := corpus_near(cfg.path)) else Path.cwd()),
        "akm": args.akm or (cfg.resolve_path("akm") if cfg and cfg.get("akm") else None),
        **config_options(cfg, rows),
    }
    agents = [a for a in builtin_agents() if args.agent in (None, a.name)]
    if not agents:
        names = ", ".join(a.name for a in builtin_agents())
        raise ConfigError(f"--agent {args.agent}: no such built-in agent; built-in agents: {names}", usage=True)
    print("## pytest-akmbench doctor")
    failed = _tools(options, agents)
    status, detail = _akm_check(options, cfg)
    failed |= status == "FAIL"
    _line(status, "akm", detail)
    options["doctor_agent"] = args.agent  # an agent's model fails doctor only when asked for (or the only one)
    found = [(agent.name, line) for agent in agents if (line := agent.doctor_model(args.model, options)) is not None]
    for name, (status, detail) in found:
        failed |= status == "FAIL"
        _line(status, "model" if len(found) == 1 else f"{name} model", detail)
    print("One or more checks FAILED." if failed else "All needed checks passed.")
    sys.stdout.flush()
    return 1 if failed else 0
