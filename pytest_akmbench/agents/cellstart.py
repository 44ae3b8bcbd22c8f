"""What every agent's adapter does the same way to start a session and a cell: the provider's keys
kept from the cell (it is given placeholders, which its forwarder swaps back on the way out), the
version a worker is given, and one cell's route to its model: the scripted model's token, the
forwarder with the cell's turn gate, and what the scripted model reported to the cell
(docs/architecture.md, "Isolation").
"""

from __future__ import annotations

import secrets
import urllib.parse
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..store.scrub import Scrubber
from ..system.forwarder import Forwarder, TurnGate
from ..system.sandbox import open_route
from .base import AgentRequest
from .preflight import DEFAULT_BASE_URLS
from .providers import ModelChoice, check_env_vars, resolve_env_refs, secret_values


class Scripted(Protocol):
    """The scripted model server as the adapters use it (scripted/server.py)."""

    def register(self, token: str, policy: str, *args: Any, **kwargs: Any) -> str: ...

    def unregister(self, token: str) -> None: ...

    def totals(self, token: str) -> dict[str, int]: ...

    def base_url(self, token: str) -> str: ...


@dataclass
class Keys:
    """A session's credentials: each ``{env:VAR}`` of the provider's with its value, the
    placeholder the cells get instead, the forwarder's swaps back, and what to scrub."""

    values: dict[str, str]
    placeholders: dict[str, str]
    swaps: dict[str, str]
    secrets: list[str]
    scrub: Scrubber


def keys(choice: ModelChoice, env: Mapping[str, str]) -> Keys:
    values = check_env_vars(choice, env)
    placeholders = {var: f"akmbench-placeholder-{var.lower()}-{secrets.token_hex(8)}" for var in values}
    swaps = {placeholders[var]: value for var, value in values.items()}
    found = secret_values(choice.providers, env)
    return Keys(values, placeholders, swaps, found, Scrubber(found))


def known_version(options: Mapping[str, Any], binary: Path, read: Callable[[Path], str]) -> str:
    """The agent's version: a local xdist worker is given the one its controller read from the
    same binary."""
    known = options.get("version")
    return known if isinstance(known, str) and known else read(binary)


def endpoint(
    choice: ModelChoice,
    scripted: Scripted | None,
    token: str,
    values: Mapping[str, str],
    placeholders: Mapping[str, str],
) -> tuple[str, str]:
    """(the model's real base URL, the path and query of the base URL the cell is given) for an
    agent whose provider entry gives its ``options.baseURL``."""
    if choice.scripted:
        assert scripted is not None
        upstream = cell_base = scripted.base_url(token)
    else:
        written = ((choice.provider_entry or {}).get("options") or {}).get("baseURL")
        written = written or DEFAULT_BASE_URLS.get(choice.provider_key)
        if not written:
            raise ValueError(f"provider {choice.provider_key!r} has no options.baseURL")
        upstream = str(resolve_env_refs(str(written), values))
        cell_base = str(resolve_env_refs(str(written), placeholders))
    parts = urllib.parse.urlsplit(cell_base)
    return upstream, parts.path.rstrip("/") + (f"?{parts.query}" if parts.query else "")


def cell_scripted(choice: ModelChoice, scripted: Scripted | None) -> Scripted | None:
    """The scripted model server a cell of ``choice`` registers with, if the choice is scripted."""
    if choice.scripted and scripted is None:
        raise ValueError("scripted model server is not running")
    return scripted if choice.scripted else None


@dataclass
class CellRoute:
    """One cell's way to its model: its token at the scripted model, its turn gate, and once
    opened its forwarder (system/forwarder.py)."""

    request: AgentRequest
    gate: TurnGate
    swaps: Mapping[str, str]
    token: str
    forwarder: Forwarder | None = None

    def open(self, upstream: str) -> str:
        """Start the cell's forwarder to ``upstream``: its origin, as the cell reaches it."""
        self.forwarder, origin = open_route(self.request.sandbox, upstream, self.swaps, self.gate)
        return origin


@contextmanager
def cell_route(
    request: AgentRequest,
    gate: TurnGate,
    scripted: Scripted | None,
    policy: str | None,
    swaps: Mapping[str, str],
    totals: dict[str, dict[str, int]],
) -> Iterator[CellRoute]:
    """A cell's route for the run, its forwarder holding the cell's turn ``gate``
    (watching.turn_gate); at the end the forwarder is closed and the scripted model's totals for
    the cell kept."""
    route = CellRoute(request, gate, swaps, uuid.uuid4().hex)
    try:
        if scripted is not None:
            scripted.register(
                route.token, policy or "idle", request.task, request.arm, request.run_dir, akm_line=request.akm_line
            )
        yield route
    finally:
        if route.forwarder is not None:
            route.forwarder.close()
        if scripted is not None:
            totals[str(request.run_dir)] = scripted.totals(route.token)
            scripted.unregister(route.token)


@contextmanager
def idle_token(scripted: Scripted | None) -> Iterator[str]:
    """A token for the preflight's request, idle at the scripted model while it is held."""
    token = uuid.uuid4().hex
    if scripted is not None:
        scripted.register(token, "idle")
    try:
        yield token
    finally:
        if scripted is not None:
            scripted.unregister(token)
