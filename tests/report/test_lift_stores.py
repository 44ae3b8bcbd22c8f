"""The lift command on stores a bench wrote: each agent reported as the report command reports it,
set side by side (two stores, or one store holding both agents)."""

from __future__ import annotations

import json

import pytest

from pytest_akmbench.cli.main import main
from tests.support.agents import POLICY
from tests.support.schemas import problems

# The policy agent twice, under two names: "policy" and "other" read the same policy file.
BENCH_AGENT = POLICY.replace("return [PolicyAgent()]", "return [PolicyAgent(), OtherAgent()]") + (
    "\n\nclass OtherAgent(PolicyAgent):\n    name = 'other'\n"
)
BENCH_FILES = {"delay": "0", "policy": "akm-wins"}


def run(bench: pytest.Pytester, name: str, policy: str, store: str, *more: str) -> None:
    (bench.path / "policy").write_text(policy)
    args = [
        "corpus",
        "--bench-agent",
        name,
        "--bench-seeds",
        "2",
        "--bench-store",
        store,
        "--bench-report",
        f"out-{name}",
    ]
    outcomes = bench.runpytest(*args, *more).parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 12, outcomes


def lift(
    bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *stores: str
) -> tuple[int, dict]:
    monkeypatch.chdir(bench.path)
    capsys.readouterr()  # the bench runs' own output
    code = main(["lift", *stores, "--seeds", "2", "--json"])
    captured = capsys.readouterr()
    assert captured.out.startswith("{"), captured.err
    doc = json.loads(captured.out)
    assert problems(doc, "lift") == []
    return code, doc


def test_two_stores_and_one_store_of_two_agents(
    bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (bench.path / "over-budget").write_text("")  # the cells it does not solve run out of tokens
    run(bench, "policy", "akm-wins", "store-a")
    run(bench, "other", "all", "store-b")
    code, doc = lift(bench, monkeypatch, capsys, "store-a", "store-b")
    assert code == 0 and doc["warnings"] == []
    policy, other = doc["agents"]
    assert (policy["agent"], other["agent"]) == ("policy", "other") and policy["source"] == "store-a (agent policy)"
    own = json.loads((bench.path / "out-policy" / "report.json").read_text())
    assert policy["arms"]["noakm"]["pass_rate"] == own["aggregate"]["noakm"]["pass_rate"] == 0.0
    assert policy["arms"]["noakm"]["budget_exceeded"] == own["aggregate"]["noakm"]["budget_exceeded_count"] == 6
    assert policy["lift"]["delta"] == 1.0 and other["lift"]["delta"] == 0.0
    (pair,) = doc["interaction"]["pairs"]
    assert pair["delta"] == 1.0 and pair["tasks"] == 3 and not pair["significant"]  # 3 tasks can never reject
    assert doc["tasks"]["shared"] == sorted(t["id"] for t in own["tasks"])
    # The same cells of both agents in one store: each agent its own side.
    run(bench, "policy", "akm-wins", "both")
    run(bench, "other", "all", "both")
    code, one = lift(bench, monkeypatch, capsys, "both")
    assert code == 0 and [a["agent"] for a in one["agents"]] == ["other", "policy"]
    assert one["interaction"]["pairs"][0]["delta"] == -1.0
