"""The versioned arm prompts."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_akmbench.cell.prompts import PROMPT_VERSION, build_prompt
from pytest_akmbench.corpus.tasks import Task
from pytest_akmbench.errors import ConfigError

TASK = Task(
    id="shipyard/lint-command",
    title="Give CI the strict\n lint command",
    domain="shipyard",
    difficulty="easy",
    stash="shipyard",
    verifier="script",
    task_dir=Path("/x"),
    yaml_text="",
    akm_keywords="shipyard lint manifest",
)
WS = Path("/runs/r1/workspace")


def test_noakm_has_no_akm_at_all():
    text, version = build_prompt(TASK, "noakm", WS)
    assert "akm" not in text.lower() and "stash" not in text.lower()
    assert "Task: shipyard/lint-command" in text and "Give CI the strict lint command" in text
    assert f"Workspace: {WS}" in text and "README.md" in text
    assert version.startswith(f"{PROMPT_VERSION}/noakm/")


def test_akm_prompt_teaches_the_cli_without_commands_txt():
    text, version = build_prompt(TASK, "akm", WS)
    # Quoted: unquoted, akm would search the first word alone.
    assert 'akm search "shipyard lint manifest"' in text
    assert "akm show <ref>" in text and "akm feedback <ref> --positive" in text
    assert '--negative --reason "<why>"' in text  # akm 0.9 refuses negative feedback without a reason
    assert "commands.txt" not in text and "README.md" in text and str(WS) in text
    assert version.startswith(f"{PROMPT_VERSION}/akm/")


def test_akm_prompt_ref_example_follows_the_installed_akm():
    """The example ref is in the syntax the installed akm accepts: skill:name (0.7), skills/name (0.9)."""
    from dataclasses import replace

    from pytest_akmbench.cell.akm import AkmInfo

    info = AkmInfo(path=Path("/x/akm"), version="0.7.0", line="0.7", sha256="0", config="{}")
    assert "`skill:name`" in build_prompt(TASK, "akm", WS, info)[0]
    assert "`skills/name`" in build_prompt(TASK, "akm", WS, replace(info, version="0.9.0", line="0.9"))[0]
    assert "`skill:name`" in build_prompt(TASK, "akm", WS)[0]


def test_synthetic_asks_for_own_notes_first():
    text, _ = build_prompt(TASK, "synthetic", WS)
    assert "scratchpad" in text and "akm" not in text.lower() and str(WS) in text
    assert len({build_prompt(TASK, a, WS)[1] for a in ("noakm", "akm", "synthetic")}) == 3
    assert "{" not in text


def test_unknown_arm():
    with pytest.raises(ConfigError, match="no prompt template"):
        build_prompt(TASK, "other", WS)
