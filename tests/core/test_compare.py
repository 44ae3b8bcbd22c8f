"""Tests for pytest_akmbench.report.compare.changes: refusals, noise verdicts, CLI exit codes."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_akmbench.cli.compare import main
from pytest_akmbench.report import envelope as report
from pytest_akmbench.report.compare.changes import compare
from pytest_akmbench.report.compare.markdown import render_markdown
from tests.core.test_metrics import make_task, sample
from tests.core.test_report import TS, inp


def envelope(akm_pass: list[int], noakm_pass: list[int] | None = None, seeds: int = 3) -> dict[str, Any]:
    """A report where task i passes akm_pass[i] of ``seeds`` runs (and noakm likewise)."""
    tasks = [make_task(f"d/t{i:02d}") for i in range(len(akm_pass))]
    samples = []
    for i, t in enumerate(tasks):
        for s in range(1, seeds + 1):
            samples.append(sample(t.id, "akm", s, "pass" if s <= akm_pass[i] else "fail"))
            if noakm_pass is not None:
                samples.append(sample(t.id, "noakm", s, "pass" if s <= noakm_pass[i] else "fail"))
    arms = ("noakm", "akm") if noakm_pass is not None else ("akm",)
    return report.build(inp(tasks, samples, arms=arms, seeds=seeds), timestamp=TS)


class TestRefusals:
    def test_schema_track_model(self) -> None:
        """Schema, track and model mismatches refuse, in that order; models can be allowed."""
        base = envelope([3, 3])
        assert compare(dict(base, schemaVersion=2), base)["reason"] == "schema_mismatch"
        assert compare(base, dict(base, track="evolve"))["reason"] == "track_mismatch"
        other = copy.deepcopy(base)
        other["agent"]["model"] = "x/other"
        refused = compare(base, other)
        assert refused["ok"] is False and refused["reason"] == "model_mismatch" and refused["currentModel"] == "x/other"
        allowed = compare(base, other, allow_model_mismatch=True)
        assert allowed["ok"] is True and any("models differ" in w for w in allowed["warnings"])

    def test_corpus_and_fixture_hashes(self) -> None:
        """A different task corpus or fixture hash refuses unless allowed."""
        base, head = envelope([3, 3]), envelope([3, 3, 3])
        refused = compare(base, head)
        assert refused["reason"] == "corpus_mismatch" and refused["onlyInCurrent"] == ["d/t02"]
        assert compare(base, head, allow_corpus_mismatch=True)["ok"] is True
        head = copy.deepcopy(base)
        head["corpus"]["fixtureContentHash"] = "f" * 64
        assert compare(base, head)["reason"] == "hash_mismatch"
        assert compare(base, head, allow_fixture_mismatch=True)["ok"] is True

    def test_selected_ids_without_hashes(self) -> None:
        """Without hashes on both sides, differing selected ids refuse."""
        base, head = envelope([3, 3]), envelope([3, 3])
        for env in (base, head):
            del env["corpus"]["taskCorpusHash"]
        head["corpus"]["selectedTaskIds"] = ["d/t00"]
        assert compare(base, head)["reason"] == "corpus_mismatch"
        assert sum("no corpus.taskCorpusHash" in w for w in compare(base, base)["warnings"]) == 2


class TestVerdicts:
    def test_regression_beyond_noise(self) -> None:
        """8 of 10 tasks drop from 3/3 to 0/3. Each such task splits its 3 passes of 6 runs as 0 vs 3
        with probability 1/20 and 3 vs 0 with 1/20 under the null, so p = 2 · (1/20)^8 (the other
        splits give a smaller |sum|); per task, Fisher's p = 2/20, Holm over 10 tasks: not beyond noise."""
        base, head = envelope([3] * 10), envelope([0] * 8 + [3] * 2)
        result = compare(base, head)
        akm = result["arms"]["akm"]
        assert akm["pass_rate_delta"] == pytest.approx(-0.8) and akm["pass_rate_sign"] == "regress"
        assert akm["paired"]["p_value"] == pytest.approx(2 / 20**8) and akm["beyond_noise"] is True
        assert akm["perTask"][0]["p_value"] == pytest.approx(0.1) and akm["perTask"][0]["p_value_holm"] == 1.0
        assert [t["beyond_noise"] for t in akm["perTask"]] == [False] * 10
        assert result["aggregate"]["passRateSign"] == "regress"
        assert "akm regressed beyond noise" in render_markdown(result)

    def test_per_task_beyond_noise(self) -> None:
        """With 10 seeds, 10/10 → 0/10 on one task: Fisher p = 2/C(20,10); the corpus is that one task,
        so the aggregate change is beyond noise too (the same tasks ran on both sides)."""
        result = compare(envelope([10], seeds=10), envelope([0], seeds=10))
        task = result["arms"]["akm"]["perTask"][0]
        assert task["p_value"] == pytest.approx(2 / 184756)
        assert task["beyond_noise"] is True and task["sign"] == "regress"
        assert result["arms"]["akm"]["beyond_noise"] is True

    def test_within_noise(self) -> None:
        """A one-seed wobble on two tasks is within noise."""
        result = compare(envelope([3, 2, 3]), envelope([2, 3, 3]))
        assert result["arms"]["akm"]["beyond_noise"] is False
        assert "akm within noise" in render_markdown(result)

    def test_every_arm_both_ran(self) -> None:
        """noakm and akm both compared; an arm in one report only is a warning."""
        base, head = envelope([3, 3], [1, 1]), envelope([3, 3], [2, 2])
        result = compare(base, head)
        assert list(result["arms"]) == ["noakm", "akm"]
        assert result["lift"]["base"] == pytest.approx(2 / 3) and result["lift"]["change"] == pytest.approx(-1 / 3)
        only_akm = compare(base, envelope([3, 3]))
        assert list(only_akm["arms"]) == ["akm"] and any(
            "noakm ran only in the base" in w for w in only_akm["warnings"]
        )

    def test_reference_envelope_zeroed_arm(self) -> None:
        """A reference-style zeroed arm (count 0) is treated as not run."""
        base = envelope([3, 3])
        ref = copy.deepcopy(base)
        ref["aggregate"]["noakm"] = {"pass_rate": 0, "tokens_per_pass": None, "tokens_per_run": None, "wallclock_ms": 0}
        for t in ref["tasks"]:
            t["noakm"] = {"pass_rate": 0, "count": 0}
        assert list(compare(ref, base)["arms"]) == ["akm"]


class TestCli:
    def write(self, tmp_path: Path, name: str, env: dict[str, Any]) -> str:
        path = tmp_path / name
        path.write_text(json.dumps(env))
        return str(path)

    def test_exit_codes(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """0 compared, 1 refused (output still printed), 2 unreadable or bad usage."""
        a = self.write(tmp_path, "a.json", envelope([3, 3]))
        b = self.write(tmp_path, "b.json", envelope([3, 3, 3]))
        assert main([a, a]) == 0
        assert capsys.readouterr().out.startswith("# akm-bench compare — `local/m`")
        assert main([a, b]) == 1
        captured = capsys.readouterr()
        assert "refused (corpus_mismatch)" in captured.out and captured.err.startswith(
            "compare: refused (corpus_mismatch)"
        )
        assert main([a, b, "--allow-corpus-mismatch", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["ok"] is True
        assert main([a, str(tmp_path / "missing.json")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "missing.json" in err
        (tmp_path / "bad.json").write_text("{not json")
        assert main([a, str(tmp_path / "bad.json")]) == 2
        assert "bad.json is not valid JSON" in capsys.readouterr().err
        assert main([a]) == 2
        assert main([a, a, "--bogus"]) == 2


def test_compare_says_when_the_akm_arm_ran_another_akm() -> None:
    """The akm each report's samples ran (its provenance) differs: compared, with a warning."""
    base = envelope([3, 3], [1, 1])
    base["provenance"].update(akm_version="0.7.0", akm_sha256="a" * 64)
    same = compare(base, copy.deepcopy(base))
    assert same["ok"] is True and not any("akm arm ran" in w for w in same["warnings"])
    head = copy.deepcopy(base)
    head["provenance"].update(akm_version="0.9.0", akm_sha256="b" * 64)
    assert (
        "the akm arm ran akm 0.7.0 in base, 0.9.0 in current: its change includes akm's own"
        in compare(base, head)["warnings"]
    )
    head["provenance"].update(akm_version="0.7.0")
    (line,) = [w for w in compare(base, head)["warnings"] if "akm arm ran" in w]
    assert line.startswith(
        "the akm arm ran akm 0.7.0 built twice (sha256 aaaaaaaaaaaa in base, bbbbbbbbbbbb in current)"
    )


def spend_envelope(tokens: int, wallclock_ms: int, n_tasks: int = 2) -> dict[str, Any]:
    """A report of the akm arm whose every run passes, spending ``tokens`` in ``wallclock_ms``."""
    tasks = [make_task(f"d/t{i:02d}") for i in range(n_tasks)]
    samples = [
        sample(t.id, "akm", s, "pass", tokens=tokens, wallclock_ms=wallclock_ms) for t in tasks for s in range(1, 4)
    ]
    return report.build(inp(tasks, samples, arms=("akm",), seeds=3), timestamp=TS)


def test_tokens_and_time_per_pass_change_with_their_direction() -> None:
    """Fewer tokens per pass is an improvement, more time a regression; the table shows both."""
    result = compare(spend_envelope(1000, 1000), spend_envelope(800, 3000))
    akm = result["arms"]["akm"]
    assert (akm["tokens_per_pass_delta"], akm["tokens_per_pass_sign"]) == (-200.0, "improve")
    assert (akm["wallclock_ms_delta"], akm["wallclock_ms_sign"]) == (2000.0, "regress")
    assert akm["base"]["tasks"] == akm["current"]["tasks"] == 2
    assert "| no             | -200                | +2000            |" in render_markdown(result)


def test_a_pass_rate_change_within_half_a_point_is_flat() -> None:
    """One failed run in 300 moves the pass rate by a third of a point: flat, not a regression."""
    head = envelope([3] * 99 + [2])
    akm = compare(envelope([3] * 100), head)["arms"]["akm"]
    assert akm["pass_rate_delta"] == pytest.approx(-1 / 300) and akm["pass_rate_sign"] == "flat"


def test_a_task_only_in_the_current_report_has_its_row() -> None:
    """With the corpus mismatch allowed, a task the base did not run is listed as current-only."""
    result = compare(envelope([3, 3]), envelope([3, 3, 1]), allow_corpus_mismatch=True)
    rows = result["arms"]["akm"]["perTask"]
    assert [(r["id"], r["presence"]) for r in rows] == [("d/t00", "both"), ("d/t01", "both"), ("d/t02", "current-only")]
    assert rows[2]["current_pass_rate"] == pytest.approx(1 / 3) and rows[2]["base_pass_rate"] is None


def test_another_akm_version_is_said_without_its_sha() -> None:
    """A report that recorded akm's version but not its sha256 still says the versions differ."""
    base = envelope([3, 3])
    head = copy.deepcopy(base)
    base["provenance"].update(akm_version="0.7.0", akm_sha256=None)
    head["provenance"].update(akm_version="0.9.0", akm_sha256=None)
    assert (
        "the akm arm ran akm 0.7.0 in base, 0.9.0 in current: its change includes akm's own"
        in (compare(base, head)["warnings"])
    )


def test_a_refused_corpus_names_the_tasks_of_one_side() -> None:
    md = render_markdown(compare(envelope([3, 3]), envelope([3, 3, 3])))
    assert md.startswith("# akm-bench compare — refused (corpus_mismatch)") and "\n- only in current: d/t02\n" in md


def test_the_paired_change_counts_wins_losses_and_ties() -> None:
    paired = compare(envelope([3, 1, 2]), envelope([1, 1, 3]))["arms"]["akm"]["paired"]
    assert (paired["wins"], paired["losses"], paired["ties"]) == (1, 1, 1)


def test_no_task_in_both_reports_draws_no_permutation() -> None:
    base, head = envelope([3, 3]), envelope([3, 3, 3])
    head["tasks"] = [t for t in head["tasks"] if t["id"] == "d/t02"]
    paired = compare(base, head, allow_corpus_mismatch=True)["arms"]["akm"]["paired"]
    assert (paired["tasks"], paired["iterations"]) == (0, 0)
