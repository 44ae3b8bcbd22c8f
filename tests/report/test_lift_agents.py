"""akm's lift per agent, side by side (report/lift_agents.py, cli/lift.py): the figures, harness
errors and budget_exceeded as the single-agent report counts them, the JSON against its closed
schema, the markdown, and the command on report files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_akmbench.cli.main import main
from pytest_akmbench.report import envelope as report
from pytest_akmbench.report import lift, lift_agents, lift_markdown
from tests.core.test_metrics import make_task, sample
from tests.core.test_report import TS, inp
from tests.support.schemas import problems


def agent_report(
    name: str,
    akm: list[int],
    noakm: list[int],
    *,
    seeds: int = 3,
    errors: dict[tuple[int, str], int] | None = None,
    over_budget: bool = False,
    model: str = "local/m",
) -> dict[str, Any]:
    """Agent ``name``'s report: task i passes akm[i] (noakm[i]) of ``seeds`` runs; the last
    ``errors[(i, arm)]`` runs of a task are harness errors; with ``over_budget`` a failure ran out
    of tokens."""
    tasks = [make_task(f"d/t{i:02d}") for i in range(len(akm))]
    errors = errors or {}
    samples = []
    for i, t in enumerate(tasks):
        for arm, passes in (("akm", akm[i]), ("noakm", noakm[i])):
            for s in range(1, seeds + 1):
                outcome = "pass" if s <= passes else "budget_exceeded" if over_budget else "fail"
                if s > seeds - errors.get((i, arm), 0):
                    outcome = "harness_error"
                samples.append(sample(t.id, arm, s, outcome))
    env = report.build(inp(tasks, samples, seeds=seeds), timestamp=TS)
    env["agent"].update(harness=name, version=f"{name}-1", model=model)
    return env


def side(*envs: dict[str, Any]) -> dict[str, Any]:
    doc = lift_agents.side_by_side([(f"src-{lift_agents.agent_name(e)}", e) for e in envs], resamples=2000)
    assert problems(doc, "lift") == []
    return doc


def test_each_agents_lift_is_its_own_reports_verdict() -> None:
    """Two agents on the same 8 tasks: per agent, each arm's rate and interval are the report's
    aggregate, the lift its paired comparison (Holm over the two agents)."""
    a = agent_report("alpha", [3] * 8, [0] * 8)
    b = agent_report("beta", [2] * 8, [2] * 8)
    doc = side(a, b)
    alpha, beta = doc["agents"]
    assert alpha["arms"]["akm"]["pass_rate"] == a["aggregate"]["akm"]["pass_rate"] == 1.0
    assert alpha["arms"]["noakm"]["low"] == a["aggregate"]["noakm"]["pass_rate_ci"]["low"]
    own = a["aggregate"]["delta"]["paired"]
    assert alpha["lift"]["delta"] == own["delta"] == 1.0 and alpha["lift"]["p_value"] == own["p_value"]
    assert alpha["lift"]["holm_family"] == 2 and alpha["lift"]["significant"]
    assert beta["lift"]["delta"] == 0.0 and not beta["lift"]["significant"]
    (pair,) = doc["interaction"]["pairs"]
    assert pair["agents"] == ["alpha", "beta"] and pair["delta"] == pytest.approx(1.0) and pair["significant"]
    assert doc["interaction"]["differ"] is True
    line = lift_markdown.verdict(doc)
    assert line.startswith("lift akm − noakm: alpha +1.00") and "akm helps alpha more, beyond noise" in line


def test_equal_lifts_do_not_differ() -> None:
    doc = side(agent_report("alpha", [3] * 8, [1] * 8), agent_report("beta", [3] * 8, [1] * 8, seeds=3))
    (pair,) = doc["interaction"]["pairs"]
    assert pair["delta"] == 0 and pair["p_value"] == 1.0 and not pair["significant"]
    assert doc["interaction"]["differ"] is False
    assert "no significant difference in lift between alpha and beta" in lift_markdown.verdict(doc)


def test_only_shared_tasks_count_and_the_others_are_named() -> None:
    a = agent_report("alpha", [3] * 8, [0] * 8)
    b = agent_report("beta", [3] * 6, [0] * 6)
    doc = side(a, b)
    assert doc["tasks"]["shared"] == [f"d/t{i:02d}" for i in range(6)]
    assert doc["tasks"]["left_out"] == [{"id": f"d/t0{i}", "reason": "not run by beta"} for i in (6, 7)]
    assert doc["agents"][0]["arms"]["akm"]["tasks"] == 6 and doc["agents"][0]["lift"]["tasks"] == 6
    b["corpus"]["taskHashes"]["d/t00"] = "other"
    left = side(a, b)["tasks"]["left_out"]
    assert {"id": "d/t00", "reason": "its task.yaml differs between the reports"} in left


def test_harness_errors_and_budget_exceeded_as_the_report_counts_them() -> None:
    """Harness errors are out of the figures, counted, and make the lift unreliable past the
    report's limit, and so the comparison of lifts; budget_exceeded runs are failures, counted."""
    errors = {(i, "akm"): 1 for i in range(8)}  # 8 of 24 akm runs: over the 10% limit
    a = agent_report("alpha", [2] * 8, [0] * 8, errors=errors)
    b = agent_report("beta", [1] * 8, [1] * 8, over_budget=True)
    doc = side(a, b)
    alpha, beta = doc["agents"]
    assert alpha["arms"]["akm"]["harness_errors"] == 8 and alpha["arms"]["akm"]["valid_runs"] == 16
    assert alpha["arms"]["akm"]["pass_rate"] == 1.0  # 2 of the 2 valid runs of each task
    assert alpha["lift"]["reliable"] is False
    assert alpha["lift"]["unreliable_reason"] == lift.unreliable(alpha["lift"]["harness_errors"])
    assert beta["arms"]["noakm"]["budget_exceeded"] == 16 and beta["arms"]["noakm"]["pass_rate"] == pytest.approx(1 / 3)
    (pair,) = doc["interaction"]["pairs"]
    assert pair["reliable"] is False and pair["unreliable_reason"].startswith("alpha: 8 of 24 akm runs")
    assert doc["interaction"]["differ"] is None
    md = lift_markdown.render(doc)
    assert "unreliable (alpha: 8 of 24 akm runs are harness errors" in md
    row = next(line for line in md.splitlines() if line.startswith("| alpha"))
    assert "| 0 / 8 " in row and "24/24 / 16/24" in row  # harness errors, valid runs per arm
    assert "| 16 / 16 " in next(line for line in md.splitlines() if line.startswith("| beta"))


def test_an_agent_without_both_arms_and_few_tasks() -> None:
    a = agent_report("alpha", [3] * 4, [0] * 4)
    b = agent_report("beta", [3] * 4, [0] * 4)
    for t in b["tasks"]:
        t.pop("noakm")
    doc = side(a, b)
    assert doc["agents"][1]["lift"] is None and doc["agents"][1]["arms"]["noakm"] is None
    assert doc["interaction"]["pairs"] == [] and doc["interaction"]["differ"] is None
    assert "beta ran akm on the shared tasks: no lift, not compared" in doc["warnings"]
    assert "whether the lifts differ is not tested" in lift_markdown.verdict(doc)
    few = side(a, agent_report("beta", [3] * 4, [3] * 4))
    assert "that takes at least 6 paired tasks" in lift_markdown.verdict(few)


def test_three_agents_holm_over_the_pairs() -> None:
    envs = [agent_report(n, [3] * 10, [k] * 10) for n, k in (("a", 0), ("b", 3), ("c", 3))]
    doc = side(*envs)
    pairs = {tuple(p["agents"]): p for p in doc["interaction"]["pairs"]}
    assert list(pairs) == [("a", "b"), ("a", "c"), ("b", "c")]
    assert all(p["holm_family"] == 3 for p in pairs.values())
    assert pairs[("a", "b")]["significant"] and not pairs[("b", "c")]["significant"]
    assert pairs[("b", "c")]["confidence"] == pytest.approx(1 - 0.05 / 1)  # Holm stopped at its step
    assert pairs[("a", "b")]["confidence"] == pytest.approx(1 - 0.05 / 3)


def test_models_differ_warning() -> None:
    doc = side(agent_report("alpha", [3] * 6, [0] * 6), agent_report("beta", [3] * 6, [0] * 6, model="x/y"))
    assert any(w.startswith("the agents ran different models (alpha local/m, beta x/y)") for w in doc["warnings"])


class TestCommand:
    def write(self, tmp_path: Path, name: str, env: dict[str, Any]) -> str:
        (tmp_path / name).mkdir()
        (tmp_path / name / "report.json").write_text(json.dumps(env))
        return str(tmp_path / name)

    def test_reports_side_by_side(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        a = self.write(tmp_path, "a", agent_report("alpha", [3] * 8, [0] * 8))
        b = self.write(tmp_path, "b", agent_report("beta", [3] * 8, [3] * 8))
        out = tmp_path / "out"
        assert main(["lift", a, str(Path(b) / "report.json"), "--json", "--out", str(out)]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert problems(doc, "lift") == [] and doc["interaction"]["differ"] is True
        assert json.loads((out / "lift.json").read_text()) == doc
        assert (out / "lift.md").read_text().startswith("# akm-bench lift per agent — 2 agents, 8 shared tasks")
        assert main(["lift", a, b]) == 0
        assert "**Verdict:** lift akm − noakm: alpha +1.00" in capsys.readouterr().out

    def test_usage_errors_and_nothing_to_compare(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        a = self.write(tmp_path, "a", agent_report("alpha", [3] * 6, [0] * 6))
        again = self.write(tmp_path, "again", agent_report("alpha", [3] * 6, [1] * 6))
        assert main(["lift", a, again]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "agent alpha is in two sources" in err
        assert main(["lift", a, str(tmp_path / "missing")]) == 2
        assert "missing" in capsys.readouterr().err
        evolve = self.write(tmp_path, "evolve", {**agent_report("beta", [1], [1]), "track": "evolve"})
        assert main(["lift", a, evolve]) == 2
        assert "is not a utility report" in capsys.readouterr().err
        old = agent_report("beta", [1] * 6, [1] * 6)
        for t in old["tasks"]:
            t["akm"].pop("passes")
        assert main(["lift", a, self.write(tmp_path, "old", old)]) == 2
        assert "has no per-task run counts (an older report)" in capsys.readouterr().err
        assert main(["lift", a]) == 1
        assert "fewer than two agents" in capsys.readouterr().err
        assert main(["lift"]) == 2
