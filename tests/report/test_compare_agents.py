"""compare refuses two agents' reports unless told (--allow-agent-mismatch), and says so when told."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_akmbench.cli.compare import main
from pytest_akmbench.report.compare.changes import compare
from pytest_akmbench.report.compare.markdown import render_markdown
from tests.core.test_compare import envelope


def other_agent(env: dict[str, Any], name: str = "claude-code", version: str = "2.0.1") -> dict[str, Any]:
    out = copy.deepcopy(env)
    out["agent"].update(harness=name, version=version)
    return out


def test_agents_differ_refused_before_the_model() -> None:
    base = envelope([3, 3], [1, 1])
    head = other_agent(base)
    head["agent"]["model"] = "x/other"  # the agent's refusal comes first: it names the agents
    refused = compare(base, head)
    assert refused["ok"] is False and refused["reason"] == "agent_mismatch"
    assert refused["currentAgent"] == "claude-code 2.0.1" and refused["baseAgent"].startswith(base["agent"]["harness"])
    assert "--allow-agent-mismatch" in refused["message"] and "\n" not in refused["message"]
    md = render_markdown(refused)
    assert "refused (agent_mismatch)" in md and "- currentAgent: `claude-code 2.0.1`" in md


def test_allowed_compares_and_says_the_agents_differ() -> None:
    base = envelope([3, 3], [1, 1])
    result = compare(base, other_agent(base), allow_agent_mismatch=True)
    assert result["ok"] is True and result["currentAgent"] == "claude-code 2.0.1"
    assert any(w.startswith("agents differ") and "--allow-agent-mismatch" in w for w in result["warnings"])
    md = render_markdown(result)
    assert "agents differ: base=" in md.splitlines()[2] and "current=`claude-code 2.0.1`" in md


def test_same_agent_other_version_is_an_ordinary_comparison() -> None:
    base = envelope([3, 3], [1, 1])
    newer = copy.deepcopy(base)
    newer["agent"]["version"] = "9.9.9"
    result = compare(base, newer)
    assert result["ok"] is True and "baseAgent" not in result and not any("agents" in w for w in result["warnings"])
    assert compare(base, base) == compare(base, newer)  # the output has nothing of the versions


def test_cli_one_line_error_naming_both_agents_and_the_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = envelope([3, 3], [1, 1])
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(base))
    b.write_text(json.dumps(other_agent(base, "codex", "0.5.0")))
    assert main([str(a), str(b)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "refused (agent_mismatch)" in err
    assert f"base='{base['agent']['harness']} {base['agent']['version']}'" in err
    assert "current='codex 0.5.0'" in err and "--allow-agent-mismatch" in err
    assert main([str(a), str(b), "--allow-agent-mismatch", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] is True and out["currentAgent"] == "codex 0.5.0"
