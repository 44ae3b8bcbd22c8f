"""The fields of a run config (schema v1, docs/corpus.md) and every problem a parsed one has."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .settings_table import CORE, Table
from .settings_table import PHASE2_FIELDS as PHASE2_FIELDS
from .settings_table import TRACKS as TRACKS
from .strict import literal_keys

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


def json_types(schema: Mapping[str, Any]) -> tuple[type, ...]:
    """The Python types of the JSON values a field's schema allows."""
    if "oneOf" in schema:
        return tuple(t for part in schema["oneOf"] for t in json_types(part))
    if "const" in schema:
        return (type(schema["const"]),)
    if "enum" in schema:
        return tuple(dict.fromkeys(type(x) for x in schema["enum"]))
    return _JSON_TYPES[schema["type"]]


# Run-config fields and their JSON types, from the settings table: the reference's schema v1, the
# standalone akm-bench's additions (track, model, an agent's own provider fields, phase2*), and
# this project's agent, akm, budgetTurns, adaptive seeds and spend caps.
def field_types(table: Table = CORE) -> dict[str, tuple[type, ...]]:
    return {str(row.key): json_types(row.schema or {}) for row in table.fields}


# The fields' checks; the fields named here first, in the order their problems were always listed.
_ORDER: tuple[str, ...] = ("track", "seeds", "evolveEpisodes", "budgetTokens", "budgetWallMs", "budgetTurns")
_ORDER += ("parallel", "tasks", "until", "floor", "maxSeeds", "budgetUsd", "budgetRunTokens", "arms")


def _checks(table: Table) -> dict[str, Callable[[Any], Any]]:
    return {
        str(row.key): row.check
        for row in sorted(table.fields, key=lambda r: _ORDER.index(r.key) if r.key in _ORDER else len(_ORDER))
        if row.check
    }


def schema(table: Table = CORE) -> dict[str, Any]:
    """The run-config JSON Schema, as shipped in schemas/run-config.schema.json (of the whole
    table: ``python -m pytest_akmbench.agents.settings``)."""
    pairs = itertools.combinations(table.provider_fields, 2)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "run-config.schema.json",
        "title": "pytest-akmbench run config (schema v1)",
        "description": 'A run config for --bench-config (README, "Run configs"). Paths are relative to the config '
        "file; ~, $VAR and ${VAR} expand.",
        "type": "object",
        "additionalProperties": False,
        "required": ["schemaVersion"],
        "properties": {str(row.key): dict(row.schema or {}) for row in table.fields},
        "not": {
            "description": "at most one source of providers",
            "anyOf": [{"required": list(pair)} for pair in pairs],
        },
    }


def schema_text(table: Table = CORE) -> str:
    return json.dumps(schema(table), indent=2, ensure_ascii=False) + "\n"


def run_config_problems(data: Mapping[str, Any], path: Path, table: Table = CORE) -> list[str]:
    """Every problem of a parsed run config, each a line naming the file and the field."""
    # Whatever the agent: an oracle run never reads the providers, but the file is still committed
    # with a key in it, and its name and description reach every report.
    problems: list[str] = [
        f"{path}: {where}: looks like a literal API key (sk-...); a run config holds no keys: reference it as "
        "{env:NAME} in a providers entry and export NAME"
        for where in literal_keys(dict(data))
    ]
    fields = field_types(table)
    typed: dict[str, Any] = {}  # the known fields of the right type: the checks below read only these
    for key, value in data.items():
        if key not in fields:
            problems.append(f"{path}: unknown field {key!r}; known fields: {', '.join(sorted(fields))}")
            continue
        want = fields[key]
        if (isinstance(value, bool) and bool not in want) or not isinstance(value, want):
            names = " or ".join("array" if t is list else "object" if t is dict else t.__name__ for t in want)
            problems.append(f"{path}: {key}: expected {names}, got {json.dumps(value)}")
        else:
            typed[key] = value
    if data.get("schemaVersion") != 1 or isinstance(data.get("schemaVersion"), bool):
        problems.append(f"{path}: schemaVersion: must be 1, got {json.dumps(data.get('schemaVersion'))}")
    sources = [key for key in table.provider_fields if key in data]
    if len(sources) > 1:
        problems.append(f"{path}: {' and '.join(sources)}: give one source of providers, not {len(sources)}")
    if "model" in typed and "defaultModel" in typed and typed["model"] != typed["defaultModel"]:
        problems.append(f"{path}: model and defaultModel: both name the run's model; keep one")
    checks = _checks(table)
    for key in [k for k in checks if k in typed]:
        try:
            checks[key](typed[key])
        except ValueError as err:
            problems.append(f"{path}: {key}: {err}")
    return problems
