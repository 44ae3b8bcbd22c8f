"""``python -m pytest_akmbench compare BASE HEAD``: the comparison of two report.json files, as
markdown or JSON (docs/report.md, "compare")."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..report.compare.changes import compare, load_report
from ..report.compare.markdown import render_markdown


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m pytest_akmbench compare",
        description="Compare two akmbench report.json files (current = HEAD against BASE)",
    )
    p.add_argument("base", metavar="BASE", help="The baseline report.json")
    p.add_argument("head", metavar="HEAD", help="The current report.json")
    p.add_argument("--json", action="store_true", help="Print the comparison as JSON instead of markdown")
    p.add_argument("--allow-corpus-mismatch", action="store_true", help="Diff even if the task corpora differ")
    p.add_argument("--allow-fixture-mismatch", action="store_true", help="Diff even if the fixture stashes differ")
    p.add_argument("--allow-model-mismatch", action="store_true", help="Diff even if the models differ")
    p.add_argument("--allow-agent-mismatch", action="store_true", help="Diff even if the agents differ")
    p.add_argument("--allow-workflow-mismatch", action="store_true", help="Diff even if a workflow's spec differs")
    return p


def main(argv: list[str]) -> int:
    """0 compared, 1 refused, 2 usage error or unreadable input."""
    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:  # argparse printed the usage error (or --help)
        return 0 if exc.code in (0, None) else 2
    try:
        base = load_report(Path(args.base))
        head = load_report(Path(args.head))
    except ValueError as err:
        print(f"compare: {err}", file=sys.stderr)
        return 2
    result = compare(
        base,
        head,
        allow_model_mismatch=args.allow_model_mismatch,
        allow_corpus_mismatch=args.allow_corpus_mismatch,
        allow_fixture_mismatch=args.allow_fixture_mismatch,
        allow_workflow_mismatch=args.allow_workflow_mismatch,
        allow_agent_mismatch=args.allow_agent_mismatch,
    )
    sys.stdout.write(json.dumps(result, indent=2) + "\n" if args.json else render_markdown(result))
    if not result["ok"]:
        print(f"compare: refused ({result['reason']}): {result['message']}", file=sys.stderr)
        return 1
    return 0
