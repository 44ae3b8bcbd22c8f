"""The model forwarder (system/forwarder.py): a cell's one way to its model, holding the key."""

from __future__ import annotations

import json
import queue
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from pytest_akmbench.agents import watching
from pytest_akmbench.agents.base import Limits
from pytest_akmbench.agents.watching import CATCH_UP_S, CatchUp, turn_gate, turns_held
from pytest_akmbench.system.forwarder import Forwarder, TurnGate

SECRET = "sk-test-0123456789abcdef"
PLACEHOLDER = "akmbench-placeholder-key-42"


class Upstream(BaseHTTPRequestHandler):
    seen: ClassVar[list[dict[str, Any]]] = []
    protocol_version = "HTTP/1.1"

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.seen.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        if self.path.endswith("/echo-key"):  # an upstream that quotes the key back
            data = f"Incorrect API key provided: {SECRET}".encode()
            self.send_response(401)
        elif self.path.endswith("/stream"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            for i in range(3):
                self.wfile.write(f"data: {i}\n\n".encode())
                self.wfile.flush()
            return
        else:
            data = json.dumps({"ok": True}).encode()
            self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _answer

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def upstream() -> Iterator[str]:
    Upstream.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/c/tok/v1"
    server.shutdown()
    server.server_close()


def call(url: str, **headers: str) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=b'{"model": "m"}', headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def test_the_key_is_put_on_the_request_on_its_way_out(upstream: str) -> None:
    with Forwarder(upstream, {PLACEHOLDER: SECRET}) as fwd:
        status, body = call(fwd.origin() + "/c/tok/v1/chat/completions", Authorization=f"Bearer {PLACEHOLDER}")
    assert (status, json.loads(body)) == (200, {"ok": True})
    (seen,) = Upstream.seen
    assert seen == {"path": "/c/tok/v1/chat/completions", "auth": f"Bearer {SECRET}", "body": b'{"model": "m"}'}


def test_a_placeholder_in_a_body_stays_a_placeholder(upstream: str) -> None:
    """Only the request line and headers are swapped: a model asked to echo the placeholder
    never sees, so never echoes, the key."""
    with Forwarder(upstream, {PLACEHOLDER: SECRET}) as fwd:
        request = urllib.request.Request(
            fwd.origin() + "/c/tok/v1/chat/completions", data=PLACEHOLDER.encode(), method="POST"
        )
        urllib.request.urlopen(request, timeout=10).read()
    assert Upstream.seen[0]["body"] == PLACEHOLDER.encode()


def test_only_the_models_own_path_is_forwarded(upstream: str) -> None:
    """Not the server's other paths (another scripted cell's), not a way out of the path."""
    with Forwarder(upstream, {}) as fwd:
        for path in ("/", "/c/other/v1/chat/completions", "/c/tok/v1/../../other/v1/x", "/c/tokx/v1"):
            status, body = call(fwd.origin() + path)
            assert status == 403 and b"reaches only /c/tok/v1" in body, path
    assert Upstream.seen == []


def test_a_key_an_answer_echoes_is_masked(upstream: str) -> None:
    with Forwarder(upstream, {PLACEHOLDER: SECRET}) as fwd:
        status, body = call(fwd.origin() + "/c/tok/v1/echo-key")
    assert status == 401 and SECRET.encode() not in body and b"*" * len(SECRET) in body


def test_a_stream_is_carried_as_it_comes(upstream: str) -> None:
    with Forwarder(upstream, {}) as fwd:
        status, body = call(fwd.origin() + "/c/tok/v1/stream")
    assert (status, body) == (200, b"data: 0\n\ndata: 1\n\ndata: 2\n\n")


def test_an_unreachable_model_is_a_502_naming_it(upstream: str) -> None:
    with Forwarder("http://127.0.0.1:9/v1", {}) as fwd:
        status, body = call(fwd.origin() + "/v1/chat/completions")
    assert status == 502 and b"model forwarder: 127.0.0.1:9 unreachable" in body


def test_closing_cuts_a_hung_request(upstream: str) -> None:
    """A cell's end must not wait on a hung model: close() cuts open connections."""
    import socket
    import time

    hung = socket.socket()
    hung.bind(("127.0.0.1", 0))
    hung.listen()
    fwd = Forwarder(f"http://127.0.0.1:{hung.getsockname()[1]}/v1", {})
    results: list[object] = []

    def client() -> None:
        try:
            results.append(call(fwd.origin() + "/v1/x"))
        except OSError as err:  # the cut connection: what a hung model's client sees
            results.append(err)

    thread = threading.Thread(target=client)
    thread.start()
    time.sleep(0.5)
    started = time.monotonic()
    fwd.close()
    thread.join(timeout=10)
    hung.close()
    assert not thread.is_alive() and time.monotonic() - started < 6
    assert len(results) == 1


# ---------------------------------------------------------------- the turn budget (TurnGate)


def a_turn(method: str, path: str, body: bytes) -> bool:
    return path.endswith(("/turn", "/echo-key"))


def held(url: str) -> tuple[threading.Thread, list[object]]:
    """A request in a thread of its own, which the forwarder may hold: (the thread, its outcome)."""
    outcome: list[object] = []

    def client() -> None:
        try:
            outcome.append(call(url))
        except OSError as err:  # the held connection cut when the forwarder closes
            outcome.append(err)

    thread = threading.Thread(target=client, daemon=True)
    thread.start()
    return thread, outcome


@pytest.mark.parametrize("budget", [1, 3])
def test_a_turn_budget_of_n_forwards_n_turns_and_holds_the_next(upstream: str, budget: int) -> None:
    gate = TurnGate(budget, a_turn)
    told = threading.Event()
    gate.when_over(told.set)
    with Forwarder(upstream, {}, turns=gate) as fwd:
        for _ in range(budget):
            assert call(fwd.origin() + "/c/tok/v1/turn")[0] == 200
        assert not told.is_set() and not gate.over.is_set()
        thread, outcome = held(fwd.origin() + "/c/tok/v1/turn")
        assert told.wait(5), "the harness was not told"
        thread.join(timeout=1)
        assert thread.is_alive() and outcome == []  # held open, not answered: nothing to retry
        # What is no turn (a title) still passes.
        assert call(fwd.origin() + "/c/tok/v1/title")[0] == 200
    thread.join(timeout=5)
    assert not thread.is_alive() and len(outcome) == 1
    paths = [seen["path"] for seen in Upstream.seen]
    assert paths == ["/c/tok/v1/turn"] * budget + ["/c/tok/v1/title"]  # the N+1th never arrived
    assert gate.turns == budget and gate.over.is_set()


def test_a_turn_the_model_refused_is_given_back(upstream: str) -> None:
    """An error answer (here 401) spent no turn of the agent's: the budget still allows one."""
    gate = TurnGate(1, a_turn)
    with Forwarder(upstream, {}, turns=gate) as fwd:
        assert call(fwd.origin() + "/c/tok/v1/echo-key")[0] == 401
        assert call(fwd.origin() + "/c/tok/v1/turn")[0] == 200
        thread, _ = held(fwd.origin() + "/c/tok/v1/turn")
        assert gate.over.wait(5)
    thread.join(timeout=5)
    assert [seen["path"] for seen in Upstream.seen] == ["/c/tok/v1/echo-key", "/c/tok/v1/turn"]
    assert gate.turns == 1


def test_no_turn_budget_only_counts(upstream: str) -> None:
    gate = TurnGate(None, a_turn)
    with Forwarder(upstream, {}, turns=gate) as fwd:
        for _ in range(4):
            assert call(fwd.origin() + "/c/tok/v1/turn")[0] == 200
    assert gate.turns == 4 and not gate.over.is_set()


def test_a_listener_after_the_budget_was_hit_is_told_at_once() -> None:
    gate = TurnGate(0, a_turn)
    assert gate.take("POST", "/v1/turn", b"") is None and gate.over.is_set()
    told: list[bool] = []
    gate.when_over(lambda: told.append(True))
    assert told == [True]


def test_an_agents_turn_is_a_request_to_its_route_offering_tools() -> None:
    is_turn = turn_gate(Limits(wall_s=60, turns=3), "/chat/completions").is_turn
    tools = json.dumps({"tools": [{"type": "function"}], "messages": []}).encode()
    assert is_turn("POST", "/c/tok/v1/chat/completions", tools)
    assert is_turn("POST", "/c/tok/v1/chat/completions?x=1", tools)
    assert not is_turn("POST", "/c/tok/v1/chat/completions", b'{"tools": [], "messages": []}')  # a title
    assert not is_turn("POST", "/c/tok/v1/chat/completions", b'{"messages": []}')
    assert not is_turn("POST", "/c/tok/v1/chat/completions", b"not json")
    assert not is_turn("POST", "/c/tok/v1/chat/completions", b"[1]")
    assert not is_turn("GET", "/c/tok/v1/chat/completions", tools)
    assert not is_turn("POST", "/c/tok/v1/models", tools)
    assert turn_gate(Limits(wall_s=60, turns=3), "/responses").limit == 3


def test_the_watch_stops_once_the_runs_record_caught_up_with_the_held_turn() -> None:
    """An agent may print a turn's end after sending the next request: the stop waits for its
    record of the N answered turns (it spends nothing while held), at most CATCH_UP_S."""
    gate = TurnGate(2, a_turn)
    assert not turns_held(gate, 2) and not turns_held(None, 5)
    assert gate.take("POST", "/v1/turn", b"") and gate.take("POST", "/v1/turn", b"")
    assert gate.take("POST", "/v1/turn", b"") is None
    assert not turns_held(gate, 1) and turns_held(gate, 2)
    gate.over_at -= CATCH_UP_S
    assert turns_held(gate, 1)


# ---------------------------------------------------------------- the token budget at the gate


def test_a_turn_after_the_tokens_were_spent_is_held(upstream: str) -> None:
    """Before turn k+1 the gate asks whether k turns spent the token budget: then it is held
    (never forwarded) as a turn past the turn budget is, and the budget it is past says tokens."""
    asked: list[int] = []

    def spent(answered: int) -> bool:
        asked.append(answered)
        return answered >= 2

    gate = TurnGate(None, a_turn, spent)
    told = threading.Event()
    gate.when_over(told.set)
    with Forwarder(upstream, {}, turns=gate) as fwd:
        for _ in range(2):
            assert call(fwd.origin() + "/c/tok/v1/turn")[0] == 200
        assert not gate.over.is_set()
        thread, outcome = held(fwd.origin() + "/c/tok/v1/turn")
        assert told.wait(5), "the harness was not told"
        thread.join(timeout=1)
        assert thread.is_alive() and outcome == []
        assert call(fwd.origin() + "/c/tok/v1/title")[0] == 200  # no turn: still passes
        later, _ = held(fwd.origin() + "/c/tok/v1/turn")  # once held, every later turn is
        later.join(timeout=1)
        assert later.is_alive()
    thread.join(timeout=5)
    assert [seen["path"] for seen in Upstream.seen] == ["/c/tok/v1/turn"] * 2 + ["/c/tok/v1/title"]
    assert asked == [1, 2] and gate.budget == "tokens" and gate.turns == 2
    assert turns_held(gate, 2) and turns_held(gate, 0)  # the record was waited for before holding


class Record:
    """An agent's record as a watch sees it: its turns and tokens so far."""

    def __init__(self) -> None:
        self.turns = 0
        self.tokens = 0

    def total_tokens(self) -> int:
        return self.tokens


def a_watch(catch_up: CatchUp, lines: queue.Queue[bool | None], look: Callable[[], None]) -> list[int]:
    """A watch that takes a ``look`` at the record (a session log, say) on each wake only, as the
    Codex watch polls; returns the looks, counted as they are taken."""
    looks: list[int] = []

    def run() -> None:
        while not catch_up.ended:
            try:
                lines.get(timeout=0.1)
            except queue.Empty:
                continue
            looks.append(len(looks) + 1)
            look()
            catch_up.looked()

    threading.Thread(target=run, daemon=True).start()
    return looks


def test_the_gate_holds_the_turn_after_the_one_that_spent_the_tokens_however_fast_the_model(upstream: str) -> None:
    """Against an instant model turn k+1 is asked for before the record shows turn k (its only
    look is the watch's, on a wake): the gate wakes the watch until it does, then judges. Turn k
    spends 1010 + 10k tokens, so 4 turns spend 4140 > 4000: the 5th is held, never forwarded."""
    lines: queue.Queue[bool | None] = queue.Queue()
    record = Record()
    catch_up = CatchUp(record, lines, 4000)  # type: ignore[arg-type]

    def look() -> None:
        record.turns = sum(1 for seen in Upstream.seen if seen["path"].endswith("/turn"))
        record.tokens = sum(1010 + 10 * k for k in range(1, record.turns + 1))

    looks = a_watch(catch_up, lines, look)
    gate = TurnGate(None, a_turn, catch_up.spent)
    try:
        with Forwarder(upstream, {}, turns=gate) as fwd:
            for _ in range(4):
                assert call(fwd.origin() + "/c/tok/v1/turn")[0] == 200
            thread, outcome = held(fwd.origin() + "/c/tok/v1/turn")
            assert gate.over.wait(5) and gate.budget == "tokens"
            thread.join(timeout=0.5)
            assert thread.is_alive() and outcome == []
    finally:
        catch_up.end()
    assert (record.turns, record.tokens, gate.turns) == (4, 4140, 4)
    assert [seen["path"] for seen in Upstream.seen] == ["/c/tok/v1/turn"] * 4
    assert len(looks) >= 4  # one look at least before each turn after the first


def test_the_catch_up_wakes_the_watch_until_the_record_shows_the_turns() -> None:
    """The record shows turn 4 only at the watch's 3rd look: the wait ends then, not later."""
    lines: queue.Queue[bool | None] = queue.Queue()
    record = Record()
    record.turns, record.tokens = 3, 3105
    catch_up = CatchUp(record, lines, 4000)  # type: ignore[arg-type]

    def look() -> None:
        if len(looks) == 3:
            record.turns, record.tokens = 4, 4140

    looks = a_watch(catch_up, lines, look)
    started = time.monotonic()
    try:
        assert catch_up.spent(4)
    finally:
        catch_up.end()
    assert len(looks) >= 3 and time.monotonic() - started < 1.0  # woken again and again, not slept
    assert not CatchUp(record, lines, 5000).spent(4)  # caught up at once, under the budget


def test_the_catch_up_is_bounded_and_ends_with_the_watch(monkeypatch: pytest.MonkeyPatch) -> None:
    """A record that never shows the turn: after CATCH_UP_S the tokens are judged as they are; a
    watch that ended stops the wait at once."""
    monkeypatch.setattr(watching, "CATCH_UP_S", 0.3)
    lines: queue.Queue[bool | None] = queue.Queue()
    record = Record()
    record.turns, record.tokens = 3, 3105
    started = time.monotonic()
    assert not CatchUp(record, lines, 4000).spent(4)
    assert 0.3 <= time.monotonic() - started < 2.0 and lines.qsize() >= 2  # the watch was woken to look
    ended = CatchUp(record, lines, 3000)
    ended.end()
    started = time.monotonic()
    assert ended.spent(4) and time.monotonic() - started < 0.2
