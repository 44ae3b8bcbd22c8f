"""The harness's own time per opencode cell, outside the opencode process.

    python benchmarks/opencode_overhead.py              # 10 cells, arm noakm, serial
    python benchmarks/opencode_overhead.py --cells 20 --arms noakm,akm

Runs N cells through pytest with the REAL opencode binary
(``.tools/node_modules/opencode-linux-x64/bin/opencode``; skipped with a message if absent) and
the scripted model (``--bench-model scripted/oracle``) on a temporary corpus of script tasks,
serially. opencode is started through a tiny bash wrapper (``--bench-opencode``) that logs
``$EPOCHREALTIME`` (a bash builtin: no extra fork) right before and right after the real
binary runs, so the opencode process's own lifetime is known without patching any code.

Per cell, from the sample (``timing_ms``, ``started_at``), the wrapper log, the transcript's
event timestamps and the JUnit XML time of the pytest item (setup + call + teardown):

* setup          run dir, workspace copy, prompt, transcript path (``timing_ms.setup``)
* adapter        agent phase minus the opencode process's lifetime: ``OpencodeAgent.run``
                 before the spawn (scripted registration, opencode.json, env, bin links,
                 prompt file, Popen) and after the exit (drain, join, parse), plus
                 ``run_cell``'s ``procs.kill_all()`` after the agent
* verify extra   ``timing_ms.verify`` minus a bare ``bash verify.sh`` spawn timed here
* item extra     the pytest item's wall minus ``timing_ms.total`` (fixtures, run-dir delete,
                 store append, finalizer sweep, reporting)

harness = setup + adapter + verify extra + item extra; target: under 5% of the cell's wall.
The wrapper's own bash start-up (timed here too) lands in "adapter"; it is printed so it can
be discounted. Prints; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import smoke  # noqa: E402

from tests.support.corpus import write_stash, write_task  # noqa: E402

OPENCODE = ROOT / ".tools" / "node_modules" / "opencode-linux-x64" / "bin" / "opencode"
AKM = max(ROOT.glob(".tools/akm/*/akm"), default=ROOT / ".tools" / "akm" / "missing")  # built by .ci/akm

WRAPPER = """#!/bin/bash
s=$EPOCHREALTIME
{real} "$@"
rc=$?
e=$EPOCHREALTIME
printf '%s %s %s\\n' "$s" "$e" "$1" >> {log}
exit $rc
"""


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def iso_epoch(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def bare_spawn(argv: list[str], cwd: Path, n: int = 20) -> float:
    xs = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        xs.append(time.perf_counter() - t0)
    return med(xs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", type=int, default=10, help="cells to run (default 10)")
    ap.add_argument("--arms", default="noakm", help="arms (default noakm; akm uses the newest real akm in .tools/akm/)")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (printed) for inspection")
    args = smoke.parse(ap, cells=2, arms="noakm,akm")
    if not (OPENCODE.is_file() and os.access(OPENCODE, os.X_OK)):
        return smoke.skipped(f"opencode binary not found at {OPENCODE} (install it as the README/.ci says)")
    try:
        from pytest_akmbench.agents.opencode.binaries import locate_rg

        locate_rg()
    except Exception as err:
        return smoke.skipped(str(err))
    arms = [a for a in args.arms.split(",") if a]
    n_tasks = max(1, -(-args.cells // len(arms)))
    print(
        f"pytest-akmbench opencode overhead; python {sys.version.split()[0]}, {os.cpu_count()} CPUs,"
        f" load average at start {loadavg()}"
    )
    tmp = Path(tempfile.mkdtemp(prefix="akmbench-opencode-bench-"))
    try:
        return run(tmp, n_tasks, arms)
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def run(tmp: Path, n_tasks: int, arms: list[str]) -> int:
    proj = tmp / "project"
    proj.mkdir()
    (proj / "pytest.ini").write_text("[pytest]\n")
    write_stash(proj / "corpus" / "stashes")
    for i in range(n_tasks):
        # solve.sh: echo hello > out.txt; verify.sh: grep. The default test budget (1000 tokens,
        # 20 s) is below one scripted turn (1020 tokens) and a cold opencode start under load.
        write_task(proj / "corpus" / "tasks", f"d/t{i:04d}", extra={"budget": {"tokens": 100000, "wallMs": 180000}})
    log = tmp / "opencode-times.log"
    wrapper = tmp / "opencode-timed"
    wrapper.write_text(WRAPPER.format(real=str(OPENCODE), log=str(log)))
    wrapper.chmod(0o755)
    store, junit = tmp / "store", tmp / "junit.xml"
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "corpus/tasks",
        "-q",
        "-p",
        "no:cacheprovider",
        "--bench-agent",
        "opencode",
        "--bench-model",
        "scripted/oracle",
        "--bench-arms",
        ",".join(arms),
        "--bench-seeds",
        "1",
        "--bench-opencode",
        str(wrapper),
        "--bench-store",
        str(store),
        "--bench-report",
        str(tmp / "report"),
        "--bench-tmp",
        str(tmp / "cells"),
        # The wrapper logs its timestamps to a file of this run, which a sandboxed cell cannot
        # see: unsandboxed cells; benchmarks/sandbox_bench.py measures what the sandbox adds.
        "--bench-sandbox",
        "none",
        f"--junitxml={junit}",
    ]
    if "akm" in arms:
        argv += ["--bench-akm", str(AKM)]
    load_before = loadavg()
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=proj, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    load_after = loadavg()
    if proc.returncode not in (0, 1) or not (store / "samples.jsonl").is_file():
        print(f"bench run exited {proc.returncode}:\n{(proc.stdout + proc.stderr)[-3000:]}")
        return 1
    if proc.returncode == 1:
        print("note: some cells did not pass (see outcomes below); their timings are still reported")

    samples = [json.loads(line) for line in (store / "samples.jsonl").read_text().splitlines() if line.strip()]
    spans = []
    for line in log.read_text().splitlines():
        s, e, verb = line.split(" ", 2)
        spans.append((float(s.replace(",", ".")), float(e.replace(",", ".")), verb))
    runs = [(s, e) for s, e, verb in spans if verb == "run"]
    versions = [e - s for s, e, verb in spans if verb == "--version"]
    items = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        items[(case.get("classname"), case.get("name"))] = float(case.get("time"))

    # Floors measured here, after the run: a bare verify.sh spawn, and the wrapper's own cost.
    task_dir = proj / "corpus" / "tasks" / "d" / "t0000"
    ws = tmp / "floor-ws"
    shutil.copytree(task_dir / "workspace", ws)
    (ws / "out.txt").write_text("hello\n")
    bash_verify = bare_spawn(["bash", str(task_dir / "verify.sh")], ws)
    true_bin = shutil.which("true") or "/bin/true"
    wrap_true = tmp / "wrap-true"
    wrap_true.write_text(WRAPPER.format(real=true_bin, log=str(tmp / "wrap-true.log")))
    wrap_true.chmod(0o755)
    wrapper_cost = bare_spawn([str(wrap_true)], tmp) - bare_spawn([true_bin], tmp)

    rows = []
    for sample in samples:
        tm = sample["timing_ms"]
        agent_start = iso_epoch(sample["started_at"]) + tm["setup"] / 1000
        agent_end = agent_start + tm["agent"] / 1000
        # The opencode run that started inside this cell's agent phase (±5 ms of rounding).
        match = [(s, e) for s, e in runs if agent_start - 0.005 <= s <= agent_end + 0.005]
        if len(match) != 1:
            print(f"warning: {sample['task_id']}: {len(match)} opencode runs in its agent phase; skipped")
            continue
        s, e = match[0]
        events = []
        if sample.get("transcript"):
            for line in (store / sample["transcript"]).read_text().splitlines():
                try:
                    events.append(json.loads(line)["timestamp"] / 1000)
                except (ValueError, KeyError, TypeError):
                    pass
        key = next(
            (
                k
                for k in items
                if k[1] == f"{sample['arm']}-s{sample['seed']}"
                and k[0].endswith(sample["task_id"].replace("/", ".") + ".task.yaml")
            ),
            None,
        )
        item = items.get(key) if key else None
        oc = e - s
        row = {
            "outcome": sample["outcome"],
            "setup": tm["setup"] / 1000,
            "agent": tm["agent"] / 1000,
            "verify": tm["verify"] / 1000,
            "total": tm["total"] / 1000,
            "opencode": oc,
            "adapter": tm["agent"] / 1000 - oc,
            "pre_spawn": s - agent_start,
            "post_exit": agent_end - e,
            "verify_extra": tm["verify"] / 1000 - bash_verify,
            "item": item if item is not None else tm["total"] / 1000,
            "item_extra": (item - tm["total"] / 1000) if item is not None else 0.0,
            "brief": (tm["total"] - tm["agent"] - tm["verify"]) / 1000,
            "first_event": (events[0] - s) if events else float("nan"),
            "after_last_event": (e - events[-1]) if events else float("nan"),
        }
        row["harness"] = row["setup"] + row["adapter"] + row["verify_extra"] + row["item_extra"]
        row["share"] = row["harness"] / row["item"]
        rows.append(row)

    outcomes = {}
    for s in samples:
        outcomes[s["outcome"]] = outcomes.get(s["outcome"], 0) + 1

    def m(key: str) -> str:
        return f"{med([r[key] for r in rows]) * 1000:8.1f} ms"

    print(
        f"\n{len(samples)} opencode cells ({n_tasks} tasks x {','.join(arms)} x 1 seed, scripted/oracle), serial;"
        f" outcomes {outcomes}; bench process wall {wall:.1f} s"
    )
    print(f"load average: before {load_before}, after {load_after}")
    print(f"session-level, once per run: opencode --version {med(versions) * 1000:.0f} ms (x{len(versions)})")
    print("\nper cell, medians:")
    print(f"  pytest item wall (junit: setup+call+teardown) {m('item')}")
    print(f"  cell total (timing_ms.total)                  {m('total')}")
    print(f"    setup (timing_ms.setup)                     {m('setup')}")
    print(f"    agent phase (timing_ms.agent)               {m('agent')}")
    print(f"      opencode process lifetime (wrapper)       {m('opencode')}")
    print(f"        spawn -> first transcript event         {m('first_event')}  (opencode start-up)")
    print(f"        last transcript event -> exit           {m('after_last_event')}  (opencode shut-down)")
    print(f"      adapter = agent - opencode                {m('adapter')}")
    print(f"        before spawn (incl. wrapper start)      {m('pre_spawn')}")
    print(f"        after exit (incl. kill_all sweep)       {m('post_exit')}")
    print(
        f"    verify (timing_ms.verify)                   {m('verify')}  (bare bash verify.sh"
        f" {bash_verify * 1000:.1f} ms)"
    )
    print(f"  total - agent - verify (brief's definition)   {m('brief')}  (= setup up to ms rounding)")
    print(f"  item wall - cell total                        {m('item_extra')}")
    print(f"  wrapper's own cost (bash + 2 builtins)        {wrapper_cost * 1000:8.1f} ms, counted in 'adapter'")
    share = med([r["share"] for r in rows])
    print(
        f"\nharness = setup + adapter + (verify - bare verify) + (item - total): median {m('harness').strip()}"
        f" = {share * 100:.1f}% of the cell's wall (target < 5%: {'OK' if share < 0.05 else 'MISSED'})"
    )
    no_wrap = med([(r["harness"] - wrapper_cost) / r["item"] for r in rows])
    print(f"  without the wrapper's own cost: {no_wrap * 100:.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
