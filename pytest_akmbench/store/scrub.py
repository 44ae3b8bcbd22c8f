"""Remove secret values from every text the harness stores or reports.

The secrets are the values of the environment variables a providers file references
(``{env:VAR}``): API keys and the like. The agent's adapter keeps them out of the agent's
environment, but an agent can still come across one (print its own config file, say) and
a transcript, a verifier's output or a reason string would then carry it into the store and
the report. Every such text passes through a :class:`Scrubber` first.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

REDACTED = "[redacted]"
# Shorter values would match ordinary text everywhere; no real credential is this short.
MIN_SECRET = 6


class Scrubber:
    """Replaces each secret (as written, and as it appears inside a JSON string) by ``[redacted]``."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        forms = set()
        for secret in secrets:
            if isinstance(secret, str) and len(secret) >= MIN_SECRET:
                forms.add(secret)
                forms.add(json.dumps(secret)[1:-1])  # escaped quotes, backslashes, non-ASCII
                forms.add(json.dumps(secret, ensure_ascii=False)[1:-1])
        # Longest first, so a secret containing another is replaced whole.
        self._forms = sorted(forms, key=len, reverse=True)
        self._bytes = [f.encode("utf-8") for f in self._forms]

    def __bool__(self) -> bool:
        return bool(self._forms)

    def text(self, value: str) -> str:
        for form in self._forms:
            if form in value:
                value = value.replace(form, REDACTED)
        return value

    def bytes(self, value: bytes) -> bytes:
        for form in self._bytes:
            if form in value:
                value = value.replace(form, REDACTED.encode())
        return value

    def obj(self, value: Any) -> Any:
        """A copy of a JSON-like value with every string (keys included) scrubbed; the value
        itself when there is nothing to scrub."""
        if not self._forms:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(k) if isinstance(k, str) else k: self.obj(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.obj(v) for v in value]
        return value
