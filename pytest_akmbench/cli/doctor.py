"""``python -m pytest_akmbench doctor``: what is installed, where, and whether the model answers."""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import urllib.error
import urllib.request
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from ..agents.opencode.adapter import choose_model, locate_opencode, locate_rg, read_version
from ..agents.opencode.providers import ModelChoice, check_env_vars, resolve_env_refs
from ..cell import akm
from ..corpus.config import config_options, load_run_config
from ..errors import BenchError
from ..system import sandbox


def _pkg(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _line(status: str, name: str, detail: str) -> None:
    print(f"  [{status}] {name}: {detail}")


def _reachable(base_url: str, timeout_s: float = 5.0) -> str | None:
    """None when the provider answers at all (any HTTP status), else why not."""
    url = base_url.rstrip("/") + "/models"
    try:
        urllib.request.urlopen(url, timeout=timeout_s).close()
    except urllib.error.HTTPError:
        return None  # it answered; an auth or 404 status still proves the URL is live
    except (urllib.error.URLError, OSError, ValueError) as err:
        return str(getattr(err, "reason", err))
    return None


def _model_check(choice: ModelChoice) -> tuple[str, str]:
    """Whether the chosen model's provider answers, its {env:VAR} references resolved (the
    line names the URL as written, so no value of a variable is printed)."""
    if choice.scripted:
        return "PASS", f"{choice.model} (built-in scripted model, offline)"
    base = ((choice.provider_entry or {}).get("options") or {}).get("baseURL")
    if not base:
        return "WARN", f"{choice.model}: provider has no options.baseURL to check"
    try:
        url = resolve_env_refs(str(base), check_env_vars(choice, os.environ))
    except BenchError as err:
        return "FAIL", str(err)
    problem = _reachable(url)
    return ("FAIL" if problem else "PASS"), f"{choice.model} at {base}: " + (
        f"unreachable ({problem})" if problem else "answers"
    )


def doctor(args: argparse.Namespace) -> int:
    """Print one line per check; exit 1 when something a run needs is missing."""
    failed = False
    cfg = load_run_config(Path(args.config)) if args.config else None
    options: dict[str, Any] = {
        "rootdir": str(Path.cwd()),
        "opencode": args.opencode,
        "akm": args.akm or (cfg.resolve_path("akm") if cfg and cfg.get("akm") else None),
        "providers": args.providers,
        "opencode_config": getattr(args, "opencode_config", None),
        **config_options(cfg),
    }
    print("## pytest-akmbench doctor")
    _line("PASS", "python", f"{platform.python_version()} at {sys.executable}")
    for pkg in ("pytest-akmbench", "pytest", "pytest-xdist", "pluggy", "PyYAML", "tabulate"):
        found = _pkg(pkg)
        failed |= found is None
        _line("PASS" if found else "FAIL", pkg, found or "not installed; pip install -e .")
    try:
        binary = locate_opencode(options)
        _line("PASS", "opencode", f"{read_version(binary)} at {binary}")
    except BenchError as err:
        failed = True
        _line("FAIL", "opencode", str(err))
    try:
        _line("PASS", "rg", str(locate_rg()))
    except BenchError as err:
        failed = True
        _line("FAIL", "rg", str(err))
    try:
        info = akm.detect(akm.locate(options["akm"]))
        _line(
            "WARN" if info.warning else "PASS",
            "akm",
            f"{info.version} at {info.path} (keyword search pinned)" + (f"; {info.warning}" if info.warning else ""),
        )
    except BenchError as err:
        # Only the akm arm needs it; other arms and agents run without.
        _line("WARN", "akm", f"{err} (only the akm arm needs it)")
    status, detail = sandbox.doctor_line()  # a missing sandbox only warns: --bench-sandbox auto runs without
    _line(status, "sandbox", detail)
    _line(
        "PASS" if shutil.which("bash") else "FAIL",
        "bash",
        shutil.which("bash") or "not found; script verifiers need it",
    )
    failed |= shutil.which("bash") is None
    try:
        choice = choose_model(args.model, options)
    except BenchError as err:
        # A model someone asked for must work; with none chosen anywhere it is only a warning.
        asked = bool(
            args.model
            or os.environ.get("BENCH_OPENCODE_MODEL")
            or options["config_default_model"]
            or args.providers
            or options["opencode_config"]
            or os.environ.get("BENCH_OPENCODE_CONFIG")
        )
        failed |= asked
        _line("FAIL" if asked else "WARN", "model", str(err))
        print("One or more checks FAILED." if failed else "All needed checks passed.")
        return 1 if failed else 0
    status, detail = _model_check(choice)
    failed |= status == "FAIL"
    _line(status, "model", detail)
    print("One or more checks FAILED." if failed else "All needed checks passed.")
    sys.stdout.flush()
    return 1 if failed else 0
