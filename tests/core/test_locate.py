"""Where each agent's binary is found (agents/locate.py) and the doctor lines built from it
(agents/doctor_lines.py): the search order and the error wording, pinned for the three agents."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_akmbench.agents import doctor_lines
from pytest_akmbench.agents.claude_code import binaries as claude_binaries
from pytest_akmbench.agents.claude_code import doctor as claude_doctor
from pytest_akmbench.agents.codex import binaries as codex_binaries
from pytest_akmbench.agents.codex import doctor as codex_doctor
from pytest_akmbench.agents.opencode import binaries as opencode_binaries
from pytest_akmbench.errors import BenchError, ConfigError

# (executable, option, variable, locate, installed path under .tools/, install hint)
AGENTS = [
    ("opencode", "opencode", "AKMBENCH_OPENCODE", opencode_binaries.locate_opencode, opencode_binaries.INSTALLED,
     opencode_binaries.INSTALL_HINT),
    ("claude", "claude", "AKMBENCH_CLAUDE", claude_binaries.locate_claude, claude_binaries.INSTALLED,
     claude_binaries.INSTALL_HINT),
    ("codex", "codex", "AKMBENCH_CODEX", codex_binaries.locate_codex, codex_binaries.INSTALLED,
     codex_binaries.INSTALL_HINT),
]  # fmt: skip


def exe(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def empty_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """PATH holding one empty directory (the test puts executables there)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    return bin_dir


@pytest.mark.parametrize(("name", "option", "variable", "locate", "installed", "hint"), AGENTS)
def test_search_order(name, option, variable, locate, installed, hint, tmp_path, empty_path) -> None:
    root = tmp_path / "project"
    on_path = exe(empty_path / name)
    assert locate({"rootdir": str(root)}, env={}) == on_path.resolve()
    local = exe(root / ".tools" / installed)
    assert locate({"rootdir": str(root)}, env={}) == local.resolve()
    from_env = exe(tmp_path / "env" / name)
    assert locate({"rootdir": str(root)}, env={variable: str(from_env)}) == from_env.resolve()
    given = exe(tmp_path / "given" / name)
    assert locate({"rootdir": str(root), option: str(given)}, env={variable: str(from_env)}) == given.resolve()


@pytest.mark.parametrize(("name", "option", "variable", "locate", "installed", "hint"), AGENTS)
def test_error_wording(name, option, variable, locate, installed, hint, tmp_path, empty_path) -> None:
    root = tmp_path / "project"
    exe(empty_path / name)  # a named binary that is missing is an error, never a fall-through to PATH
    missing = tmp_path / "nope"
    with pytest.raises(ConfigError) as err:
        locate({"rootdir": str(root), option: str(missing)}, env={})
    assert str(err.value) == f"{missing}: {name} binary not found or not executable (--bench-{option}); {hint}"
    assert err.value.usage
    with pytest.raises(ConfigError) as err:
        locate({"rootdir": str(root)}, env={variable: str(missing)})
    assert str(err.value) == f"{missing}: {name} binary not found or not executable ({variable}); {hint}"
    (empty_path / name).unlink()
    with pytest.raises(ConfigError) as err:
        locate({"rootdir": str(root)}, env={})
    assert str(err.value) == f"{name} not found (looked in {root / '.tools' / installed} and on PATH); {hint}"
    assert err.value.usage


def test_the_optional_agents_lines_only_where_installed_or_named(tmp_path, empty_path, monkeypatch) -> None:
    """Each optional agent's line shows when it is found or named by its option or its variable
    (``doctor --claude PATH`` once showed no claude line); neither fails a machine without it."""
    monkeypatch.delenv("AKMBENCH_CLAUDE", raising=False)
    monkeypatch.delenv("AKMBENCH_CODEX", raising=False)
    options = {"rootdir": str(tmp_path)}
    assert claude_doctor.tools(options) == [] and codex_doctor.tools(options) == []
    assert claude_doctor.model_check(None, options) is None and codex_doctor.model_check(None, options) is None
    missing = str(tmp_path / "nope")
    assert [name for name, _ in codex_doctor.tools({**options, "codex": missing})] == ["codex"]
    assert [name for name, _ in claude_doctor.tools({**options, "claude": missing})] == ["claude"]
    monkeypatch.setenv("AKMBENCH_CLAUDE", missing)
    monkeypatch.setenv("AKMBENCH_CODEX", missing)
    for tools, name in ((claude_doctor.tools, "claude"), (codex_doctor.tools, "codex")):
        [(line_name, detail)] = tools(options)
        assert line_name == name
        with pytest.raises(BenchError, match=f"{name} binary not found or not executable \\(AKMBENCH_"):
            detail()


def test_binary_line() -> None:
    name, detail = doctor_lines.binary_line("x", lambda options: Path("/bin/x"), lambda path: f"1.0 of {path}", {})
    assert (name, detail()) == ("x", "1.0 of /bin/x at /bin/x")


@pytest.mark.parametrize(
    ("needed", "asked", "want"),
    [
        (True, None, ("FAIL", "down")),
        (False, None, ("WARN", "down (only a a1 run needs it)")),
        (False, "a1", ("FAIL", "down")),
        (False, "a2", ("WARN", "down (only a a1 run needs it)")),
    ],
)
def test_model_line_fails_only_where_needed(needed, asked, want, monkeypatch) -> None:
    def fake(model: str | None, options: object, check: Callable[..., str], *, agent: str, env: object) -> tuple:
        assert agent == "a1"
        return "FAIL", "down"

    monkeypatch.setattr(doctor_lines, "doctor_model", fake)
    options = {"doctor_agent": asked}
    assert doctor_lines.model_line(None, options, lambda c, e: "", agent="a1", needed=needed) == want


def test_install_hints() -> None:
    """The hint each agent's binary errors end with, word for word."""
    head = "install it into the project with `python -m pytest_akmbench install-tools` ("
    hints = [opencode_binaries.INSTALL_HINT, claude_binaries.INSTALL_HINT, codex_binaries.INSTALL_HINT]
    assert hints == [
        head
        + "opencode-linux-x64@1.18.33 from npm into .tools/); or set AKMBENCH_OPENCODE / pass --bench-opencode PATH",
        head + "@anthropic-ai/claude-code-linux-x64@2.1.332 from npm into .tools/); or pass --bench-claude PATH "
        "(or set AKMBENCH_CLAUDE)",
        head + "@openai/codex@0.171.0 from npm into .tools/); or set AKMBENCH_CODEX to the codex binary",
    ]
