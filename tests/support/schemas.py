"""The package's JSON Schemas, for tests: validate a document, find the reports a test wrote.

jsonschema is a test dependency only; the package ships the schemas and never reads them.
"""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker

NAMES = ("run-config", "providers", "task", "report", "evolve-report", "attribute", "lift")


def schema(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((files("pytest_akmbench") / "schemas" / f"{name}.schema.json").read_text())
    return data


def problems(instance: Any, name: str) -> list[str]:
    """Every way ``instance`` breaks schema ``name``, one line each (empty when it is valid)."""
    validator = Draft202012Validator(schema(name), format_checker=FormatChecker())
    return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in validator.iter_errors(instance)]


def written_reports(root: Path) -> list[Path]:
    """The report.json files under ``root`` that the report writer wrote (summary.md beside them),
    and the attribute.json files the attribute track wrote (attribute.md beside them); a test's
    hand-made report.json (a broken one, a reference envelope) stands alone."""
    reports = [p for p in root.rglob("report.json") if (p.parent / "summary.md").is_file()]
    attributions = [p for p in root.rglob("attribute.json") if (p.parent / "attribute.md").is_file()]
    return sorted(reports + attributions)


def schema_of(data: Any) -> str:
    """The schema a written envelope answers to, by its track."""
    track = data.get("track") if isinstance(data, dict) else None
    return {"evolve": "evolve-report", "attribute": "attribute"}.get(str(track), "report")
