"""The evolve track's core without an agent: the plan, the threshold, akm's LLM choice, the
scripted policies, and the envelope's statistics checked against independent computations."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import pytest
import yaml
from scipy import stats as sps

from pytest_akmbench.cell.runner import SAMPLE_SCHEMA
from pytest_akmbench.corpus.tasks import load_corpus
from pytest_akmbench.errors import ConfigError, CorpusError
from pytest_akmbench.records import ARMS, Sample
from pytest_akmbench.scripted import policies
from pytest_akmbench.scripted.policies import ScriptedCell
from pytest_akmbench.scripted.wire import ToolOutput, Turn
from pytest_akmbench.tracks.evolve import core as evolve
from pytest_akmbench.tracks.evolve import learning as evolve_learning
from pytest_akmbench.tracks.evolve import markdown as evolve_markdown
from pytest_akmbench.tracks.evolve import report as evolve_report

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


def turn_of(msgs: list[dict[str, str]], turn: int) -> Turn:
    """The neutral request whose conversation holds these tool results, at this turn."""
    outputs = tuple(ToolOutput(m["tool_call_id"], m["content"]) for m in msgs)
    return Turn(model="scripted/learner", stream=True, tools=("bash",), turn=turn, outputs=outputs, prompt="")


class TestPolicies:
    def test_lesson_ref_is_akms_own(self) -> None:
        assert policies.lesson_ref("skill:shipyard-manifest", "0.7") == "lesson:skill-shipyard-manifest-lesson"
        assert policies.lesson_ref("knowledge:Logline_PII", "0.9") == "lessons/knowledge-logline-pii-lesson"

    def test_lesson_reply_has_the_front_matter_akms_lint_wants(self) -> None:
        prompt = 'Asset ref: skill:x\n\nRecent feedback events:\n- t feedback {"signal":"negative"}\n'
        text = policies.akm_llm_reply("lesson", prompt)
        head = yaml.safe_load(text.split("---")[1])
        assert head["description"].startswith("Lesson on skill:x, drawn from 1 failed") and head["when_to_use"]
        assert not policies.akm_llm_reply("garbage", "").startswith("---")

    ASSET = "---\nname: x\ndescription: The x tool.\n---\n\n# x\n\n```sh\nx run\n```\n"

    def test_akm_09_reflect_gets_its_frame_and_the_judge_a_score(self) -> None:
        prompt = (
            "Your task is to review this skill asset\n\nTarget ref: skills/x\n\nRecent feedback / signals:\n\n"
            f"- [negative] failed\n\nCurrent asset content (verbatim):\n\n```\n\n{self.ASSET}\n```\n\n"
            "Produce a single proposal that addresses the feedback.\n\nAKM_REFLECT_CONTENT_BEGIN\n"
        )
        text = policies.akm_llm_reply("lesson", prompt)
        head, body = text.split("AKM_REFLECT_CONTENT_BEGIN\n")
        patch = json.loads(head.split("AKM_REFLECT_FRONTMATTER_PATCH: ")[1])
        assert patch == {"description": None, "when_to_use": "Before working on a task that needs skills/x"}
        # the body alone (akm merges the front matter), its fences kept, the lesson section added
        assert body.startswith("# x\n\n```sh\nx run\n```\n\n## Lesson from feedback\n\n1 failed attempts")
        assert body.endswith("AKM_REFLECT_CONTENT_END\n")
        judge = 'Score this revision ... Return ONLY valid JSON, no prose: {"score": <float>}'
        assert json.loads(policies.akm_llm_reply("lesson", judge))["score"] >= 4

    def test_akm_07_reflect_gets_a_json_revision_with_the_front_matter(self) -> None:
        prompt = (
            "You are reviewing an akm stash asset (skill)\n\nTarget ref: skill:x\n\n"
            f"Current asset content (verbatim):\n\n```\n{self.ASSET}```\n\nRecent feedback / signals:\n\n"
            '- [negative] a\n\n- [negative] b\n\nRespond ONLY with a single JSON object.\nShape: {"ref": "<type>:<name>"}'
        )
        data = json.loads(policies.akm_llm_reply("lesson", prompt))
        assert data["ref"] == "skill:x"
        assert data["content"].startswith(self.ASSET + "\n## Lesson from feedback\n\n2 failed attempts skipped skill:x")
        assert policies.akm_llm_reply("garbage", prompt) == policies.GARBAGE_TEXT

    def test_learner_solves_with_a_revised_gold_asset(self) -> None:
        corpus = load_corpus(ROOT / "corpus" / "tasks", ROOT / "corpus" / "stashes")
        task = corpus.by_id()["shipyard/fix-manifest"]
        cell = ScriptedCell(policy="learner", task=task, arm="akm", run_dir=None, akm_line="0.9")
        revised = json.dumps({"content": "# x\n\n## Lesson from feedback\n\nread it"})
        msgs = [
            {"role": "tool", "tool_call_id": "call_0", "content": "{}"},
            {"role": "tool", "tool_call_id": "call_1", "content": revised},
            {"role": "tool", "tool_call_id": "call_2", "content": '{"ok": false, "error": "not found"}'},
        ]
        assert policies.next_action(cell, turn_of(msgs, 3)).description == policies.APPLY
        plain = [msgs[0], {**msgs[1], "content": '{"content": "# x"}'}, msgs[2]]
        assert "--negative" in policies.next_action(cell, turn_of(plain, 3)).command

    def test_learner_gives_up_without_a_lesson_and_solves_with_one(self) -> None:
        corpus = load_corpus(ROOT / "corpus" / "tasks", ROOT / "corpus" / "stashes")
        task = corpus.by_id()["shipyard/fix-manifest"]
        cell = ScriptedCell(policy="learner", task=task, arm="akm", run_dir=None, akm_line="0.7")
        msgs = [{"role": "tool", "tool_call_id": f"call_{i}", "content": "{}"} for i in range(2)]
        missing = [*msgs, {"role": "tool", "tool_call_id": "call_2", "content": '{"ok": false, "error": "not found"}'}]
        assert (
            "akm show lesson:skill-shipyard-manifest-lesson" in policies.next_action(cell, turn_of(msgs[:2], 2)).command
        )
        assert "--negative" in policies.next_action(cell, turn_of(missing, 3)).command
        assert policies.next_action(cell, turn_of(missing, 4)).text == policies.GIVE_UP
        found = [*msgs, {"role": "tool", "tool_call_id": "call_2", "content": '{"content": "---\\n..."}'}]
        assert policies.next_action(cell, turn_of(found, 3)).description == policies.APPLY
        assert "--positive" in policies.next_action(cell, turn_of(found, 4)).command
        other = ScriptedCell(policy="learner", task=task, arm="synthetic", run_dir=None)
        assert policies.next_action(other, turn_of([], 0)).text == policies.GIVE_UP


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
        assert env["verdict"].startswith("evolve: IMPROVED: post - control +1.00 [")
        assert "over 8 eval tasks; post - pre +1.00 [" in env["verdict"]

    def test_a_mixed_change_is_not_claimed(self) -> None:
        tasks = [f"d/t{i}" for i in range(8)]
        samples = []
        for i, t in enumerate(tasks):
            for s in (1, 2):
                samples += [
                    sample(t, "pre", s, "fail" if i % 2 else "pass"),
                    sample(t, "control", s, "fail" if i % 2 else "pass"),
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
            {"id": "2", "target_ref": "lesson:skill-y-lesson", "kind": "lesson", "verb": "distill", "lint_pass": False, "decision": "reject", "reason": "lint failed: x"},
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
        assert "| lesson:skill-y-lesson | distill | reject | fail | lint failed: x |" in md
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
    from pytest_akmbench.plugin.xdist.schedulers import scope

    chained = ["train-s1", "train-s12", "proposals", "post-s3"]
    for name in chained:
        assert scope(f"corpus/tasks/shipyard/lint-command/task.yaml::{name}") == "evolve-shipyard"
    assert scope("../x/tasks/logline/a/task.yaml::post-s1") == "evolve-logline"
    for name in ("pre-s1", "control-s2", "synthetic-s1"):
        nodeid = f"corpus/tasks/shipyard/fix-manifest/task.yaml::{name}"
        assert scope(nodeid) == nodeid  # depends on nothing: its own unit


class TestLearningCurve:
    """The curve across episodes against independent computations (scipy, numpy)."""

    # Per task, the passes of 2 seeds in each of 3 episodes: mostly rising, not uniformly.
    PASSES = ((0, 1, 2), (0, 2, 2), (1, 1, 2), (0, 0, 1), (1, 2, 2), (2, 1, 2), (0, 1, 1), (1, 1, 0))

    def outcomes(self, episode: int) -> dict[str, list[bool]]:
        return {f"d/t{i}": [s < p[episode] for s in range(2)] for i, p in enumerate(self.PASSES)}

    def test_slope_interval_and_p_against_scipy(self) -> None:
        import numpy as np

        tasks = [f"d/t{i}" for i in range(8)]
        pre = {t: [False, False] for t in tasks}
        learning = evolve_learning.curve(pre, [self.outcomes(e) for e in range(3)], tasks)
        rates = [np.mean([p[e] / 2 for p in self.PASSES]) for e in range(3)]
        assert [p["post_pass_rate"] for p in learning["episodes"]] == pytest.approx(rates)
        fit = learning["slope"]
        # Tested across episodes: OLS on the 3 episode means, t with 1 df (scipy's linregress).
        ref = sps.linregress([1, 2, 3], rates)
        half = sps.t.ppf(0.975, 1) * ref.stderr
        assert fit["slope"] == pytest.approx(ref.slope) and fit["p_value"] == pytest.approx(ref.pvalue)
        assert (fit["low"], fit["high"]) == pytest.approx((ref.slope - half, ref.slope + half))
        assert fit["tasks"] == 8 and fit["episodes"] == 3
        assert (fit["significant"], learning["trend"]) == (
            (True, "improving") if ref.pvalue < 0.05 and fit["low"] > 0 else (False, "plateau")
        )
        assert learning["time_to_improvement"] == 1 and learning["best_episode"] == 3
        for point in learning["episodes"]:  # each episode's interval holds its rate
            assert point["low"] <= point["post_pass_rate"] <= point["high"] and point["runs"] == 16

    def test_consistent_gains_improve_and_a_drop_at_the_end_is_flagged(self) -> None:
        tasks = [f"d/t{i}" for i in range(8)]
        # Episode means 0, 0.25, 0.5, 0.75, 1: on a line, so no noise is left across episodes.
        up = [{t: [i < 2 * e] * 2 for i, t in enumerate(tasks)} for e in range(5)]
        learning = evolve_learning.curve({t: [False] for t in tasks}, up, tasks)
        assert learning["trend"] == "improving" and learning["slope"]["slope"] == pytest.approx(0.25)
        assert learning["slope"]["p_value"] == 0.0
        assert not learning["last_below_best"] and evolve_learning.warnings(learning) == []
        # 0, 1, 1 on every task: three episode means leave one degree of freedom, too few to
        # tell this from an episode-level shock (t(1) at 0.975 is 12.7).
        three = [{t: [e >= 1] * 2 for t in tasks} for e in range(3)]
        learning = evolve_learning.curve({t: [False] for t in tasks}, three, tasks)
        assert learning["trend"] == "plateau" and learning["slope"]["p_value"] == pytest.approx(
            sps.linregress([1, 2, 3], [0, 1, 1]).pvalue
        )
        down = [*three[:2], {t: [i % 4 != 0] * 2 for i, t in enumerate(tasks)}]  # 1.0 then 0.75
        learning = evolve_learning.curve({t: [False] for t in tasks}, down, tasks)
        assert learning["last_below_best"] and learning["best_episode"] == 2
        [warning] = evolve_learning.warnings(learning)
        assert "below the best, 1.00 after episode 2" in warning
        assert evolve_learning.verdict_part(learning).endswith("last episode below the best (episode 2)")

    def test_one_episode_has_no_slope(self) -> None:
        tasks = ["d/t"]
        learning = evolve_learning.curve({"d/t": [False]}, [{"d/t": [True]}], tasks)
        assert learning["slope"] is None and learning["trend"] is None
        assert evolve_learning.verdict_part(learning) is None

    def test_the_envelope_reads_each_episode_and_post_is_the_last(self) -> None:
        tasks = [f"d/t{i}" for i in range(8)]
        samples = [sample(t, "pre", 1, "fail") for t in tasks]
        samples += [sample(t, "post", 1, "pass" if i < 4 else "fail") for i, t in enumerate(tasks)]
        samples += [sample(t, "post-e2", 1, "pass") for t in tasks]
        samples += [sample("d/train", "train", 1, "fail"), sample("d/train", "train-e2", 1, "pass")]
        env = evolve_report.build(
            samples, {}, eval_tasks=tasks, train_tasks=["d/train"], domains=["d"], seeds=1,
            agent={"harness": "opencode", "model": "m"}, akm_info=None, llm="scripted/lesson",
            missing_steps=[], episodes=2,
        )  # fmt: skip
        points = env["learning"]["episodes"]
        assert [(p["post_pass_rate"], p["train_pass_rate"]) for p in points] == [(0.5, 0.0), (1.0, 1.0)]
        assert env["longitudinal"]["post_pass_rate"] == 1.0 and env["corpus"]["episodes"] == 2
        # two episode means leave no degree of freedom: a slope, no test, no trend
        assert env["learning"]["trend"] == "plateau" and env["learning"]["slope"]["p_value"] is None
        assert "; learning over 2 episodes: plateau, slope +0.50/episode (no test: " in env["verdict"]
        md = evolve_markdown.render(env)
        assert "| 2 | 1.00 [" in md and "trend: **plateau**" in md and "needs 3 or more" in md


class TestArmContract:
    """An evolve cell's sample keeps an arm of records.ARMS; its condition and episode are
    fields of their own, and a store written with ``evolve-<condition>`` arms is still read
    (issue 31, item 4)."""

    def test_a_marked_sample_runs_as_a_utility_arm(self) -> None:
        fp = {"track": "evolve", "condition": "post", "episode": 2}
        marked = evolve.mark(cast(Sample, {"task_id": "d/e1", "arm": "akm", "seed": 1}), "post", 2, fp)
        assert marked["arm"] in ARMS and (marked["condition"], marked["episode"]) == ("post", 2)
        assert marked["fingerprint"] == fp and len(marked["fingerprint_hash"]) == 16
        assert evolve.condition_of(marked) == "post-e2"
        assert evolve.condition_of({**marked, "episode": 1}) == "post"

    def test_old_and_new_samples_make_the_same_envelope(self) -> None:
        old = [
            sample(t, c, s, "pass" if c == "post" else "fail")
            for t in ("d/e1", "d/e2")
            for c in ("pre", "post")
            for s in (1, 2)
        ]
        new = [{**s, "arm": "akm", "condition": s["arm"].removeprefix("evolve-"), "episode": 1} for s in old]
        assert build(new, {}, ["d/e1", "d/e2"])["improvement"] == build(old, {}, ["d/e1", "d/e2"])["improvement"]

    def test_a_utility_report_never_counts_an_evolve_cell(self) -> None:
        """An evolve cell runs as the akm arm, but its own fields keep it out of the utility
        report's run facts (run/recorded.py) and fingerprint conflicts (run/merge.py)."""
        from pytest_akmbench.records import of_a_track
        from pytest_akmbench.run import recorded

        plain = {
            "schema": SAMPLE_SCHEMA,
            "task_id": "d/e1",
            "arm": "akm",
            "seed": 1,
            "agent": {"name": "a"},
            "fingerprint": {},
        }
        marked = evolve.mark(cast(Sample, plain), "post", 1, {"track": "evolve"})
        assert not of_a_track(plain) and of_a_track(marked)
        assert recorded.samples_of([plain, marked], "a", {"d/e1"}) == [plain]
