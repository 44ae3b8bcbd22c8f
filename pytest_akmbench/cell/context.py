"""What a cell is, what every cell of a run shares, and the fingerprint that says which stored
samples a cell may count (docs/architecture.md, "A sample")."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..agents.base import Agent, Limits
from ..corpus.hashes import fixture_hash
from ..corpus.tasks import Task
from ..system.cleaner import Cleaner
from . import akm
from .prompts import prompt_version as arm_prompt_version
from .rundir import task_hash, tree_hash

BOUNDARY = 2


@dataclass(frozen=True, slots=True)
class Cell:
    """One (task, arm, seed); seeds count from 1."""

    task: Task
    arm: str
    seed: int
    mask: str | None = None  # attribute track: the asset (``kind:name``) left out of the stash

    @property
    def name(self) -> str:
        return f"{self.arm}-s{self.seed}" if self.mask is None else f"{self.arm}-mask[{self.mask}]-s{self.seed}"

    @property
    def key(self) -> str:
        return f"{self.task.id}[{self.name}]"


# The fingerprint's facts a cell's task gives (its content, stash, specs, budget, mask); every
# other fact is the run's: its agent, model, akm, sandbox, prompt and boundary versions...
FROM_TASK = frozenset({"task_hash", "stash_hash", "workflows", "budget", "mask"})
# ...of which these differ between the arms of one run.
PER_ARM = frozenset({"prompt_version", "akm"})


@dataclass(frozen=True)
class Recorded:
    """The run-level facts of a run's fingerprints as its samples recorded them: ``shared`` by
    every arm, each arm's own, and each task's budget (docs/report.md, "Rebuilding offline")."""

    shared: dict[str, Any]
    arms: dict[str, dict[str, Any]]
    budgets: dict[str, dict[str, Any]]

    def apply(self, fp: dict[str, Any], task_id: str, arm: str) -> dict[str, Any]:
        """``fp`` with its run-level facts replaced by the recorded ones; an arm (or a task's
        budget) that no sample recorded keeps the computed ones."""
        computed = {k: v for k, v in fp.items() if k not in FROM_TASK}
        out = {k: v for k, v in fp.items() if k in FROM_TASK}
        out["budget"] = self.budgets.get(task_id, fp["budget"])
        out.update(self.shared or {k: v for k, v in computed.items() if k not in PER_ARM})
        own = self.arms.get(arm)
        out.update(own if own is not None else {k: v for k, v in computed.items() if k in PER_ARM})
        # The boundary stays this code's: a pass stored under an older one could have been forged,
        # so such a sample conflicts offline as it does in a bench.
        out["boundary"] = fp["boundary"]
        return out


@dataclass(frozen=True, slots=True)
class RunContext:
    """Session-wide facts every cell of a run shares."""

    run_id: str
    tmp_root: Path
    stashes_root: Path
    agent: Agent
    model: str | None
    budget_tokens: int
    budget_wall_ms: int
    budget_turns: int | None
    verify_timeout_s: float
    akm: akm.AkmInfo | None = None
    transcripts_dir: Path | None = None
    keep_runs: bool = False
    sandbox: str = "none"  # the mode actually used: "bwrap" or "none" (see sandbox.choose)
    sandbox_ro: tuple[Path, ...] = ()
    network: str = "isolated"  # a sandboxed agent's network: "isolated" (its model only) or "host"
    # Run-level budgets given explicitly (command line, run config or ini): they cap the task's own.
    cap_tokens: int | None = None
    cap_wall_ms: int | None = None
    # What the agent is given to reach its model, as a digest (agents/model.py
    # setup_digest): recorded in every sample so a report says it, offline too.
    providers: dict[str, Any] | None = None
    # The offline report's: the run-level facts of the fingerprint as the reported run's samples
    # recorded them, in place of this process's (it ran no agent, no akm, no sandbox).
    recorded: Recorded | None = None
    # Where a finished cell's directories are deleted: on the run's cleaner thread, else at once.
    cleaner: Cleaner | None = field(default=None, repr=False, compare=False)
    _hashes: dict[Path, str] = field(default_factory=dict, repr=False, compare=False)

    def content_hash(self, path: Path, fn: Any) -> str:
        """Hash a task or stash directory once per run: the fingerprint of a run is fixed at its start."""
        if path not in self._hashes:
            self._hashes[path] = fn(path)
        return self._hashes[path]


def limits_for(task: Task, ctx: RunContext) -> Limits:
    """The task's own budget where it declares one, else the run-level default; an explicit
    run-level budget caps both (the smaller wins), so a run can be made stricter than its tasks."""
    wall_ms = min(task.budget.wall_ms or ctx.budget_wall_ms, ctx.cap_wall_ms or 1 << 62)
    tokens = min(task.budget.tokens or ctx.budget_tokens, ctx.cap_tokens or 1 << 62)
    return Limits(wall_s=wall_ms / 1000, tokens=tokens, turns=ctx.budget_turns)


def fingerprint(task: Task, arm: str, ctx: RunContext, prompt_version: str) -> dict[str, Any]:
    """Everything that must match for two samples of a cell to be comparable (docs/architecture.md, "A sample")."""
    limits = limits_for(task, ctx)
    stash = None
    tool = None
    if arm == "akm":
        stash = ctx.content_hash(ctx.stashes_root / task.stash, fixture_hash)
        if task.stash_overlay:
            stash += ":" + ctx.content_hash((task.task_dir / task.stash_overlay).resolve(), tree_hash)
        if ctx.akm is not None:
            tool = {"version": ctx.akm.version, "sha256": ctx.akm.sha256}
    fp: dict[str, Any] = {
        "model": ctx.model,
        "agent": ctx.agent.name,
        "agent_version": ctx.agent.version,
        "prompt_version": prompt_version,
        "task_hash": ctx.content_hash(task.task_dir, lambda _: task_hash(task)),
        "stash_hash": stash,
        "budget": {"tokens": limits.tokens, "wall_ms": int(limits.wall_s * 1000), "turns": limits.turns},
        # The cell boundary's version: 2 runs the verifier sandboxed and checks pytest's own report,
        # the agent unprivileged with its model as its only network. An earlier sample's pass could
        # have been forged, so none counts for a cell of this version.
        "boundary": BOUNDARY,
    }
    specs = {s.id: s.digest[:16] for s in task.workflows if arm in s.applies_to.arms}
    # Each only when present, so samples made without it keep their hash: providers only from a
    # providers file (the same model name behind another endpoint is another run; without a file
    # the model name says it all); no sandbox is what every sample before the sandbox ran in.
    optional = {
        "providers": (ctx.providers or {}).get("digest") if (ctx.providers or {}).get("source") else None,
        "workflows": specs or None,
        "akm": tool,
        "sandbox": ctx.sandbox if ctx.sandbox != "none" else None,
        "network": ctx.network if ctx.sandbox != "none" and ctx.network != "isolated" else None,
    }
    fp.update({k: v for k, v in optional.items() if v is not None})
    return fp if ctx.recorded is None else ctx.recorded.apply(fp, task.id, arm)


def cell_fingerprint(cell: Cell, ctx: RunContext) -> dict[str, Any]:
    fp = fingerprint(cell.task, cell.arm, ctx, arm_prompt_version(cell.arm))
    if cell.mask is not None:  # only then, so unmasked samples keep their hash
        fp["mask"] = cell.mask
    return fp
