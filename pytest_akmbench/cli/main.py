"""``python -m pytest_akmbench``: report, compare, lift, validate, doctor, kill, clean, install-tools.

None of these needs pytest or an agent; they use the core directly. Errors are one line on
stderr; exit status 2 for usage errors (a missing file, an unknown task), 78 for invalid
configuration content, as the reference does.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..agents.settings import table
from ..cell.context import RunContext
from ..corpus.config import Settings, corpus_near, in_file, load_run_config, resolve, run_caps
from ..corpus.tasks import Task, load_corpus, select_with_override
from ..errors import BenchError, ConfigError
from ..report import envelope as report
from ..report import gates
from ..report.envelope_types import Envelope
from ..report.render import files as report_files
from ..report.render import github
from ..run import adaptive as adaptive_run
from ..run import merge, recorded
from ..run.resume import report_input
from ..system import lifecycle
from . import inputs, report_run, tools

DEFAULT_OUT = ".akmbench/report"
DEFAULT_STORE = ".akmbench/store"


class _StoredAgent:
    """An agent known only by the name and version its samples carry."""

    def __init__(self, name: str, version: str) -> None:
        self.name, self.version = name, version


@dataclasses.dataclass
class Built:
    """An offline report before it is written: the envelope, what it could not make whole, the
    merge's notes, its tasks and stores."""

    envelope: Envelope
    problems: list[str]
    notes: list[str]
    tasks: list[Task]
    stores: list[Path]


def cmd_report(args: argparse.Namespace) -> int:
    cwd = Path.cwd()
    built = build_report(args, cwd)
    envelope, stores = built.envelope, built.stores
    out = Path(args.out or DEFAULT_OUT)
    if args.out is None and (out / "report.json").exists():
        # The default is the bench's own report directory: say that its report is replaced.
        print(f"note: replacing the report in {out} (the last run's); --out DIR writes elsewhere", file=sys.stderr)
    json_path, md_path, html_path = report_files.write(out, envelope, stores[0], stores[1:])
    print(f"report: {json_path}\nsummary: {md_path}\nhtml: {html_path}")
    _say(envelope, built.problems, built.notes, built.tasks, cwd)
    return _report_status(envelope, built.problems)


def build_report(args: argparse.Namespace, cwd: Path) -> Built:
    """The report command's envelope from its arguments (the stores, the corpus, the run config),
    not written; ``lift`` builds each agent's this way."""
    settings = _report_settings(args, cwd)
    corpus = load_corpus(settings.tasks_root, settings.stashes_root)
    try:
        tasks, slice_label = select_with_override(corpus, settings.tasks, settings.tasks_override)
    except BenchError as err:
        raise ConfigError(in_file(args.config if settings.tasks_override is None else None, err), usage=True) from None
    stores = [Path(s).resolve() for s in args.store or [DEFAULT_STORE]]
    merged = merge.load(stores)
    settings = _stored_agent(settings, merged)
    merging = len(stores) > 1 or merged.plan is not None
    chosen = not any((args.tasks, args.arms, args.seeds))
    # A sharded run's stores say which cells it selected (after its -k/-m); these options choose
    # otherwise. A run config still gives the budgets and agent the cells' fingerprints need.
    planned = merged.cells() if chosen else None
    arms, seeds = (merged.arms(), merged.seeds()) if planned is not None else (settings.arms, settings.seeds)
    cells = planned or [(t.id, arm, seed) for t in tasks for arm in settings.arms for seed in range(1, seeds + 1)]
    flat = _flat(merged.records)  # read once: the run's facts and what the report leaves out
    ctx = _stored_run(args, settings, merged, flat, cells, arms, stores[0])
    run = report_run.recall(stores, ctx, settings, tasks, corpus.tasks, merged.stored, fixed=not chosen)
    if run.cells is not None and run.tasks is not None:  # an adaptive run: the cells its plan needed
        tasks, arms, seeds, cells = run.tasks, run.arms, run.max_seeds, run.cells
    inp = report_input(
        tasks=tasks,
        arms=arms,
        seeds=seeds,
        cells=cells,
        slice_label=slice_label,
        ctx=ctx,
        store_dir=stores[0],
        floor=run.floor or settings.floor,
        cwd=cwd,
        gates=args.gate or (),
        stored=merged.stored,
    )
    complete = inp.complete and (run.block is None or run.block["stopping_reason"] is not None)
    inp = dataclasses.replace(inp, complete=complete, spend_cap=run.cap)
    # What the report leaves out, in one store as in several: the cells held only under another
    # fingerprint, and the reported runs' cells outside the selection (an arm is never dropped unsaid).
    problems = merge.check(merged, tasks, cells, ctx)
    runs = {str(s.get("run_id")) for s in inp.samples} | {ctx.run_id} | merged.own_runs
    explicit = [name for name in ("tasks", "arms", "seeds") if getattr(args, name)]
    ours = recorded.samples_of(flat, ctx.agent.name, {t.id for t in corpus.tasks})
    problems += recorded.left_out(ours, runs, set(cells), explicit, seeds=seeds)
    inp = merge.finish(inp, merged, problems)
    envelope = adaptive_run.stamp(report.build(inp), run.block)
    if merging:
        envelope["merge"] = merged.block()
    if (problems or not envelope["complete"]) and envelope.get("gates"):
        envelope["gates"] = gates.withhold(envelope["gates"], len(problems))
    return Built(envelope, problems, merged.notes() if merging else [], tasks, stores)


def _say(envelope: Envelope, problems: list[str], notes: list[str], tasks: list[Task], cwd: Path) -> None:
    """What the report command could not make whole, on stderr, and under GitHub Actions its
    gates and gaps as annotations."""
    for line in problems:
        print(f"akmbench: {line}", file=sys.stderr)
    for line in notes:
        print(f"akmbench: warning: {line}", file=sys.stderr)
    if github.enabled():  # the merge job of a CI matrix: its gates and gaps on the run's page
        files = github.task_files(tasks, cwd)
        for line in github.for_run(envelope, problems, None, files, problem_title="akmbench: merge incomplete"):
            print(line, flush=True)


def _report_status(envelope: Envelope, problems: list[str]) -> int:
    """1 when a merge could not make the report whole or a gate failed (with gates, also when a
    reported cell is a harness error, as a bench's exit status is); else 0."""
    results = envelope.get("gates") or []
    for gate in results:
        print(f"gate {'held' if gate['ok'] else 'FAILED'}: {gate['gate']}: {gate['message']}")
    if problems:
        return 1
    if results and any(r["outcome"] == "harness_error" for r in envelope["runs"]):
        return 1
    return 0 if all(g["ok"] for g in results) else 1


def _report_settings(args: argparse.Namespace, cwd: Path) -> Settings:
    """The report command's settings: its options over the run config, as a bench resolves them."""
    settings = table()
    config = load_run_config(Path(args.config), settings) if args.config else None
    for gate in args.gate or ():
        try:
            gates.parse(gate)
        except ValueError as err:
            raise ConfigError(f"--gate: {err}", usage=True) from None
    return resolve(
        rootdir=cwd,
        cwd=cwd,
        config=config,
        ini={},
        cli={row.name: getattr(args, row.name) for row in settings.report if row.parse is not None and not row.many},
        tasks_root=inputs.tasks_root(args.corpus),
        stashes_root=Path(args.stashes).resolve(),
        table=settings,
    )


def _stored_agent(settings: Settings, merged: merge.Merged) -> Settings:
    """The agent the stores hold samples of, when neither the command nor its config names one
    and the default has none: a store of one agent's runs needs no ``--agent``."""
    if "agent" in settings.origins or merged.latest(settings.agent) is not None:
        return settings
    names = {(r.get("agent") or {}).get("name") for store in merged.records for r in store}
    found = sorted(n for n in names if isinstance(n, str))
    return dataclasses.replace(settings, agent=found[0]) if len(found) == 1 else settings


def _flat(records: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Every store's records, the stores interleaved by start time (each keeps its own order)."""
    return sorted((r for store in records for r in store), key=lambda r: str(r.get("started_at") or ""))


def _stored_run(
    args: argparse.Namespace,
    settings: Settings,
    merged: merge.Merged,
    flat: list[dict[str, Any]],
    cells: Sequence[tuple[str, str, int]],
    arms: Sequence[str],
    store_dir: Path,
) -> RunContext:
    """The run the offline report rebuilds: run ``--run-id``, else the stores' latest sample's,
    with the fingerprint facts its cells' samples (of ``flat``, the stores' records) recorded
    (run/recorded.py)."""
    latest = merged.latest(settings.agent)
    if latest is None:
        names = sorted({str((r.get("agent") or {}).get("name")) for r in flat if r.get("agent")})
        fix = f"it holds samples of {', '.join(names)}: give --agent" if names else "run the bench first"
        raise ConfigError(f"{store_dir}: no sample of agent {settings.agent!r} in the store; {fix}", usage=True)
    samples = recorded.samples_of(flat, settings.agent, {c[0] for c in cells})
    given = {"agent_version": args.agent_version, "model": settings.model if args.model else None}
    facts = recorded.facts(
        samples,
        arms,
        run_id=args.run_id,
        akm_version=args.akm_version,
        given=given,
        budgets=not (args.budget_tokens or args.budget_wall_ms),
    )
    shared = facts.shared or latest["fingerprint"]
    agent = _StoredAgent(settings.agent, args.agent_version or shared["agent_version"])
    return RunContext(
        run_id=args.run_id or latest["run_id"],
        tmp_root=store_dir,
        stashes_root=settings.stashes_root,
        agent=agent,  # type: ignore[arg-type]
        model=settings.model if args.model else shared.get("model"),
        budget_tokens=settings.budget_tokens,
        budget_wall_ms=settings.budget_wall_ms,
        budget_turns=settings.budget_turns,
        verify_timeout_s=settings.verify_timeout,
        **run_caps(settings),
        sandbox=shared.get("sandbox") or "none",
        network=shared.get("network") or "isolated",
        recorded=facts,
    )


def cmd_compare(argv: Sequence[str]) -> int:
    from . import compare

    return compare.main(list(argv))


def cmd_lift(argv: Sequence[str]) -> int:
    from . import lift

    return lift.main(list(argv), _agent_report)


def _agent_report(store: Path, agent: str, options: list[str]) -> tuple[Envelope, list[str]]:
    """One agent's envelope of one store, as ``report --store STORE --agent AGENT`` builds it."""
    built = build_report(
        build_parser().parse_args(["report", "--store", str(store), "--agent", agent, *options]), Path.cwd()
    )
    return built.envelope, built.problems


def cmd_validate(args: argparse.Namespace) -> int:
    from .validate import validate

    configs = [Path(c) for c in args.configs]
    # Without --corpus, a run config's own project: the nearest corpus/tasks at or above the
    # first config, as a bench run finds it (docs/corpus.md, "Run configs").
    near = corpus_near(configs[0]) if configs and args.corpus is None else None
    tasks = args.corpus or str(near / "tasks" if near else "corpus/tasks")
    stashes = args.stashes or str(near / "stashes" if near else "corpus/stashes")
    return validate(inputs.tasks_root(tasks), Path(stashes), configs)


def cmd_kill(args: argparse.Namespace) -> int:
    return lifecycle.kill(_tmp_root(args), project=Path.cwd(), everything=args.all)


def cmd_clean(args: argparse.Namespace) -> int:
    return lifecycle.clean(_tmp_root(args), older_than_h=args.older_than)


def cmd_doctor(args: argparse.Namespace) -> int:
    from .doctor import doctor

    return doctor(args)


def _tmp_root(args: argparse.Namespace) -> Path:
    return Path(args.tmp) if args.tmp else lifecycle.default_tmp_root()


def _report_parser(sub: Any) -> None:
    rep = sub.add_parser("report", help="rebuild report.json, summary.md and report.html from a sample store, offline")
    rep.add_argument(
        "--store",
        action="append",
        help=f"sample store directory (default: {DEFAULT_STORE}); repeat it to merge the stores of several "
        "shards or machines into one report",
    )
    rep.add_argument(
        "--out", help=f"output directory (default: {DEFAULT_OUT}, the bench's own, whose report it replaces, saying so)"
    )
    rep.add_argument("--config", help="the run config the bench ran with")
    rep.add_argument("--corpus", default="corpus/tasks", help="tasks root (default: corpus/tasks)")
    rep.add_argument("--stashes", default="corpus/stashes", help="stash fixtures (default: corpus/stashes)")
    rep.add_argument("--agent-version", help="agent version (default: the latest sample's)")
    rep.add_argument(
        "--akm-version",
        help="the akm whose samples the akm arm counts, when the store holds several (default: the one)",
    )
    rep.add_argument("--run-id", help="which run counts as this report's own (default: the latest)")
    for row in table().report:  # the settings it shares with a bench run, from the settings table
        flag = "--" + row.name.replace("_", "-")
        if row.many:
            rep.add_argument(flag, action="append", metavar=row.metavar, help=row.report)
        else:
            rep.add_argument(flag, help=row.report)
    rep.set_defaults(func=cmd_report)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pytest_akmbench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    _report_parser(sub)

    sub.add_parser("compare", help="compare two report.json files (see compare --help)", add_help=False)
    sub.add_parser(
        "lift", help="akm's lift per agent, side by side, from several agents' stores (see lift --help)", add_help=False
    )

    val = sub.add_parser("validate", help="check a corpus and run configs without running any agent")
    val.add_argument(
        "--corpus",
        help="tasks root (default: the nearest corpus/tasks at or above the first config, else corpus/tasks)",
    )
    val.add_argument("--stashes", help="stash fixtures (default: the stashes beside that corpus/tasks)")
    val.add_argument("configs", nargs="*", help="run configs to check as well")
    val.set_defaults(func=cmd_validate)

    for name, helptext, func in (
        ("kill", "stop this project's running bench (SIGTERM; a second call sends SIGKILL)", cmd_kill),
        ("clean", "remove stale run dirs (never a live run's, never the store)", cmd_clean),
    ):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("--tmp", help="bench tmp root (default: ~/.cache/bench-cells)")
        if name == "clean":
            p.add_argument("--older-than", type=float, default=6.0, metavar="HOURS", help="age threshold (default: 6)")
        else:
            p.add_argument(
                "--all",
                action="store_true",
                help="stop the benches of every project, not only the one of the current directory",
            )
        p.set_defaults(func=func)

    doc = sub.add_parser("doctor", help="what is installed and reachable")
    doc.add_argument("--config", help="run config (for its providers and model)")
    doc.add_argument("--providers", help="providers file")
    doc.add_argument("--model", help="model to check")
    doc.add_argument("--akm", help="akm executable")
    doc.add_argument("--agent", help="check only this agent (default: every built-in one)")
    for row in table().options:  # each agent's own options (its binary, its own provider file)
        if row.owner != "bench":
            doc.add_argument("--" + row.name.replace("_", "-"), metavar=row.metavar, help=row.help)
    doc.set_defaults(func=cmd_doctor)

    tools.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["compare"]:
        return _guard(lambda: cmd_compare(argv[1:]))
    if argv[:1] == ["lift"]:
        return _guard(lambda: cmd_lift(argv[1:]))
    args = build_parser().parse_args(argv)
    return _guard(lambda: args.func(args))


def _guard(fn: Any) -> int:
    try:
        return int(fn())
    except ConfigError as err:
        print(f"akmbench: {err}", file=sys.stderr)
        return 2 if err.usage else 78
    except BenchError as err:
        print(f"akmbench: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
