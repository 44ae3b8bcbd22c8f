"""Tests for the cell fingerprint (runner.fingerprint, store.fingerprint_hash): a stored sample is
reused only while everything the cell's result depends on is unchanged, and always then.

Each test builds a real corpus on disk, takes the fingerprint hash a run would store, changes one
thing the way a user would (edit a stash file, bump a prompt, pass another budget) and starts a
new run: its hash must differ exactly when the stored sample no longer measures the same cell.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Any

import pytest

from pytest_akmbench.agents import NopAgent
from pytest_akmbench.agents.model import setup_digest
from pytest_akmbench.cell import prompts
from pytest_akmbench.cell.akm import AkmInfo
from pytest_akmbench.cell.context import Cell, RunContext, cell_fingerprint, fingerprint, limits_for
from pytest_akmbench.cell.rundir import tree_hash
from pytest_akmbench.corpus.hashes import fixture_hash
from pytest_akmbench.corpus.tasks import Task, load_corpus
from pytest_akmbench.store.samples import fingerprint_hash
from tests.support.corpus import standard_corpus, write_task


class Root:
    """A corpus on disk; ``task()`` reloads it (a new run), ``ctx()`` starts a new run's context."""

    def __init__(self, base: Path) -> None:
        self.tasks_root, self.stashes = standard_corpus(base)
        write_task(self.tasks_root, "alpha/overlay", extra={"stash_overlay": "overlay"})
        (self.tasks_root / "alpha" / "overlay" / "overlay" / "knowledge").mkdir(parents=True)
        (self.tasks_root / "alpha" / "overlay" / "overlay" / "knowledge" / "extra.md").write_text("extra\n")
        write_task(
            self.tasks_root,
            "alpha/bare",
            raw_yaml="id: alpha/bare\ntitle: no budget of its own\n"
            "domain: alpha\ndifficulty: easy\nstash: st\nverifier: script\n",
        )
        self.base = base

    def task(self, task_id: str = "alpha/script-task") -> Task:
        return load_corpus(self.tasks_root, self.stashes).by_id()[task_id]

    def ctx(self, **kw: Any) -> RunContext:
        defaults: dict[str, Any] = dict(
            run_id="run",
            tmp_root=self.base / "runs",
            stashes_root=self.stashes,
            agent=NopAgent(),
            model="local/m",
            budget_tokens=1000,
            budget_wall_ms=20000,
            budget_turns=None,
            verify_timeout_s=30.0,
        )
        defaults.update(kw)
        return RunContext(**defaults)

    def hash(self, arm: str, task_id: str = "alpha/script-task", **kw: Any) -> str:
        return fingerprint_hash(cell_fingerprint(Cell(self.task(task_id), arm, 1), self.ctx(**kw)))


@pytest.fixture
def root(tmp_path: Path) -> Root:
    return Root(tmp_path)


AKM = AkmInfo(path=Path("/opt/akm"), version="0.9.0", line="0.9", sha256="a" * 64, config="{}")


class TestWhatInvalidates:
    def test_stash_edit_invalidates_the_akm_arm_only(self, root: Root) -> None:
        """Editing a file of the task's stash re-runs its akm cells; noakm never sees the stash."""
        akm, noakm = root.hash("akm"), root.hash("noakm")
        (root.stashes / "st" / "skills" / "howto" / "SKILL.md").write_text("Write greetings in UPPER case.\n")
        assert root.hash("akm") != akm
        assert root.hash("noakm") == noakm

    def test_new_stash_file_and_overlay_edit_invalidate(self, root: Root) -> None:
        """A file added to the stash, or an edit to the task's stash overlay, changes the akm cells."""
        before = root.hash("akm", "alpha/overlay")
        (root.stashes / "st" / "knowledge").mkdir()
        (root.stashes / "st" / "knowledge" / "new.md").write_text("new\n")
        added = root.hash("akm", "alpha/overlay")
        assert added != before
        (root.tasks_root / "alpha" / "overlay" / "overlay" / "knowledge" / "extra.md").write_text("changed\n")
        assert root.hash("akm", "alpha/overlay") != added

    def test_task_edit_invalidates_both_arms(self, root: Root) -> None:
        """A verifier or workspace edit changes what every arm is measured on."""
        akm, noakm = root.hash("akm"), root.hash("noakm")
        verify = root.tasks_root / "alpha" / "script-task" / "verify.sh"
        verify.write_text(verify.read_text() + "# stricter\n")
        assert root.hash("akm") != akm and root.hash("noakm") != noakm
        again = root.hash("noakm")
        (root.tasks_root / "alpha" / "script-task" / "workspace" / "notes.md").write_text("hint\n")
        assert root.hash("noakm") != again

    def test_shared_workspace_layer_invalidates(self, root: Root) -> None:
        """A file in base/workspace, copied into every task's workspace, is part of each task."""
        before = root.hash("noakm")
        (root.tasks_root / "base" / "workspace").mkdir(parents=True)
        (root.tasks_root / "base" / "workspace" / "shared.txt").write_text("shared\n")
        assert root.hash("noakm") != before

    def test_prompt_version_invalidates(self, root: Root) -> None:
        """A new prompt (version or template) means a new measurement."""
        task, ctx = root.task(), root.ctx()
        current = fingerprint(task, "akm", ctx, prompts.prompt_version("akm"))
        bumped = fingerprint(task, "akm", ctx, prompts.prompt_version("akm") + "-next")
        assert fingerprint_hash(current) != fingerprint_hash(bumped)
        assert current["prompt_version"] == prompts.prompt_version("akm") != prompts.prompt_version("noakm")

    @pytest.mark.parametrize(
        "change",
        [
            {"budget_turns": 12},
            {"cap_tokens": 500},
            {"cap_wall_ms": 1000},
            {"model": "local/other"},
            {"sandbox": "bwrap"},
            {"akm": AKM},
        ],
    )
    def test_run_settings_invalidate(self, root: Root, change: dict[str, Any]) -> None:
        """A turn budget, a cap below the task's budget, the model, the sandbox or the akm binary
        changes the akm cells."""
        assert root.hash("akm", **change) != root.hash("akm")

    def test_a_sandboxed_agents_host_network_invalidates(self, root: Root) -> None:
        """--bench-network host is another measurement than the isolated default; unsandboxed
        cells have the host's network either way, so it does not change theirs."""
        isolated = root.hash("noakm", sandbox="bwrap")
        assert root.hash("noakm", sandbox="bwrap", network="host") != isolated
        assert root.hash("noakm", sandbox="bwrap", network="isolated") == isolated
        assert root.hash("noakm", network="host") == root.hash("noakm")

    def test_samples_from_before_the_cell_boundary_do_not_count(self, root: Root) -> None:
        """A sample stored before the verifier ran sandboxed (boundary 2) could hold a forged pass:
        its fingerprint, the same but for the boundary, does not match a cell's now."""
        fp = cell_fingerprint(Cell(root.task(), "noakm", 1), root.ctx())
        old = {k: v for k, v in fp.items() if k != "boundary"}
        assert fingerprint_hash(old) != fingerprint_hash(fp)

    @pytest.mark.parametrize("change", [{"budget_tokens": 999}, {"budget_wall_ms": 19000}])
    def test_run_default_budget_invalidates_tasks_without_their_own(self, root: Root, change: dict[str, Any]) -> None:
        """The run's default budget applies to a task that declares none, so it is part of that
        task's fingerprint; a task with its own budget keeps its samples."""
        assert root.hash("noakm", "alpha/bare", **change) != root.hash("noakm", "alpha/bare")
        assert root.hash("noakm", **change) == root.hash("noakm")

    def test_other_akm_binary_invalidates(self, root: Root) -> None:
        """Another akm version or build (same version, other sha256) is another treatment."""
        base = root.hash("akm", akm=AKM)
        assert root.hash("akm", akm=dataclasses.replace(AKM, version="0.7.0", line="0.7")) != base
        assert root.hash("akm", akm=dataclasses.replace(AKM, sha256="b" * 64)) != base
        assert root.hash("noakm", akm=AKM) == root.hash("noakm")  # the control arm runs no akm

    def test_other_endpoint_behind_the_same_model_invalidates(self, root: Root) -> None:
        """A providers file that sends the same model name to another endpoint is another run:
        its samples must not be resumed as this run's (attribute's base check relies on it too)."""

        def via(url: str) -> dict[str, Any]:
            return setup_digest("local/m", "local", {"options": {"baseURL": url, "apiKey": "{env:K}"}}, "p.json")

        first = {arm: root.hash(arm, providers=via("http://a:1/v1")) for arm in ("akm", "noakm")}
        assert first == {arm: root.hash(arm, providers=via("http://a:1/v1")) for arm in ("akm", "noakm")}
        for arm in ("akm", "noakm"):
            assert root.hash(arm, providers=via("http://b:1/v1")) != first[arm]
            assert root.hash(arm) != first[arm]

    def test_agent_version_invalidates(self, root: Root) -> None:
        agent = NopAgent()
        other = type("Other", (), {"name": agent.name, "version": agent.version + ".1"})()
        assert root.hash("noakm", agent=other) != root.hash("noakm")


class TestWhatDoesNot:
    def test_run_identity_and_seed_do_not(self, root: Root) -> None:
        """Another run id, tmp dir, verify timeout or kept run dirs reuse the stored samples; so does
        another seed (the seed is part of the trial, not of the fingerprint)."""
        base = root.hash("akm")
        assert (
            root.hash("akm", run_id="other", tmp_root=root.base / "elsewhere", verify_timeout_s=5.0, keep_runs=True)
            == base
        )
        task, ctx = root.task(), root.ctx()
        assert cell_fingerprint(Cell(task, "akm", 1), ctx) == cell_fingerprint(Cell(task, "akm", 7), ctx)

    def test_a_model_without_providers_file_does_not(self, root: Root) -> None:
        """Without a providers file the model name says it all: samples stored before the
        providers were recorded keep counting."""
        assert root.hash("akm", providers=setup_digest("local/m", None, None, None)) == root.hash("akm")

    def test_equal_caps_do_not(self, root: Root) -> None:
        """A cap at or above the budget in force leaves the budget, and the fingerprint, as it was."""
        assert root.hash("akm", cap_tokens=1000, cap_wall_ms=20000) == root.hash("akm")
        assert root.hash("akm", cap_tokens=10**9) == root.hash("akm")

    def test_fixed_at_the_start_of_a_run(self, root: Root) -> None:
        """Within a run the stash is hashed once: an edit mid-run applies from the next run on."""
        task, ctx = root.task(), root.ctx()
        first = cell_fingerprint(Cell(task, "akm", 1), ctx)
        (root.stashes / "st" / "skills" / "howto" / "SKILL.md").write_text("edited mid-run\n")
        assert cell_fingerprint(Cell(task, "akm", 2), ctx) == first
        assert root.hash("akm") != fingerprint_hash(first)


class TestLimits:
    def test_task_budget_then_run_default_then_cap(self, root: Root) -> None:
        """The task's own budget wins over the run default; an explicit run cap lowers either."""
        task = root.task()  # declares tokens 1000, wallMs 20000
        plain = limits_for(task, root.ctx(budget_tokens=50, budget_wall_ms=60, budget_turns=7))
        assert (plain.tokens, plain.wall_s, plain.turns) == (1000, 20.0, 7)
        capped = limits_for(task, root.ctx(cap_tokens=300, cap_wall_ms=4500))
        assert (capped.tokens, capped.wall_s) == (300, 4.5)
        loose = limits_for(task, root.ctx(cap_tokens=5000, cap_wall_ms=90000))
        assert (loose.tokens, loose.wall_s) == (1000, 20.0)
        bare = dataclasses.replace(task, budget=dataclasses.replace(task.budget, tokens=None, wall_ms=None))
        default = limits_for(bare, root.ctx(budget_tokens=50, budget_wall_ms=60))
        assert (default.tokens, default.wall_s) == (50, 0.06)

    def test_budget_in_the_fingerprint(self, root: Root) -> None:
        fp = cell_fingerprint(Cell(root.task(), "noakm", 1), root.ctx(budget_turns=9, cap_tokens=700))
        assert fp["budget"] == {"tokens": 700, "wall_ms": 20000, "turns": 9}
        assert "akm" not in fp and "sandbox" not in fp and fp["stash_hash"] is None


class TestStoredSamplesStayValid:
    """The fingerprint is compared with those of samples stored by earlier runs: its keys and the
    hashes in it must not change form, and each task keeps its own hash."""

    def test_keys_a_stored_sample_carries(self, root: Root) -> None:
        fp = cell_fingerprint(Cell(root.task(), "akm", 1), root.ctx(akm=AKM, sandbox="bwrap"))
        assert set(fp) == {
            "model",
            "agent",
            "agent_version",
            "prompt_version",
            "task_hash",
            "stash_hash",
            "budget",
            "akm",
            "sandbox",
            "boundary",
        }
        assert fp["prompt_version"] == prompts.prompt_version("akm") and fp["boundary"] == 2
        entry = setup_digest("local/m", "local", {"options": {"baseURL": "http://a:1/v1"}}, "p.json")
        with_file = cell_fingerprint(Cell(root.task(), "noakm", 1), root.ctx(providers=entry))
        assert set(with_file) - set(fp) == {"providers"} and with_file["providers"] == entry["digest"]

    def test_each_task_has_its_own_hash_within_a_run(self, root: Root) -> None:
        ctx = root.ctx()
        first = cell_fingerprint(Cell(root.task(), "noakm", 1), ctx)["task_hash"]
        other = cell_fingerprint(Cell(root.task("alpha/bare"), "noakm", 1), ctx)["task_hash"]
        assert first != other

    def test_caches_and_symlinks_in_a_task_do_not_invalidate(self, root: Root) -> None:
        """Running a task's tests leaves __pycache__ / .pytest_cache behind; a symlink is never copied."""
        before = root.hash("noakm")
        task_dir = root.task().task_dir
        for cache in ("__pycache__", ".pytest_cache"):
            (task_dir / cache).mkdir()
            (task_dir / cache / "x.pyc").write_bytes(b"\x00cache")
        (task_dir / "link.md").symlink_to(root.stashes / "st" / "skills" / "howto" / "SKILL.md")
        assert root.hash("noakm") == before

    def test_tree_hash_is_path_nul_bytes_nul(self, tmp_path: Path) -> None:
        """The task hash of stored samples: SHA-256 over sorted relative paths, each ``path NUL bytes NUL``."""
        (tmp_path / "b").mkdir()
        (tmp_path / "a.txt").write_bytes(b"one")
        (tmp_path / "b" / "c.txt").write_bytes(b"two")
        expected = hashlib.sha256(b"a.txt\0one\0b/c.txt\0two\0").hexdigest()
        assert tree_hash(tmp_path) == expected

    def test_hash_of_a_task_with_layers_and_of_an_overlaid_stash(self, root: Root) -> None:
        """The stored forms: a task with shared layers hashes its tree hashes joined by NUL; an
        overlaid stash is ``stash hash:overlay hash``."""
        (root.tasks_root / "base" / "workspace").mkdir(parents=True)
        (root.tasks_root / "base" / "workspace" / "shared.txt").write_text("shared\n")
        task = root.task()
        assert task.layers
        hashes = [tree_hash(task.task_dir), *map(tree_hash, task.layers)]
        fp = cell_fingerprint(Cell(task, "noakm", 1), root.ctx())
        assert fp["task_hash"] == hashlib.sha256("\0".join(hashes).encode()).hexdigest()
        overlaid = root.task("alpha/overlay")
        stash = cell_fingerprint(Cell(overlaid, "akm", 1), root.ctx())["stash_hash"]
        overlay = tree_hash(overlaid.task_dir / "overlay")
        assert stash == fixture_hash(root.stashes / "st") + ":" + overlay


class TestRecorded:
    """The offline report's fingerprints take the run's facts from its samples (run/recorded.py):
    a run with a providers file, another prompt version and akm gives the samples' own hash."""

    def stored(self, root: Root, arm: str, started: str, **facts: Any) -> dict[str, Any]:
        task = root.task()
        ctx = root.ctx(
            providers={"digest": "d" * 16, "source": "providers.json"},
            akm=AkmInfo(path=Path("akm"), version="0.9.0", line="0.9", sha256="a" * 64, config=""),
            sandbox="bwrap",
            network="host",
            budget_wall_ms=5000,
            cap_wall_ms=5000,
        )
        fp = {**cell_fingerprint(Cell(task, arm, 1), ctx), **facts}
        return {"task_id": task.id, "arm": arm, "seed": 1, "run_id": "r", "started_at": started, "fingerprint": fp}

    def test_every_run_fact_comes_from_the_samples(self, tmp_path: Path) -> None:
        from pytest_akmbench.run import recorded

        root = Root(tmp_path)
        # An older version's run: another akm prompt.
        samples = [
            self.stored(root, "noakm", "2026-01-01T00:00:01Z"),
            self.stored(root, "akm", "2026-01-01T00:00:02Z", prompt_version="1/akm/00000000"),
        ]
        ctx = dataclasses.replace(root.ctx(model=None), recorded=recorded.facts(samples, ("noakm", "akm")))
        task = root.task()
        for s in samples:
            assert cell_fingerprint(Cell(task, s["arm"], 1), ctx) == s["fingerprint"]
        # but not the cell boundary: a sample from before it could hold a forged pass, so it does not match.
        old = [self.stored(root, "noakm", "2026-01-01T00:00:01Z", boundary=1)]
        ctx = dataclasses.replace(root.ctx(model=None), recorded=recorded.facts(old, ("noakm",)))
        assert cell_fingerprint(Cell(task, "noakm", 1), ctx) != old[0]["fingerprint"]
        assert cell_fingerprint(Cell(task, "noakm", 1), ctx)["boundary"] == 2
        # The command's own --model and --agent-version still win; an arm no sample recorded keeps the computed.
        given = recorded.facts(samples, ("noakm", "akm", "synthetic"), given={"model": "other/m"})
        ctx = dataclasses.replace(root.ctx(model=None), recorded=given)
        assert cell_fingerprint(Cell(task, "akm", 1), ctx)["model"] == "other/m"
        synthetic = cell_fingerprint(Cell(task, "synthetic", 1), ctx)
        assert synthetic["prompt_version"] == prompts.prompt_version("synthetic") and "akm" not in synthetic
        assert synthetic["providers"] == "d" * 16 and synthetic["budget"]["wall_ms"] == 5000

    def test_one_akm_version_built_twice_is_told_apart_by_the_run(self, tmp_path: Path) -> None:
        from pytest_akmbench.errors import ConfigError
        from pytest_akmbench.run import recorded

        root = Root(tmp_path)
        first = self.stored(root, "akm", "2026-01-01T00:00:01Z")
        rebuilt = self.stored(root, "akm", "2026-01-01T00:00:02Z", akm={"version": "0.9.0", "sha256": "b" * 64})
        rebuilt["run_id"] = "r2"
        with pytest.raises(ConfigError) as refused:
            recorded.facts([first, rebuilt], ("akm",), akm_version="0.9.0")
        assert str(refused.value) == (
            "the akm arm's samples ran 2 different akms (akm 0.9.0 (sha256 aaaaaaaaaaaa): 1 cell, akm 0.9.0 (sha256 "
            "bbbbbbbbbbbb): 1 cell) and a report counts one: give --run-id to say which, or report the stores apart"
        )
        facts = recorded.facts([first, rebuilt], ("akm",), run_id="r")
        assert facts.arms["akm"]["akm"]["sha256"] == "a" * 64
