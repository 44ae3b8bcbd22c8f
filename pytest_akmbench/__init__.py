"""pytest-akmbench: agent benchmark cells (task × arm × seed) as pytest items.

Importing the package loads nothing else: the pytest entry point is ``plugin`` (cheap until a
run asks for a bench), and the CLI and the core (no pytest) are imported where they are used.
The packages and their layers are described in docs/architecture.md.
"""

from __future__ import annotations

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    # Looked up on first use: reading the installed metadata costs a few modules that a
    # pytest run with the bench inert never needs.
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pytest-akmbench")
    except PackageNotFoundError:  # running from a source tree that was not installed
        return "0.0.0"
