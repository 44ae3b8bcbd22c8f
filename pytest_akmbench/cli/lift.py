"""``python -m pytest_akmbench lift STORE [STORE ...]``: akm's lift per agent, side by side, as
markdown or JSON (docs/report.md, "Lift per agent").

Each agent a store holds is reported as the ``report`` command reports it (the same samples,
fingerprints, harness errors and budgets), then the agents are set side by side on the tasks they
share. A report.json (or a report directory) stands for its agent as it is.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..report import lift_agents, lift_markdown
from ..report.compare.changes import load_report
from ..report.envelope_types import Envelope
from ..run import merge
from ..store.atomic import write_text
from ..store.samples import STORE_FILE

# (store, agent, the report options given) -> (that agent's envelope, what it could not make whole)
Reporter = Callable[[Path, str, list[str]], tuple[Envelope, list[str]]]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m pytest_akmbench lift",
        description="akm's lift per agent, side by side: several agents' stores on the tasks they share",
    )
    p.add_argument(
        "sources",
        nargs="+",
        metavar="STORE",
        help="a sample store directory (each agent it holds counts), or a report.json or report directory",
    )
    p.add_argument("--corpus", default="corpus/tasks", help="tasks root (default: corpus/tasks)")
    p.add_argument("--stashes", default="corpus/stashes", help="stash fixtures (default: corpus/stashes)")
    p.add_argument("--config", help="the run config the benches ran with")
    for name, text in (
        ("tasks", "the tasks each store's report selects, as report --tasks"),
        ("arms", "the arms, as report --arms"),
        ("seeds", "the seeds per arm each bench ran, as report --seeds (without it or --config: the default)"),
    ):
        p.add_argument(f"--{name}", help=text)
    p.add_argument("--json", action="store_true", help="print the document as JSON instead of markdown")
    p.add_argument("--out", metavar="DIR", help="also write lift.json and lift.md into DIR")
    return p


def _agents_in(store: Path) -> list[str]:
    names = {(r.get("agent") or {}).get("name") for records in merge.load([store]).records for r in records}
    return sorted(n for n in names if isinstance(n, str))


def _report_options(args: argparse.Namespace) -> list[str]:
    options = ["--corpus", args.corpus, "--stashes", args.stashes]
    for name in ("config", "tasks", "arms", "seeds"):
        if getattr(args, name):
            options += [f"--{name}", getattr(args, name)]
    return options


def _read(args: argparse.Namespace, report: Reporter) -> tuple[list[tuple[str, Envelope]], list[str]]:
    """(source, envelope) per agent, and what a store's report could not make whole; ValueError
    with a one-line message for a source that is neither a store nor a utility report."""
    out: list[tuple[str, Envelope]] = []
    problems: list[str] = []
    for source in args.sources:
        path = Path(source)
        if path.is_dir() and (path / STORE_FILE).is_file():
            names = _agents_in(path)
            if not names:
                raise ValueError(f"{path}: the store holds no sample")
            for name in names:
                envelope, gaps = report(path, name, _report_options(args))
                out.append((f"{path} (agent {name})", envelope))
                problems += [f"{name} ({path}): {gap}" for gap in gaps]
            continue
        file = path / "report.json" if path.is_dir() else path
        if path.is_dir() and not file.is_file():
            raise ValueError(f"{path} is neither a sample store nor a report directory")
        envelope = load_report(file)
        if envelope.get("schemaVersion") != 1 or envelope.get("track") != "utility":
            raise ValueError(f"{file} is not a utility report (schemaVersion 1, track utility)")
        rows = [t.get(arm) for t in envelope.get("tasks") or [] for arm in lift_agents.ARMS]
        if any(isinstance(r, dict) and not {"passes", "valid_count", "harness_error_count"} <= r.keys() for r in rows):
            raise ValueError(f"{file} has no per-task run counts (an older report): rebuild it with the report command")
        out.append((str(file), envelope))
    seen: dict[str, str] = {}
    for where, envelope in out:
        name = lift_agents.agent_name(envelope)
        if name in seen:
            raise ValueError(
                f"agent {name} is in two sources ({seen[name]}, {where}): give one report per agent "
                "(report --store A --store B merges one agent's stores)"
            )
        seen[name] = where
    return out, problems


def main(argv: list[str], report: Reporter) -> int:
    """0 set side by side; 1 when no two agents' lifts could be compared, or a store's report could
    not be made whole; 2 usage error or unreadable input."""
    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:  # argparse printed the usage error (or --help)
        return 0 if exc.code in (0, None) else 2
    try:
        reports, problems = _read(args, report)
    except ValueError as err:
        print(f"lift: {err}", file=sys.stderr)
        return 2
    doc: dict[str, Any] = lift_agents.side_by_side(reports)
    doc["warnings"] += problems
    text, md = json.dumps(doc, indent=2) + "\n", lift_markdown.render(doc)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        write_text(out / "lift.json", text)
        write_text(out / "lift.md", md)
    sys.stdout.write(text if args.json else md)
    if not doc["interaction"]["pairs"]:
        print("lift: fewer than two agents ran both arms on shared tasks: the lifts were not compared", file=sys.stderr)
        return 1
    return 1 if problems else 0
