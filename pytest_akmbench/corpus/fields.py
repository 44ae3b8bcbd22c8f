"""Reading a task.yaml's fields: each reader checks one field's type and values and raises a
one-line CorpusError naming the file and the field (docs/corpus.md)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..errors import CorpusError
from .values import BUDGET_LIMITS


class TaskFields:
    """The fields of one parsed task.yaml (``data``), read one at a time."""

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path = path
        self.data = data

    def bad(self, key: str, why: str) -> CorpusError:
        return CorpusError(f"{self.path}: {key}: {why}")

    def required_str(self, key: str) -> str:
        value = self.data.get(key)
        if not isinstance(value, str) or not value.strip():
            raise self.bad(key, "required non-empty string")
        return value

    def optional_str(self, key: str) -> str | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise self.bad(key, f"must be a string, got {type(value).__name__}")
        return value or None

    def one_of(self, key: str, allowed: tuple[str, ...], value: str | None) -> str | None:
        """``value`` (read from ``key``) if it is one of ``allowed`` or None."""
        if value is not None and value not in allowed:
            raise self.bad(key, f"{value!r} is not one of {', '.join(allowed)}")
        return value

    def optional_bool(self, key: str) -> bool | None:
        value = self.data.get(key)
        if value is not None and not isinstance(value, bool):
            raise self.bad(key, f"must be true or false, got {value!r}")
        return value

    def refs(self, key: str) -> tuple[str, ...]:
        """A list of asset refs (empty entries dropped); absent is empty."""
        value = self.data.get(key)
        if value is not None and (not isinstance(value, list) or not all(isinstance(x, str) for x in value)):
            raise self.bad(key, "must be a list of asset refs")
        return tuple(x for x in (value or ()) if x)

    def names(self, key: str) -> tuple[str, ...]:
        """A list of non-empty names, each once; absent is empty."""
        value = self.data.get(key)
        if value is not None and (not isinstance(value, list) or not all(isinstance(x, str) and x for x in value)):
            raise self.bad(key, "must be a list of non-empty names")
        names = tuple(value or ())
        dupes = sorted({x for x in names if names.count(x) > 1})
        if dupes:
            raise self.bad(key, f"{dupes[0]!r} is listed twice")
        return names

    def pattern(self, key: str) -> str | None:
        """An optional regular expression, checked to compile."""
        value = self.optional_str(key)
        if value is not None:
            try:
                re.compile(value)
            except re.error as err:
                raise self.bad(key, f"invalid regular expression: {err}") from err
        return value

    def budget(self, key: str = "budget") -> tuple[int | None, int | None]:
        """(tokens, wall ms) of the budget mapping; None where it gives no limit."""
        raw = self.data.get(key)
        if raw is None:
            return None, None
        if not isinstance(raw, dict):
            raise self.bad(key, "must be a mapping with tokens and wallMs")
        unknown = sorted(str(k) for k in raw if k not in ("tokens", "wallMs"))
        if unknown:
            raise self.bad(f"{key}.{unknown[0]}", "unknown field; use tokens and wallMs")
        return self._limit(key, raw, "tokens"), self._limit(key, raw, "wallMs")

    def _limit(self, key: str, raw: dict[str, Any], name: str) -> int | None:
        value = raw.get(name)
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise self.bad(f"{key}.{name}", f"{value!r} is not a number") from None
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value != value:
            raise self.bad(f"{key}.{name}", f"must be a positive number, got {value!r}")
        if value < 1:  # whole tokens and milliseconds: 0.5 would have become a budget of 0
            raise self.bad(f"{key}.{name}", f"must be at least 1, got {value!r}")
        most, unit = BUDGET_LIMITS[name]
        if not value <= most:  # also .inf: int() of it raised OverflowError, and a timer cannot wait that long
            raise self.bad(f"{key}.{name}", f"must be a finite number of at most {most} {unit}, got {value!r}")
        return int(value)
