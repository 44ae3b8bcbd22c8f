"""Execute one cell: prepare an isolated run dir, run the agent, run the verifier, make a sample.

Isolation: every cell gets a fresh run dir under the bench tmp root with a copy of the
workspace and private HOME/XDG dirs, so nothing of the user's own agent or akm
configuration is read or written. Only the akm arm gets a private copy of the stash fixture
(plus ``stash_overlay``), akm's variables and the akm executable on PATH; every other arm finds
an ``akm`` on PATH that behaves like a missing command, so an akm installed system-wide cannot
leak into the control arm.

The akm arm's treatment must be live (docs/akm.md): each cell indexes its own stash copy at
the path its agent searches (akm ties an index to that path), with keyword search pinned; a
cell whose index fails, or whose akm calls all fail as only a broken akm fails, is a
``harness_error``, never a ``fail``: a broken treatment must not read as "akm does not help".
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..agents.base import AgentRequest, AgentResult, as_agent
from ..records import SAMPLE_SCHEMA, Outcome, Sample
from ..store.samples import SampleStore, fingerprint_hash
from ..system.cleaner import remove
from ..system.procs import ProcessTracker
from ..system.sandbox import Sandbox
from ..system.sandbox import for_cell as cell_sandbox
from . import akm, masks, tamper
from .context import Cell, RunContext, cell_fingerprint, limits_for
from .prompts import build_prompt
from .rundir import (
    TreatmentDown,
    akm_events,
    copy_stash,
    copy_workspace,
    hide_akm,
    index_stash,
    write_akm_stub,
)
from .trajectory import analyse_cell
from .verdict import fresh
from .verifiers import Verdict, verifier_env, verify
from .workflow import check_cell

_PASS_THROUGH = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "USER", "LOGNAME", "TZ")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def prepare(cell: Cell, ctx: RunContext) -> tuple[Path, dict[str, str], Path | None, list[str]]:
    """Create the run dir; returns (run dir, agent environment, private stash or None, warnings)."""
    # Neither the task nor the arm in the name: "noakm" would tell the control arm about akm.
    run_dir = fresh(ctx.tmp_root / ctx.run_id, "cell-")
    copy_workspace(cell.task, run_dir / "workspace")
    home = run_dir / "home"
    home.mkdir()  # XDG dirs are left to whoever needs them (an agent may create its own)
    (run_dir / "tmp").mkdir()
    bin_dir = run_dir / "bin"
    bin_dir.mkdir()
    env = {k: os.environ[k] for k in _PASS_THROUGH if k in os.environ}
    env = akm.private_env(home, env)
    env["TMPDIR"] = str(run_dir / "tmp")
    stash: Path | None = None
    if cell.arm == "akm":
        stash = run_dir / "stash"
        copy_stash(cell.task, ctx.stashes_root, stash)
        if ctx.akm is not None:
            (bin_dir / "akm").symlink_to(ctx.akm.path)
            env = akm.cell_env(ctx.akm, stash, env)
            akm.write_config(ctx.akm, env)
        else:
            env["AKM_STASH_DIR"] = str(stash)
    warnings: list[str] = []
    # Absolute entries only: a relative one (".", "bin") would be looked up from whatever directory
    # a process of the cell runs in (the workspace, the run dir), so the agent could plant there
    # what akm or the verifier then runs (cell/verifiers.verifier_env checks it again).
    entries = [e for e in env.get("PATH", os.defpath).split(os.pathsep) if os.path.isabs(e)]
    if cell.arm != "akm":
        entries = hide_akm(entries, bin_dir, run_dir, cell.arm, warnings)
        # Always shadowed, whatever PATH holds: the control arm finds no akm at all.
        write_akm_stub(bin_dir)
    env["PATH"] = os.pathsep.join([str(bin_dir), *entries])
    return run_dir, env, stash, warnings


@dataclass
class _Run:
    """What one cell's run has gathered so far; its sample is made from this."""

    started_at: str = field(default_factory=lambda: _now())
    t0: float = field(default_factory=time.monotonic)
    prompt_version: str = "n/a"
    run_dir: Path | None = None
    result: AgentResult = field(default_factory=AgentResult)
    verdict: Verdict | None = None
    outcome: Outcome = "harness_error"
    reason: str | None = None
    transcript_rel: str | None = None
    trajectory: dict[str, Any] | None = None
    workflow: dict[str, Any] | None = None
    tamper: list[str] = field(default_factory=list)
    akm_setup: dict[str, Any] | None = None
    setup_warnings: list[str] = field(default_factory=list)
    t_agent: float = 0.0
    t_verify: float = 0.0
    t_end: float = 0.0

    def __post_init__(self) -> None:
        self.t_agent = self.t_verify = self.t0


def run_cell(cell: Cell, ctx: RunContext, procs: ProcessTracker, fingerprint: dict[str, Any] | None = None) -> Sample:
    """Run one cell to a sample. Never raises for agent or verifier trouble: that is an outcome.
    ``fingerprint`` is the trial's (cell/trial.py), computed once per cell; else the cell's own."""
    run = _Run()
    try:
        request, env, sandbox = _request(cell, ctx, procs, run)
        agent_started_ms = _run_agent(ctx, procs, run, request, sandbox)
        run.tamper = tamper.scan(cell.task, request.run_dir)
        if cell.arm == "akm":
            with sandbox.applied(procs):  # akm reads what the agent left in its home: not as us
                run.trajectory = _trajectory(cell, ctx, procs, run, request, env, agent_started_ms)
        run.outcome, run.reason = _judge(cell, ctx, procs, run, request, env)
        code = None if run.verdict is None else -1 if run.verdict.exit_code is None else run.verdict.exit_code
        reader = as_agent(ctx.agent).read_transcript  # the agent's own format, read as neutral events
        run.workflow = check_cell(cell.task, cell.arm, run.outcome, request.transcript, code, reader)
    except TreatmentDown as err:
        run.outcome, run.reason = "harness_error", str(err)
    except Exception as err:
        run.outcome, run.reason = "harness_error", f"harness: {type(err).__name__}: {err}"
    finally:
        procs.kill_all()
        run.t_end = time.monotonic()
        if run.run_dir is not None and not ctx.keep_runs:
            remove(run.run_dir, ctx.cleaner)  # every process of the cell is gone by now
    if not run.result.transcript_written:
        run.transcript_rel = None
    return _sample(cell, ctx, run, fingerprint or cell_fingerprint(cell, ctx))


def _request(
    cell: Cell, ctx: RunContext, procs: ProcessTracker, run: _Run
) -> tuple[AgentRequest, dict[str, str], Sandbox]:
    """Prepare the run dir (and the akm arm's indexed stash) and say what the agent gets."""
    run.run_dir, env, stash, run.setup_warnings = prepare(cell, ctx)
    if stash is not None and cell.mask is not None and not masks.mask(stash, cell.mask):
        raise TreatmentDown(f"mask: {cell.mask} is not an asset of the stash {cell.task.stash}")
    workspace = run.run_dir / "workspace"
    sandbox = cell_sandbox(
        ctx.sandbox,
        run.run_dir,
        akm=ctx.akm.path if stash is not None and ctx.akm else None,
        extra=ctx.sandbox_ro,
        network=ctx.network,
    )
    if stash is not None and ctx.akm is not None:
        emptied = cell.mask is not None and not masks.holds_assets(stash)
        with sandbox.applied(procs):  # akm runs as the agent will run it: what fails here fails there
            index = index_stash(ctx.akm, stash, env, procs, empty_ok=emptied)
            run.akm_setup = {**ctx.akm.as_dict(), "index": index}
    prompt, run.prompt_version = build_prompt(cell.task, cell.arm, workspace, ctx.akm)
    transcript, run.transcript_rel = _transcript_path(cell, ctx, run.run_dir)
    request = AgentRequest(
        task=cell.task,
        arm=cell.arm,
        seed=cell.seed,
        workspace=workspace,
        run_dir=run.run_dir,
        env=env,
        prompt=prompt,
        prompt_version=run.prompt_version,
        limits=limits_for(cell.task, ctx),
        transcript=transcript,
        procs=procs,
        stash_dir=stash,
        model=ctx.model,
        akm_line=ctx.akm.line if stash is not None and ctx.akm is not None else None,
        sandbox=sandbox,
    )
    return request, env, sandbox


def _run_agent(ctx: RunContext, procs: ProcessTracker, run: _Run, request: AgentRequest, sandbox: Sandbox) -> int:
    """Run the agent in its sandbox; returns when it started (ms since the epoch)."""
    run.t_agent = time.monotonic()
    agent_started_ms = time.time_ns() // 1_000_000
    with sandbox.applied(procs):  # the agent and all it starts; never the verifier
        run.result = ctx.agent.run(request)
    procs.kill_all()  # nothing the agent started may watch the verifier run
    run.t_verify = time.monotonic()
    return agent_started_ms


def _trajectory(
    cell: Cell,
    ctx: RunContext,
    procs: ProcessTracker,
    run: _Run,
    request: AgentRequest,
    env: dict[str, str],
    agent_started_ms: int,
) -> dict[str, Any]:
    """What the agent did with akm. Only the akm arm: elsewhere an "akm show" the stub refused
    still looks completed."""
    events, why = (
        (None, None) if ctx.akm is None else akm_events(ctx.akm, env, request.run_dir, procs, agent_started_ms)
    )
    trajectory = analyse_cell(
        cell.task,
        request.transcript,
        events,
        run.result.akm,
        reader=as_agent(ctx.agent).read_transcript,  # the agent's own format, read as neutral events
        agent_started_ms=agent_started_ms,
    )
    if why:
        trajectory["warnings"].append(why)
    return trajectory


def _judge(
    cell: Cell, ctx: RunContext, procs: ProcessTracker, run: _Run, request: AgentRequest, env: dict[str, str]
) -> tuple[Outcome, str | None]:
    """The outcome and its reason: the harness's faults first, then budgets, then the verifier."""
    result = run.result
    if result.error:
        return "harness_error", result.error
    if run.trajectory is not None and run.trajectory.get("akm_broken"):
        return "harness_error", run.trajectory["akm_broken"]
    if result.budget:
        return "budget_exceeded", f"{result.budget} budget exceeded ({result.budget_tag or 'unknown'})"
    # Beside the run dir, made now: nothing the agent planted in its run dir can redirect it.
    scratch = Path(tempfile.mkdtemp(prefix="verify-", dir=request.run_dir.parent))
    try:
        run.verdict = verify(
            cell.task,
            workspace=request.workspace,
            final_text=result.final_text,
            scratch=scratch,
            env=verifier_env(env, request.run_dir),
            procs=procs,
            timeout_s=ctx.verify_timeout_s,
            sandbox=ctx.sandbox,
        )
    finally:
        procs.kill_all()
        if not ctx.keep_runs:
            remove(scratch, ctx.cleaner)
    if run.verdict.tamper:
        run.tamper.append(run.verdict.tamper)
    if run.verdict.error:
        return "harness_error", run.verdict.error
    if run.verdict.passed:
        return "pass", None
    return "fail", _fail_reason(run.verdict)


def _sample(cell: Cell, ctx: RunContext, run: _Run, fp: dict[str, Any]) -> Sample:
    """The sample record (docs/architecture.md, "A sample")."""
    result, verdict = run.result, run.verdict
    return {
        "schema": SAMPLE_SCHEMA,
        "task_id": cell.task.id,
        "arm": cell.arm,
        "seed": cell.seed,
        "domain": cell.task.domain,
        "slice": cell.task.slice,
        "outcome": run.outcome,
        "reason": run.reason,
        "budget": result.budget,
        "budget_tag": result.budget_tag,
        "tokens": result.tokens,
        "token_measurement": result.token_measurement,
        "cost_usd": result.cost_usd,
        "turns": result.turns,
        "tool_calls": result.tool_calls,
        "wallclock_ms": round((run.t_verify - run.t_agent) * 1000),
        "timing_ms": {
            "setup": round((run.t_agent - run.t0) * 1000),
            "agent": round((run.t_verify - run.t_agent) * 1000),
            "verify": round((run.t_end - run.t_verify) * 1000),
            "total": round((run.t_end - run.t0) * 1000),
        },
        "verifier": {
            "kind": cell.task.verifier,
            "exit_code": verdict.exit_code if verdict and verdict.exit_code is not None else -1,
            "output_tail": verdict.tail if verdict else "",
        },
        "final_text_tail": result.final_text[-500:],
        "akm": result.akm,
        "akm_setup": run.akm_setup,
        "trajectory": run.trajectory,
        "workflow": run.workflow,
        "transcript": run.transcript_rel,
        "agent": {"name": ctx.agent.name, "version": ctx.agent.version},
        "model": ctx.model,
        "providers": ctx.providers,
        "prompt_version": run.prompt_version,
        "fingerprint": fp,
        "fingerprint_hash": fingerprint_hash(fp),
        "run_id": ctx.run_id,
        "started_at": run.started_at,
        "finished_at": _now(),
        "warnings": [*run.setup_warnings, *result.warnings],
        "tamper": run.tamper or None,
    }


def _transcript_path(cell: Cell, ctx: RunContext, run_dir: Path) -> tuple[Path, str | None]:
    if ctx.transcripts_dir is None:
        return run_dir / "transcript.jsonl", None
    store = SampleStore(ctx.transcripts_dir)
    # The attempt stamp keeps a re-run of the same cell (--bench-fresh) from overwriting.
    rel = store.new_transcript_rel(ctx.run_id, cell.key, f"{time.time_ns() // 1_000_000}")
    return store.transcript_path(rel, mkdir=True), rel


def _fail_reason(verdict: Verdict) -> str:
    if verdict.timed_out:
        return "verifier timed out"
    lines = [line.strip() for line in verdict.output.strip().splitlines() if line.strip()]
    # pytest's "E   assert ..." lines say why; otherwise the last line a script printed.
    explained = [line for line in lines if line.startswith(("E ", "FAILED "))]
    chosen = explained[0] if explained else (lines[-1] if lines else f"verifier exited {verdict.exit_code}")
    return chosen[:300]
