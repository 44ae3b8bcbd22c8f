"""akm-bench's corpus format (issue 29, items 5 and 6, and arm neutrality): its workflow specs'
weight names, every problem of a corpus listed by ``validate``, its shared ``base/`` layers
beside ``tasks/`` in its order and in the hashes, and the run's warning when a workspace tells
the control arm about akm. The whole foreign corpus runs in tests/akm/test_foreign_corpus.py."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_akmbench.cell.checks import behaviour_checks, contamination, static_problems
from pytest_akmbench.cell.rundir import copy_workspace, task_hash
from pytest_akmbench.cli.validate import validate
from pytest_akmbench.corpus.hashes import task_corpus_hash
from pytest_akmbench.corpus.tasks import load_corpus, load_lenient
from pytest_akmbench.corpus.workflows import load_spec, load_specs_lenient
from pytest_akmbench.errors import CorpusError
from pytest_akmbench.report.compare.corpus_diff import task_hashes
from pytest_akmbench.system.procs import ProcessTracker
from tests.support.corpus import standard_corpus, write_task

AKMBENCH = Path(__file__).resolve().parents[1] / "data" / "akm-bench"
SPEC: dict[str, Any] = {
    "id": "lookup",
    "title": "Look it up first",
    "required_sequence": [{"event": "akm_search", "before": "first_workspace_write"}],
}


def write_spec(directory: Path, data: dict[str, Any], name: str = "s.yaml") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text(yaml.safe_dump(data))
    return directory / name


class TestWeightNames:
    """Item 5: akm-bench names its weights ``*_steps_weight`` and ``evidence_quality_weight``;
    they were refused ("unknown field"), so not one of its specs loaded."""

    def test_akmbench_specs_load_unchanged(self) -> None:
        """akm-bench's specs load with the weights they state; none is refused for its scoring
        (two are for their step order: tests/core/test_workflow_unmeetable.py)."""
        specs, refused = load_specs_lenient(AKMBENCH / "fixtures/corpus/workflows")
        weights = {s.id: s.weights for s in specs}
        assert weights["akm-correct-asset-use"] == (0.6, 0.2, 0.2)
        assert weights["akm-lookup-before-edit"] == (0.7, 0.2, 0.1)
        assert weights["akm-workflow-followed"] == (0.6, 0.3, 0.1)
        assert len(specs) + len(refused) == 6 and not any("scoring" in e for e in refused.values())

    @pytest.mark.parametrize(
        "scoring",
        [
            {"required_steps_weight": 0.5, "forbidden_steps_weight": 0.3, "evidence_quality_weight": 0.2},
            {"required": 0.5, "forbidden": 0.3, "evidence": 0.2},
            {"required_steps_weight": 0.5, "forbidden": 0.3, "evidence_quality_weight": 0.2},
        ],
    )
    def test_either_name_of_a_weight(self, tmp_path: Path, scoring: dict[str, float]) -> None:
        assert load_spec(write_spec(tmp_path, {**SPEC, "scoring": scoring})).weights == (0.5, 0.3, 0.2)

    def test_both_names_of_one_weight_and_bad_values_are_refused(self, tmp_path: Path) -> None:
        both = {"required": 0.5, "required_steps_weight": 0.5, "forbidden": 0.3, "evidence": 0.2}
        with pytest.raises(
            CorpusError, match=r"s\.yaml: scoring\.required_steps_weight: the same weight as scoring\.required"
        ):
            load_spec(write_spec(tmp_path, {**SPEC, "scoring": both}))
        bad = {"required_steps_weight": 2, "forbidden_steps_weight": 0.3, "evidence_quality_weight": 0.2}
        with pytest.raises(CorpusError, match=r"scoring\.required_steps_weight: must be a number in \[0, 1\], got 2"):
            load_spec(write_spec(tmp_path, {**SPEC, "scoring": bad}))
        with pytest.raises(CorpusError, match=r"scoring\.required_weight: unknown field"):
            load_spec(write_spec(tmp_path, {**SPEC, "scoring": {"required_weight": 1}}))


class TestEveryProblem:
    """Item 5: one bad spec stopped ``validate`` with "0 tasks", hiding every other problem."""

    def corpus(self, tmp_path: Path) -> tuple[Path, Path]:
        tasks, stashes = standard_corpus(tmp_path)
        good = {"required": 0.6, "forbidden": 0.2, "evidence": 0.2}
        write_spec(tmp_path / "corpus" / "workflows", {**SPEC, "scoring": good}, "lookup.yaml")
        write_spec(tmp_path / "corpus" / "workflows", {**SPEC, "id": "broken", "scoring": {"x": 1}}, "broken.yaml")
        write_spec(tmp_path / "corpus" / "workflows", {"id": "untitled", "scoring": good}, "untitled.yaml")
        write_task(tasks, "alpha/needs-broken", extra={"expected_workflows": ["broken"]})
        write_task(tasks, "alpha/needs-lookup", extra={"expected_workflows": ["lookup"]})
        (tasks / "beta" / "bad-yaml").mkdir(parents=True)
        (tasks / "beta" / "bad-yaml" / "task.yaml").write_text("id: [unclosed\n")
        return tasks, stashes

    def test_validate_lists_every_bad_spec_and_task(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        tasks, stashes = self.corpus(tmp_path)
        assert validate(tasks, stashes, []) == 1
        out = capsys.readouterr().out
        specs = tmp_path / "corpus" / "workflows"
        assert f"error: {specs / 'broken.yaml'}: scoring.x: unknown field" in out
        assert f"error: {specs / 'untitled.yaml'}: title: required non-empty string" in out
        assert (
            f"error: {tasks / 'alpha/needs-broken/task.yaml'}: expected_workflows: no workflow spec 'broken'; "
            f"{specs / 'broken.yaml'} did not load (its own error above)" in out
        )
        assert f"error: {tasks / 'beta/bad-yaml/task.yaml'}: invalid YAML" in out
        # the good tasks load with the good spec: 3 standard tasks and needs-lookup
        assert "4 tasks in 2 domains, 0 configs: " in out and "alpha/needs-lookup" not in out
        loaded, _ = load_lenient(tasks, stashes, bad_specs=True)
        assert [s.id for s in loaded.by_id()["alpha/needs-lookup"].workflows] == ["lookup"]

    def test_a_run_leaves_a_bad_spec_out_and_says_so(self, tmp_path: Path) -> None:
        """A run checks its tasks with the specs that loaded (a task naming a bad one keeps its
        others) and carries each bad spec's error as a warning; a task that names a spec that
        does not exist at all is still that task's error."""
        tasks, stashes = self.corpus(tmp_path)
        corpus, errors = load_lenient(tasks, stashes)
        specs = tmp_path / "corpus" / "workflows"
        assert sorted(errors) == [tasks / "beta" / "bad-yaml" / "task.yaml"]
        assert [line.split(": ", 1)[0] for line in corpus.left_out] == [
            str(specs / "broken.yaml"),
            str(specs / "untitled.yaml"),
        ]
        assert all(line.endswith("; left out of this run, its checks not made") for line in corpus.left_out)
        by_id = corpus.by_id()
        assert by_id["alpha/needs-broken"].workflows == () and [
            s.id for s in by_id["alpha/needs-lookup"].workflows
        ] == ["lookup"]
        write_task(tasks, "alpha/needs-nothing", extra={"expected_workflows": ["nowhere"]})
        _, errors = load_lenient(tasks, stashes)
        assert (
            "expected_workflows: no workflow spec 'nowhere'; specs: lookup"
            in errors[tasks / "alpha/needs-nothing/task.yaml"]
        )
        with pytest.raises(CorpusError, match=r"broken\.yaml: scoring\.x: unknown field"):
            load_corpus(tasks, stashes)  # the strict loader still refuses


def akmbench_copy(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of akm-bench's fixtures (tests never edit tests/data in place)."""
    shutil.copytree(AKMBENCH / "fixtures", tmp_path / "fixtures")
    return tmp_path / "fixtures" / "corpus" / "tasks", tmp_path / "fixtures" / "stashes"


class TestBaseLayers:
    """Item 6: akm-bench's ``base/`` sits beside ``tasks/``; no cell got its files."""

    def test_layers_beside_tasks_in_akmbench_order(self, tmp_path: Path) -> None:
        tasks, stashes = akmbench_copy(tmp_path)
        base = tasks.parent / "base"
        corpus = load_lenient(tasks, stashes)[0].by_id()
        assert len(corpus) == 45
        inkwell = corpus["inkwell/add-healthcheck"]
        assert inkwell.layers == (base / "workspace", base / "domains" / "inkwell" / "workspace")
        assert corpus["drillbit/backup-policy"].layers == (base / "workspace",)  # no domain layer for drillbit
        copy_workspace(inkwell, tmp_path / "ws")
        # the domain's AGENTS.md replaces the base one; the task's own files come last
        assert (tmp_path / "ws" / "AGENTS.md").read_bytes() == (
            base / "domains/inkwell/workspace/AGENTS.md"
        ).read_bytes()
        assert {p.name for p in (tmp_path / "ws").iterdir()} >= {"AGENTS.md", "service.yaml"}
        copy_workspace(corpus["workflow-compliance/tempting-shortcut-arithmetic"], tmp_path / "ws2")
        own = tasks / "workflow-compliance/tempting-shortcut-arithmetic/workspace/AGENTS.md"
        assert (tmp_path / "ws2" / "AGENTS.md").read_bytes() == own.read_bytes()  # the task's own wins
        assert (tmp_path / "ws2" / "opencode.json").is_file()  # from base/domains/workflow-compliance
        copy_workspace(corpus["drillbit/backup-policy"], tmp_path / "ws3")
        assert (tmp_path / "ws3" / "AGENTS.md").read_bytes() == (base / "workspace/AGENTS.md").read_bytes()

    def test_a_changed_layer_changes_the_hashes(self, tmp_path: Path) -> None:
        """The cell fingerprint's task hash, the report's taskCorpusHash and taskHashes all move
        with a layer, for the tasks that use it only."""
        tasks, stashes = akmbench_copy(tmp_path)

        def hashes() -> tuple[dict[str, str], str, dict[str, str]]:
            chosen = list(load_corpus_lenient(tasks, stashes))
            return {t.id: task_hash(t) for t in chosen}, task_corpus_hash(chosen), task_hashes(chosen)

        before = hashes()
        layer = tasks.parent / "base" / "domains" / "inkwell" / "workspace" / "AGENTS.md"
        layer.write_text(layer.read_text() + "\nOne more rule.\n")
        after = hashes()
        assert after[1] != before[1]
        for i in (0, 2):
            changed = sorted(k for k in before[i] if before[i][k] != after[i][k])
            assert changed == sorted(k for k in before[i] if k.startswith("inkwell/")), i

    def test_a_corpus_without_layers_hashes_as_before(self, tmp_path: Path) -> None:
        """No layers: taskCorpusHash is akm-bench's (id NUL task.yaml NUL), as docs/corpus.md says."""
        import hashlib

        tasks, stashes = standard_corpus(tmp_path)
        chosen = list(load_corpus(tasks, stashes).tasks)
        h = hashlib.sha256()
        for t in sorted(chosen, key=lambda t: t.id):
            h.update(f"{t.id}\0{t.yaml_text}\0".encode())
        assert task_corpus_hash(chosen) == h.hexdigest()


def load_corpus_lenient(tasks: Path, stashes: Path) -> tuple[Any, ...]:
    return load_lenient(tasks, stashes)[0].tasks


class TestArmNeutrality:
    """Workspaces that mention akm fail ``validate``, but a run said nothing: its control arm
    was told about akm."""

    def test_the_warning_names_the_tasks_once_each(self, tmp_path: Path) -> None:
        tasks, stashes = standard_corpus(tmp_path)
        write_task(tasks, "alpha/leaky", workspace={"README.md": "Run akm search first.\n"})
        chosen = list(load_corpus(tasks, stashes).tasks)
        (line,) = contamination(chosen, ("noakm", "akm"))
        assert line.startswith("arm neutrality: the starting workspace of 1 selected task(s) mentions akm")
        assert "alpha/leaky (workspace/README.md)" in line and "alpha/script-task" not in line
        assert contamination(chosen, ("akm",)) == []  # no control arm to contaminate
        assert contamination([t for t in chosen if t.id != "alpha/leaky"], ("noakm", "akm")) == []

    def test_a_shared_layer_contaminates_every_task_using_it(self, tmp_path: Path) -> None:
        tasks, stashes = akmbench_copy(tmp_path)
        chosen = list(load_corpus_lenient(tasks, stashes))
        (line,) = contamination(chosen, ("noakm", "akm"))
        assert "of 45 selected task(s)" in line and "and 35 more" in line
        assert "az-cli/aks-get-credentials (base/workspace/AGENTS.md, base/domains/az-cli/workspace/AGENTS.md)" in line
        # validate names each file once, the shared layer too
        _, errors, _ = static_problems(tasks, stashes)
        base = tasks.parent / "base" / "workspace" / "AGENTS.md"
        assert [e for e in errors if e.startswith(str(base))] == [
            f"{base}: workspace mentions akm; workspaces must be arm-neutral (the arm adds akm)"
        ]


def test_soundness_without_a_solution_checks_nop_and_the_verifier(tmp_path: Path) -> None:
    """akm-bench ships no solutions: soundness says so in one line and still checks that doing
    nothing fails and that the verifier repeats itself (it said "solution did not finish")."""
    tasks, stashes = standard_corpus(tmp_path)
    write_task(tasks, "alpha/unsolved", solve=None)
    task = load_corpus(tasks, stashes).by_id()["alpha/unsolved"]
    (tmp_path / "work").mkdir()
    checks, problems = behaviour_checks(task, tmp_path / "work", ProcessTracker(f"test-akmbench/{tmp_path.name}"))
    assert checks == {"nop_fails": True, "solution_passes": None, "repeatable": True}
    assert problems == ["no solution/solve.sh: that the task can be solved is not checked (nop and the verifier were)"]


def test_the_verifiers_starting_workspace_has_the_layers(tmp_path: Path) -> None:
    """When pytest cannot judge the agent's workspace, its tests run again on the starting one,
    which has the shared layers too: a test that needs a base/ file runs there, so the attempt is
    a fail (the agent's fault), not a harness error that would drop out of the pass rates."""
    from tests.core.test_verifiers import Case

    case = Case(tmp_path)
    base = case.tasks.parent / "base" / "workspace"
    base.mkdir(parents=True)
    (base / "marker.txt").write_text("shared\n")
    tests = (
        "from pathlib import Path\n\nimport pytest\n\n"
        "WS = Path(__file__).parent.parent / 'workspace'\n"
        "if not (WS / 'marker.txt').exists():\n"
        "    pytest.skip('no marker', allow_module_level=True)\n\n"
        "def test_x():\n"
        "    assert (WS / 'out.txt').exists()\n"
    )
    task = case.task("a/layered", verifier="pytest", tests=tests)
    assert task.layers == (base,)
    verdict = case.verify(task)  # the agent removed marker.txt: nothing collected
    assert (verdict.passed, verdict.exit_code, verdict.error) == (False, 5, None)
    assert verdict.output.endswith("while the tests run on the starting one: the agent's files are at fault")
