"""Which query form of a corpus's ``akm_keywords`` finds each task's gold asset, per real akm.

For every task with a ``gold_ref``: ``phrase`` is the keywords quoted as one argument (what
soundness and the scripted policies sent before), ``words`` the keywords as separate arguments
(akm-bench's ``akm search <words>``, what they send now), and ``found_by`` what
``--bench-soundness`` records (``cell/checks.gold_search``). Prints one line per task and the
counts per akm (docs/akm.md, "Query forms").

    python benchmarks/akm_query_form.py --tasks CORPUS/tasks --stashes STASHES \\
        --akm .tools/akm/0.7.0/akm --akm .tools/akm/0.9.0/akm
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

import smoke

from pytest_akmbench.cell import akm
from pytest_akmbench.cell.checks import gold_search
from pytest_akmbench.cell.prompts import keywords
from pytest_akmbench.cell.rundir import copy_stash
from pytest_akmbench.corpus.tasks import Task, find_task_files, load_task
from pytest_akmbench.system.procs import ProcessTracker

ROOT = Path(__file__).resolve().parents[1]
AKMS = [str(p) for p in sorted(ROOT.glob(".tools/akm/*/akm"))]  # built by .ci/akm


def phrase_finds(task: Task, stashes: Path, info: akm.AkmInfo, work: Path, procs: ProcessTracker) -> bool:
    """The old form alone: the keywords as one quoted argument."""
    run_dir = Path(tempfile.mkdtemp(dir=work))
    try:
        stash = run_dir / "stash"
        copy_stash(task, stashes, stash)
        env = akm.cell_env(info, stash, akm.private_env(run_dir / "home"))
        akm.write_config(info, env)
        procs.run([str(info.path), "index"], cwd=stash, env=env, timeout_s=300)
        _, out, _ = procs.run([str(info.path), "search", keywords(task)], cwd=stash, env=env, timeout_s=120)
        return any(akm.same_asset(r, task.gold_ref) for r in akm.search_refs(out) or [])
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=Path)
    parser.add_argument("--stashes", type=Path)
    parser.add_argument("--akm", action="append", help="a real akm executable (repeatable)")
    parser.add_argument("--limit", type=int, default=0, help="the first N tasks with a gold asset (default all)")
    # Smoke: this repository's corpus, its first 2 tasks, every akm .ci/akm built under .tools/.
    args = smoke.parse(parser, tasks=ROOT / "corpus" / "tasks", stashes=ROOT / "corpus" / "stashes", akm=AKMS, limit=2)
    if not (args.tasks and args.stashes and args.akm):
        parser.error("--tasks, --stashes and --akm are required (or --smoke)")
    if args.smoke and not AKMS:
        raise SystemExit(smoke.skipped("no real akm under .tools/akm/ (bash .ci/akm builds it)"))
    tasks = [t for t in map(load_task, find_task_files(args.tasks)) if t.gold_ref]
    tasks = tasks[: args.limit] if args.limit else tasks
    work = Path(tempfile.mkdtemp(prefix="akm-query-form-"))
    procs = ProcessTracker("akm-query-form")
    try:
        for path in args.akm:
            info = akm.detect(Path(path).resolve())
            counts = {"phrase": 0, "words": 0, "found_by_phrase": 0, "none": 0}
            for task in tasks:
                found_by, _ = gold_search(task, args.stashes, info, work, procs)
                phrase = phrase_finds(task, args.stashes, info, work, procs)
                counts["phrase"] += phrase
                counts["words"] += found_by == "words"
                counts["found_by_phrase"] += found_by == "phrase"
                counts["none"] += found_by == "none"
                print(f"akm {info.version}  {task.id:55} phrase={'yes' if phrase else 'no ':3}  found_by={found_by}")
            print(
                f"akm {info.version}: {len(tasks)} tasks with a gold asset; before (phrase) {counts['phrase']}, "
                f"after: found by words {counts['words']}, only as a phrase {counts['found_by_phrase']}, "
                f"by neither {counts['none']}\n"
            )
    finally:
        procs.kill_all()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
