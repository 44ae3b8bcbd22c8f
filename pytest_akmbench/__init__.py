"""pytest-akmbench: agent benchmark cells (task × arm × seed) as pytest items.

Importing the package loads only the core (no pytest): the CLI and unit tests use it directly.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("pytest-akmbench")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0"

__all__ = ["__version__"]
