"""The ``--bench-*`` options and their ini twins: all the inert plugin defines.

Precedence (command line, run config, ini, default) is resolved later, in
``corpus.config.resolve``; here each value is only read, with where it came from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..records import ARMS

# (setting name, metavar, help); each becomes --bench-NAME and ini key bench_NAME.
OPTIONS: list[tuple[str, str, str]] = [
    ("config", "FILE", "Run config (JSON, schema v1) naming tasks, arms, seeds, budgets, model"),
    ("corpus", "DIR", "Tasks root of the corpus (default: corpus/tasks)"),
    ("stashes", "DIR", "Directory of stash fixtures (default: corpus/stashes)"),
    ("tasks", "SEL", "Task selector: all, train, eval, a domain, a task id, or ids a/b,c/d"),
    ("arms", "LIST", f"Comma-separated arms out of {', '.join(ARMS)} (default: noakm,akm)"),
    ("seeds", "N", "Trials per task and arm, numbered 1..N (default: 3)"),
    ("agent", "NAME", "Agent adapter: opencode (default), oracle, nop or one a plugin registers"),
    ("model", "MODEL", "Model as provider/model, e.g. scripted/oracle"),
    ("providers", "FILE", "Providers file for opencode (schemaVersion 1, providers, defaultModel)"),
    (
        "opencode-config",
        "FILE",
        "Standard opencode config (opencode.json): its provider block and model are used instead of a providers file",
    ),
    (
        "budget-tokens",
        "N",
        "Token budget per cell: caps every task's own; used where a task declares none (default: 30000)",
    ),
    (
        "budget-wall-ms",
        "MS",
        "Wall-clock budget per cell: caps every task's own; used where a task declares none (default: 120000)",
    ),
    ("budget-turns", "N", "Model turns allowed per cell (default: unlimited)"),
    ("budget-usd", "USD", "Spend cap of the whole run in US dollars: once reached, no new cell starts"),
    ("budget-run-tokens", "N", "Spend cap of the whole run in tokens: once reached, no new cell starts"),
    ("verify-timeout", "SECONDS", "Timeout of one verifier run (default: 120)"),
    ("floor", "N", "Valid samples a cell needs to count as covered in the report (default: 3)"),
    ("store", "DIR", "Sample store directory (default: .akmbench/store)"),
    ("report", "DIR", "Where report.json and summary.md go (default: .akmbench/report)"),
    ("tmp", "DIR", "Root of the per-cell run dirs (default: ~/.cache/bench-cells)"),
    ("akm", "PATH", "The akm executable given to the akm arm"),
    ("baseline", "FILE", "Baseline pass rates {task_id: rate}: adds the vs-base column to the summary"),
    ("opencode", "PATH", "The opencode executable"),
    ("shard", "K/N", "Run only shard K of N of the selected cells, balanced by their walls in the store (CI matrix)"),
    (
        "sandbox",
        "MODE",
        "Sandbox of each cell's agent: auto (bwrap when it works, else none with a warning; "
        "the default), bwrap, or none",
    ),
    (
        "network",
        "MODE",
        "Network of a sandboxed agent: isolated (the default: its model only) or host (the machine's "
        "network, for tasks that need it; recorded in the fingerprint)",
    ),
    ("track", "NAME", "Track: utility (the default), attribute (needs --bench-base) or evolve (docs/tracks.md)"),
    ("base", "FILE", "Attribute track: the utility report.json whose akm runs are masked asset by asset"),
    ("top", "N", "Attribute track: mask the N most loaded assets of the base (default: 5)"),
    (
        "evolve-episodes",
        "N",
        "Evolve track: N episodes of train, proposals, post, each on the last one's stash (default: 1)",
    ),
]
FLAGS = [
    ("force-parallel", "Allow --parallel above 4 without a warning"),
    ("keep-runs", "Keep each cell's run dir after it ends, for debugging"),
    ("fresh", "Run every selected cell again even if the store has its sample (still appends)"),
    (
        "soundness",
        "Check the corpus instead of running an agent: one item per task proving that the "
        "untouched workspace fails, the solution passes and the verifier repeats itself",
    ),
]


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("akmbench", "agent benchmark cells (pytest-akmbench)")
    for name, metavar, help_text in OPTIONS:
        dest = "bench_" + name.replace("-", "_")
        group.addoption(f"--bench-{name}", dest=dest, metavar=metavar, default=None, help=help_text)
        parser.addini(dest, help_text, default=None)
    for name, help_text in FLAGS:
        dest = "bench_" + name.replace("-", "_")
        group.addoption(f"--bench-{name}", dest=dest, action="store_true", default=None, help=help_text)
        parser.addini(dest, help_text, default=None)
    group.addoption(
        "--bench-gate",
        dest="bench_gate",
        action="append",
        default=None,
        metavar="EXPR",
        help="Gate deciding the exit status, e.g. akm.pass_rate>=0.6, lift.low>0, "
        "no-regression:BASE/report.json (repeatable)",
    )
    parser.addini("bench_gate", "Gates deciding the exit status, one per line", type="linelist", default=[])
    group.addoption(
        "--bench-sandbox-ro",
        dest="bench_sandbox_ro",
        action="append",
        default=None,
        metavar="PATH",
        help="A file or directory the sandboxed agent may also read (repeatable)",
    )
    parser.addini(
        "bench_sandbox_ro",
        "Files or directories the sandboxed agent may also read, one per line",
        type="linelist",
        default=[],
    )
    group.addoption(
        "--parallel",
        dest="bench_parallel",
        metavar="N",
        default=None,
        help="Run cells in N processes (pytest-xdist -n, clamped to 1..8)",
    )
    parser.addini("bench_parallel", "Default for --parallel", default=None)
    llm_help = "evolve track: akm's own LLM, scripted/lesson, scripted/garbage or a chat-completions URL"
    group.addoption("--bench-evolve-llm", dest="bench_evolve_llm", metavar="LLM", default=None, help=llm_help)
    parser.addini("bench_evolve_llm", llm_help, default=None)
    for name, metavar, help_text in ADAPTIVE:
        dest = "bench_" + name.replace("-", "_")
        group.addoption(f"--bench-{name}", dest=dest, metavar=metavar, default=None, help=help_text)
        parser.addini(dest, help_text, default=None)


# Adaptive seeds (plugin/adaptive.py reads them; docs/adaptive.md).
ADAPTIVE = [
    (
        "until",
        "WHEN",
        "decisive: run the floor's seeds, then one more seed of every task per round until the "
        "akm - noakm test is decisive, futile or --bench-max-seeds is reached",
    ),
    ("max-seeds", "N", "With --bench-until: the most seeds a task runs (default: 5)"),
]


# Every setting read as (command line, ini) pair; the gates are read on their own.
SETTINGS = [n.replace("-", "_") for n, _, _ in OPTIONS] + [n.replace("-", "_") for n, _ in FLAGS]
SETTINGS += ["parallel", "sandbox_ro", "until", "max_seeds"]


# Every option that takes a value as the next word: pytest's first look at the command line,
# before this plugin is loaded, takes that word for a test path (plugin/rootdir.py).
VALUE_FLAGS = frozenset(
    [f"--bench-{name}" for name, _, _ in OPTIONS + ADAPTIVE]
    + ["--bench-gate", "--bench-sandbox-ro", "--bench-evolve-llm", "--parallel"]
)


def raw(config: pytest.Config, name: str) -> tuple[Any, Any]:
    """(command-line value, ini value) of setting ``name``; an empty ini value is None."""
    dest = "bench_" + name
    cli = config.getoption(dest, None)
    ini = config.getini(dest)
    return cli, (ini if ini not in (None, "", []) else None)


def asked_for(config: pytest.Config) -> bool:
    """Whether this run may be a bench run: a ``--bench-*`` option, a corpus or run config in
    the ini file, or a corpus named on the command line. Cheap on purpose: everything else waits
    until this says yes."""
    if config.option.help or config.option.version:
        return False
    if any(config.getoption("bench_" + name, None) is not None for name in [*SETTINGS, "gate", "until", "max_seeds"]):
        return True
    return raw(config, "corpus")[1] is not None or raw(config, "config")[1] is not None or bool(named_corpus(config))


def named_corpus(config: pytest.Config) -> Path | None:
    """The corpus a path on the command line is, or is inside: a directory named ``corpus``
    holding ``tasks/`` (the default layout). `pytest corpus` in a project without the ini runs
    the bench, instead of collecting the verifiers' own tests as the project's."""
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        return None  # testpaths or the current directory: the project's own tests
    for arg in config.args:
        path = Path(config.invocation_params.dir, arg.split("::")[0]).resolve()
        for folder in (path, *path.parents):
            if folder.name == "corpus" and (folder / "tasks").is_dir():
                return folder
    return None
