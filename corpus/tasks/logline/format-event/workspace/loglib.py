"""Structured logging helpers shared by our Python services."""

from __future__ import annotations


def format_event(svc: str, evt: str, level: str, msg: str, at_ms: int, ctx: dict | None = None) -> str:
    """Return one log line for the event, per the logging standard."""
    raise NotImplementedError("format_event is not implemented yet")
