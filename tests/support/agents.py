"""The test agents: each a conftest text that registers one model-free agent through the
``pytest_akmbench_agents`` hook (docs/agents.md), built by ``agent`` from the body of its ``run``.

Files an agent reads or writes live beside the conftest (``HERE``), so a copy of a project (a
remote worker's) reads and logs in the copy.
"""

from __future__ import annotations

import textwrap

PRELUDE = """\
import json, os, time
from pathlib import Path
from pytest_akmbench.agents import AgentResult

HERE = Path(__file__).parent
TOKENS = {"input": 100, "output": 10, "reasoning": 0, "cache_read": 0, "cache_write": 0, "total": 110}
"""


def agent(name: str, run: str, *, version: str = "1", uses_akm: bool | None = False, more: str = "") -> str:
    """A conftest registering the agent ``name`` whose ``run(self, request)`` is ``run``. With
    ``uses_akm=None`` the agent does not say, so it may call akm; ``more`` is code after the class
    (a subclass, a helper) and ``Registered`` names what the hook returns when it defines that."""
    cls = f"{name.capitalize()}Agent"
    says = "" if uses_akm is None else f"    uses_akm = {uses_akm}\n"
    body = textwrap.indent(textwrap.dedent(run).strip("\n"), " " * 8)
    hook = "Registered" if "Registered" in more else f"[{cls}()]"
    return (
        f"{PRELUDE}\n\nclass {cls}:\n    name, version = {name!r}, {version!r}\n{says}"
        "    def start(self, session): pass\n    def stop(self): pass\n    def run(self, request):\n"
        f"{body}\n\n{more}\n\ndef pytest_akmbench_agents():\n    return {hook}\n"
    )


# Solves every standard task and leaves a transcript (which a merge of stores must copy).
SOLVER = agent(
    "slow",
    """
    (request.workspace / "out.txt").write_text("hello\\n")
    request.transcript.write_text("")
    return AgentResult(final_text="the answer is 42", token_measurement="measured", transcript_written=True,
                       tokens=TOKENS)
    """,
)

# Solves every standard task in half a second: slow enough to interrupt.
SLOW = agent(
    "slow",
    """
    time.sleep(0.5)
    (request.workspace / "out.txt").write_text("hello\\n")
    return AgentResult(final_text="the answer is 42")
    """,
)

# Solves every standard task after the seconds in the project's "delay" file and logs each run; a
# "down" file is a provider outage (a harness error, same fingerprint).
RESUMABLE = agent(
    "slow",
    """
    with open(HERE / "agent-runs.log", "a") as log:
        log.write(f"{request.task.id} {request.arm} {request.seed}\\n")
    if (HERE / "down").exists():
        return AgentResult(error="provider unreachable")
    time.sleep(float((HERE / "delay").read_text()))
    (request.workspace / "out.txt").write_text("hello\\n")
    return AgentResult(final_text="the answer is 42", token_measurement="measured", tokens=TOKENS)
    """,
)

# Its outcome is the project's "policy" file's: akm-wins solves only on the akm arm, noakm-loses on
# every arm but noakm, even only even seeds (every arm), all everything; it waits the "delay" file's
# seconds and logs each run. With an "over-budget" file, a cell it does not solve ran out of tokens.
POLICY = agent(
    "policy",
    """
    with open(HERE / "agent-runs.log", "a") as log:
        log.write(f"{request.task.id} {request.arm} {request.seed}\\n")
    time.sleep(float((HERE / "delay").read_text()))
    policy = (HERE / "policy").read_text().strip()
    solve = {"akm-wins": request.arm == "akm", "noakm-loses": request.arm != "noakm", "even": request.seed % 2 == 0,
             "all": True}[policy]
    if solve:
        (request.workspace / "out.txt").write_text("hello\\n")
        return AgentResult(final_text="the answer is 42", token_measurement="measured", tokens=TOKENS)
    if (HERE / "over-budget").exists():  # it fails by running out of tokens
        return AgentResult(final_text="", token_measurement="measured", tokens=TOKENS, budget="tokens",
                           budget_tag="limit")
    return AgentResult(final_text="no idea", token_measurement="measured", tokens=TOKENS)
    """,
)

# Solves every task at a fixed price: 1000 tokens and $0.0125 a cell.
PRICED = agent(
    "priced",
    """
    (request.workspace / "out.txt").write_text("hello\\n")
    return AgentResult(final_text="the answer is 42", tokens={"input": 900, "output": 100, "total": 1000},
                       token_measurement="measured", cost_usd=0.0125)
    """,
)

# Fails, passes, fails, passes... in call order: a true pass rate of 0.5.
COIN = agent(
    "coin",
    """
    counter = HERE / "calls"
    calls = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(calls))
    if calls % 2 == 0:
        (request.workspace / "out.txt").write_text("hello\\n")
    return AgentResult(final_text="done")
    """,
)

# One long task, the rest instant, each in a process of the cell: under -n 2 one worker runs out of
# work long before the other.
SLEEPY = agent(
    "sleepy",
    """
    seconds = "4" if request.task.id == "alpha/script-task" else "0"
    code, _, _ = request.procs.run(["sleep", seconds], cwd=request.workspace, env=request.env, timeout_s=60)
    if code != 0:
        return AgentResult(error=f"the agent's own process died: exit {code}")
    (request.workspace / "out.txt").write_text("hello\\n")
    return AgentResult(final_text="the answer is 42")
    """,
)

# An agent that does not say it never calls akm, so the akm arm needs a real akm.
ECHO = agent(
    "echo",
    """
    (request.workspace / "out.txt").write_text("hello\\n")
    return AgentResult(final_text="answer is 41", token_measurement="measured",
                       tokens={"input": 10, "output": 5, "reasoning": 0, "cache_read": 0, "cache_write": 0, "total": 15})
    """,
    version="7",
    uses_akm=None,
)

# The same, priced: 120 tokens and $0.0125 a cell.
CALLS_AKM = agent(
    "echo",
    """
    (request.workspace / "out.txt").write_text("hello\\n")
    return AgentResult(final_text="the answer is 42", tokens={"total": 120}, token_measurement="measured",
                       cost_usd=0.0125)
    """,
    uses_akm=None,
)

# "uses" may call akm, "never" says it never does; both solve every script task.
USES_AND_NEVER = agent(
    "uses",
    """
    (request.workspace / "out.txt").write_text("hello\\n")
    return AgentResult()
    """,
    uses_akm=None,
    more='class NeverAgent(UsesAgent):\n    name, uses_akm = "never", False\n\nRegistered = [UsesAgent(), NeverAgent()]\n',
)

# Every cell starts a child process (which must die with the cell), logs when it starts and ends,
# and takes the time delays.json gives its task (or "task/arm", or "*"); a "fill-with" file names a
# file to fill until the disk is full.
FAULT = agent(
    "fault",
    """
    log("start", request)
    child = request.procs.spawn(["sleep", "300"], cwd=request.workspace, env=request.env)
    cell = f"{request.task.id.replace('/', '_')}-{request.arm}-{request.seed}"
    (HERE / "pids").mkdir(exist_ok=True)
    (HERE / "pids" / cell).write_text(f"{os.getpid()} {child.pid}")
    delays = json.loads((HERE / "delays.json").read_text())
    default = delays.get(request.task.id, delays.get("*", 0))
    time.sleep(delays.get(f"{request.task.id}/{request.arm}", default))
    fill = HERE / "fill-with"
    if fill.exists():
        target = Path(fill.read_text())
        try:
            with open(target, "wb") as fh:
                while True:
                    fh.write(b"x" * 65536)
        except OSError:
            pass
        fill.unlink()
    (request.workspace / "out.txt").write_text("hello\\n")
    log("end", request)
    return AgentResult(final_text="the answer is 42")
    """,
    more="""def log(event, request):
    with open(HERE / "agent.log", "a") as fh:
        fh.write(f"{time.time():.3f} {event} {request.task.id} {request.arm} {request.seed} {os.getpid()}\\n")
""",
)

# Sleeps the time delays.json gives its cell ("task|arm|seed"), its task or "*", starts a child that
# must die with the cell, writes a transcript line and logs where it ran.
SLEEPER = agent(
    "sleeper",
    """
    cell = f"{request.task.id} {request.arm} {request.seed}"
    with open(HERE / "agent.log", "a") as fh:
        fh.write(f"start {cell} {os.getcwd()} {os.getpid()}\\n")
    request.procs.spawn(["sleep", "300"], cwd=request.workspace, env=request.env)
    delays = json.loads((HERE / "delays.json").read_text())
    key = f"{request.task.id}|{request.arm}|{request.seed}"
    time.sleep(delays.get(key, delays.get(request.task.id, delays.get("*", 0))))
    request.transcript.write_text(json.dumps({"cell": cell, "host_dir": str(HERE)}) + "\\n")
    (request.workspace / "out.txt").write_text("hello\\n")
    return AgentResult(final_text="the answer is 42", token_measurement="unsupported", transcript_written=True)
    """,
)

# Solves every standard task, but a cell listed in the project's "errors" file (a "task arm seed"
# line) ends in a harness error, as when its provider fails.
FLAKY = agent(
    "flaky",
    """
    errors = HERE / "errors"
    if errors.exists() and f"{request.task.id} {request.arm} {request.seed}" in errors.read_text().splitlines():
        return AgentResult(error="provider unreachable")
    (request.workspace / "out.txt").write_text("hello\\n")
    return AgentResult(final_text="the answer is 42")
    """,
)
