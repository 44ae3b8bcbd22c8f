"""The commands' own inputs, checked with the commands' own option names and the paths as typed
(the pytest options are ``--bench-corpus``; these commands say ``--corpus``)."""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError


def tasks_root(typed: str) -> Path:
    """The tasks root given as ``--corpus``: a directory holding at least one task.yaml."""
    path = Path(typed)
    if not path.is_dir():
        raise ConfigError(
            f"{typed}: tasks root is not a directory; pass --corpus DIR (default corpus/tasks)", usage=True
        )
    if next(path.rglob("task.yaml"), None) is None:
        raise ConfigError(
            f"{typed}: no task.yaml under this tasks root; pass --corpus DIR (default corpus/tasks)", usage=True
        )
    return path.resolve()
