"""What a project needs beside the package: ``install-tools`` puts each built-in agent's pinned
binaries (``Agent.install``), bun and akm into its ``.tools/``; ``schemas`` gives it the JSON
Schemas its files can name in ``$schema``.

Where a bench looks first (README, "akm"): ``.tools/node_modules/<package>/...`` for an agent's
binary and ``.tools/akm/<version>/akm``, the newest supported version. The agents' binaries and
bun come from npm as their platform packages, pinned (the package's tarball carries the binary;
nothing is fetched at run time). akm is not on the npm registry: it comes from akm's bundles, ``akm-<version>.js`` (akm
built for bun), each made one self-contained directory ``.tools/akm/<version>/`` holding bun,
the bundle and an ``akm`` script, so a sandbox that exposes the akm executable's directory
exposes its runtime too (docs/akm.md). The CI scripts (.ci/setup, .ci/akm) install through here.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from ..agents.base import Agent, Tool
from ..agents.registry import builtin_agents
from ..cell import akm
from ..errors import BenchError, ConfigError
from ..system.procs import is_executable

BUN_VERSION = "1.4.5"  # the bun akm's bundles were built and tested with
BUN_PACKAGE = "@oven/bun-linux-x64"
_BUNDLE = re.compile(r"akm-(\d+\.\d+\.\d+)\.js")
AKM_SCRIPT = '#!/bin/sh\nhere=$(dirname "$(readlink -f "$0")")\nexec "$here/bun" "$here/akm.js" "$@"\n'


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "install-tools",
        help="install each built-in agent's pinned binaries (and, with akm bundles, bun and akm) where a bench "
        "finds them: .tools/",
    )
    p.add_argument("--dir", default=".tools", help="where to install (default: .tools, the bench's own place)")
    p.add_argument(
        "--agent",
        action="append",
        metavar="NAME",
        help="install only this built-in agent's binaries (repeatable; default: every built-in agent's, "
        "about 800 MB for the three)",
    )
    p.add_argument(
        "--akm-bundles",
        action="append",
        metavar="PATH",
        help="akm's bundles: a directory of akm-<version>.js files or one such file (repeatable; "
        "default: $AKM_BUNDLES when set); each becomes DIR/akm/<version>/akm, run by bun",
    )
    p.set_defaults(func=install_tools)
    sch = sub.add_parser("schemas", help="where the package's JSON Schemas are, or a copy of them for a project")
    sch.add_argument("--out", metavar="DIR", help="copy the schemas into DIR (a config there names one in $schema)")
    sch.set_defaults(func=schemas)


def schemas(args: argparse.Namespace) -> int:
    """Print the path of each schema, copied into ``--out`` first when given. A schema's ``$id``
    is its file name, relative, so it resolves wherever the file is read from: the installed
    package, the repository or the copy (README, "Run configs")."""
    source = resources.files("pytest_akmbench") / "schemas"
    names = sorted(entry.name for entry in source.iterdir() if entry.name.endswith(".schema.json"))
    out = Path(args.out) if args.out else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    for name in names:
        if out is None:
            with resources.as_file(source / name) as path:
                print(path)
            continue
        (out / name).write_text((source / name).read_text(encoding="utf-8"), encoding="utf-8")
        print(out / name)
    return 0


def install_tools(args: argparse.Namespace) -> int:
    bundles = args.akm_bundles or ([os.environ["AKM_BUNDLES"]] if os.environ.get("AKM_BUNDLES") else [])
    found = [js for raw in bundles for js in _bundles(Path(raw))]  # every path checked before installing
    agents = _chosen(args.agent)
    _check_platform()
    tools = Path(args.dir).absolute()  # each tool is probed from a throwaway HOME, not from here
    tools.mkdir(parents=True, exist_ok=True)
    for tool in [tool for agent in agents for tool in agent.install()]:
        print(f"{tool.name} {tool.version}: {install_pinned(tools, tool)}")
    if not found:
        print(
            "akm: no bundles given (--akm-bundles DIR or $AKM_BUNDLES); the akm arm needs it (README, 'Installing the tools')"
        )
        return 0
    bun = install_bun(tools)
    print(f"bun {BUN_VERSION}: {bun}")
    for js in found:
        info = install_akm(tools, js, bun)
        print(f"akm {info.version}: {info.path}")
    return 0


def _chosen(names: list[str] | None) -> list[Agent]:
    """The built-in agents ``--agent`` names (every one without it); an unknown name is one line."""
    agents = builtin_agents()
    known = {agent.name: agent for agent in agents}
    unknown = [name for name in names or () if name not in known]
    if unknown:
        raise ConfigError(
            f"--agent {unknown[0]}: not a built-in agent; choose from {', '.join(sorted(known))}", usage=True
        )
    return [known[name] for name in dict.fromkeys(names)] if names else agents


def bundle_version(path: Path) -> str | None:
    """The version an akm bundle's name says (``akm-0.9.0.js``), or None for another file."""
    match = _BUNDLE.fullmatch(path.name)
    return match.group(1) if match else None


def _bundles(path: Path) -> list[Path]:
    """The akm bundles a path names, newest version last; a one-line error when it names none."""
    if path.is_file():
        if bundle_version(path) is None:
            raise ConfigError(f"--akm-bundles {path}: not an akm bundle (akm-<version>.js)", usage=True)
        return [path]
    if not path.is_dir():
        raise ConfigError(f"--akm-bundles {path}: no such file or directory", usage=True)
    found = sorted(
        (p for p in path.iterdir() if bundle_version(p) and p.is_file()),
        key=lambda p: tuple(int(x) for x in str(bundle_version(p)).split(".")),
    )
    if not found:
        raise ConfigError(f"--akm-bundles {path}: no akm-<version>.js in this directory", usage=True)
    return found


def _check_platform() -> None:
    system, machine = platform.system(), platform.machine().lower()
    if system != "Linux" or machine not in ("x86_64", "amd64"):
        raise ConfigError(
            f"install-tools installs the linux-x64 builds of the agents and bun, and this is {system} {machine}: "
            "install the agent yourself and pass its binary's --bench-* option (and --bench-akm PATH for akm)",
            usage=True,
        )


def npm_install(tools: Path, spec: str) -> None:
    """``npm install SPEC`` in ``tools`` (its own package.json, so nothing lands in a parent's)."""
    npm = shutil.which("npm")
    if npm is None:
        raise ConfigError(f"npm not found: install Node.js (it brings npm) to install {spec}", usage=True)
    if not (tools / "package.json").is_file():
        (tools / "package.json").write_text('{"name": "bench-tools", "private": true}\n', encoding="utf-8")
    proc = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--loglevel=error", spec],
        cwd=tools,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    if proc.returncode != 0:
        # npm's last line names its log file; the reason is among the first.
        lines = [
            line for line in (proc.stderr + proc.stdout).splitlines() if line.strip() and "complete log" not in line
        ]
        reason = "; ".join(lines[:2]) if lines else "no output"
        raise BenchError(f"npm install {spec} failed (exit {proc.returncode}): {reason}")


def install_pinned(tools: Path, tool: Tool) -> Path:
    """An agent's pinned binary in ``tools``: npm installs it unless it is there and reports its version."""
    binary = tools / tool.binary
    if not _runs_as(binary, tool.version, tool.probe):
        npm_install(tools, f"{tool.package}@{tool.version}")
        if not _runs_as(binary, tool.version, tool.probe):
            raise BenchError(f"{binary}: installed, but it does not report version {tool.version}")
    return binary


def install_bun(tools: Path) -> Path:
    binary = tools / "node_modules" / BUN_PACKAGE / "bin" / "bun"
    if not _runs_as(binary, BUN_VERSION, _bun_version):
        npm_install(tools, f"{BUN_PACKAGE}@{BUN_VERSION}")
        if not _runs_as(binary, BUN_VERSION, _bun_version):
            raise BenchError(f"{binary}: installed, but it does not report version {BUN_VERSION}")
    return binary


def install_akm(tools: Path, bundle: Path, bun: Path) -> akm.AkmInfo:
    """``tools/akm/<version>/`` with the bundle, bun and the ``akm`` script; akm's own probe
    (its version, keyword search) says it runs."""
    version = str(bundle_version(bundle))
    home = tools / "akm" / version
    home.mkdir(parents=True, exist_ok=True)
    _same_file(bundle, home / "akm.js", link=False)
    _same_file(bun, home / "bun", link=True)
    script = home / "akm"
    if not script.is_file() or script.read_text(encoding="utf-8") != AKM_SCRIPT:
        script.write_text(AKM_SCRIPT, encoding="utf-8")
    script.chmod(0o755)
    info = akm.detect(script)
    if info.version != version:
        raise BenchError(f"{bundle}: its name says akm {version}, but it reports {info.version}")
    return info


def _same_file(src: Path, dest: Path, *, link: bool) -> None:
    """``dest`` holds ``src``'s bytes: a hard link where it can be (bun is 100 MB), else a copy."""
    if dest.is_file() and (
        os.path.samefile(src, dest)
        or (dest.stat().st_size == src.stat().st_size and dest.read_bytes() == src.read_bytes())
    ):
        return
    dest.unlink(missing_ok=True)
    if link:
        try:
            os.link(src, dest)
            return
        except OSError:
            pass
    shutil.copyfile(src, dest)
    dest.chmod(0o755)


def _runs_as(binary: Path, version: str, probe: Callable[[Path], str]) -> bool:
    if not is_executable(binary):
        return False
    try:
        return probe(binary) == version
    except BenchError:
        return False


def _bun_version(binary: Path) -> str:
    with tempfile.TemporaryDirectory(prefix="akmbench-bun-") as home:
        try:
            proc = subprocess.run(
                [str(binary), "--version"],
                env=akm.private_env(Path(home)),
                capture_output=True,
                text=True,
                timeout=60,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired) as err:
            raise BenchError(f"{binary}: cannot run bun --version: {err}") from None
    return proc.stdout.strip()
