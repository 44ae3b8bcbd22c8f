"""GitHub Actions annotations for a finished run (docs/report.md, "In CI").

When ``GITHUB_ACTIONS`` is set, the session prints ``::error``/``::warning`` workflow commands
for what should stop a reviewer: failed gates, harness errors (at the task's task.yaml), a report
that does not match the run or could not be written, an incomplete report. GitHub shows them on the
run's summary page and, with ``file=``, on the file in a pull request's diff.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..envelope_types import Envelope

MAX_PER_KIND = 10  # GitHub shows at most 10 errors and 10 warnings of a step


def enabled(environ: Mapping[str, str] = os.environ) -> bool:
    return environ.get("GITHUB_ACTIONS", "").lower() == "true"


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def command(kind: str, title: str, message: str, file: str | None = None) -> str:
    """One workflow command line, escaped as GitHub requires."""
    props = ([f"file={_prop(file)}", "line=1"] if file else []) + [f"title={_prop(title)}"]
    return f"::{kind} {','.join(props)}::{_data(message)}"


def task_files(tasks: Iterable[Any], cwd: Path, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """Each task's task.yaml relative to the repository root (``GITHUB_WORKSPACE``, else ``cwd``),
    as an annotation's ``file=`` wants it."""
    base = Path(environ.get("GITHUB_WORKSPACE") or cwd)
    return {t.id: os.path.relpath(t.yaml_path, base) for t in tasks}


def for_run(
    envelope: Envelope | None,
    problems: list[str],
    error: str | None,
    files: Mapping[str, str],
    problem_title: str = "akmbench: report mismatch",
) -> list[str]:
    """The annotations of a run; ``files`` maps a task id to its task.yaml, relative to the
    repository root; ``problems`` are what made the report untrue to the run (a merge's: what
    it could not make whole), each an error titled ``problem_title``."""
    out: list[str] = []
    if error:
        out.append(command("error", "akmbench: report not written", error))
    out += [command("error", problem_title, p) for p in problems[:MAX_PER_KIND]]
    if envelope is None:
        return out
    for gate in envelope.get("gates") or []:
        if not gate["ok"]:
            out.append(command("error", f"akmbench gate failed: {gate['gate']}", gate["message"]))
    errors = [r for r in envelope["runs"] if r["outcome"] == "harness_error"]
    for r in errors[:MAX_PER_KIND]:
        cell = f"{r['task_id']} {r['arm']} s{r['seed']}"
        out.append(
            command(
                "error", f"akmbench harness error: {cell}", r.get("reason") or "harness error", files.get(r["task_id"])
            )
        )
    if len(errors) > MAX_PER_KIND:
        out.append(
            command("error", "akmbench harness errors", f"{len(errors)} runs ended in harness_error; see the report")
        )
    shard = envelope.get("shard")
    # A shard's report is never complete (it is part of the run); only its own gaps are news.
    if not envelope.get("complete", True) and not (shard and shard.get("complete")):
        out.append(command("warning", "akmbench: report incomplete", envelope.get("verdict") or "incomplete run"))
    return out
