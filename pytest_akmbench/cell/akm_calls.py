"""The akm invocations a shell command runs, as akm would receive them: the verb, the
positional words and the flags (an agent's bash commands are read by :mod:`shell`)."""

from __future__ import annotations

from dataclasses import dataclass

from .shell import commands

# akm's options that take a value as the next word (``--limit 5``), so the value is not read
# as a positional word.
VALUE_OPTIONS = frozenset(
    (
        "--type",
        "--limit",
        "--source",
        "--filter",
        "--format",
        "--detail",
        "--shape",
        "--output",
        "--from",
        "--belief",
        "--scope",
        "--note",
        "--reason",
        "--failure-mode",
        "--tag",
        "--applied-to",
    )
)


@dataclass(frozen=True, slots=True)
class Call:
    """One akm invocation found in a shell command: the verb and what akm received."""

    verb: str
    args: tuple[str, ...]
    flags: frozenset[str]

    @property
    def query(self) -> str | None:
        # akm takes the first positional word as the query: `akm search a b` searches "a".
        return self.args[0] if self.verb == "search" and self.args else None

    @property
    def logged_query(self) -> str | None:
        """The query akm logs a search event under for this call, or None if it logs none:
        ``search`` (no query is akm's default, ""), akm 0.7's ``curate Q`` (which searches Q) and
        ``wiki search NAME Q``."""
        if self.verb == "search":
            return self.query or ""
        if self.verb == "curate":
            return self.args[0] if self.args else None
        if self.verb == "wiki" and self.args[:1] == ("search",) and len(self.args) >= 3:
            return self.args[2]
        return None

    @property
    def ref(self) -> str | None:
        return self.args[0] if self.verb in ("show", "feedback") and self.args else None

    @property
    def polarity(self) -> str | None:
        if self.verb != "feedback":
            return None
        return "positive" if "--positive" in self.flags else "negative" if "--negative" in self.flags else None


def calls(script: str) -> list[Call]:
    """Every akm invocation ``script`` runs (see :mod:`shell` for what is followed)."""
    found: list[Call] = []
    for command in commands(script):
        if command.name != "akm" or len(command.words) < 2:
            continue
        words = command.words[1:]
        verb: str | None = None
        args: list[str] = []
        flags: set[str] = set()
        i = 0
        while i < len(words):
            word = words[i]
            if word == "--":
                args.extend(words[i + 1 :])
                break
            if word.startswith("-") and len(word) > 1:
                name = word.split("=", 1)[0]
                flags.add(name)
                i += 2 if "=" not in word and name in VALUE_OPTIONS else 1
                continue
            if verb is None:
                verb = word
            else:
                args.append(word)
            i += 1
        if verb is not None:
            found.append(Call(verb, tuple(args), frozenset(flags)))
    return found
