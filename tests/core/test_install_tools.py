"""`python -m pytest_akmbench install-tools`: bad input is one line naming the option and the fix,
before anything is installed (issue 29, item 3). The install itself runs for real in
tests/plugin/test_ci_workflow.py, as the shipped workflow's step."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_akmbench.agents.registry import builtin_agents

ROOT = Path(__file__).resolve().parents[2]


def install(cwd: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("AKM_BUNDLES", None)
    if path is not None:
        env["PATH"] = path
    return subprocess.run(
        [sys.executable, "-m", "pytest_akmbench", "install-tools", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


@pytest.mark.parametrize(
    ("layout", "message"),
    [
        ("missing", "--akm-bundles {p}: no such file or directory"),
        ("empty", "--akm-bundles {p}: no akm-<version>.js in this directory"),
        ("other-file", "--akm-bundles {p}: not an akm bundle (akm-<version>.js)"),
    ],
)
def test_bundles_that_are_not_there_are_one_line(tmp_path: Path, layout: str, message: str) -> None:
    path = tmp_path / "bundles"
    if layout == "empty":
        path.mkdir()
        (path / "akm.js").write_text("")
    elif layout == "other-file":
        path = tmp_path / "akm.js"
        path.write_text("")
    proc = install(tmp_path, "--akm-bundles", str(path))
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == ["akmbench: " + message.format(p=path)]
    assert not (tmp_path / ".tools").exists()  # refused before anything was installed


def test_without_npm_it_says_what_to_install(tmp_path: Path) -> None:
    proc = install(tmp_path, path=str(Path(sys.executable).parent))
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    # The first built-in agent's pin (install-tools installs every agent's, in the registry's order).
    first = next(tool for agent in builtin_agents() for tool in agent.install())
    assert (
        line == f"akmbench: npm not found: install Node.js (it brings npm) to install {first.package}@{first.version}"
    )


def test_the_bundles_directory_may_come_from_the_environment(tmp_path: Path) -> None:
    """AKM_BUNDLES, as .ci/akm and the shipped workflow set it, stands for --akm-bundles."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AKM_BUNDLES": str(tmp_path / "nowhere")}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_akmbench", "install-tools"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 2 and f"--akm-bundles {tmp_path / 'nowhere'}: no such file" in proc.stderr


def test_an_unknown_agent_is_one_line(tmp_path: Path) -> None:
    proc = install(tmp_path, "--agent", "cursor")
    assert proc.returncode == 2
    names = ", ".join(sorted(agent.name for agent in builtin_agents()))
    assert proc.stderr.splitlines() == [f"akmbench: --agent cursor: not a built-in agent; choose from {names}"]
    assert not (tmp_path / ".tools").exists()


@pytest.mark.parametrize("name", [agent.name for agent in builtin_agents() if agent.install()])
def test_one_agent_installs_that_agents_pins_only(tmp_path: Path, name: str) -> None:
    """Without npm the first pin it would install is named: the chosen agent's, not opencode's."""
    proc = install(tmp_path, "--agent", name, path=str(Path(sys.executable).parent))
    (agent,) = [a for a in builtin_agents() if a.name == name]
    first = agent.install()[0]
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"akmbench: npm not found: install Node.js (it brings npm) to install {first.package}@{first.version}"
    ]
