"""How many processes run the cells: --parallel as xdist's -n, and the options that conflict with a run."""

from __future__ import annotations

import importlib.util

import pytest

from ...corpus.values import clamp_parallel
from ..state import BenchState


def refuse_conflicts(config: pytest.Config, state: BenchState) -> None:
    if state.settings.fresh and config.getoption("lf", None):
        raise pytest.UsageError(
            "--bench-fresh with --lf re-runs only the failed trials, and the newer samples would replace "
            "them: pass rates biased upwards; drop --lf, or sample more with --bench-seeds"
        )


def apply(config: pytest.Config, state: BenchState) -> None:
    wanted = state.settings.parallel
    if wanted is None or getattr(config.option, "numprocesses", None) is not None:
        return
    n, warning = clamp_parallel(wanted, state.settings.force_parallel)
    if warning:
        config.issue_config_time_warning(pytest.PytestConfigWarning(warning), stacklevel=2)
    if n > 1 and not config.pluginmanager.hasplugin("xdist"):
        origin = state.settings.origins.get("parallel", "--parallel")
        if importlib.util.find_spec("xdist") is not None:
            raise pytest.UsageError(
                f"{origin}: pytest-xdist is installed but disabled (-p no:xdist); drop -p no:xdist, "
                "or run serially with --parallel 1"
            )
        raise pytest.UsageError(f"{origin}: needs pytest-xdist; pip install pytest-xdist")
    if n > 1:
        config.option.numprocesses = n
        if config.option.dist == "no":
            # Cells take uneven time; stealing keeps every worker busy to the end.
            config.option.dist = "worksteal"
