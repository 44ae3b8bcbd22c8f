"""Task selectors (docs/corpus.md, "Selectors"): a run config's ``tasks`` and ``--bench-tasks``."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from ..errors import CorpusError

if TYPE_CHECKING:
    from .tasks import Corpus, Task

SLICES = ("train", "eval")


def select(corpus: Corpus, selector: str | list[str] | None) -> tuple[list[Task], str]:
    """Resolve a run-config ``tasks`` selector (docs/corpus.md, "Selectors") to tasks and a slice label.

    Unlike the reference, a duplicated id in a list is an error instead of a silent rerun.
    """
    tasks = list(corpus.tasks)
    if selector is None or selector == "all":
        return tasks, "all"
    if isinstance(selector, str):
        if selector in SLICES:
            return [t for t in tasks if t.slice == selector], selector
        if "/" in selector:
            return [_by_id(corpus, selector)], "all"
        chosen = [t for t in tasks if t.domain == selector]
        if not chosen:
            domains = ", ".join(sorted({t.domain for t in tasks})) or "none"
            raise CorpusError(f"tasks: no task with id or domain {selector!r}; domains: {domains}")
        return chosen, "all"
    if not selector:
        raise CorpusError("tasks: empty list selects no task")
    dupes = sorted({s for s in selector if selector.count(s) > 1})
    if dupes:
        raise CorpusError(f"tasks: {dupes[0]!r} is listed twice")
    return [_by_id(corpus, s) for s in selector], "all"


def _by_id(corpus: Corpus, task_id: str) -> Task:
    for task in corpus.tasks:
        if task.id == task_id:
            return task
    raise CorpusError(f"tasks: task not found: {task_id!r}")


def select_with_override(
    corpus: Corpus, selector: str | list[str] | None, override: str | list[str] | None
) -> tuple[list[Task], str]:
    """A config's selector, then a ``--bench-tasks`` override applied inside its selection."""
    chosen, slice_label = select(corpus, selector)
    if override is not None:
        narrowed, _ = select(dataclasses.replace(corpus, tasks=tuple(chosen)), override)
        chosen = restrict(chosen, [t.id for t in narrowed])
    return chosen, slice_label


def restrict(tasks: list[Task], ids: list[str]) -> list[Task]:
    """Apply a ``--bench-tasks a,b`` override: keep the selection's order, reject strays."""
    have = {t.id for t in tasks}
    missing = [i for i in ids if i not in have]
    if missing:
        raise CorpusError(f"--bench-tasks: not in the selection: {', '.join(missing)}")
    wanted = set(ids)
    return [t for t in tasks if t.id in wanted]
