"""The task loader's errors and selection labels as a user reads them, word for word
(pytest_akmbench.corpus.tasks); discovery, validation and the selectors' behaviour are in
test_corpus.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_akmbench.corpus.tasks import (
    Corpus,
    find_task_files,
    has_task_files,
    load_corpus,
    load_lenient,
    load_task,
    restrict,
    select,
    with_workflows,
)
from pytest_akmbench.corpus.workflows import load_specs
from pytest_akmbench.errors import CorpusError
from tests.support.corpus import standard_corpus, write_stash, write_task

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def corpus(tmp_path: Path) -> Corpus:
    return load_corpus(*standard_corpus(tmp_path))


class TestSelectionLabels:
    def test_every_selection_but_a_slice_is_labelled_all(self, corpus: Corpus) -> None:
        """The label is the report's ``slice``: a run of every task, a domain, an id or a list
        of ids is ``all``; only a slice selector names its slice."""
        every = list(corpus.tasks)
        assert select(corpus, None) == (every, "all")
        assert select(corpus, "all") == (every, "all")
        assert select(corpus, ["beta/regex-task", "alpha/script-task"]) == (
            [corpus.by_id()["beta/regex-task"], corpus.by_id()["alpha/script-task"]],
            "all",
        )


class TestMessages:
    def test_a_domain_in_a_corpus_without_tasks_says_there_are_none(self, tmp_path: Path) -> None:
        empty = Corpus(tmp_path, tmp_path)
        with pytest.raises(CorpusError) as err:
            select(empty, "alpha")
        assert str(err.value) == "tasks: no task with id or domain 'alpha'; domains: none"

    def test_an_empty_list_selects_nothing(self, corpus: Corpus) -> None:
        with pytest.raises(CorpusError) as err:
            select(corpus, [])
        assert str(err.value) == "tasks: empty list selects no task"

    def test_every_stray_override_is_listed(self, corpus: Corpus) -> None:
        alpha, _ = select(corpus, "alpha")
        with pytest.raises(CorpusError) as err:
            restrict(alpha, ["beta/regex-task", "alpha/script-task", "gamma/x"])
        assert str(err.value) == "--bench-tasks: not in the selection: beta/regex-task, gamma/x"

    def test_an_unknown_workflow_lists_the_specs_there_are(self, tmp_path: Path) -> None:
        """A task naming a spec that does not exist is told every spec the corpus has, or that
        it has none and where they would be."""
        write_task(tmp_path / "tasks", "a/one", extra={"expected_workflows": ["nope"]})
        task = load_task(tmp_path / "tasks" / "a" / "one" / "task.yaml")
        shipped = ROOT / "corpus" / "workflows"
        with pytest.raises(CorpusError) as err:
            with_workflows(task, load_specs(shipped), shipped)
        assert str(err.value) == (
            f"{task.yaml_path}: expected_workflows: no workflow spec 'nope'; "
            "specs: akm-feedback-after-use, akm-lookup-before-edit"
        )
        with pytest.raises(CorpusError) as err:
            with_workflows(task, (), tmp_path / "workflows")
        assert str(err.value).endswith(f"specs: none (no specs in {tmp_path / 'workflows'})")

    def test_a_path_leading_outside_the_task_is_named(self, tmp_path: Path) -> None:
        """A workspace that is a link out of the task is refused, naming the path and its role."""
        write_stash(tmp_path / "stashes")
        task_dir = write_task(tmp_path / "tasks", "a/one")
        (tmp_path / "elsewhere").mkdir()
        for child in (task_dir / "workspace").iterdir():
            child.unlink()
        (task_dir / "workspace").rmdir()
        (task_dir / "workspace").symlink_to(tmp_path / "elsewhere")
        with pytest.raises(CorpusError) as err:
            load_corpus(tmp_path / "tasks", tmp_path / "stashes")
        assert str(err.value) == (
            f"{task_dir / 'task.yaml'}: workspace (workspace): 'workspace' leads outside the task; "
            "it must name a path inside the task directory"
        )

    def test_an_unknown_field_and_a_bad_stash_name_are_named(self, tmp_path: Path) -> None:
        path = write_task(tmp_path, "a/one", extra={"colour": "red"}) / "task.yaml"
        with pytest.raises(CorpusError) as err:
            load_task(path)
        assert str(err.value) == f"{path}: colour: unknown field; remove it or check its spelling"
        write_task(tmp_path, "a/one", stash="../st")
        with pytest.raises(CorpusError) as err:
            load_task(path)
        assert str(err.value) == f"{path}: stash: '../st' is not a fixture name (letters, digits, . _ -)"

    def test_a_regex_task_without_its_pattern_is_named(self, tmp_path: Path) -> None:
        path = write_task(tmp_path, "a/one", verifier="regex") / "task.yaml"
        with pytest.raises(CorpusError) as err:
            load_task(path)
        assert str(err.value) == f"{path}: expected_match: required for verifier: regex"

    def test_a_task_yaml_that_is_not_utf8_says_so(self, tmp_path: Path) -> None:
        path = write_task(tmp_path, "a/one") / "task.yaml"
        path.write_bytes(b"id: a/one\ntitle: caf\xe9\n")
        with pytest.raises(CorpusError) as err:
            load_task(path)
        assert str(err.value) == (
            f"{path}: cannot read: 'utf-8' codec can't decode byte 0xe9 in position 20: invalid continuation byte"
        )

    def test_a_yaml_error_says_what_is_wrong_not_what_was_being_read(self, tmp_path: Path) -> None:
        """PyYAML's message opens with its context ("while scanning a quoted scalar"); the one
        line a user gets names the problem itself."""
        path = write_task(tmp_path, "a/one") / "task.yaml"
        path.write_text('id: a/one\ntitle: "unclosed\n')
        with pytest.raises(CorpusError) as err:
            load_task(path)
        assert str(err.value) == f"{path}: invalid YAML (line 3): found unexpected end of stream"

    @pytest.mark.parametrize(("text", "kind"), [("- id: a/one\n", "list"), ("a/one\n", "str"), ("", "NoneType")])
    def test_a_task_yaml_that_is_not_a_mapping_says_what_it_is(self, tmp_path: Path, text: str, kind: str) -> None:
        path = write_task(tmp_path, "a/one") / "task.yaml"
        path.write_text(text)
        with pytest.raises(CorpusError) as err:
            load_task(path)
        assert str(err.value) == f"{path}: expected a mapping of task fields, got {kind}"

    def test_a_slice_that_is_neither_train_nor_eval_is_named(self, tmp_path: Path) -> None:
        path = write_task(tmp_path, "a/one", extra={"slice": "test"}) / "task.yaml"
        with pytest.raises(CorpusError) as err:
            load_task(path)
        assert str(err.value) == f"{path}: slice: 'test' is not one of train, eval"

    def test_a_tasks_root_that_is_not_a_directory_says_which_option(self, tmp_path: Path) -> None:
        with pytest.raises(CorpusError) as err:
            load_corpus(tmp_path / "nowhere", tmp_path)
        assert str(err.value) == f"{tmp_path / 'nowhere'}: tasks root is not a directory; pass --bench-corpus DIR"

    def test_a_missing_stash_overlay_is_named(self, tmp_path: Path) -> None:
        write_stash(tmp_path / "stashes")
        task_dir = write_task(tmp_path / "tasks", "a/one", extra={"stash_overlay": "overlay"})
        with pytest.raises(CorpusError) as err:
            load_corpus(tmp_path / "tasks", tmp_path / "stashes")
        assert str(err.value) == f"{task_dir / 'task.yaml'}: stash_overlay: directory 'overlay' not found"


class TestLenientLoad:
    def test_a_bad_task_hides_none_of_the_tasks_after_it(self, tmp_path: Path) -> None:
        """Each bad task.yaml is its own collection error; the tasks after it (in path order)
        still load and run."""
        write_stash(tmp_path / "stashes")
        write_task(tmp_path / "tasks", "a/one", extra={"difficulty": "brutal"})
        write_task(tmp_path / "tasks", "a/two", extra={"expected_workflows": ["nope"]})
        write_task(tmp_path / "tasks", "b/three")
        write_task(tmp_path / "tasks", "b/four")
        corpus, errors = load_lenient(tmp_path / "tasks", tmp_path / "stashes")
        assert [t.id for t in corpus.tasks] == ["b/four", "b/three"]
        two = tmp_path / "tasks" / "a" / "two" / "task.yaml"
        assert sorted(errors) == [tmp_path / "tasks" / "a" / "one" / "task.yaml", two]
        assert errors[two] == (
            f"{two}: expected_workflows: no workflow spec 'nope'; specs: none (no specs in {tmp_path / 'workflows'})"
        )

    def test_a_duplicate_id_names_the_file_that_has_it_first(self, tmp_path: Path) -> None:
        write_stash(tmp_path / "stashes")
        write_task(tmp_path / "tasks", "a/one")
        write_task(tmp_path / "tasks", "a/two", extra={"id": "a/one"})
        _, errors = load_lenient(tmp_path / "tasks", tmp_path / "stashes")
        two, one = (tmp_path / "tasks" / "a" / name / "task.yaml" for name in ("two", "one"))
        assert errors == {two: f"{two}: id: duplicate task id 'a/one', also in {one}"}


class TestDiscovery:
    def test_a_task_yaml_that_is_not_a_file_is_no_task(self, tmp_path: Path) -> None:
        """A dangling task.yaml link (a task moved away) marks no task; the walk goes on below it."""
        write_task(tmp_path, "a/one")
        (tmp_path / "b" / "gone").mkdir(parents=True)
        (tmp_path / "b" / "gone" / "task.yaml").symlink_to(tmp_path / "nowhere.yaml")
        write_task(tmp_path / "b" / "gone", "c/two")
        assert find_task_files(tmp_path) == [
            tmp_path / "a" / "one" / "task.yaml",
            tmp_path / "b" / "gone" / "c" / "two" / "task.yaml",
        ]

    def test_hidden_directories_are_not_walked(self, tmp_path: Path) -> None:
        """A task copied under .git, .venv or any hidden directory is not part of the corpus."""
        write_task(tmp_path, "a/one")
        write_task(tmp_path / ".backup", "a/one")
        write_task(tmp_path / "a" / ".old", "b/two")
        assert find_task_files(tmp_path) == [tmp_path / "a" / "one" / "task.yaml"]

    def test_has_task_files_is_whether_the_walk_finds_one(self, tmp_path: Path) -> None:
        """The start-up's "is this a corpus" check: what find_task_files says, without the whole walk."""
        write_task(tmp_path / ".backup", "a/one")
        write_task(tmp_path / "_example", "a/one")
        write_task(tmp_path / "base", "a/one")
        assert not has_task_files(tmp_path) and find_task_files(tmp_path) == []
        write_task(tmp_path, "b/two")
        assert has_task_files(tmp_path)


class TestFields:
    def test_a_task_family_reaches_the_reports_coverage(self, tmp_path: Path) -> None:
        """``task_family`` groups tasks in the report's corpus coverage (report/transfer.py)."""
        from pytest_akmbench.report.transfer import corpus_coverage

        one = write_task(tmp_path, "a/one", extra={"task_family": "deploys"}) / "task.yaml"
        two = write_task(tmp_path, "a/two") / "task.yaml"
        tasks = [load_task(one), load_task(two)]
        coverage = corpus_coverage(tasks, [{"id": "a/one"}, {"id": "a/two"}])["coverage"]
        assert coverage["taskFamilyCounts"] == {"deploys": 1, "untagged": 1}

    def test_expected_transfer_refs_are_checked_against_the_stash(self, tmp_path: Path) -> None:
        """``expected_transfer_from`` is loaded: ``validate`` finds a ref the stash lacks."""
        from pytest_akmbench.cell.checks import static_problems

        write_stash(tmp_path / "stashes")
        path = write_task(tmp_path / "tasks", "a/one", extra={"expected_transfer_from": ["skill:gone", "skill:howto"]})
        _, errors, _ = static_problems(tmp_path / "tasks", tmp_path / "stashes")
        assert errors == [f"{path / 'task.yaml'}: expected_transfer_from: 'skill:gone' is not an asset of stash 'st'"]

    @pytest.mark.parametrize(
        "key, value, why",
        [
            ("workflow_focus", 3, "must be a string, got int"),
            ("workflow_failure_category", [1], "must be a string, got list"),
            ("conflict_case", "yes", "must be true or false, got 'yes'"),
            ("stale_guidance_case", 1, "must be true or false, got 1"),
        ],
    )
    def test_fields_nothing_reads_are_still_checked(self, tmp_path: Path, key: str, value: object, why: str) -> None:
        """Fields kept for the task's author (nothing in the bench reads them) are still
        validated: a wrong type is the file's error, not silently accepted."""
        path = write_task(tmp_path, "a/one", extra={key: value}) / "task.yaml"
        with pytest.raises(CorpusError) as err:
            load_task(path)
        assert str(err.value) == f"{path}: {key}: {why}"
