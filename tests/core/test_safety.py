"""Inputs that must never make a run hang, read outside its task, leak a key or blow up memory.

Each test is the regression test of one item of "never silently wrong" (see the README's
"What the harness refuses" section).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_akmbench.agents.providers import validate_providers
from pytest_akmbench.cell.runner import SAMPLE_SCHEMA
from pytest_akmbench.corpus.config import resolve
from pytest_akmbench.corpus.tasks import load_corpus, load_lenient
from pytest_akmbench.corpus.values import MAX_SEEDS
from pytest_akmbench.errors import ConfigError
from pytest_akmbench.run.resume import StoredSamples
from pytest_akmbench.store.samples import fingerprint_hash
from tests.support.corpus import write_stash, write_task

EVIL = "(a+)+$"
# 40 a's and a "!": (a+)+$ backtracks through 2^40 ways of splitting the a's before failing.
EVIL_TEXT = "a" * 40 + "!"


class TestRegexVerifierTimeout:
    """Item 10: an expected_match runs under the verify timeout like every verifier."""

    def test_catastrophic_regex_is_stopped_at_the_timeout(self, tmp_path: Path) -> None:
        """A pathological pattern fails as 'verifier timed out' within the timeout, not after minutes."""
        tasks, stashes = tmp_path / "tasks", tmp_path / "stashes"
        write_stash(stashes)
        write_task(tasks, "d/evil", verifier="regex", extra={"expected_match": EVIL})
        # In a child process: a regex running in this interpreter could not be interrupted here either.
        code = f"""
import json, sys, time
from pathlib import Path
from pytest_akmbench.corpus.tasks import load_corpus
from pytest_akmbench.system.procs import ProcessTracker
from pytest_akmbench.cell.verifiers import verify
task = load_corpus(Path({str(tasks)!r}), Path({str(stashes)!r})).by_id()["d/evil"]
procs = ProcessTracker("regex-timeout-test")
started = time.monotonic()
v = verify(task, workspace=Path({str(tmp_path)!r}), final_text={EVIL_TEXT!r}, scratch=Path({str(tmp_path)!r}),
           env={{"PATH": "/usr/bin:/bin"}}, procs=procs, timeout_s=1)
procs.kill_all()
print(json.dumps({{"passed": v.passed, "timed_out": v.timed_out, "error": v.error,
                  "elapsed": time.monotonic() - started, "tail": v.tail}}))
"""
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        verdict = json.loads(proc.stdout)
        assert verdict["timed_out"] and not verdict["passed"] and verdict["error"] is None
        assert verdict["elapsed"] < 10
        assert "timed out" in verdict["tail"]

    def test_regex_still_matches_and_fails_normally(self, tmp_path: Path) -> None:
        """Ordinary patterns give the same verdicts as before, text with any characters included."""
        from pytest_akmbench.cell.verifiers import verify
        from pytest_akmbench.system.procs import ProcessTracker

        tasks, stashes = tmp_path / "tasks", tmp_path / "stashes"
        write_stash(stashes)
        write_task(tasks, "d/re", verifier="regex", extra={"expected_match": r"answer is 4\d$"})
        task = load_corpus(tasks, stashes).by_id()["d/re"]
        procs = ProcessTracker("regex-normal-test")
        env = {"PATH": "/usr/bin:/bin"}
        kw = dict(workspace=tmp_path, scratch=tmp_path, env=env, procs=procs, timeout_s=30)
        assert verify(task, final_text="é ✓ \x00 the answer is 42", **kw).passed
        failed = verify(task, final_text="the answer is 50", **kw)
        assert not failed.passed and failed.error is None and not failed.timed_out
        assert "did not match" in failed.output


class TestPathsStayInsideTheTask:
    """Item 11: stash_overlay, the workspace and verifier paths must not lead outside the task."""

    def corpus(self, tmp_path: Path) -> tuple[Path, Path]:
        tasks, stashes = tmp_path / "corpus" / "tasks", tmp_path / "corpus" / "stashes"
        write_stash(stashes)
        (tmp_path / "outside_dir").mkdir()
        (tmp_path / "outside_dir" / "secret.md").write_text("not the task's\n")
        return tasks, stashes

    def test_overlay_outside_the_task_is_refused(self, tmp_path: Path) -> None:
        """A ../ overlay is an error naming the file and field, not a copy of another directory."""
        tasks, stashes = self.corpus(tmp_path)
        task_dir = write_task(tasks, "d/escape", extra={"stash_overlay": "../../../../outside_dir"})
        assert (task_dir / "../../../../outside_dir").resolve() == (tmp_path / "outside_dir").resolve()
        _, errors = load_lenient(tasks, stashes)
        message = errors[task_dir / "task.yaml"]
        assert message.startswith(f"{task_dir / 'task.yaml'}: stash_overlay: ")
        assert "inside the task" in message

    def test_absolute_overlay_is_refused(self, tmp_path: Path) -> None:
        tasks, stashes = self.corpus(tmp_path)
        task_dir = write_task(tasks, "d/abs", extra={"stash_overlay": str(tmp_path / "outside_dir")})
        _, errors = load_lenient(tasks, stashes)
        assert "stash_overlay: " in errors[task_dir / "task.yaml"]

    @pytest.mark.parametrize("rel", ["overlay", "workspace", "verify.sh", "tests", "solution/solve.sh"])
    def test_symlink_out_of_the_task_is_refused(self, tmp_path: Path, rel: str) -> None:
        """A symlink inside the task pointing outside it is refused for every path the harness uses."""
        tasks, stashes = self.corpus(tmp_path)
        kind = "pytest" if rel == "tests" else "script"
        extra = {"stash_overlay": "overlay"} if rel == "overlay" else {}
        task_dir = write_task(tasks, "d/link", verifier=kind, extra=extra)
        target = task_dir / rel
        if target.is_dir():
            import shutil

            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
        target.parent.mkdir(parents=True, exist_ok=True)
        outside = tmp_path / "outside_dir"
        target.symlink_to(outside / "secret.md" if rel.endswith(".sh") else outside)
        _, errors = load_lenient(tasks, stashes)
        message = errors.get(task_dir / "task.yaml", "")
        assert "outside the task" in message or "inside the task" in message, message
        assert f"{task_dir / 'task.yaml'}: " in message

    def test_overlay_inside_the_task_still_loads(self, tmp_path: Path) -> None:
        tasks, stashes = self.corpus(tmp_path)
        task_dir = write_task(tasks, "d/fine", extra={"stash_overlay": "extra/../overlay"})
        (task_dir / "overlay").mkdir()
        assert load_corpus(tasks, stashes).by_id()["d/fine"].stash_overlay == "extra/../overlay"


class TestCredentials:
    """Item 13: any sk- string anywhere (headers included) and literal auth headers are refused."""

    def entry(self, **options) -> dict:
        return {
            "schemaVersion": 1,
            "providers": {
                "local": {
                    "npm": "@ai-sdk/openai-compatible",
                    "options": {"baseURL": "http://127.0.0.1:1/v1", **options},
                    "models": {"m": {"name": "m"}},
                }
            },
        }

    def test_short_sk_key_in_a_header_is_refused(self) -> None:
        data = self.entry(headers={"Authorization": "Bearer sk-test-SECRET123"})
        with pytest.raises(ConfigError) as err:
            validate_providers(data, "p.json")
        assert "sk-test-SECRET123" not in str(err.value) and "p.json" in str(err.value)

    @pytest.mark.parametrize("header", ["Authorization", "x-api-key", "Api-Key", "X-Auth-Token"])
    def test_literal_credential_header_is_refused(self, header: str) -> None:
        data = self.entry(headers={header: "Bearer abcdef123456"})
        with pytest.raises(ConfigError, match=r"headers\..*env"):
            validate_providers(data, "p.json")

    def test_header_with_env_ref_and_harmless_words_load(self) -> None:
        data = self.entry(headers={"Authorization": "Bearer {env:LOCAL_KEY}", "X-Title": "risk-free task-name"})
        loaded = validate_providers(data, "p.json")
        assert loaded.env_refs == frozenset({"LOCAL_KEY"})


class TestAbsurdMatrices:
    """Item 13: --bench-seeds has an upper bound; a huge matrix is a one-line error, not 3 GB of items."""

    def settings(self, tmp_path: Path, seeds: object):
        return resolve(
            rootdir=tmp_path,
            cwd=tmp_path,
            config=None,
            cli={"seeds": seeds},
            ini={},
            tasks_root=tmp_path,
            stashes_root=tmp_path,
        )

    def test_seeds_beyond_the_limit(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match=rf"^--bench-seeds: .*at most {MAX_SEEDS}"):
            self.settings(tmp_path, str(10**8))

    def test_seeds_beyond_the_limit_in_a_run_config(self, tmp_path: Path) -> None:
        from pytest_akmbench.corpus.config import load_run_config

        (tmp_path / "run.json").write_text(json.dumps({"schemaVersion": 1, "seeds": MAX_SEEDS + 1}))
        with pytest.raises(ConfigError, match=r"run\.json: seeds: .*at most"):
            load_run_config(tmp_path / "run.json")

    def test_matrix_beyond_the_limit(self) -> None:
        from pytest_akmbench.corpus.values import MAX_CELLS, check_matrix

        check_matrix(MAX_CELLS // 2, 2, 1)
        with pytest.raises(ConfigError, match=r"cells is more than"):
            check_matrix(MAX_CELLS, 2, 1)

    def test_seeds_at_the_limit(self, tmp_path: Path) -> None:
        assert self.settings(tmp_path, str(MAX_SEEDS)).seeds == MAX_SEEDS


class TestUnknownSchema:
    """Item 7: a store record of an unknown schema version is never trusted as done."""

    def record(self, schema: object) -> dict:
        fp = {"model": "m"}
        return {
            "schema": schema,
            "task_id": "d/t",
            "arm": "akm",
            "seed": 1,
            "outcome": "pass",
            "fingerprint": fp,
            "fingerprint_hash": fingerprint_hash(fp),
        }

    @pytest.mark.parametrize("schema", [SAMPLE_SCHEMA + 1, None, "1"])
    def test_unknown_schema_is_not_done(self, schema: object) -> None:
        record = self.record(schema)
        if schema is None:
            del record["schema"]
        stored = StoredSamples([record])
        assert stored.done(("d/t", "akm", 1), record["fingerprint_hash"]) is None
        assert stored.for_report([(("d/t", "akm", 1), record["fingerprint_hash"])]) == []
        assert any("schema" in w for w in stored.warnings)

    def test_known_schema_is_done(self) -> None:
        record = self.record(SAMPLE_SCHEMA)
        assert StoredSamples([record]).done(("d/t", "akm", 1), record["fingerprint_hash"]) == record
