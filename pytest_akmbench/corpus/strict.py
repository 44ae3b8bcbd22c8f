"""The user's input files read strictly: a key given twice in one JSON object or YAML mapping is an
error naming the key, never json's and yaml's silent "the last one wins" (README, "What the
harness refuses, and when"). Run configs, providers files, agents' own config files, baselines, task.yaml
files and workflow specs are read through here. Also the heuristic that finds a literal API key
(an ``sk-…`` string) in a parsed file, by the JSON path where it sits."""

from __future__ import annotations

import json
import re
from collections.abc import Hashable
from typing import Any

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode


class DuplicateKey(ValueError):
    """A JSON object with a key twice; the message names the key and the fix."""

    def __init__(self, key: str) -> None:
        super().__init__(f"key {key!r} is given twice in one object (JSON would keep only the last); keep one")
        self.key = key


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(key)
        out[key] = value
    return out


# An OpenAI-style secret key: "sk-" starting a word, then a letter or digit. Keys come from the
# environment as {env:VAR} (README, "Models and providers"), never from a file a repository holds.
LITERAL_KEY = re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9]")


def literal_keys(node: Any, path: str = "") -> list[str]:
    """The JSON paths (``providers.local.options.apiKey``) of every string, or key, that looks like
    a literal API key; the paths only, so no message ever repeats the key."""
    if isinstance(node, dict):
        found = []
        for key, value in node.items():
            sub = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and LITERAL_KEY.search(key):
                found.append(f"a key under {path or 'the top level'}")
            else:
                found += literal_keys(value, sub)
        return found
    if isinstance(node, list):
        return [hit for i, item in enumerate(node) for hit in literal_keys(item, f"{path}[{i}]")]
    return [path or "the top level"] if isinstance(node, str) and LITERAL_KEY.search(node) else []


def loads_json(text: str) -> Any:
    """``json.loads`` that raises :class:`DuplicateKey` for a key given twice in one object."""
    return json.loads(text, object_pairs_hook=_no_duplicates)


_MERGE = "tag:yaml.org,2002:merge"


class _NoDuplicateKeys(SafeConstructor):
    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        # Only the mapping's own keys: a "<<" merge brings keys that an own key may override.
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE:
                continue
            key = self.construct_object(key_node, deep=True)  # cached: the base constructs it again for free
            try:
                first = seen.get(key)
            except TypeError:
                continue  # an unhashable key: the base constructor refuses it in its own words
            if first is not None:
                raise ConstructorError(
                    None, None, f"duplicate key {key!r} (first at line {first}); keep one", key_node.start_mark
                )
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep)


class StrictSafeLoader(_NoDuplicateKeys, yaml.SafeLoader):
    """``yaml.SafeLoader`` refusing a key given twice in one mapping."""


class StrictCSafeLoader(_NoDuplicateKeys, getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The same on libyaml's parser, several times faster on a corpus of thousands of files."""


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` that raises a ``yaml.YAMLError`` naming a key given twice and its line."""
    return yaml.load(text, Loader=StrictCSafeLoader)
