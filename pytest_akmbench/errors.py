"""Errors raised by the core.

    BenchError
    ├── CorpusError   a task.yaml, a stash fixture or a selection is wrong
    ├── ConfigError   a run config, providers file or option value is wrong
    └── StoreError    the sample store cannot be read or written

Every message is one line that names the file (and field) and says how to fix it;
the pytest layer and the CLI print it as is, never with a traceback.
"""

from __future__ import annotations


class BenchError(Exception):
    """Base class of every error the harness reports to the user."""


class CorpusError(BenchError):
    """A task, stash fixture or task selection is invalid."""


class ConfigError(BenchError):
    """A run config, providers file or option value is invalid.

    ``usage`` marks errors of the kind "file not found" or "no such task", which the CLI
    maps to exit status 2; other config errors exit 78, as the reference does.
    """

    def __init__(self, message: str, *, usage: bool = False) -> None:
        super().__init__(message)
        self.usage = usage


class StoreError(BenchError):
    """The sample store cannot be read or written."""
