"""The turn gates an adapter gives its forwarder (system/forwarder.py's ``TurnGate``), captured
with every request each one judged: what the e2e tests compare with the turns a run records."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType

import pytest

from pytest_akmbench.agents.base import Limits
from pytest_akmbench.system.forwarder import TurnGate


@dataclass
class Seen:
    gates: list[TurnGate] = field(default_factory=list)
    requests: list[tuple[str, str, bool]] = field(default_factory=list)  # (method, path, a turn)

    @property
    def gate(self) -> TurnGate:
        assert len(self.gates) == 1, self.gates
        return self.gates[0]

    def counted(self, turns: int, served: int) -> None:
        """The one gate counted the turns the run recorded, as many as the model served, and held
        none; ``requests`` says which of the requests it judged were turns."""
        assert self.gate.turns == turns == served, (self.gate.turns, turns, served)
        assert not self.gate.over.is_set()


def capture(monkeypatch: pytest.MonkeyPatch, adapter: ModuleType) -> Seen:
    """Spy on the ``turn_gate`` an agent's ``adapter`` module calls for each cell."""
    seen = Seen()
    real = adapter.turn_gate

    def spy(limits: Limits, route: str) -> TurnGate:
        gate = real(limits, route)
        judge = gate.is_turn

        def is_turn(method: str, path: str, body: bytes) -> bool:
            turn = judge(method, path, body)
            seen.requests.append((method, path.split("/c/", 1)[-1], turn))
            return turn

        gate.is_turn = is_turn
        seen.gates.append(gate)
        return gate

    monkeypatch.setattr(adapter, "turn_gate", spy)
    return seen
