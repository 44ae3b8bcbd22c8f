"""The attribute track's core, in process: masking a stash copy, the plan of what to mask from
a base report, and each asset's paired contribution (checked against hand computations)."""

from __future__ import annotations

import itertools
import json
import shutil
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from pytest_akmbench.agents import AgentRequest, AgentResult
from pytest_akmbench.cell import masks
from pytest_akmbench.cell.context import Cell, RunContext, cell_fingerprint
from pytest_akmbench.cell.runner import run_cell
from pytest_akmbench.corpus.tasks import load_corpus
from pytest_akmbench.errors import ConfigError
from pytest_akmbench.system.procs import ProcessTracker
from pytest_akmbench.tracks.attribute import core as attribute
from pytest_akmbench.tracks.attribute import report as attribute_report
from tests.support.corpus import write_stash, write_task

ROOT = Path(__file__).resolve().parents[2]


def names(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


class TestMask:
    def test_knowledge_entry_and_file_go_the_rest_stays(self, tmp_path: Path) -> None:
        stash = tmp_path / "logline"
        shutil.copytree(ROOT / "corpus" / "stashes" / "logline", stash)
        before = names(stash)
        assert masks.mask(stash, "knowledge:logline-pii") == 2  # the .stash.json entry and its file
        assert names(stash) == before - {"knowledge/logline-pii.md"}
        entries = json.loads((stash / "knowledge" / ".stash.json").read_text())["entries"]
        assert [e["name"] for e in entries if e["name"] == "logline-pii"] == []
        assert len(entries) == 6

    def test_a_skill_in_either_syntax(self, tmp_path: Path) -> None:
        for ref in ("skill:logline", "skills/logline", "stash//skills/logline"):
            stash = tmp_path / ref.replace("/", "_").replace(":", "_")
            shutil.copytree(ROOT / "corpus" / "stashes" / "logline", stash)
            assert masks.mask(stash, ref) > 0
            assert not (stash / "skills" / "logline").exists()
            assert (stash / "knowledge" / "logline-pii.md").is_file()

    def test_fixture_without_metadata_is_masked_too(self, tmp_path: Path) -> None:
        """The reference left stashes without .stash.json unchanged: a masked run was a plain rerun."""
        stash = write_stash(tmp_path, "st", {"knowledge/guide.md": "# guide\n"})
        assert masks.mask(stash, "knowledge:guide") == 1
        assert not (stash / "knowledge" / "guide.md").exists() and (stash / "skills" / "howto").is_dir()
        assert masks.mask(stash, "skill:howto") == 1 and not (stash / "skills" / "howto").exists()

    def test_absent_asset_removes_nothing(self, tmp_path: Path) -> None:
        stash = write_stash(tmp_path, "st")
        before = names(stash)
        assert masks.mask(stash, "skill:nope") == 0
        assert names(stash) == before

    def test_not_a_ref_is_refused(self) -> None:
        with pytest.raises(ValueError, match="not an asset ref"):
            masks.canonical("plainword")


def row(task: str, seed: int, outcome: str, loaded: list[str] | None) -> dict[str, Any]:
    return {"task_id": task, "arm": "akm", "seed": seed, "outcome": outcome, "assets_loaded": loaded}


def base_of(rows: list[dict[str, Any]], tmp_path: Path, **extra: Any) -> attribute.Base:
    path = tmp_path / "report.json"
    data = {"track": "utility", "complete": True, "agent": {"model": "m/x"}, "corpus": {"seedsPerArm": 2}}
    path.write_text(json.dumps({**data, "runs": rows, **extra}))
    return attribute.load_base(path)


class TestPlan:
    def test_ranking_tasks_and_top(self, tmp_path: Path) -> None:
        base = base_of(
            [
                row("d/a", 1, "pass", ["skill:x", "knowledge:y"]),
                row("d/a", 2, "fail", ["skills/x"]),  # the same asset in 0.9's syntax
                row("d/b", 1, "pass", ["knowledge:y"]),
                row("d/b", 2, "pass", ["knowledge:y", "skill:z"]),
                row("d/c", 1, "harness_error", ["skill:z", "skill:w"]),  # never counts
                row("d/gone", 1, "pass", ["skill:z"]),  # not in the corpus any more
                {"task_id": "d/a", "arm": "noakm", "seed": 1, "outcome": "pass", "assets_loaded": None},
            ],
            tmp_path,
        )
        targets, loaded = attribute.plan(base, {"d/a", "d/b", "d/c"}, top=5)
        # load_count desc (y 3, x 2, z 1), then load_pass_rate desc, then ref.
        assert [(t.ref, t.rank, t.tasks, t.load_count, t.load_count_passing) for t in targets] == [
            ("knowledge:y", 1, ("d/a", "d/b"), 3, 3),
            ("skill:x", 2, ("d/a",), 2, 1),
            ("skill:z", 3, ("d/b",), 1, 1),
        ]
        assert loaded == 3
        top1, _ = attribute.plan(base, {"d/a", "d/b", "d/c"}, top=1)
        assert [t.ref for t in top1] == ["knowledge:y"]
        assert base.seeds == 2 and base.task_ids == ("d/a", "d/b", "d/c", "d/gone") and base.model == "m/x"

    def test_ties_break_on_pass_rate_then_ref(self, tmp_path: Path) -> None:
        base = base_of(
            [
                row("d/a", 1, "fail", ["skill:a"]),
                row("d/a", 2, "pass", ["skill:c"]),
                row("d/b", 1, "pass", ["skill:b"]),
            ],
            tmp_path,
        )
        targets, _ = attribute.plan(base, {"d/a", "d/b"})
        assert [t.ref for t in targets] == ["skill:b", "skill:c", "skill:a"]

    @pytest.mark.parametrize(
        ("text", "words"),
        [
            (None, "base report not found"),
            ("{", "not JSON (line 1"),
            ("[]", "not a report of this plugin"),
            ('{"track": "evolve", "runs": []}', "a evolve report; the base of attribute is a utility report"),
            ('{"runs": [{"task_id": "a/b", "arm": "noakm", "seed": 1, "outcome": "pass"}]}', "no akm-arm run"),
        ],
    )
    def test_bad_base_is_one_line(self, tmp_path: Path, text: str | None, words: str) -> None:
        path = tmp_path / "report.json"
        if text is not None:
            path.write_text(text)
        with pytest.raises(ConfigError) as err:
            attribute.load_base(path)
        assert str(err.value).startswith(f"--bench-base {path}: ") and words in str(err.value)
        assert "\n" not in str(err.value)


def exact_sign_flip_p(deltas: list[Fraction]) -> float:
    """Two-sided p of the paired sign-flip test by enumerating every sign assignment."""
    observed = abs(sum(deltas))
    flips = list(itertools.product((1, -1), repeat=len(deltas)))
    return sum(abs(sum(s * d for s, d in zip(signs, deltas))) >= observed for signs in flips) / len(flips)


class TestContribution:
    def test_decisive_and_distractor(self, tmp_path: Path) -> None:
        tasks = [f"d/t{i}" for i in range(7)]
        base = base_of([row(t, s, "pass", ["skill:rule", "skill:lore"]) for t in tasks for s in (1, 2)], tmp_path)
        targets, loaded = attribute.plan(base, set(tasks))
        masked_rule = {t: [row(t, s, "fail", None) for s in (1, 2)] for t in tasks}
        # The distractor: one task loses one run of two, another gains nothing; others unchanged.
        masked_lore = {t: [row(t, 1, "pass", None), row(t, 2, "fail" if t == "d/t0" else "pass", None)] for t in tasks}
        seeds = attribute.reference_seeds(base, 2)
        assert seeds == (3, 4)  # after the base's: none of the runs that chose the assets
        env = attribute.build(
            base=base,
            targets=targets,
            assets_loaded=loaded,
            top=5,
            masked={"skill:rule": masked_rule, "skill:lore": masked_lore},
            reference={t: [row(t, s, "pass", None) for s in seeds] for t in tasks},
            seeds=seeds,
            agent={"harness": "opencode", "version": "1", "model": "m/x"},
            complete=True,
            warnings=[],
            timestamp="t",
        )
        rows = {r["asset_ref"]: r for r in env["attributions"]}
        rule, lore = rows["skill:rule"], rows["skill:lore"]
        assert rule["base_pass_rate"] == 1.0 and rule["masked_pass_rate"] == 0.0
        assert rule["marginal_contribution"] == pytest.approx(1.0)
        assert lore["marginal_contribution"] == pytest.approx(0.5 / 7)  # (1 - 0.5) on one task of seven
        assert lore["masked_pass_rate"] == pytest.approx(1 - 0.5 / 7)
        # The test's p-values against full enumeration, Holm over the two assets.
        p_rule = exact_sign_flip_p([Fraction(1)] * 7)
        p_lore = exact_sign_flip_p([Fraction(1, 2)] + [Fraction(0)] * 6)
        assert rule["comparison"]["p_value"] == pytest.approx(p_rule)
        assert lore["comparison"]["p_value"] == pytest.approx(p_lore)
        assert rule["comparison"]["p_value_holm"] == pytest.approx(min(1.0, 2 * min(p_rule, p_lore)))
        assert rule["comparison"]["low"] > 0 and rule["significant"] is True
        assert lore["comparison"]["low"] <= 0 <= lore["comparison"]["high"] and lore["significant"] is False
        assert env["runsPerformed"] == 28 and env["attribution"]["maskedRefs"] == [
            "skill:lore",
            "skill:rule",
        ]  # a tie: by ref
        assert env["verdict"].startswith("1 of 2 masked assets matter: skill:rule lifts the akm pass rate by +1.00 [")
        assert "skill:lore: no significant contribution (+0.07 [" in env["verdict"]
        table = attribute_report.table(env)
        assert "| 2. skill:rule" in table and "7: d/t0, d/t1, d/t2, … (4 more)" in table
        assert "| +1.00 [" in table

    def test_no_masked_run_yet(self, tmp_path: Path) -> None:
        base = base_of([row("d/a", 1, "pass", ["skill:x"])], tmp_path)
        targets, loaded = attribute.plan(base, {"d/a"})
        env = attribute.build(
            base=base,
            targets=targets,
            assets_loaded=loaded,
            top=5,
            masked={},
            reference={},
            seeds=(2,),
            agent={},
            complete=False,
            warnings=["w"],
            timestamp="t",
        )
        (only,) = env["attributions"]
        assert only["comparison"] is None and only["marginal_contribution"] is None
        assert env["verdict"].startswith("incomplete run — no masked asset has a valid run")
        assert "n/a (no paired task)" in attribute_report.markdown(env)


class TestFingerprint:
    def test_mask_is_in_the_fingerprint_and_the_name(self, tmp_path: Path) -> None:
        tasks, stashes = tmp_path / "tasks", tmp_path / "stashes"
        write_task(tasks, "alpha/t")
        write_stash(stashes)
        (task,) = load_corpus(tasks, stashes).tasks
        ctx = RunContext(
            run_id="r",
            tmp_root=tmp_path,
            stashes_root=stashes,
            agent=type("A", (), {"name": "a", "version": "1"})(),  # type: ignore[arg-type]
            model="m/x",
            budget_tokens=1,
            budget_wall_ms=1,
            budget_turns=None,
            verify_timeout_s=1,
        )
        plain = cell_fingerprint(Cell(task, "akm", 1), ctx)
        masked = cell_fingerprint(Cell(task, "akm", 1, mask="skill:howto"), ctx)
        assert "mask" not in plain and masked == {**plain, "mask": "skill:howto"}
        assert Cell(task, "akm", 2, mask="skill:howto").name == "akm-mask[skill:howto]-s2"
        assert Cell(task, "akm", 2).name == "akm-s2"


class StashLister:
    """An agent that records which files of the stash copy it was given."""

    name, version, uses_akm = "lister", "1", True

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def start(self, session: object) -> None: ...

    def stop(self) -> None: ...

    def run(self, request: AgentRequest) -> AgentResult:
        assert request.stash_dir is not None
        self.seen = names(request.stash_dir)
        return AgentResult(final_text="", exit_code=0)


class TestMaskedCell:
    def run(self, tmp_path: Path, mask: str) -> tuple[dict[str, Any], StashLister, Path]:
        tasks, stashes = tmp_path / "tasks", tmp_path / "stashes"
        write_task(tasks, "alpha/t")
        fixture = write_stash(stashes, "st", {"knowledge/guide.md": "# guide\n"})
        (task,) = load_corpus(tasks, stashes).tasks
        agent = StashLister()
        ctx = RunContext(
            run_id="r",
            tmp_root=tmp_path / "runs",
            stashes_root=stashes,
            agent=agent,  # type: ignore[arg-type]
            model=None,
            budget_tokens=1000,
            budget_wall_ms=20000,
            budget_turns=None,
            verify_timeout_s=30.0,
        )
        return run_cell(Cell(task, "akm", 1, mask=mask), ctx, ProcessTracker("t")), agent, fixture

    def test_the_agent_gets_the_stash_without_the_asset(self, tmp_path: Path) -> None:
        sample, agent, fixture = self.run(tmp_path, "knowledge:guide")
        assert agent.seen == {"MANIFEST.json", "skills/howto/SKILL.md"}
        assert (fixture / "knowledge" / "guide.md").is_file()  # the fixture itself is untouched
        assert sample["outcome"] == "fail" and sample["fingerprint"]["mask"] == "knowledge:guide"

    def test_an_asset_the_stash_lacks_is_a_harness_error(self, tmp_path: Path) -> None:
        sample, agent, _ = self.run(tmp_path, "skill:nope")
        assert sample["outcome"] == "harness_error"
        assert sample["reason"] == "mask: skill:nope is not an asset of the stash st"
        assert agent.seen == set()  # the agent never ran
        assert not list((tmp_path / "runs" / "r").iterdir())  # and the run dir is gone
