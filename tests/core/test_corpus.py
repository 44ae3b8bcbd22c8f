from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from pytest_akmbench.corpus.hashes import fixture_hash, fixtures_stamp, task_corpus_hash
from pytest_akmbench.corpus.tasks import (
    Corpus,
    Task,
    find_task_files,
    load_corpus,
    load_task,
    restrict,
    select,
    select_with_override,
    slice_of,
)
from pytest_akmbench.errors import CorpusError
from tests.support.corpus import standard_corpus, write_stash, write_task


class TestSliceRule:
    """docs/corpus.md, "Slices": first byte of SHA-1(id) even -> train, odd -> eval."""

    @pytest.mark.parametrize(
        "task_id, first_byte, expected",
        [  # first bytes from `printf '%s' ID | sha1sum`
            ("inkwell/add-healthcheck", 0x8D, "eval"),
            ("drillbit/backup-policy", 0x6E, "train"),
            ("alpha/one", 0xF6, "train"),
            ("beta/two", 0x2B, "eval"),
        ],
    )
    def test_hash_parity(self, task_id: str, first_byte: int, expected: str) -> None:
        """The slice follows the parity of the SHA-1 digest's first byte."""
        assert first_byte % 2 == (expected == "eval")
        assert slice_of(task_id) == expected

    def test_declared_slice_wins(self, tmp_path: Path) -> None:
        """A declared slice overrides the hash rule."""
        write_stash(tmp_path / "s")
        write_task(tmp_path / "t", "inkwell/add-healthcheck", extra={"slice": "train"})
        task = load_task(tmp_path / "t" / "inkwell" / "add-healthcheck" / "task.yaml")
        assert task.slice == "train"


class TestHashes:
    """taskCorpusHash and fixtureContentHash byte-for-byte as docs/corpus.md, "Hashes"."""

    def test_task_corpus_hash_vector(self, tmp_path: Path) -> None:
        """SHA-256 over sorted `id NUL yaml NUL`; vector from `printf ... | sha256sum`."""
        tasks = []
        for task_id in ("b/y", "a/x"):
            d = tmp_path / task_id
            d.mkdir(parents=True)
            (d / "task.yaml").write_text(f"id: {task_id}\n")
            tasks.append(
                Task(
                    id=task_id,
                    title="t",
                    domain="d",
                    difficulty="easy",
                    stash="s",
                    verifier="script",
                    task_dir=d,
                    yaml_text=f"id: {task_id}\n",
                )
            )
        assert task_corpus_hash(tasks) == "7a333fb1cf60784a46e2f862f9aade384a48503487397f771422678a8080dc1d"

    def test_fixture_hash_vector(self, tmp_path: Path) -> None:
        """SHA-256 over sorted relative paths of regular files, `path NUL bytes NUL`."""
        fx = tmp_path / "fx"
        (fx / "skills" / "s").mkdir(parents=True)
        (fx / "MANIFEST.json").write_text("M")
        (fx / "skills" / "s" / "SKILL.md").write_text("S")
        (fx / "link").symlink_to(fx / "MANIFEST.json")  # symlinks are skipped
        assert fixture_hash(fx) == "deb2f97ec4e31dc41691f927f6ac2372c32c2b3bb1832d2f72309f092eab5b1f"

    def test_combined_fixture_hash_vector(self, tmp_path: Path) -> None:
        """The combined hash feeds `name NUL hex NUL` per distinct stash."""
        fx = tmp_path / "fx"
        (fx / "skills" / "s").mkdir(parents=True)
        (fx / "MANIFEST.json").write_text("M")
        (fx / "skills" / "s" / "SKILL.md").write_text("S")
        write_task(tmp_path / "t", "a/one", stash="fx")
        write_task(tmp_path / "t", "a/two", stash="fx")
        tasks = list(load_corpus(tmp_path / "t", tmp_path).tasks)
        fixtures, combined = fixtures_stamp(tasks, tmp_path)
        assert fixtures == {"fx": "deb2f97ec4e31dc41691f927f6ac2372c32c2b3bb1832d2f72309f092eab5b1f"}
        assert combined == "918f2ea161c68a6e03804acecec27506030436e0a8f8d8e81f863ede4dff1172"

    def test_ids_and_paths_sort_by_utf16_code_units(self, tmp_path: Path) -> None:
        """Task ids and fixture paths are fed in JavaScript's order (UTF-16 code units, compared
        here as UTF-16-BE bytes), whatever the characters: shared prefixes, astral, high BMP."""
        names = ["a/y", "a/x", "a/xy", "b", "\uff61", "\U0001f600", "a\U0001f600", "a\uff61", "Z", "\u00e9"]
        tasks = [
            Task(
                id=n,
                title="t",
                domain="d",
                difficulty="easy",
                stash="s",
                verifier="script",
                task_dir=tmp_path,
                yaml_text=n,
            )
            for n in names
        ]
        order = sorted(names, key=lambda n: n.encode("utf-16-be"))
        feed = b"".join(n.encode() + b"\0" + n.encode() + b"\0" for n in order)
        assert task_corpus_hash(tasks) == hashlib.sha256(feed).hexdigest()
        fx = tmp_path / "fx"
        fx.mkdir()
        files = [n.replace("/", "-") for n in names]
        for n in files:
            (fx / n).write_text(n)
        feed = b"".join(
            n.encode() + b"\0" + n.encode() + b"\0" for n in sorted(files, key=lambda n: n.encode("utf-16-be"))
        )
        assert fixture_hash(fx) == hashlib.sha256(feed).hexdigest()

    def test_symlinked_directory_in_a_stash_is_not_followed(self, tmp_path: Path) -> None:
        fx = tmp_path / "fx"
        fx.mkdir()
        (fx / "MANIFEST.json").write_text("M")
        before = fixture_hash(fx)
        (tmp_path / "outside").mkdir()
        (tmp_path / "outside" / "secret.md").write_text("not part of the stash")
        (fx / "linked").symlink_to(tmp_path / "outside", target_is_directory=True)
        assert fixture_hash(fx) == before

    def test_stashes_are_combined_in_utf16_order(self, tmp_path: Path) -> None:
        """Stash names sort as JavaScript sorts them (UTF-16 code units), so the combined hash matches
        the reference bench's: a name beyond U+FFFF sorts before U+FF61, unlike Python's default."""
        high, astral = "\uff61", "\U0001f600"
        tasks = []
        for name in (high, astral):
            (tmp_path / name).mkdir()
            (tmp_path / name / "f").write_text(name)
            tasks.append(
                Task(
                    id=f"a/{len(tasks)}",
                    title="t",
                    domain="d",
                    difficulty="easy",
                    stash=name,
                    verifier="script",
                    task_dir=tmp_path,
                    yaml_text="",
                )
            )
        fixtures, combined = fixtures_stamp(tasks, tmp_path)
        assert list(fixtures) == [astral, high]
        feed = b"".join(n.encode() + b"\0" + fixtures[n].encode() + b"\0" for n in (astral, high))
        assert combined == hashlib.sha256(feed).hexdigest()


class TestDiscovery:
    """Tasks are found by walking the tasks root."""

    def test_examples_and_nested_dirs_are_skipped(self, tmp_path: Path) -> None:
        """`_example` domains are excluded and the walk stops at a task dir."""
        write_task(tmp_path, "a/one")
        write_task(tmp_path, "_example/example-task")
        (tmp_path / "a" / "one" / "workspace" / "task.yaml").write_text("not a task")
        assert [p.parent.name for p in find_task_files(tmp_path)] == ["one"]

    def test_standard_corpus_loads_sorted(self, tmp_path: Path) -> None:
        """Tasks come back sorted by id with their verifier kinds."""
        tasks_root, stashes = standard_corpus(tmp_path)
        corpus = load_corpus(tasks_root, stashes)
        assert [(t.id, t.verifier) for t in corpus.tasks] == [
            ("alpha/pytest-task", "pytest"),
            ("alpha/script-task", "script"),
            ("beta/regex-task", "regex"),
        ]


class TestValidation:
    """A bad task.yaml is a one-line error naming the file and the field."""

    @pytest.mark.parametrize(
        "extra, field_name, fragment",
        [
            ({"difficulty": "brutal"}, "difficulty", "'brutal' is not one of easy, medium, hard"),
            ({"verifier": "vibes"}, "verifier", "'vibes' is not one of script, pytest, regex"),
            ({"memory_ability": "recall"}, "memory_ability", "'recall' is not one of procedural_lookup, "),
            ({"colour": "red"}, "colour", "unknown field; remove it or check its spelling"),
            ({"budget": {"tokens": -5, "wallMs": 100}}, "budget.tokens", "must be a positive number, got -5"),
            ({"budget": {"tokens": "lots"}}, "budget.tokens", "'lots' is not a number"),
            ({"budget": 5}, "budget", "must be a mapping with tokens and wallMs"),
            ({"budget": {"tokens": 10, "turns": 3}}, "budget.turns", "unknown field; use tokens and wallMs"),
            ({"budget": {"wallMs": 0}}, "budget.wallMs", "must be a positive number, got 0"),
            ({"budget": {"tokens": True}}, "budget.tokens", "must be a positive number, got True"),
            ({"budget": {"tokens": 0.5}}, "budget.tokens", "must be at least 1, got 0.5"),
            ({"budget": {"wallMs": "0.9"}}, "budget.wallMs", "must be at least 1, got 0.9"),
            # Past the bounds of corpus/values.py: .inf was an OverflowError traceback, 1e23 ms
            # crashed the cell's timer thread (issue 28, item 10).
            (
                {"budget": {"tokens": float("inf")}},
                "budget.tokens",
                "must be a finite number of at most 1000000000000 tokens, got inf",
            ),
            ({"budget": {"tokens": float("nan")}}, "budget.tokens", "must be a positive number, got nan"),
            (
                {"budget": {"wallMs": "inf"}},
                "budget.wallMs",
                "must be a finite number of at most 604800000 ms (7 days), got inf",
            ),
            (
                {"budget": {"wallMs": 1e23}},
                "budget.wallMs",
                "must be a finite number of at most 604800000 ms (7 days), got 1e+23",
            ),
            (
                {"budget": {"wallMs": 604800001}},
                "budget.wallMs",
                "must be a finite number of at most 604800000 ms (7 days), got 604800001",
            ),
            ({"gold_ref": 3}, "gold_ref", "must be a string, got int"),
            ({"expected_transfer_from": "a/two"}, "expected_transfer_from", "must be a list of asset refs"),
            ({"expected_workflows": "lookup"}, "expected_workflows", "must be a list of non-empty names"),
            ({"expected_workflows": ["lookup", ""]}, "expected_workflows", "must be a list of non-empty names"),
            ({"expected_workflows": ["lookup", 3]}, "expected_workflows", "must be a list of non-empty names"),
            ({"expected_workflows": ["b", "a", "b", "a"]}, "expected_workflows", "'a' is listed twice"),
            ({"title": ""}, "title", "required non-empty string"),
            ({"abstention_case": "yes"}, "abstention_case", "must be true or false, got 'yes'"),
            ({"verifier": "regex"}, "expected_match", "required for verifier: regex"),
            ({"verifier": "regex", "expected_match": "(unclosed"}, "expected_match", "invalid regular expression: "),
        ],
    )
    def test_bad_field(self, tmp_path: Path, extra: dict, field_name: str, fragment: str) -> None:
        """Each invalid value names the file, the field and what is wrong, in one line (the
        whole message: the fix it names is part of it)."""
        write_task(tmp_path, "a/one", extra=extra)
        path = tmp_path / "a" / "one" / "task.yaml"
        with pytest.raises(CorpusError) as err:
            load_task(path)
        message = str(err.value)
        if fragment.endswith(" "):  # a long list, or Python's own wording of a regex error, follows
            assert message.startswith(f"{path}: {field_name}: {fragment}")
        else:
            assert message == f"{path}: {field_name}: {fragment}"
        assert "\n" not in message

    @pytest.mark.parametrize(("raw", "want"), [(None, ()), ([], ()), (["lookup", "feedback"], ("lookup", "feedback"))])
    def test_expected_workflows_are_read_in_order(self, tmp_path: Path, raw: object, want: tuple) -> None:
        write_task(tmp_path, "a/one", extra={"expected_workflows": raw})
        assert load_task(tmp_path / "a" / "one" / "task.yaml").expected_workflows == want

    @pytest.mark.parametrize(
        ("raw", "want"), [(1, 1), ("1", 1), (2.7, 2), (120000, 120000), (604800000, 604800000), (6.048e8, 604800000)]
    )
    def test_a_budget_of_one_is_the_smallest(self, tmp_path: Path, raw: object, want: int) -> None:
        """1 token or 1 ms is the smallest budget a task can set (0.5 is refused above)."""
        write_task(tmp_path, "a/one", extra={"budget": {"tokens": raw, "wallMs": raw}})
        budget = load_task(tmp_path / "a" / "one" / "task.yaml").budget
        assert (budget.tokens, budget.wall_ms) == (want, want)

    def test_control_character_in_yaml(self, tmp_path: Path) -> None:
        """A character YAML refuses outright has no line to name: the message says only what is wrong."""
        write_task(tmp_path, "a/one", raw_yaml="id: a/one\ntitle: bell\x07\n")
        path = tmp_path / "a" / "one" / "task.yaml"
        with pytest.raises(CorpusError) as err:
            load_task(path)
        assert str(err.value).startswith(f"{path}: invalid YAML: unacceptable character #x0007")

    def test_yaml_error_names_its_line(self, tmp_path: Path) -> None:
        """The line a YAML error names is the file's own line number (counted from 1)."""
        write_task(tmp_path, "a/one", raw_yaml="id: a/one\ntitle: x\n  bad: [1\nfoo: 2\n")
        path = tmp_path / "a" / "one" / "task.yaml"
        with pytest.raises(CorpusError) as err:
            load_task(path)
        assert str(err.value) == f"{path}: invalid YAML (line 3): mapping values are not allowed in this context"

    def test_malformed_yaml(self, tmp_path: Path) -> None:
        """Unparsable YAML says where."""
        write_task(tmp_path, "a/one", raw_yaml="id: a/one\ntitle: [unclosed\n")
        with pytest.raises(CorpusError, match=r"task\.yaml: invalid YAML \(line \d+\)"):
            load_task(tmp_path / "a" / "one" / "task.yaml")

    def test_akm_ignored_keys_are_accepted(self, tmp_path: Path) -> None:
        """Keys akm parses but never reads do not break an akm corpus."""
        write_task(tmp_path, "a/one", extra={"metadata": {"x": 1}, "expected_workflows": ["w"]})
        assert load_task(tmp_path / "a" / "one" / "task.yaml").id == "a/one"

    def test_duplicate_id(self, tmp_path: Path) -> None:
        """Two task.yaml files with one id are an error naming both."""
        write_stash(tmp_path / "stashes")
        write_task(tmp_path / "tasks", "a/one")
        write_task(tmp_path / "tasks", "a/two", extra={"id": "a/one"})
        with pytest.raises(CorpusError, match=r"id: duplicate task id 'a/one', also in"):
            load_corpus(tmp_path / "tasks", tmp_path / "stashes")

    def test_akm_keywords_are_the_akm_arms_search_words(self, tmp_path: Path) -> None:
        """A task's akm_keywords reach the akm arm's prompt as its search words; without them the
        domain is searched."""
        from pytest_akmbench.cell.prompts import keywords

        write_stash(tmp_path / "stashes", "st")
        write_task(tmp_path / "tasks", "ship-yard/one", extra={"akm_keywords": "lint the manifest"})
        write_task(tmp_path / "tasks", "ship-yard/two")
        one, two = load_corpus(tmp_path / "tasks", tmp_path / "stashes").tasks
        assert (keywords(one), keywords(two)) == ("lint the manifest", "ship yard")

    def test_missing_stash_fixture(self, tmp_path: Path) -> None:
        """A stash without MANIFEST.json is an error naming the task file and the fix."""
        write_task(tmp_path / "tasks", "a/one", stash="nowhere")
        with pytest.raises(CorpusError) as err:
            load_corpus(tmp_path / "tasks", tmp_path / "stashes")
        assert str(err.value) == (
            f"{tmp_path / 'tasks' / 'a' / 'one' / 'task.yaml'}: stash: fixture 'nowhere' not found "
            f"(no {tmp_path / 'stashes' / 'nowhere' / 'MANIFEST.json'}); fix the name or pass --bench-stashes DIR"
        )


class TestSelectors:
    """Run-config `tasks` selectors (docs/corpus.md, "Selectors")."""

    @pytest.fixture
    def corpus(self, tmp_path: Path) -> Corpus:
        tasks_root, stashes = standard_corpus(tmp_path)
        write_task(tasks_root, "beta/trained", extra={"slice": "train"})
        write_task(tasks_root, "beta/evaluated", extra={"slice": "eval"})
        return load_corpus(tasks_root, stashes)

    def test_all(self, corpus: Corpus) -> None:
        """`all` and no selector give every task and slice label all."""
        assert select(corpus, None) == select(corpus, "all")
        assert len(select(corpus, "all")[0]) == 5

    def test_slice(self, corpus: Corpus) -> None:
        """A slice literal filters by effective slice and labels the selection."""
        tasks, label = select(corpus, "train")
        assert label == "train"
        assert "beta/trained" in [t.id for t in tasks] and "beta/evaluated" not in [t.id for t in tasks]
        assert all(t.slice == "train" for t in tasks)

    def test_domain_and_id(self, corpus: Corpus) -> None:
        """A bare word is a domain, a word with a slash a task id."""
        assert select(corpus, "alpha") == (list(corpus.tasks[:2]), "all")
        assert [t.id for t in select(corpus, "alpha")[0]] == ["alpha/pytest-task", "alpha/script-task"]
        assert select(corpus, "beta/regex-task") == ([corpus.by_id()["beta/regex-task"]], "all")

    def test_list_keeps_order(self, corpus: Corpus) -> None:
        """A list selects those ids in the list's order."""
        assert [t.id for t in select(corpus, ["beta/regex-task", "alpha/script-task"])[0]] == [
            "beta/regex-task",
            "alpha/script-task",
        ]

    @pytest.mark.parametrize(
        "selector, message",
        [
            ("gamma", "no task with id or domain 'gamma'; domains: alpha, beta"),
            ("gamma/x", "task not found: 'gamma/x'"),
            ([], "empty list"),
            (["alpha/script-task", "alpha/script-task"], "listed twice"),
        ],
    )
    def test_errors(self, corpus: Corpus, selector: object, message: str) -> None:
        """Selecting nothing or something unknown is an error, not an empty run."""
        with pytest.raises(CorpusError, match=message):
            select(corpus, selector)  # type: ignore[arg-type]

    def test_restrict(self, corpus: Corpus) -> None:
        """A --bench-tasks override keeps the selection order and rejects strays."""
        tasks, _ = select(corpus, "alpha")
        assert [t.id for t in restrict(tasks, ["alpha/script-task"])] == ["alpha/script-task"]
        with pytest.raises(CorpusError, match="not in the selection: beta/regex-task"):
            restrict(tasks, ["beta/regex-task"])

    def test_override_narrows_inside_the_config_selection(self, corpus: Corpus) -> None:
        """A run config's selector, then --bench-tasks inside it: the slice label is the config's, a
        domain override keeps the selection's order, and a task outside the selection is refused."""
        tasks, label = select_with_override(corpus, "train", "beta")
        train_beta = [t.id for t in select(corpus, "train")[0] if t.domain == "beta"]
        assert label == "train" and [t.id for t in tasks] == train_beta
        assert "beta/trained" in train_beta and "beta/evaluated" not in train_beta
        tasks, _ = select_with_override(corpus, ["beta/regex-task", "alpha/script-task", "beta/trained"], "beta")
        assert [t.id for t in tasks] == ["beta/regex-task", "beta/trained"]
        assert select_with_override(corpus, "alpha", None) == select(corpus, "alpha")
        with pytest.raises(CorpusError, match="no task with id or domain 'beta'"):
            select_with_override(corpus, "alpha", "beta")


class TestWorkspaceLayers:
    """`base/workspace/` and `base/domains/<domain>/workspace/` under the tasks root."""

    def layered(self, tmp_path: Path) -> tuple[Path, Path]:
        tasks, stashes = standard_corpus(tmp_path)
        for rel, text in {
            "base/workspace/Makefile": "shared\n",
            "base/workspace/notes.txt": "base\n",
            "base/workspace/.gitkeep": "",
            "base/domains/alpha/workspace/notes.txt": "alpha\n",
            "base/domains/alpha/workspace/lib/helper.py": "x = 1\n",
            "alpha/script-task/workspace/notes.txt": "task\n",
        }.items():
            (tasks / rel).parent.mkdir(parents=True, exist_ok=True)
            (tasks / rel).write_text(text)
        return tasks, stashes

    def test_layers_load_and_base_is_no_domain(self, tmp_path: Path) -> None:
        """Each task gets the layers of its domain; `base` holds no task and is not a domain."""
        tasks, stashes = self.layered(tmp_path)
        (tasks / "base" / "workspace" / "task.yaml").write_text("not: a task\n")
        corpus = load_corpus(tasks, stashes).by_id()
        assert sorted(corpus) == ["alpha/pytest-task", "alpha/script-task", "beta/regex-task"]
        assert corpus["alpha/script-task"].layers == (
            tasks / "base" / "workspace",
            tasks / "base" / "domains" / "alpha" / "workspace",
        )
        assert corpus["beta/regex-task"].layers == (tasks / "base" / "workspace",)

    def test_copy_order_later_layers_win(self, tmp_path: Path) -> None:
        """base, then the domain's layer, then the task's own workspace; .gitkeep files skipped."""
        from pytest_akmbench.cell.rundir import copy_workspace

        tasks, stashes = self.layered(tmp_path)
        corpus = load_corpus(tasks, stashes).by_id()
        copy_workspace(corpus["alpha/script-task"], tmp_path / "ws")
        assert (tmp_path / "ws" / "notes.txt").read_text() == "task\n"
        assert (tmp_path / "ws" / "Makefile").read_text() == "shared\n"
        assert (tmp_path / "ws" / "lib" / "helper.py").is_file() and not (tmp_path / "ws" / ".gitkeep").exists()
        copy_workspace(corpus["beta/regex-task"], tmp_path / "ws2")
        assert (tmp_path / "ws2" / "notes.txt").read_text() == "base\n"

    def test_layers_are_in_the_task_hash(self, tmp_path: Path) -> None:
        """Editing a shared layer changes the content hash of the tasks that use it, and only theirs."""
        from pytest_akmbench.cell.rundir import task_hash

        tasks, stashes = self.layered(tmp_path)
        before = {t.id: task_hash(t) for t in load_corpus(tasks, stashes).tasks}
        (tasks / "base" / "domains" / "alpha" / "workspace" / "lib" / "helper.py").write_text("x = 2\n")
        after = {t.id: task_hash(t) for t in load_corpus(tasks, stashes).tasks}
        assert before["alpha/script-task"] != after["alpha/script-task"]
        assert before["beta/regex-task"] == after["beta/regex-task"]
