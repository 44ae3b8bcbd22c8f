#!/usr/bin/env bash
set -eu
cat > loglib.py <<'PY'
"""Structured logging helpers shared by our Python services."""

from __future__ import annotations

import json
import re

_SEV = {"fatal": "S1", "critical": "S1", "error": "S2", "warning": "S3", "warn": "S3",
        "info": "S4", "debug": "S5", "trace": "S5"}
_EVT = re.compile(r"[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*")


def format_event(svc: str, evt: str, level: str, msg: str, at_ms: int, ctx: dict | None = None) -> str:
    """Return one log line for the event, per the logging standard."""
    if not _EVT.fullmatch(evt):
        raise ValueError(f"bad event name: {evt!r}")
    if msg.endswith("."):
        msg = msg[:-1]
    ctx = ctx or {}
    line = {"at": int(at_ms), "sev": _SEV[level.lower()], "svc": svc, "evt": evt, "msg": msg,
            "ctx": {k: ctx[k] for k in sorted(ctx)}}
    return json.dumps(line, separators=(",", ":"), ensure_ascii=False)
PY
