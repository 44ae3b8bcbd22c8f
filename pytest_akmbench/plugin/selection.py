"""``-k`` for cells: an arm name selects exactly that arm.

pytest matches ``-k`` identifiers as substrings of every keyword, so ``-k akm`` would also
select ``noakm`` cells. For cells, an identifier that is an arm name matches only the cell's
own arm; seed tokens (``s2``) and the cell name (``akm-s2``) match exactly; anything else
matches as pytest's usual case-insensitive substring of the task id, domain, path parts and
markers. Other items keep pytest's own matching. We evaluate the expression ourselves and
then clear ``-k`` so pytest's pass does not undo the arm rule.
"""

from __future__ import annotations

import re

import pytest
from _pytest.mark import KeywordMatcher  # pytest's own matcher, for items that are not cells
from _pytest.mark.expression import Expression

from ..records import ARMS
from .nodes import CELL_KEY


class CellMatcher:
    """Keyword matching for one cell item."""

    def __init__(self, item: pytest.Item) -> None:
        cell = item.stash[CELL_KEY]
        self.arm = cell.arm
        self.exact = {cell.name.lower(), f"s{cell.seed}", f"seed{cell.seed}", cell.task.slice}
        names = {cell.task.id, cell.task.domain, *item.listextrakeywords()}
        for node in item.listchain()[:-1]:
            if isinstance(node, pytest.Session):
                continue
            if isinstance(node, pytest.Directory) and isinstance(node.parent, pytest.Session):
                continue
            names.add(node.name)
        names.update(mark.name for mark in item.iter_markers())
        self.names = [n.lower() for n in names]

    def __call__(self, ident: str, /, **kwargs: object) -> bool:
        if kwargs:
            raise pytest.UsageError("Keyword expressions do not support call parameters.")
        ident = ident.lower()
        if ident in ARMS:
            return ident == self.arm
        return ident in self.exact or any(ident in name for name in self.names)


def deselect_by_keyword(config: pytest.Config, items: list[pytest.Item]) -> None:
    text = (config.option.keyword or "").lstrip()
    if not text or not any(CELL_KEY in item.stash for item in items):
        return
    try:
        expression = Expression.compile(text)
    except SyntaxError as err:
        raise pytest.UsageError(f"Wrong expression passed to '-k': {text}: at column {err.offset}: {err.msg}") from None
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        matcher = CellMatcher(item) if CELL_KEY in item.stash else KeywordMatcher.from_item(item)
        (keep if expression.evaluate(matcher) else dropped).append(item)
    config.option.keyword = ""
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


MAX_FREE_WORDS = 12  # beyond this many words in -k, assume any arm may be selected


class _Assignment:
    """A truth value for each free word of a ``-k`` expression; an arm word is true for ``arm``
    only. Words not yet assigned count as false and are noted."""

    def __init__(self, arm: str, truth: dict[str, bool]) -> None:
        self.arm = arm
        self.truth = truth
        self.unseen: list[str] = []

    def __call__(self, ident: str, /, **kwargs: object) -> bool:
        ident = ident.lower()
        named = re.fullmatch(r"([a-z]+)-s\d+", ident)
        if ident in ARMS or (named and named.group(1) in ARMS):
            return (named.group(1) if named else ident) == self.arm
        if ident not in self.truth:
            self.unseen.append(ident)
            return False  # a legitimate truth value: a true result still proves the arm selected
        return self.truth[ident]


def arm_ruled_out(text: str, arm: str) -> bool:
    """Whether ``-k text`` deselects every cell of ``arm``, whatever its task, domain or seed:
    true when no truth value of the expression's other words selects it. ``-k noakm`` then
    needs no akm."""
    try:
        expression = Expression.compile(text)
    except SyntaxError:
        return False
    words: list[str] = []
    while len(words) <= MAX_FREE_WORDS:
        unseen: list[str] = []
        for bits in range(2 ** len(words)):
            assignment = _Assignment(arm, {word: bool(bits >> i & 1) for i, word in enumerate(words)})
            if expression.evaluate(assignment):
                return False
            if assignment.unseen:
                unseen = assignment.unseen
                break
        if not unseen:
            return True
        words.append(unseen[0])
    return False
