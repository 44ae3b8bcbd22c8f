"""Record the transcripts under tests/data/transcripts/ from the real binaries.

    python tests/data/record_transcripts.py [--akm PATH ...]

For each real akm (default: every one ``tests/support/real_akm.py`` finds), three akm-arm cells
of a small "demo" task run through the real opencode binary and the scripted model:
``oracle`` (search, show the gold asset, solve, positive feedback), ``idle`` (no tool call)
and ``wrong-asset`` (a search that misses the gold, a wrong asset shown, negative feedback, a
refused show). Each leaves ``<scenario>-akm-<version>.jsonl`` (opencode's event stream) and
``<scenario>-akm-<version>.akm-log.json`` (akm's own event log, raw: the 0.7 events file as a
JSON list, or 0.9's ``akm log --format json --detail full`` output). The tests read them with
the same functions the runner uses.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from pytest_akmbench.agents import AgentRequest, Limits, SessionInfo  # noqa: E402
from pytest_akmbench.agents.opencode.adapter import OpencodeAgent  # noqa: E402
from pytest_akmbench.cell import akm  # noqa: E402
from pytest_akmbench.cell.context import Cell, RunContext  # noqa: E402
from pytest_akmbench.cell.prompts import build_prompt  # noqa: E402
from pytest_akmbench.cell.rundir import index_stash  # noqa: E402
from pytest_akmbench.cell.runner import prepare  # noqa: E402
from pytest_akmbench.corpus.tasks import load_corpus  # noqa: E402
from pytest_akmbench.system.procs import ProcessTracker, become_subreaper  # noqa: E402
from tests.support import real_akm  # noqa: E402
from tests.support.corpus import write_stash, write_task  # noqa: E402

OUT = Path(__file__).resolve().parent / "transcripts"
GOLD = "skill:hello-file"
STASH_ASSETS = {
    "skills/hello-file/SKILL.md": "---\nname: hello-file\ndescription: Write the greeting file hello.txt\n"
    "tags: [hello, greeting, file]\n---\nTo greet, write `hi` to hello.txt.\n",
    "knowledge/file-formats.md": "---\nname: file-formats\ndescription: Text file formats and line endings\n"
    "tags: [file, formats, text]\n---\nFiles end with a newline.\n",
    "knowledge/other.md": "---\nname: other\ndescription: An unrelated note about greeting cards\n"
    "tags: [greeting, cards]\n---\nCards are sent in December.\n",
}


def wrong_asset_plan(line: str) -> list[str]:
    ref = lambda r: akm.format_ref(r, line)  # noqa: E731
    return [
        "akm search 'text formats'",
        f"akm show {ref('knowledge:file-formats')}",
        f"akm show {ref('knowledge:missing')}",
        "echo hello > hello.txt",
        f"akm feedback {ref('knowledge:file-formats')} --negative --reason 'did not help'",
    ]


def record(info: akm.AkmInfo, work: Path) -> None:
    tasks, stashes = work / "tasks", work / "stashes"
    write_stash(stashes, "demo", STASH_ASSETS)
    shutil.rmtree(stashes / "demo" / "skills" / "howto")
    write_task(
        tasks,
        "demo/hello-file",
        stash="demo",
        verify='grep -qx "hi" hello.txt\n',
        solve="echo hi > hello.txt\n",
        extra={"gold_ref": GOLD, "akm_keywords": "greeting file"},
    )
    task = load_corpus(tasks, stashes).by_id()["demo/hello-file"]
    for scenario, policy in (("oracle", "oracle"), ("idle", "idle"), ("wrong-asset", "oracle")):
        agent = OpencodeAgent()
        agent.start(
            SessionInfo(model=f"scripted/{policy}", arms=("akm",), tasks=(task,), options={"rootdir": str(ROOT)})
        )
        try:
            if scenario == "wrong-asset":
                register = agent.scripted.register  # type: ignore[union-attr]
                agent.scripted.register = lambda *a, register=register, **k: register(
                    *a, **k, commands=wrong_asset_plan(info.line)
                )  # type: ignore[union-attr]
            ctx = RunContext(
                run_id=f"rec-{scenario}",
                tmp_root=work / "cells",
                stashes_root=stashes,
                agent=agent,
                model=agent.model,
                budget_tokens=100000,
                budget_wall_ms=120000,
                budget_turns=None,
                verify_timeout_s=60,
                akm=info,
            )
            procs = ProcessTracker(f"rec-{scenario}")
            run_dir, env, stash, _ = prepare(Cell(task, "akm", 1), ctx)
            assert stash is not None
            index_stash(info, stash, env, procs)
            prompt, version = build_prompt(task, "akm", run_dir / "workspace", info)
            transcript = run_dir / "transcript.jsonl"
            started = time.time_ns() // 1_000_000
            result = agent.run(
                AgentRequest(
                    task=task,
                    arm="akm",
                    seed=1,
                    workspace=run_dir / "workspace",
                    run_dir=run_dir,
                    env=env,
                    prompt=prompt,
                    prompt_version=version,
                    limits=Limits(wall_s=120),
                    transcript=transcript,
                    procs=procs,
                    stash_dir=stash,
                    model=agent.model,
                    akm_line=info.line,
                )
            )
            procs.kill_all()
            assert result.error is None, result.error
            name = f"{scenario}-akm-{info.version}"
            shutil.copy(transcript, OUT / f"{name}.jsonl")
            argv = akm.log_argv(info)
            if argv is None:
                path = akm.events_file(env)
                raw = [json.loads(x) for x in path.read_text().splitlines()] if path.is_file() else []
                log = json.dumps(raw, indent=1)
            else:
                code, log, _ = procs.run(argv, cwd=run_dir, env=env, timeout_s=60)
                assert code == 0, log
            (OUT / f"{name}.akm-log.json").write_text(
                json.dumps({"akm": info.version, "agent_started_ms": started, "log": log}, indent=1) + "\n"
            )
            print(f"recorded {name}")
        finally:
            agent.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--akm", action="append", help="akm executable (repeatable; default: every one found)")
    args = parser.parse_args()
    infos = [akm.detect(Path(p)) for p in args.akm] if args.akm else list(real_akm.found().values())
    if not infos:
        print(real_akm.MISSING, file=sys.stderr)
        return 1
    become_subreaper()
    OUT.mkdir(parents=True, exist_ok=True)
    for info in infos:
        with tempfile.TemporaryDirectory(prefix="record-") as tmp:
            record(info, Path(tmp))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
