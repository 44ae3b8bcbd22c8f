"""Bad inputs that escaped the one-line error rule (issue 28, item 10): each is now one line naming
the file (and field or key) and the fix, found by ``validate`` and before a bench runs a cell
(README, "What the harness refuses, and when"). The bench-run side is tests/plugin/test_bad_inputs.py."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from pytest_akmbench.agents.providers import load_providers_file
from pytest_akmbench.agents.settings import table
from pytest_akmbench.cell.checks import static_problems
from pytest_akmbench.cell.rundir import LARGE_WORKSPACE, copy_workspace, large_workspace, tree_hash
from pytest_akmbench.cli.validate import validate
from pytest_akmbench.corpus import config
from pytest_akmbench.corpus.hashes import fixture_hash
from pytest_akmbench.corpus.strict import DuplicateKey, literal_keys, load_yaml, loads_json
from pytest_akmbench.corpus.tasks import load_corpus, load_lenient
from pytest_akmbench.corpus.values import load_baseline
from pytest_akmbench.corpus.workflows import load_spec
from pytest_akmbench.errors import ConfigError, CorpusError
from pytest_akmbench.system.procs import ProcessTracker
from tests.support.corpus import standard_corpus, write_task

# The whole table (the agents' rows too): the run-config fields of every built-in agent load.
load_run_config = functools.partial(config.load_run_config, table=table())

SECRET = "sk-" + "proj4Qq7Rr2Ss9Tt"


class TestDuplicateKeys:
    """Item 10.3: json and yaml keep the last of two equal keys without a word; every input file
    the harness reads refuses them, naming the file and the key."""

    def test_json_and_yaml_readers_refuse_a_key_given_twice(self) -> None:
        assert loads_json('{"a": {"b": 1}, "c": [{"b": 2}, {"b": 3}]}') == {"a": {"b": 1}, "c": [{"b": 2}, {"b": 3}]}
        with pytest.raises(DuplicateKey) as err:
            loads_json('{"a": 1, "b": {"c": 1, "c": 2}}')
        assert str(err.value) == "key 'c' is given twice in one object (JSON would keep only the last); keep one"
        assert load_yaml("base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  x: 3\n")["d"] == {
            "x": 3,
            "y": 2,
        }  # a merge may be overridden
        cases = (("a: 1\nb: 2\na: 3\n", "a", 3, 1), ("a:\n  x: 1\n  x: 2\n", "x", 3, 2), ("{a: 1, a: 1}\n", "a", 1, 1))
        for text, key, line, first in cases:
            with pytest.raises(yaml.YAMLError) as err:
                load_yaml(text)
            assert err.value.problem == f"duplicate key {key!r} (first at line {first}); keep one"  # type: ignore[attr-defined]
            assert err.value.problem_mark.line + 1 == line  # type: ignore[attr-defined]

    def test_a_task_yaml_with_a_key_twice(self, tmp_path: Path) -> None:
        tasks_root, stashes = standard_corpus(tmp_path)
        path = tasks_root / "alpha" / "script-task" / "task.yaml"
        path.write_text(path.read_text() + "budget:\n  tokens: 5\n")
        line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if text == "budget:")
        _, errors = load_lenient(tasks_root, stashes)
        assert errors == {
            path: f"{path}: invalid YAML (line {line + 3}): duplicate key 'budget' (first at line {line}); keep one"
        }

    def test_a_run_config_with_a_key_twice(self, tmp_path: Path) -> None:
        path = tmp_path / "run.json"
        path.write_text('{"schemaVersion": 1, "seeds": 1, "seeds": 5}')
        with pytest.raises(ConfigError) as err:
            load_run_config(path)
        assert str(err.value) == (
            f"{path}: key 'seeds' is given twice in one object (JSON would keep only the last); keep one"
        )

    def test_a_providers_file_and_a_baseline_with_a_key_twice(self, tmp_path: Path) -> None:
        providers = tmp_path / "providers.json"
        providers.write_text(
            '{"schemaVersion": 1, "defaultModel": "local/a", "providers": {}, "defaultModel": "local/b"}'
        )
        with pytest.raises(ConfigError) as err:
            load_providers_file(providers)
        assert str(err.value) == (
            f"{providers}: key 'defaultModel' is given twice in one object (JSON would keep only the last); keep one"
        )
        baseline = tmp_path / "baseline.json"
        baseline.write_text('{"a/one": 0.5, "a/one": 0.9}')
        with pytest.raises(ConfigError, match=r"key 'a/one' is given twice in one object") as err:
            load_baseline(baseline)
        assert str(err.value).startswith(f"{baseline}: ")

    def test_a_workflow_spec_with_a_key_twice(self, tmp_path: Path) -> None:
        path = tmp_path / "w.yaml"
        path.write_text("id: lookup\ntitle: t\nid: other\n")
        with pytest.raises(CorpusError) as err:
            load_spec(path)
        assert str(err.value) == f"{path}: invalid YAML: duplicate key 'id' (first at line 1); keep one"


class TestVerifierFiles:
    """Item 10.4: a task whose verifier has nothing to run, or a task.yaml that is a directory,
    passed validate; every cell then was a harness error, or the task was silently no task."""

    def test_a_script_task_without_verify_sh(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        tasks_root, stashes = standard_corpus(tmp_path)
        task = tasks_root / "alpha" / "script-task"
        (task / "verify.sh").unlink()
        assert validate(tasks_root, stashes, []) == 1
        out = capsys.readouterr().out
        assert f"error: {task / 'task.yaml'}: verifier: script, but there is no {task / 'verify.sh'}; add it" in out
        assert "2 tasks in 2 domains, 0 configs: 1 errors" in out

    @pytest.mark.parametrize("tests", [None, {}, {"helper.py": "x = 1\n"}, {"sub/conftest.py": ""}])
    def test_a_pytest_task_without_test_files(self, tmp_path: Path, tests: dict[str, str] | None) -> None:
        tasks_root, stashes = standard_corpus(tmp_path)
        task = tasks_root / "alpha" / "pytest-task"
        (task / "tests" / "test_out.py").unlink()
        if tests is None:
            (task / "tests").rmdir()
        for rel, text in (tests or {}).items():
            (task / "tests" / rel).parent.mkdir(parents=True, exist_ok=True)
            (task / "tests" / rel).write_text(text)
        _, errors = load_lenient(tasks_root, stashes)
        assert errors == {
            task / "task.yaml": f"{task / 'task.yaml'}: verifier: pytest, but {task / 'tests'} holds no test_*.py; "
            "add the tests there"
        }

    @pytest.mark.parametrize("name", ["test_more.py", "deep/test_deep.py", "deep/more_test.py"])
    def test_pytest_finds_tests_where_pytest_would(self, tmp_path: Path, name: str) -> None:
        tasks_root, stashes = standard_corpus(tmp_path)
        task = tasks_root / "alpha" / "pytest-task"
        (task / "tests" / "test_out.py").unlink()
        (task / "tests" / name).parent.mkdir(parents=True, exist_ok=True)
        (task / "tests" / name).write_text("def test_x():\n    pass\n")
        assert "alpha/pytest-task" in load_corpus(tasks_root, stashes).by_id()

    def test_a_task_yaml_that_is_a_directory(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        tasks_root, stashes = standard_corpus(tmp_path)
        odd = tasks_root / "beta" / "dir-task" / "task.yaml"
        odd.mkdir(parents=True)
        write_task(odd, "gamma/inside")  # nothing below it is a task either
        assert validate(tasks_root, stashes, []) == 1
        out = capsys.readouterr().out
        assert f"error: {odd}: is a directory; replace it with the task's YAML file of fields (docs/corpus.md)" in out
        assert "3 tasks in 2 domains, 0 configs: 1 errors" in out


class TestLiteralKeys:
    """Item 10.5: an sk- key anywhere in a run config is refused whatever the agent, by its JSON
    path, never printed."""

    def test_every_place_is_named_by_its_path(self) -> None:
        data = {"a": [{"b": SECRET}], "c": {SECRET: 1}, "d": "no sk_ here", "e": "ask-me", "f": 3}
        assert literal_keys(data) == ["a[0].b", "a key under c"]

    @pytest.mark.parametrize("agent", ["oracle", "nop", "opencode"])
    @pytest.mark.parametrize(
        ("extra", "where"),
        [
            ({"description": f"key {SECRET}"}, "description"),
            ({"providers": {"local": {"npm": "x", "options": {"apiKey": SECRET}}}}, "providers.local.options.apiKey"),
            (
                {"opencodeConfig": {"provider": {"l": {"options": {"headers": {"X": SECRET}}}}}},
                "opencodeConfig.provider.l.options.headers.X",
            ),
        ],
    )
    def test_a_run_config_with_a_literal_key(self, tmp_path: Path, agent: str, extra: dict, where: str) -> None:
        path = tmp_path / "run.json"
        path.write_text(json.dumps({"schemaVersion": 1, "agent": agent, **extra}))
        with pytest.raises(ConfigError) as err:
            load_run_config(path)
        assert str(err.value) == (
            f"{path}: {where}: looks like a literal API key (sk-...); a run config holds no keys: reference it as "
            "{env:NAME} in a providers entry and export NAME"
        )
        assert SECRET not in str(err.value)


class TestLargeWorkspaces:
    """Item 10.7: a 1 GB sparse workspace file made each cell's process 2.1 GB large (the task hash
    read it whole) and cost a 1 GB copy per cell, without a word."""

    def sparse(self, path: Path, size: int, data: dict[int, bytes] | None = None) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as f:
            f.truncate(size)
            for offset, chunk in (data or {}).items():
                f.seek(offset)
                f.write(chunk)
        return path

    def test_the_hash_streams_and_is_unchanged(self, tmp_path: Path) -> None:
        """The same digest as before (fingerprints stay valid), without the file in memory: a
        separate process hashing a 512 MB file stays far below its size."""
        root = tmp_path / "tree"
        (root / "sub").mkdir(parents=True)
        (root / "a.txt").write_text("alpha\n")
        (root / "sub" / "b.bin").write_bytes(os.urandom(3 * 1024 * 1024 + 7))
        old = hashlib.sha256()
        for rel in ("a.txt", "sub/b.bin"):
            old.update(rel.encode() + b"\0" + (root / rel).read_bytes() + b"\0")
        assert tree_hash(root) == old.hexdigest()
        assert (
            fixture_hash(root)
            == hashlib.sha256(
                b"".join(rel.encode() + b"\0" + (root / rel).read_bytes() + b"\0" for rel in ("a.txt", "sub/b.bin"))
            ).hexdigest()
        )
        self.sparse(root / "big.bin", 512 * 1024 * 1024)
        # VmHWM, the peak of this process's own memory: ru_maxrss would carry the forking test
        # worker's size across exec.
        code = (
            "import re; from pathlib import Path; from pytest_akmbench.cell.rundir import tree_hash; "
            "from pytest_akmbench.corpus.hashes import fixture_hash; "
            f"tree_hash(Path({str(root)!r})); fixture_hash(Path({str(root)!r})); "
            "print(int(re.search(r'VmHWM:\\s+(\\d+) kB', Path('/proc/self/status').read_text()).group(1)) // 1024)"
        )
        rss_mb = int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
        assert rss_mb < 200, f"{rss_mb} MB to hash a 512 MB file"

    def test_the_copy_keeps_holes_and_content(self, tmp_path: Path) -> None:
        tasks_root, stashes = standard_corpus(tmp_path)
        workspace = tasks_root / "alpha" / "script-task" / "workspace"
        holes = self.sparse(
            workspace / "data" / "holes.bin", 64 * 1024 * 1024, {5: b"head", 40 * 1024 * 1024: b"middle"}
        )
        os.chmod(holes, 0o640)
        task = load_corpus(tasks_root, stashes).by_id()["alpha/script-task"]
        copy_workspace(task, tmp_path / "copy")
        copied = tmp_path / "copy" / "data" / "holes.bin"
        assert copied.stat().st_size == holes.stat().st_size
        assert hashlib.sha256(copied.read_bytes()).digest() == hashlib.sha256(holes.read_bytes()).digest()
        assert copied.stat().st_blocks * 512 < 4 * 1024 * 1024  # the holes stayed holes
        assert copied.stat().st_mode & 0o777 == 0o640 and copied.stat().st_mtime == holes.stat().st_mtime
        assert (tmp_path / "copy" / "README.md").read_text() == (workspace / "README.md").read_text()

    def test_a_large_workspace_is_a_warning_of_validate(self, tmp_path: Path) -> None:
        tasks_root, stashes = standard_corpus(tmp_path)
        workspace = tasks_root / "alpha" / "script-task" / "workspace"
        readme = (workspace / "README.md").stat().st_size
        self.sparse(workspace / "big.bin", LARGE_WORKSPACE - readme)
        task = load_corpus(tasks_root, stashes).by_id()["alpha/script-task"]
        assert large_workspace(task) is None  # at the limit: no warning
        self.sparse(workspace / "big.bin", LARGE_WORKSPACE - readme + 1)
        _, errors, warnings = static_problems(tasks_root, stashes)
        assert errors == []
        assert warnings == [
            f"{task.yaml_path}: workspace: 100 MB (shared layers included) is copied into every cell's run dir; "
            "keep it under 100 MB (large data belongs outside the workspace)"
        ]


def test_a_timeout_past_what_a_thread_can_wait_is_no_crash(tmp_path: Path) -> None:
    """Item 10.2: the timer of a command (a cell's wall budget, the verify timeout) waited
    ``timeout_s`` in a thread, and 1e20 s raised OverflowError there: the command then ran without
    any bound. Budgets are bounded now (test_values.py); an adapter may still pass any number."""
    errors: list[BaseException | None] = []
    hook = threading.excepthook
    threading.excepthook = lambda args: errors.append(args.exc_value)
    try:
        code, out, timed_out = ProcessTracker("test-bad-inputs").run(
            ["bash", "-c", "echo ok"], cwd=tmp_path, env=dict(os.environ), timeout_s=1e20
        )
    finally:
        threading.excepthook = hook
    assert (code, out, timed_out) == (0, "ok\n", False)
    assert errors == []
