"""Workflow compliance: spec loading (one-line errors naming file and field), the trace read from
real recorded opencode transcripts, the evaluator on hand-written traces (each check passes or
fails as a user expects), and the envelope's workflow block against independent counts."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
import yaml
from scipy.stats import beta

from pytest_akmbench.agents.opencode.transcript import read_transcript
from pytest_akmbench.cell.context import Cell, cell_fingerprint
from pytest_akmbench.cell.workflow import RunFacts, check_cell, evaluate
from pytest_akmbench.cell.workflow_trace import build_trace, runs_tests
from pytest_akmbench.corpus.tasks import load_corpus
from pytest_akmbench.corpus.workflows import WorkflowSpec, load_spec, load_specs
from pytest_akmbench.errors import CorpusError
from pytest_akmbench.report import envelope
from pytest_akmbench.report import gates as report_gates
from pytest_akmbench.report import workflow as wf_report
from pytest_akmbench.report.render import html
from pytest_akmbench.report.render.markdown import render_markdown
from tests.core.test_metrics import make_task, sample
from tests.core.test_report import TS, inp
from tests.core.test_trajectory import bash, tool, write_stream
from tests.support.corpus import write_stash, write_task
from tests.support.dom import parse
from tests.support.schemas import problems

DATA = Path(__file__).resolve().parents[1] / "data" / "transcripts"
GOLD = "skill:hello-file"
ROOT = Path(__file__).resolve().parents[2]

LOOKUP: dict[str, Any] = {
    "id": "lookup",
    "title": "Look it up first",
    "required_sequence": [
        {"event": "akm_search", "before": "first_workspace_write"},
        {"event": "akm_show", "ref_must_equal": "gold_ref", "before": "first_workspace_write"},
    ],
    "forbidden": [{"event": "akm_proposal_accept"}],
    "scoring": {"required": 0.6, "forbidden": 0.2, "evidence": 0.2},
}


def spec(tmp_path: Path, data: dict[str, Any], name: str = "s.yaml") -> WorkflowSpec:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return load_spec(path)


def ev(name: str, **kw: Any) -> dict[str, Any]:
    return {"event": name, "t_ms": None, **kw}


def trace(*events: dict[str, Any], verifier: int | None = 0) -> dict[str, Any]:
    body = [ev("agent_started"), *events, ev("agent_finished")]
    if verifier is not None:
        body.append(ev("verifier_run", exit=verifier))
    return {"events": body, "truncated": False, "source": "transcript"}


def run(outcome: str = "pass", arm: str = "akm", gold: str | None = GOLD) -> RunFacts:
    return RunFacts(arm=arm, domain="demo", outcome=outcome, gold_ref=gold)


WRITE = (ev("first_workspace_write"), ev("workspace_write"))


class TestSpecs:
    def test_a_spec_loads(self, tmp_path: Path) -> None:
        s = spec(tmp_path, LOOKUP)
        assert s.id == "lookup" and [st.event for st in s.required] == ["akm_search", "akm_show"]
        assert s.applies_to.arms == ("akm",) and s.weights == (0.6, 0.2, 0.2) and len(s.digest) == 64

    @pytest.mark.parametrize(
        ("change", "field", "why"),
        [
            ({"required_sequence": [{"event": "akm_serch"}]}, r"required_sequence\[0\]\.event", "unknown event"),
            ({"required_sequence": []}, "required_sequence", "non-empty"),
            ({"scoring": {"required": 0.5, "forbidden": 0.2, "evidence": 0.2}}, "scoring", "sum to 0.9"),
            ({"scoring": {"required": 1.5, "forbidden": 0, "evidence": 0}}, r"scoring\.required", r"\[0, 1\]"),
            ({"colour": "red"}, "colour", "unknown field"),
            (
                {"required_sequence": [{"event": "akm_show", "min_count": 0}]},
                r"required_sequence\[0\]\.min_count",
                ">= 1",
            ),
            (
                {"required_sequence": [{"event": "akm_show", "ref_must_equal": "x"}]},
                r"required_sequence\[0\]\.ref_must_equal",
                "gold_ref",
            ),
            ({"applies_to": {"arms": ["akmm"]}}, r"applies_to\.arms", "not one of"),
            ({"title": ""}, "title", "non-empty"),
            (
                {"required_sequence": [{"event": "akm_feedback", "after": "verifier_run"}]},
                r"required_sequence\[0\]\.after",
                "never come after verifier_run",
            ),
        ],
    )
    def test_a_bad_spec_is_one_line_naming_file_and_field(
        self, tmp_path: Path, change: dict[str, Any], field: str, why: str
    ) -> None:
        with pytest.raises(CorpusError, match=rf"s\.yaml: {field}: .*{why}") as err:
            spec(tmp_path, {**LOOKUP, **change})
        assert "\n" not in str(err.value)

    def test_duplicate_ids_and_file_order(self, tmp_path: Path) -> None:
        spec(tmp_path, LOOKUP, "b.yaml")
        spec(tmp_path, {**LOOKUP, "id": "other"}, "a.yml")
        assert [s.id for s in load_specs(tmp_path)] == ["other", "lookup"]
        spec(tmp_path, LOOKUP, "c.yaml")
        with pytest.raises(CorpusError, match=r"c\.yaml: id: duplicate workflow id 'lookup', also in .*b\.yaml"):
            load_specs(tmp_path)

    def test_tasks_get_their_specs_and_an_unknown_one_is_an_error(self, tmp_path: Path) -> None:
        """A task's expected_workflows picks its specs; without it, applies_to.task_domains does;
        naming a spec that does not exist is that task.yaml's error, naming the field."""
        write_stash(tmp_path / "stashes")
        (tmp_path / "workflows").mkdir()
        spec(tmp_path / "workflows", {**LOOKUP, "applies_to": {"task_domains": ["a"]}}, "lookup.yaml")
        spec(tmp_path / "workflows", {**LOOKUP, "id": "other"}, "other.yaml")
        write_task(tmp_path / "tasks", "a/one")
        write_task(tmp_path / "tasks", "b/two")
        write_task(tmp_path / "tasks", "b/three", extra={"expected_workflows": ["lookup"]})
        tasks = load_corpus(tmp_path / "tasks", tmp_path / "stashes").by_id()
        assert [s.id for s in tasks["a/one"].workflows] == ["lookup", "other"]
        assert [s.id for s in tasks["b/two"].workflows] == ["other"]
        assert [s.id for s in tasks["b/three"].workflows] == ["lookup"]
        write_task(tmp_path / "tasks", "b/four", extra={"expected_workflows": ["nope"]})
        with pytest.raises(
            CorpusError, match=r"four/task\.yaml: expected_workflows: no workflow spec 'nope'; specs: lookup"
        ):
            load_corpus(tmp_path / "tasks", tmp_path / "stashes")

    def test_shipped_specs_and_domain_load(self) -> None:
        corpus = load_corpus(ROOT / "corpus" / "tasks", ROOT / "corpus" / "stashes")
        ids = {s.id for s in corpus.workflows}
        checked = [t for t in corpus.tasks if t.workflows]
        assert ids == {"akm-lookup-before-edit", "akm-feedback-after-use"}
        assert {t.domain for t in checked} == {"workflow-compliance"} and len(checked) >= 2


class TestEvaluator:
    def test_compliant_trace_passes_with_full_score(self, tmp_path: Path) -> None:
        t = trace(ev("akm_search", results=[GOLD]), ev("akm_show", ref="skills/hello-file"), *WRITE)
        check = evaluate(spec(tmp_path, LOOKUP), t, run())
        assert check["status"] == "pass" and check["score"] == 1.0 and check["violations"] == []
        assert check["required_passed"] == check["required_total"] == 2
        assert check["evidence"]["gold_asset_loaded"] is True

    def test_editing_before_looking_up_is_wrong_order(self, tmp_path: Path) -> None:
        t = trace(*WRITE, ev("akm_search"), ev("akm_show", ref=GOLD))
        check = evaluate(spec(tmp_path, LOOKUP), t, run())
        assert check["status"] == "fail"  # both steps exist but neither came first
        assert [v["code"] for v in check["violations"]] == ["wrong_order", "wrong_order"]
        assert check["violations"][0]["expected"] == "akm_search before first_workspace_write"
        # required 0/2, forbidden 1/1, evidence (polarity ok, verifier ran, gold shown) 3/3
        assert check["score"] == pytest.approx(0.2 + 0.2)

    def test_half_done_is_partial(self, tmp_path: Path) -> None:
        t = trace(ev("akm_search"), *WRITE, ev("akm_show", ref=GOLD))
        check = evaluate(spec(tmp_path, LOOKUP), t, run())
        assert check["status"] == "partial" and check["required_passed"] == 1

    def test_no_akm_at_all_fails_naming_what_is_missing(self, tmp_path: Path) -> None:
        check = evaluate(spec(tmp_path, LOOKUP), trace(*WRITE), run())
        codes = [v["code"] for v in check["violations"]]
        assert check["status"] == "fail" and codes == ["missing_required_event"] * 2 + ["irrelevant_asset_loaded"]
        assert check["violations"][0]["observed"] == "first_workspace_write → workspace_write → verifier_run"
        # evidence: polarity ok 1, verifier ran 1, gold not shown 0
        assert check["score"] == pytest.approx(0.2 + 0.2 * 2 / 3)

    def test_showing_another_asset_is_irrelevant_asset(self, tmp_path: Path) -> None:
        t = trace(ev("akm_search"), ev("akm_show", ref="skill:other"), *WRITE)
        check = evaluate(spec(tmp_path, LOOKUP), t, run())
        assert [v["code"] for v in check["violations"]] == ["irrelevant_asset_loaded"]
        assert check["violations"][0]["observed"] == "skill:other" and check["status"] == "partial"

    def test_ref_step_without_a_gold_ref_is_missing_evidence(self, tmp_path: Path) -> None:
        t = trace(ev("akm_search"), ev("akm_show", ref="skill:x"), *WRITE)
        check = evaluate(spec(tmp_path, LOOKUP), t, run(gold=None))
        assert [v["code"] for v in check["violations"]] == ["missing_evidence"]

    def test_forbidden_event_and_its_special_code(self, tmp_path: Path) -> None:
        t = trace(ev("akm_search"), ev("akm_show", ref=GOLD), *WRITE, ev("akm_proposal_accept"))
        check = evaluate(spec(tmp_path, LOOKUP), t, run())
        assert [v["code"] for v in check["violations"]] == ["proposal_accepted_without_validation"]
        assert check["status"] == "partial" and check["score"] == pytest.approx(0.6 + 0.2)

    def test_forbidden_order(self, tmp_path: Path) -> None:
        data = {**LOOKUP, "forbidden": [{"event": "workspace_write", "before": "akm_show"}]}
        bad = trace(ev("akm_search"), *WRITE, ev("akm_show", ref=GOLD))
        good = trace(ev("akm_search"), ev("akm_show", ref=GOLD), *WRITE)
        s = spec(tmp_path, data)
        assert "forbidden_event" in [v["code"] for v in evaluate(s, bad, run())["violations"]]
        assert evaluate(s, good, run())["violations"] == []

    @pytest.mark.parametrize(
        ("outcome", "polarity", "violated"),
        [
            ("pass", "positive", False),
            ("pass", "negative", True),
            ("fail", "negative", False),
            ("fail", "positive", True),
            ("fail", None, True),  # feedback without a signal says nothing about the outcome
            ("budget_exceeded", "negative", False),  # no verifier decided this run: any signal is fine
        ],
    )
    def test_feedback_polarity_against_the_outcome(
        self, tmp_path: Path, outcome: str, polarity: str | None, violated: bool
    ) -> None:
        t = trace(ev("akm_search"), ev("akm_show", ref=GOLD), *WRITE, ev("akm_feedback", ref=GOLD, polarity=polarity))
        codes = [v["code"] for v in evaluate(spec(tmp_path, LOOKUP), t, run(outcome))["violations"]]
        assert ("wrong_feedback_polarity" in codes) is violated

    def test_min_count_polarity_step_and_required_if(self, tmp_path: Path) -> None:
        data = {
            **LOOKUP,
            "required_sequence": [
                {"event": "akm_search", "min_count": 2},
                {"event": "akm_feedback", "polarity": "negative"},
                {"event": "akm_show", "ref_must_equal": "gold_ref", "required_if": "search_has_relevant_result"},
            ],
        }
        s = spec(tmp_path, data)
        missed = trace(ev("akm_search", results=["skill:x"]), ev("akm_feedback", polarity="negative"), verifier=1)
        check = evaluate(s, missed, run("fail"))
        assert check["required_total"] == 2  # the search never listed the gold: the show is not required
        assert [v["code"] for v in check["violations"]] == ["missing_required_event"]
        found = trace(
            ev("akm_search", results=[GOLD]), ev("akm_search"), ev("akm_feedback", polarity="negative"), verifier=1
        )
        check = evaluate(s, found, run("fail"))
        assert check["required_total"] == 3 and check["required_passed"] == 2

    def test_applicability(self, tmp_path: Path) -> None:
        s = spec(tmp_path, {**LOOKUP, "applies_to": {"outcomes": ["fail"], "requires_gold_ref": True}})
        t = trace(*WRITE)
        assert evaluate(s, t, run("pass"))["status"] == "not_applicable"
        assert evaluate(s, t, run("fail", gold=None))["status"] == "not_applicable"
        assert evaluate(s, t, run("fail", arm="noakm"))["status"] == "not_applicable"  # akm arm by default
        assert evaluate(s, t, run("fail"))["status"] == "fail"


class TestTrace:
    @pytest.mark.parametrize("version", ["0.7.0", "0.9.0"])
    def test_recorded_oracle_transcript(self, version: str) -> None:
        """A real opencode transcript of the oracle: search, show, the write, positive feedback."""
        t = build_trace(DATA / f"oracle-akm-{version}.jsonl", 0, read_transcript)
        names = [e["event"] for e in t["events"]]
        assert names == [
            "agent_started",
            "akm_search",
            "akm_show",
            "first_workspace_write",
            "workspace_write",
            "akm_feedback",
            "agent_finished",
            "verifier_run",
        ]
        assert t["events"][5]["polarity"] == "positive" and t["source"] == "transcript"

    def test_recorded_idle_transcript_and_no_verifier(self) -> None:
        t = build_trace(DATA / "idle-akm-0.7.0.jsonl", None, read_transcript)
        assert [e["event"] for e in t["events"]] == ["agent_started", "agent_finished"]

    def test_refused_calls_reads_and_test_runs(self, tmp_path: Path) -> None:
        path = write_stream(
            tmp_path / "t.jsonl",
            [
                tool("read", {"filePath": "README.md"}, "text", ts=1000),
                bash("akm show skill:nope", "not found", ts=2000, exit=1),
                bash("akm workflow start deploy", "{}", ts=3000),
                bash("python -m pytest -q tests", "1 passed", ts=4000),
                tool("write", {"filePath": "out.txt", "content": "x"}, ts=5000),
            ],
        )
        names = [e["event"] for e in build_trace(path, 0, read_transcript)["events"]]
        assert names == [
            "agent_started",
            "workspace_read",
            "akm_workflow_start",
            "test_run",
            "first_workspace_write",
            "workspace_write",
            "agent_finished",
            "verifier_run",
        ]

    @pytest.mark.parametrize(
        ("command", "expected"),
        [
            ("pytest -q", True),
            ("cd x && python3 -m pytest", True),
            ("bash verify.sh", True),
            ("make test", True),
            ("echo pytest", False),
            ("cat tests/test_x.py", False),
        ],
    )
    def test_runs_tests(self, command: str, expected: bool) -> None:
        assert runs_tests(command) is expected

    def test_check_cell_on_a_recorded_transcript(self, tmp_path: Path) -> None:
        s = spec(tmp_path, LOOKUP)
        task = make_task("demo/hello-file", gold_ref=GOLD, workflows=(s,))
        got = check_cell(task, "akm", "pass", DATA / "oracle-akm-0.9.0.jsonl", 0, read_transcript)
        assert got is not None and got["checks"][0]["status"] == "pass" and got["trace_events"] == 8
        assert check_cell(make_task("demo/x"), "akm", "pass", None, 0, read_transcript) is None


def wf_sample(task: str, seed: int, outcome: str, *statuses: tuple[str, str, float, list[str]]) -> dict[str, Any]:
    checks = [
        {"workflow_id": w, "status": st, "score": sc, "violations": [{"code": c, "message": c} for c in codes]}
        for w, st, sc, codes in statuses
    ]
    return {"task_id": task, "arm": "akm", "seed": seed, "outcome": outcome, "workflow": {"checks": checks}}


class TestAggregate:
    def test_block_counts_cross_tab_and_reliability(self, tmp_path: Path) -> None:
        a, b = spec(tmp_path, LOOKUP, "a.yaml"), spec(tmp_path, {**LOOKUP, "id": "fb"}, "b.yaml")
        tasks = [make_task("d/one", workflows=(a, b)), make_task("d/two", workflows=(a, b))]
        runs = [
            wf_sample("d/one", 1, "pass", ("lookup", "pass", 1.0, []), ("fb", "fail", 0.2, ["x", "y"])),
            wf_sample("d/one", 2, "pass", ("lookup", "partial", 0.7, ["x"]), ("fb", "not_applicable", 0.0, [])),
            wf_sample("d/two", 1, "fail", ("lookup", "pass", 1.0, []), ("fb", "pass", 1.0, [])),
            wf_sample("d/two", 2, "harness_error", ("lookup", "fail", 0.0, ["z"])),  # never counts
        ]
        block = wf_report.block(tasks, runs)
        assert block is not None
        assert (block["total_checks"], block["applicable_checks"], block["violation_count"]) == (6, 5, 3)
        # means over tasks of each task's mean (d/one has 3 applicable checks, d/two 2)
        assert block["overall_compliance"] == pytest.approx(((1 + 0.2 + 0.7) / 3 + (1 + 1) / 2) / 2)
        assert block["strict_pass_rate"] == pytest.approx((1 / 3 + 2 / 2) / 2)
        assert block["fail_rate"] == pytest.approx((1 / 3 + 0) / 2)
        assert block["partial_pass_rate"] == pytest.approx((1 / 3 + 0) / 2)
        lookup = block["by_workflow"]["lookup"]
        assert (lookup["count"], lookup["total_checks"], lookup["tasks"]) == (3, 3, 2)
        assert block["by_workflow"]["fb"]["count"] == 2 and block["by_workflow"]["fb"]["total_checks"] == 3
        assert [(v["code"], v["count"]) for v in block["top_violations"]] == [("x", 2), ("y", 1)]
        assert block["top_violations"][0]["evidence"][1] == {
            "task_id": "d/one",
            "arm": "akm",
            "seed": 2,
            "workflow_id": "lookup",
            "message": "x",
        }
        rows = {r["task_outcome"]: r for r in block["cross_tab"]}
        assert rows["pass"] == {"task_outcome": "pass", "pass": 0, "partial": 1, "fail": 1, "total": 2}
        assert rows["fail"]["pass"] == 1 and "harness_error" not in rows
        rel = block["reliability"]
        assert rel["by_workflow"]["lookup"] == {
            "workflow_id": "lookup",
            "pass_at_k": 1.0,
            "pass_all_k": 0.5,
            "tasks": 2,
            "k": 2,
        }
        assert rel["corpus"] == {"pass_at_k": 0.75, "pass_all_k": 0.5, "groups": 4, "tasks": 2}
        assert wf_report.per_task_compliance(runs) == {"d/one": pytest.approx(1.9 / 3), "d/two": 1.0}

    def test_one_task_interval_is_over_tasks(self, tmp_path: Path) -> None:
        """The interval is of the mean over tasks like these: one task, however many checks,
        tells little about other tasks (scipy's beta quantiles at a count of 5/7 of one trial)."""
        a = spec(tmp_path, LOOKUP)
        statuses = ["pass", "pass", "fail", "pass", "partial", "pass", "pass"]
        runs = [wf_sample("d/one", i, "pass", ("lookup", st, 0.5, [])) for i, st in enumerate(statuses, 1)]
        ci = wf_report.block([make_task("d/one", workflows=(a,))], runs)["by_workflow"]["lookup"]["pass_rate_ci"]
        low, high = beta.ppf(0.025, 5 / 7, 1 - 5 / 7 + 1), beta.ppf(0.975, 5 / 7 + 1, 1 - 5 / 7)
        assert (ci["low"], ci["high"]) == (pytest.approx(low), pytest.approx(high))

    def test_estimate_and_interval_are_of_one_estimand(self, tmp_path: Path) -> None:
        """Unequal checks per task (issue 30, item 8): a task with 10 passing checks and two with 1
        failing check each. Pooled over checks the compliance was 10/12 = 0.833, printed beside an
        interval over task means that excluded it; now every figure is the mean of the task means
        (1, 0, 0), inside its own interval (scipy's Clopper–Pearson over the 3 tasks)."""
        a = spec(tmp_path, LOOKUP)
        tasks = [make_task(f"d/{t}", workflows=(a,)) for t in ("one", "two", "three")]
        runs = [wf_sample("d/one", i, "pass", ("lookup", "pass", 1.0, [])) for i in range(1, 11)]
        runs += [wf_sample(f"d/{t}", 1, "fail", ("lookup", "fail", 0.0, ["x"])) for t in ("two", "three")]
        block = wf_report.block(tasks, runs)
        assert block is not None
        w = block["by_workflow"]["lookup"]
        expected_ci = (beta.ppf(0.025, 1, 3), beta.ppf(0.975, 2, 2))
        for value, ci in (
            (block["overall_compliance"], block["overall_compliance_ci"]),
            (block["strict_pass_rate"], block["strict_pass_rate_ci"]),
            (w["score"], w["score_ci"]),
            (w["pass_rate"], w["pass_rate_ci"]),
        ):
            assert value == pytest.approx(1 / 3) and ci["low"] <= value <= ci["high"]
            assert (ci["low"], ci["high"]) == (pytest.approx(expected_ci[0]), pytest.approx(expected_ci[1]))
        assert block["fail_rate"] == pytest.approx(2 / 3) and w["fail_rate"] == pytest.approx(2 / 3)

    def test_no_spec_no_block_and_envelope_shows_it(self, tmp_path: Path) -> None:
        assert wf_report.block([make_task("d/one")], []) is None
        a = spec(tmp_path, LOOKUP)
        task = make_task("d/one", workflows=(a,), memory_ability="procedural_lookup")
        checks = wf_sample("d/one", 1, "pass", ("lookup", "fail", 0.25, ["missing_required_event"]))["workflow"]
        env = envelope.build(inp([task], [sample(task.id, "akm", 1, "pass", workflow=checks)]), timestamp=TS)
        assert env["workflow"]["fail_rate"] == 1.0 and problems(env, "report") == []
        assert env["corpus_coverage"]["by_memory_ability"][0]["workflow_compliance"] == 0.25
        md = render_markdown(env)
        assert "## Workflow compliance" in md and "| lookup        | 1            | 1       |" in md
        assert "missing_required_event" in md
        page = parse(html.render(env))
        row = page.one("table", id="workflow-table").one("tr", **{"data-workflow": "lookup"})
        assert [c.text for c in row.select("td")][:3] == ["lookup", "1", "1"]
        assert "missing_required_event" in page.one("table", id="workflow-violations").text
        exprs = ["workflow_compliance>=0.5", "workflow_compliance<=0.25", "workflow_strict_pass_rate<=0"]
        gates = report_gates.evaluate(env, exprs, tmp_path)
        assert [g["ok"] for g in gates] == [False, True, True] and gates[1]["observed"] == 0.25
        del env["workflow"]  # a run without workflow specs: the gate fails, it never passes unseen
        assert not report_gates.evaluate(env, ["workflow_compliance>=0"], tmp_path)[0]["ok"]

    def test_the_low_gate_reads_the_interval_of_overall_compliance(self, tmp_path: Path) -> None:
        """workflow_compliance.low is the lower end of the compliance interval the report prints,
        below the compliance itself; without workflow specs it fails as not available."""
        a = spec(tmp_path, LOOKUP)
        tasks = [make_task(f"d/t{i}", workflows=(a,)) for i in range(4)]
        scores = [1.0, 0.5, 0.75, 0.25]
        samples = [
            sample(
                t.id,
                "akm",
                seed,
                "pass",
                workflow=wf_sample(t.id, seed, "pass", ("lookup", "partial", s, []))["workflow"],
            )
            for t, s in zip(tasks, scores)
            for seed in (1, 2)
        ]
        env = envelope.build(inp(tasks, samples), timestamp=TS)
        low = env["workflow"]["overall_compliance_ci"]["low"]
        assert 0 < low < env["workflow"]["overall_compliance"] == pytest.approx(0.625)
        held, failed = report_gates.evaluate(
            env, [f"workflow_compliance.low>={low}", f"workflow_compliance.low>{low}"], tmp_path
        )
        assert (held["ok"], held["observed"], failed["ok"]) == (True, low, False)
        del env["workflow"]
        (gone,) = report_gates.evaluate(env, ["workflow_compliance.low>=0"], tmp_path)
        assert gone == {
            "gate": "workflow_compliance.low>=0",
            "ok": False,
            "observed": None,
            "message": "workflow_compliance.low is not available (arm not run or no data)",
        }


class TestFingerprint:
    def test_a_spec_edit_reruns_the_cells_it_checks_only(self, tmp_path: Path) -> None:
        """Editing a spec changes the fingerprint of the akm cells it checks (their stored checks
        were made against the old spec); the noakm cells and tasks without specs keep theirs."""
        from tests.core.test_fingerprint import Root

        root = Root(tmp_path)
        workflows = root.tasks_root.parent / "workflows"
        workflows.mkdir()
        spec(workflows, {**LOOKUP, "applies_to": {"task_domains": ["alpha"]}}, "lookup.yaml")
        before = {
            (arm, t): root.hash(arm, t) for arm in ("akm", "noakm") for t in ("alpha/script-task", "beta/regex-task")
        }
        spec(workflows, {**LOOKUP, "applies_to": {"task_domains": ["alpha"]}, "title": "Edited"}, "lookup.yaml")
        after = {
            (arm, t): root.hash(arm, t) for arm in ("akm", "noakm") for t in ("alpha/script-task", "beta/regex-task")
        }
        changed = {k for k in before if before[k] != after[k]}
        assert changed == {("akm", "alpha/script-task")}
        # The form stored samples carry: the spec's id and the first 16 hex of its file's sha256.
        file_digest = hashlib.sha256((workflows / "lookup.yaml").read_bytes()).hexdigest()[:16]
        fp = cell_fingerprint(Cell(root.task(), "akm", 1), root.ctx())
        assert fp["workflows"] == {"lookup": file_digest}
