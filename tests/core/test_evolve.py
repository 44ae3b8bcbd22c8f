"""The evolve track's core without an agent: the plan, the threshold, akm's LLM choice, the
scripted policies, and the envelope's statistics checked against independent computations."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from scipy import stats as sps

from pytest_akmbench.agents.opencode import policies
from pytest_akmbench.agents.opencode.policies import ScriptedCell
from pytest_akmbench.corpus.tasks import load_corpus
from pytest_akmbench.errors import ConfigError, CorpusError
from pytest_akmbench.tracks import evolve, evolve_markdown, evolve_report

ROOT = Path(__file__).resolve().parents[2]


def sample(task: str, cond: str, seed: int, outcome: str, loaded: list[str] | None = None) -> dict[str, Any]:
    return {
        "task_id": task,
        "arm": f"evolve-{cond}",
        "seed": seed,
        "outcome": outcome,
        "reason": None,
        "tokens": None,
        "wallclock_ms": 1000,
        "trajectory": {"assets_loaded": loaded or []},
    }


def step(feedback: list[dict[str, Any]], proposals: list[dict[str, Any]], *, ok: bool = True) -> dict[str, Any]:
    leakage = {"eval_gold_refs": ["skill:x"], "eval_runs_feeding": 0, "feedback_events": 2,
               "dispatched_from_train": 2, "ok": ok}  # fmt: skip
    part = {"feedback": feedback, "proposals": proposals, "generation": [], "leakage": leakage, "warnings": []}
    return {"fixtures": {"st": part}}


def build(samples: list[dict[str, Any]], steps: dict[str, Any], tasks: list[str]) -> dict[str, Any]:
    return evolve_report.build(
        samples, steps, eval_tasks=tasks, train_tasks=["d/train"], domains=["d"], seeds=2,
        agent={"harness": "opencode", "model": "scripted/learner"}, akm_info=None, llm="scripted/lesson",
        missing_steps=[],
    )  # fmt: skip


class TestPlan:
    def test_the_shipped_corpus_splits_every_domain(self) -> None:
        corpus = load_corpus(ROOT / "corpus" / "tasks", ROOT / "corpus" / "stashes")
        plans = evolve.plan(corpus.tasks)
        assert [p.domain for p in plans] == ["logline", "pagerbook", "shipyard", "tidectl", "workflow-compliance"]
        for p in plans:
            assert p.train and p.eval and {t.slice for t in p.train} == {"train"}
        shipyard = next(p for p in plans if p.domain == "shipyard")
        assert shipyard.eval_gold_refs == ["skill:shipyard-manifest"]

    def test_a_domain_without_eval_tasks_is_refused_in_one_line(self) -> None:
        corpus = load_corpus(ROOT / "corpus" / "tasks", ROOT / "corpus" / "stashes")
        train_only = [t for t in corpus.tasks if t.domain == "shipyard" and t.slice == "train"]
        with pytest.raises(CorpusError) as err:
            evolve.plan(train_only)
        assert str(err.value) == (
            "evolve: domain 'shipyard' has no eval-slice task in the selection; select some (--bench-tasks) "
            "or give tasks `slice: eval` in their task.yaml (docs/corpus.md)"
        )

    @pytest.mark.parametrize(
        "positive, negative, crosses",
        [(5, 2, True), (0, 1, True), (1, 1, False), (3, 1, False), (0, 0, False), (1, 2, True)],
    )
    def test_threshold_is_two_negatives_or_a_strict_negative_majority(
        self, positive: int, negative: int, crosses: bool
    ) -> None:
        assert evolve.crossing({"skill:a": {"positive": positive, "negative": negative}}) == (
            ["skill:a"] if crosses else []
        )

    def test_akms_llm(self) -> None:
        assert evolve.llm_spec(None, "scripted/learner") == "scripted/lesson"
        assert evolve.llm_spec("scripted/garbage", "local/q") == "scripted/garbage"
        assert evolve.llm_spec("http://127.0.0.1:1/v1/chat/completions", None).startswith("http://")
        with pytest.raises(ConfigError, match=r"^--bench-evolve-llm: the evolve track needs an LLM"):
            evolve.llm_spec(None, "local/qwen")
        with pytest.raises(ConfigError, match=r"^--bench-evolve-llm: 'scripted/oracle' is neither"):
            evolve.llm_spec("scripted/oracle", None)


class TestPolicies:
    def test_lesson_ref_is_akms_own(self) -> None:
        assert policies.lesson_ref("skill:shipyard-manifest", "0.7") == "lesson:skill-shipyard-manifest-lesson"
        assert policies.lesson_ref("knowledge:Logline_PII", "0.9") == "lessons/knowledge-logline-pii-lesson"

    def test_lesson_reply_has_the_front_matter_akms_lint_wants(self) -> None:
        prompt = 'Asset ref: skill:x\n\nRecent feedback events:\n- t feedback {"signal":"negative"}\n'
        text = policies.akm_llm_reply("lesson", [{"role": "user", "content": prompt}])
        head = yaml.safe_load(text.split("---")[1])
        assert head["description"].startswith("Lesson on skill:x, drawn from 1 failed") and head["when_to_use"]
        assert not policies.akm_llm_reply("garbage", []).startswith("---")

    def test_learner_gives_up_without_a_lesson_and_solves_with_one(self) -> None:
        corpus = load_corpus(ROOT / "corpus" / "tasks", ROOT / "corpus" / "stashes")
        task = corpus.by_id()["shipyard/fix-manifest"]
        cell = ScriptedCell(policy="learner", task=task, arm="akm", run_dir=None, akm_line="0.7")
        msgs = [{"role": "tool", "tool_call_id": f"call_{i}", "content": "{}"} for i in range(2)]
        missing = [*msgs, {"role": "tool", "tool_call_id": "call_2", "content": '{"ok": false, "error": "not found"}'}]
        assert "akm show lesson:skill-shipyard-manifest-lesson" in policies.next_action(cell, msgs[:2], 2).command
        assert "--negative" in policies.next_action(cell, missing, 3).command
        assert policies.next_action(cell, missing, 4).text == policies.GIVE_UP
        found = [*msgs, {"role": "tool", "tool_call_id": "call_2", "content": '{"content": "---\\n..."}'}]
        assert policies.next_action(cell, found, 3).description == policies.APPLY
        assert "--positive" in policies.next_action(cell, found, 4).command
        other = ScriptedCell(policy="learner", task=task, arm="synthetic", run_dir=None)
        assert policies.next_action(other, [], 0).text == policies.GIVE_UP


class TestEnvelope:
    def test_a_consistent_gain_is_claimed_and_matches_an_exact_sign_flip_test(self) -> None:
        tasks = [f"d/t{i}" for i in range(8)]
        samples = [
            sample(t, c, s, "pass" if c == "post" else "fail")
            for t in tasks
            for c in ("pre", "post", "control")
            for s in (1, 2)
        ]
        env = build(samples, {}, tasks)
        main = env["improvement"]["post_minus_pre"]
        # Every task +1: of the 2^8 sign flips only all-plus and all-minus are as extreme.
        assert main["p_value"] == pytest.approx(2 / 2**8)
        assert main["delta"] == 1.0 and main["low"] > 0
        assert env["improvement"]["claimed"] is True and env["improvement"]["seed_spread_guard"] is True
        assert env["improvement"]["control_minus_pre"]["delta"] == 0.0
        assert env["longitudinal"]["control_delta"] == 0.0
        assert env["verdict"].startswith("evolve: IMPROVED: post - pre +1.00")

    def test_a_mixed_change_is_not_claimed(self) -> None:
        tasks = [f"d/t{i}" for i in range(8)]
        samples = []
        for i, t in enumerate(tasks):
            for s in (1, 2):
                samples += [
                    sample(t, "pre", s, "fail" if i % 2 else "pass"),
                    sample(t, "post", s, "pass" if i % 2 else "fail"),
                ]
        env = build(samples, {}, tasks)
        main = env["improvement"]["post_minus_pre"]
        deltas = [1.0 if i % 2 else -1.0 for i in range(8)]
        assert main["delta"] == pytest.approx(sum(deltas) / 8)
        assert main["p_value"] == pytest.approx(sps.binomtest(4, 8).pvalue)  # a sign test's p on ±1 deltas
        assert env["improvement"]["claimed"] is False
        assert env["verdict"].startswith("evolve: no improvement claimed (interval includes 0)")
        assert env["longitudinal"]["degradation_count"] == 4

    def test_seed_spread_guard_against_an_independent_stdev(self) -> None:
        tasks = [f"d/t{i}" for i in range(4)]
        # pre: seed 1 passes 1 of 4, seed 2 passes 3 of 4; post passes everything.
        pre = [sample(t, "pre", 1, "pass" if i < 1 else "fail") for i, t in enumerate(tasks)]
        pre += [sample(t, "pre", 2, "pass" if i < 3 else "fail") for i, t in enumerate(tasks)]
        post = [sample(t, "post", s, "pass") for t in tasks for s in (1, 2)]
        env = build(pre + post, {}, tasks)
        spread = float(sps.tstd([0.25, 0.75]))
        assert env["improvement"]["seed_spread"] == pytest.approx(spread)
        assert env["improvement"]["seed_spread_guard"] is (2 * spread < 0.5)

    def test_feedback_integrity_reads_the_agents_own_signal(self) -> None:
        log = [
            {"task_id": "d/a", "seed": 1, "gold_ref": "skill:x", "signal": "negative", "ok": True, "outcome": "fail", "agent_signal": "positive"},
            {"task_id": "d/a", "seed": 2, "gold_ref": "skill:x", "signal": "negative", "ok": True, "outcome": "fail", "agent_signal": "negative"},
            {"task_id": "d/b", "seed": 1, "gold_ref": "skill:y", "signal": "positive", "ok": True, "outcome": "pass", "agent_signal": None},
        ]  # fmt: skip
        env = build([], {"d": step(log, [])}, ["d/t"])
        agg = env["feedback_integrity"]["aggregate"]
        assert (agg["truePositive"], agg["falsePositive"], agg["trueNegative"], agg["falseNegative"]) == (0, 1, 1, 0)
        assert agg["feedback_agreement"] == 0.5 and agg["feedback_coverage"] == pytest.approx(2 / 3)
        assert "feedback_agreement_below_threshold: 0.50 < 0.80" in env["warnings"]

    def test_proposals_lessons_and_leakage(self) -> None:
        proposals = [
            {"id": "1", "target_ref": "lesson:skill-x-lesson", "kind": "lesson", "lint_pass": True, "decision": "accept"},
            {"id": "2", "target_ref": "lesson:skill-y-lesson", "kind": "lesson", "lint_pass": False, "decision": "reject", "reason": "lint failed: x"},
        ]  # fmt: skip
        post = [sample("d/t", "post", 1, "pass", ["lesson:skill-x-lesson"]), sample("d/t", "post", 2, "fail")]
        env = build(post, {"d": step([], proposals, ok=False)}, ["d/t"])
        p = env["proposals"]
        assert (p["total_proposals"], p["total_accepted"], p["acceptance_rate"], p["lint_pass_rate"]) == (
            2,
            1,
            0.5,
            0.5,
        )
        lessons = {x["ref"]: x for x in env["lessons"]["lessons"]}
        assert lessons["lesson:skill-x-lesson"]["reuse_count"] == 1
        assert lessons["lesson:skill-x-lesson"]["first_reused_on"] == "d/t[s1]"
        assert env["lessons"]["lesson_reuse_rate"] == 1.0
        assert env["leakage"]["ok"] is False and any(w.startswith("leakage:") for w in env["warnings"])
        md = evolve_markdown.render(env)
        assert "| lesson:skill-y-lesson | reject | fail | lint failed: x |" in md
        assert "leakage check: FAILED" in md
        json.dumps(env)  # the envelope is plain JSON


def run(*args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "corpus", "--bench-track", "evolve", *args]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)


class TestCollection:
    def test_co_lists_the_phases_in_order_with_nothing_installed(self) -> None:
        proc = run("--bench-tasks", "shipyard", "--bench-seeds", "2", "--co", "-q")
        ids = [line for line in proc.stdout.splitlines() if "::" in line]
        names = [i.split("::")[1] for i in ids]
        assert proc.returncode == 0, proc.stdout[-2000:]
        order = [n.split("-s")[0] for n in names]
        assert order == sorted(order, key=lambda n: evolve.RANK["propose" if n == "proposals" else n])
        assert names.count("proposals") == 1 and names.count("train-s1") == 4 and names.count("post-s2") == 2
        assert len(ids) == 4 * 2 + 1 + 2 * 4 * 2

    def test_bad_options_are_one_line(self) -> None:
        proc = run("--bench-tasks", "shipyard", "--bench-model", "scripted/learner", "--bench-evolve-llm", "nope")
        assert proc.returncode == 4 and "Traceback" not in proc.stderr
        assert (
            "--bench-evolve-llm: 'nope' is neither scripted/lesson, scripted/garbage nor an http(s) URL" in proc.stderr
        )
        proc = run("--bench-tasks", "shipyard/lint-command", "--co")
        assert proc.returncode == 4 and "evolve: domain 'shipyard' has no eval-slice task" in proc.stderr


def test_xdist_work_units_chain_train_step_and_post_per_domain() -> None:
    from pytest_akmbench.plugin.evolve import scope

    chained = ["train-s1", "train-s12", "proposals", "post-s3"]
    for name in chained:
        assert scope(f"corpus/tasks/shipyard/lint-command/task.yaml::{name}") == "evolve-shipyard"
    assert scope("../x/tasks/logline/a/task.yaml::post-s1") == "evolve-logline"
    for name in ("pre-s1", "control-s2", "synthetic-s1"):
        nodeid = f"corpus/tasks/shipyard/fix-manifest/task.yaml::{name}"
        assert scope(nodeid) == nodeid  # depends on nothing: its own unit
