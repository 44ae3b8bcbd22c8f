"""The slow start of a bench run, said as it happens, and the preflight before the first cell.

On the controller each slow step (the agent's start with its version check, akm's probe,
the preflight request, akm's index of one stash) prints one ``akmbench:`` line with its time,
so 20-40 s of start-up are not silence. The preflight runs once per session on the controller,
also under xdist (whose workers start after it): a model that cannot be reached or refuses the
key, or an akm that cannot index, stops the run with one line naming what failed and the fix,
before any cell runs or anything is stored (the agent's page in docs/, "Preflight").
"""

from __future__ import annotations

import dataclasses
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from ..agents.base import SessionInfo
from ..cell import akm
from ..cell.akm_check import check_index
from ..corpus.config import corpus_near
from .selection import arm_ruled_out, marks_rule_out
from .state import BenchState

T = TypeVar("T")
PROBES = "akmbench_probes"  # workerinput: the controller's probes, for a local worker


def say(config: pytest.Config, line: str) -> None:
    """One start-up line on the controller's terminal (not under -q, never on a worker)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and config.get_verbosity() >= 0 and not hasattr(config, "workerinput"):
        reporter.write_line(f"akmbench: {line}")


def timed(config: pytest.Config, step: Callable[[], T], describe: Callable[[T], str | None]) -> T:
    started = time.monotonic()
    result = step()
    line = describe(result)
    if line:
        say(config, f"{line} ({time.monotonic() - started:.1f} s)")
    return result


def arms_needed(config: pytest.Config, state: BenchState) -> tuple[str, ...]:
    """The run's arms less those ``-k`` or ``-m`` rules out for every cell (``-k noakm`` and
    ``-m "cell(arm='noakm')"`` need no akm)."""
    keyword = (config.option.keyword or "").strip()
    markexpr = (config.option.markexpr or "").strip()
    cells = (
        [
            {"task": t.id, "arm": arm, "seed": seed, "domain": t.domain, "slice": t.slice}
            for t in state.tasks
            for arm in state.arms
            for seed in range(1, state.seeds + 1)
        ]
        if markexpr
        else []
    )
    return tuple(
        a
        for a in state.arms
        if not (keyword and arm_ruled_out(keyword, a)) and not (markexpr and marks_rule_out(markexpr, a, cells))
    )


def probes(state: BenchState) -> dict[str, Any]:
    """What the controller probed, for its local workers: they run the same binaries on the same
    machine, so each need not run the agent's version check and akm's probe again (about 2
    CPU-seconds per worker). A remote worker probes its own, and its hello compares them
    (remote.py)."""
    found = state.akm
    return {
        "agent_version": state.agent.version if state.started else None,
        "akm": None if found is None else {**dataclasses.asdict(found), "path": str(found.path)},
    }


def _probed(config: pytest.Config) -> dict[str, Any] | None:
    workerinput = getattr(config, "workerinput", None)
    return workerinput.get(PROBES) if workerinput else None


def start_agent(config: pytest.Config, state: BenchState, options: dict[str, object]) -> None:
    known = _probed(config)
    if known and known.get("agent_version"):
        options = {**options, "version": known["agent_version"]}
    info = SessionInfo(model=state.model, arms=state.arms, tasks=tuple(state.tasks), options=options)
    timed(
        config,
        lambda: state.agent.start(info),
        lambda _: (
            f"agent {state.agent.name} {state.agent.version} started"
            + (f", model {state.agent.model}" if state.agent.model else "")
        ),
    )


def find_akm(config: pytest.Config, state: BenchState, needed: bool) -> akm.AkmInfo | None:
    """The akm the akm arm gets, probed once per run (a local worker takes the controller's);
    ``needed`` when a cell will call it."""
    known = _probed(config)
    if known is not None:
        return None if known["akm"] is None else akm.AkmInfo(**{**known["akm"], "path": Path(known["akm"]["path"])})
    if "akm" not in arms_needed(config, state):
        return None
    project = tools_project(state)
    if not needed and state.settings.akm is None and akm.installed(project) is None and shutil.which("akm") is None:
        return None
    return timed(
        config,
        lambda: akm.detect(akm.locate(state.settings.akm, project)),
        lambda info: f"akm {info.version} at {info.path}",
    )


def tools_project(state: BenchState) -> Path:
    """The project whose ``.tools/`` holds the run's agent binaries and akm: a run config's own (its
    corpus's parent), wherever the run starts from, else pytest's rootdir."""
    cfg = state.settings.config
    near = corpus_near(cfg.path) if cfg is not None else None
    return near.parent if near is not None else state.settings.rootdir


def preflight(config: pytest.Config, state: BenchState) -> None:
    """The model answers and akm indexes, or a ConfigError (raised to the caller) says why not."""
    timed(config, state.agent.preflight, lambda line: f"preflight: {line}" if line else None)
    akm_tasks = [t for t in state.tasks if t.stash]
    if state.akm is not None and akm_tasks and state.agent.uses_akm:
        timed(
            config,
            lambda: check_index(
                state.akm,  # type: ignore[arg-type]
                akm_tasks[0],
                state.settings.stashes_root,
                state.run_dir,
                f"{state.run_id}/preflight",
                sandbox=state.sandbox,
                extra=state.settings.sandbox_ro,
            ),
            lambda line: f"preflight: {line}",
        )
