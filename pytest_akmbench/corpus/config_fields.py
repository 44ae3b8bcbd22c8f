"""The fields of a run config (schema v1, docs/corpus.md) and every problem a parsed one has."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .strict import literal_keys
from .values import (
    MAX_SEEDS,
    budget_tokens,
    budget_turns,
    budget_wall_ms,
    parse_arms,
    positive_int,
    seeds_most,
    token_cap,
    until_choice,
    usd_cap,
)

# Adaptive seeds and spend caps (docs/adaptive.md; README, "Spend and spend caps"): each field's
# JSON types and the parser its option shares, so a file and the command line refuse alike.
LIMIT_FIELDS: dict[str, tuple[tuple[type, ...], Callable[[Any], Any]]] = {
    "until": ((str,), until_choice),
    "floor": ((int,), positive_int),
    "maxSeeds": ((int,), seeds_most),
    "budgetUsd": ((int, float), usd_cap),
    "budgetRunTokens": ((int,), token_cap),
}
# The per-cell budgets, refused past their upper bounds as their options are (corpus/values.py).
BUDGET_FIELDS: dict[str, Callable[[Any], Any]] = {
    "budgetTokens": budget_tokens,
    "budgetWallMs": budget_wall_ms,
    "budgetTurns": budget_turns,
}

# Run-config fields: the reference's schema v1, the standalone akm-bench's additions (track,
# model, opencodeConfig/Ref, phase2*), and this project's agent, akm and budgetTurns.
FIELDS: dict[str, tuple[type, ...]] = {
    "$schema": (str,),
    "schemaVersion": (int,),
    "track": (str,),
    "base": (str,),
    "name": (str,),
    "description": (str,),
    "providers": (dict,),
    "providersRef": (str,),
    "opencodeConfig": (dict,),
    "opencodeConfigRef": (str,),
    "defaultModel": (str,),
    "model": (str,),
    "tasks": (str, list),
    "arms": (list,),
    "seeds": (int,),
    "budgetTokens": (int,),
    "budgetWallMs": (int,),
    "budgetTurns": (int,),
    "parallel": (int,),
    "forceParallel": (bool,),
    "baseline": (str,),
    "agent": (str,),
    "akm": (str,),
    "evolveEpisodes": (int,),
    **{key: types for key, (types, _) in LIMIT_FIELDS.items()},
    "phase2Enabled": (bool,),
    "phase2ReflectTimeoutMs": (int,),
    "phase2ReflectRetryTimeoutMs": (int,),
    "phase2SkipReflectOnAllNegative": (bool,),
}
# One source of provider entries per run config.
PROVIDER_FIELDS = ("providers", "providersRef", "opencodeConfig", "opencodeConfigRef")
# Settings of the evolve track: accepted so a standalone akm-bench config loads, unused here.
PHASE2_FIELDS = (
    "phase2Enabled",
    "phase2ReflectTimeoutMs",
    "phase2ReflectRetryTimeoutMs",
    "phase2SkipReflectOnAllNegative",
)
TRACKS = ("utility", "attribute", "evolve")
_POSITIVE = (
    "seeds",
    "evolveEpisodes",
    "budgetTokens",
    "budgetWallMs",
    "budgetTurns",
    "parallel",
    "phase2ReflectTimeoutMs",
    "phase2ReflectRetryTimeoutMs",
)


def run_config_problems(data: Mapping[str, Any], path: Path) -> list[str]:
    """Every problem of a parsed run config, each a line naming the file and the field."""
    # Whatever the agent: an oracle run never reads the providers, but the file is still committed
    # with a key in it, and its name and description reach every report.
    problems: list[str] = [
        f"{path}: {where}: looks like a literal API key (sk-...); a run config holds no keys: reference it as "
        "{env:NAME} in a providers entry and export NAME"
        for where in literal_keys(dict(data))
    ]
    typed: dict[str, Any] = {}  # the known fields of the right type: the checks below read only these
    for key, value in data.items():
        if key not in FIELDS:
            problems.append(f"{path}: unknown field {key!r}; known fields: {', '.join(sorted(FIELDS))}")
            continue
        want = FIELDS[key]
        if (isinstance(value, bool) and bool not in want) or not isinstance(value, want):
            names = " or ".join("array" if t is list else "object" if t is dict else t.__name__ for t in want)
            problems.append(f"{path}: {key}: expected {names}, got {json.dumps(value)}")
        else:
            typed[key] = value
    if data.get("schemaVersion") != 1 or isinstance(data.get("schemaVersion"), bool):
        problems.append(f"{path}: schemaVersion: must be 1, got {json.dumps(data.get('schemaVersion'))}")
    sources = [key for key in PROVIDER_FIELDS if key in data]
    if len(sources) > 1:
        problems.append(f"{path}: {' and '.join(sources)}: give one source of providers, not {len(sources)}")
    if "model" in typed and "defaultModel" in typed and typed["model"] != typed["defaultModel"]:
        problems.append(f"{path}: model and defaultModel: both name the run's model; keep one")
    if "track" in typed and typed["track"] not in TRACKS:
        problems.append(f"{path}: track: must be one of {', '.join(TRACKS)}, got {json.dumps(typed['track'])}")
    for key in _POSITIVE:
        if key in typed and typed[key] < 1:
            problems.append(f"{path}: {key}: must be a positive integer, got {typed[key]}")
    if typed.get("seeds", 0) > MAX_SEEDS:
        problems.append(f"{path}: seeds: {typed['seeds']} seeds is too many: at most {MAX_SEEDS} trials per cell")
    tasks = typed.get("tasks")
    if isinstance(tasks, list) and not all(isinstance(t, str) and t for t in tasks):
        problems.append(f"{path}: tasks: every entry must be a task id string")
    for key in [k for k in LIMIT_FIELDS if k in typed]:
        try:
            LIMIT_FIELDS[key][1](typed[key])
        except ValueError as err:
            problems.append(f"{path}: {key}: {err}")
    for key in [k for k in BUDGET_FIELDS if k in typed and typed[k] >= 1]:  # below 1: _POSITIVE said so
        try:
            BUDGET_FIELDS[key](typed[key])
        except ValueError as err:
            problems.append(f"{path}: {key}: {err}")
    if "arms" in typed:
        try:
            parse_arms(typed["arms"])
        except ValueError as err:
            problems.append(f"{path}: arms: {err}")
    return problems
