"""``-k`` for cells: an arm name selects exactly that arm.

pytest matches ``-k`` identifiers as substrings of every keyword, so ``-k akm`` would also
select ``noakm`` cells. For cells, an identifier that is an arm name matches only the cell's
own arm; seed tokens (``s2``) and the cell name (``akm-s2``) match exactly; anything else
matches as pytest's usual case-insensitive substring of the task id, domain, path parts and
markers. Other items keep pytest's own matching. We evaluate the expression ourselves and
then clear ``-k`` so pytest's pass does not undo the arm rule.

Before collection, ``arm_ruled_out`` (``-k``) and ``marks_rule_out`` (``-m``) say whether an
expression deselects every cell of an arm, so a selection of control-arm cells needs no akm.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import pytest

from ..records import ARMS
from . import internals
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
        expression = internals.compile_expression(text)
    except SyntaxError as err:
        raise pytest.UsageError(f"Wrong expression passed to '-k': {text}: at column {err.offset}: {err.msg}") from None
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        matcher = CellMatcher(item) if CELL_KEY in item.stash else internals.keyword_matcher(item)
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


def _never_true(selects: Callable[[dict[str, bool], list[str]], bool], most: int) -> bool:
    """Whether ``selects`` is false for every truth value of the free words it meets (at most
    ``most`` of them; beyond that, assume it may be true). ``selects`` notes in its list each
    word it met that has no truth value yet; such a word counts as false."""
    words: list[str] = []
    while len(words) <= most:
        unseen: list[str] = []
        for bits in range(2 ** len(words)):
            if selects({word: bool(bits >> i & 1) for i, word in enumerate(words)}, unseen):
                return False  # a legitimate truth value: the arm is selected
            if unseen:
                break
        if not unseen:
            return True
        words.append(unseen[0])
    return False


def arm_ruled_out(text: str, arm: str) -> bool:
    """Whether ``-k text`` deselects every cell of ``arm``, whatever its task, domain or seed:
    true when no truth value of the expression's other words selects it. ``-k noakm`` then
    needs no akm."""
    try:
        expression = internals.compile_expression(text)
    except SyntaxError:
        return False

    def selects(truth: dict[str, bool], unseen: list[str]) -> bool:
        assignment = _Assignment(arm, truth)
        result = expression.evaluate(assignment)
        unseen.extend(assignment.unseen)
        return result

    return _never_true(selects, MAX_FREE_WORDS)


MAX_FREE_MARKS = 4  # beyond this many other marker names in -m, assume any arm may be selected


class _MarkAssignment:
    """``-m`` matching for one cell before collection: ``cell(...)`` as pytest matches it against
    the cell's own marker; any other marker (another plugin or a conftest may add it) takes the
    truth value assigned to its name and arguments."""

    def __init__(self, own: internals.Matcher, truth: dict[str, bool], unseen: list[str]) -> None:
        self.own = own
        self.truth = truth
        self.unseen = unseen

    def __call__(self, name: str, /, **kwargs: str | int | bool | None) -> bool:
        if name == "cell":
            return self.own(name, **kwargs)
        key = f"{name}{sorted(kwargs.items())}"
        if key not in self.truth:
            self.unseen.append(key)
            return False
        return self.truth[key]


def marks_rule_out(text: str, arm: str, cells: Sequence[dict[str, object]]) -> bool:
    """Whether ``-m text`` deselects every cell of ``arm``: ``cells`` are the keyword arguments
    of the ``cell`` markers the collection will give (``task, arm, seed, domain, slice``), and no
    cell of ``arm`` matches whatever other markers it may carry. ``-m "cell(arm='noakm')"`` then
    needs no akm."""
    try:
        expression = internals.compile_expression(text)
    except SyntaxError:
        return False  # pytest's own -m pass says what is wrong with it
    own = [internals.mark_matcher([pytest.mark.cell(**kw).mark]) for kw in cells if kw.get("arm") == arm]

    def selects(truth: dict[str, bool], unseen: list[str]) -> bool:
        return any(expression.evaluate(_MarkAssignment(matcher, truth, unseen)) for matcher in own)

    return _never_true(selects, MAX_FREE_MARKS)
