"""``python -m pytest_akmbench validate``: the corpus's static checks and every problem of each
run config named (its fields, its provider source, its task selection)."""

from __future__ import annotations

import sys
from pathlib import Path

from ..agents.base import Agent
from ..agents.registry import builtin_agents
from ..agents.settings import table
from ..cell.checks import static_problems
from ..corpus.config import RunConfig, config_options, in_file, read_run_config, run_config_problems
from ..corpus.tasks import Corpus, select
from ..errors import BenchError
from ..tracks.evolve.core import plan as evolve_plan


def config_problems(path: Path, corpus: Corpus) -> tuple[list[str], list[str]]:
    """Every problem of one run config (errors, warnings): its fields, its provider source, its
    task selection."""
    try:
        data = read_run_config(path)
    except BenchError as err:
        return [str(err)], []
    rows = table()
    errors = run_config_problems(data, path, rows)
    if errors:
        return errors, []
    cfg = RunConfig(path=path, data=data)
    warnings = cfg.warnings()
    if any(key in data for key in rows.provider_fields):
        # The config's agent checks it (a third-party agent: the providers file's rules).
        name = cfg.get("agent") or rows.by_name["agent"].default
        agent = next((a for a in builtin_agents() if a.name == name), Agent())
        try:  # only the config's own source: no environment, no user file
            agent.check_providers(config_options(cfg, rows))
        except BenchError as err:
            errors.append(str(err))
    try:
        chosen, _ = select(corpus, cfg.get("tasks"))
        if not chosen:
            errors.append(f"{path}: tasks: the selection matched no task")
        elif data.get("track") == "evolve":
            evolve_plan(chosen)  # every domain needs train and eval tasks
    except BenchError as err:
        errors.append(in_file(path, err))
    return errors, warnings


def validate(tasks_root: Path, stashes_root: Path, configs: list[Path]) -> int:
    """The ``validate`` command: print problems, exit 1 when there is an error."""
    tasks, errors, warnings = static_problems(tasks_root, stashes_root)
    corpus = Corpus(tasks_root, stashes_root, tuple(tasks))
    for path in configs:
        found, warned = config_problems(path, corpus)
        errors += found
        warnings += warned
    for line in errors:
        print(f"error: {line}")
    for line in warnings:
        print(f"warning: {line}")
    domains = len({t.domain for t in tasks})
    print(
        f"{len(tasks)} tasks in {domains} domains, {len(configs)} configs: {len(errors)} errors, {len(warnings)} warnings"
    )
    sys.stdout.flush()
    return 1 if errors else 0
