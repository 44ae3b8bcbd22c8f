"""One cell's way to its model: a small HTTP forwarder the harness runs outside the sandbox.

A sandboxed cell has its own network namespace with loopback only (docs/architecture.md,
"Isolation"); its one way out is this forwarder, reached through a Unix socket bound into the
sandbox (the sandbox's first process relays 127.0.0.1:PORT inside to it), or on the host's
loopback when the cell is not network-isolated. It forwards requests under the upstream base
URL's path to that URL and nothing else: not the host's other loopback services, not another
cell's scripted endpoint, not the internet.

It also keeps the provider's key out of the cell: the cell's config holds a placeholder for each
secret, and the forwarder swaps placeholders for the real values in the request line and headers
(never in a body, so an agent cannot have the key echoed back by the model). Upstream answers
are streamed back as they arrive (server-sent events stay live), with any secret value masked.

One request per connection (``Connection: close``): simple, and the clients (an agent's HTTP
stack) open a new connection for the next request.

The cell's turn budget is enforced here, where every agent's requests pass (docs/architecture.md,
"Isolation"): a :class:`TurnGate` forwards the first N requests that are turns (the agent says
which requests are) and holds the next one open, unanswered and never forwarded, until the
forwarder closes; the harness is told at once and stops the agent. Held, not refused: an agent
answered with an error would retry or report a provider failure. The token budget is held there
too: before turn k+1 goes out, the gate asks the harness (``spent``) whether the first k turns
spent it, and the harness answers once the agent's own record shows those k turns, so no agent
is answered a turn past its token budget however fast its model is.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import BinaryIO

HEAD_LIMIT = 256 * 1024
BODY_LIMIT = 64 * 1024 * 1024
CHUNK = 65536
_HOP = frozenset(
    (
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "accept-encoding",
    )
)


class BadRequest(Exception):
    pass


class TurnGate:
    """The turn and token budgets at the forwarder: ``is_turn(method, path, body)`` says which
    requests are model turns (the agent's own definition, so the count agrees with the turns its
    run records); the first ``limit`` of them pass, the next is held and sets :attr:`over`.
    ``limit`` None only counts. ``spent(k)``, when set, is asked before turn k+1 (k >= 1) goes
    out whether the k answered turns spent the token budget: then that turn is held too. It may
    wait (bounded) for the agent's record, on the request's own thread. :attr:`budget` says which
    budget the held request is past. A turn the model did not answer (upstream unreachable, an
    error status) is given back."""

    def __init__(
        self,
        limit: int | None,
        is_turn: Callable[[str, str, bytes], bool],
        spent: Callable[[int], bool] | None = None,
    ) -> None:
        self.limit = limit
        self.is_turn = is_turn
        self.spent = spent
        self.turns = 0
        self.budget = "turns"  # which budget the held request is past: "turns" or "tokens"
        self.over = threading.Event()
        self.over_at = 0.0  # time.monotonic() when the budget was hit
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []

    def take(self, method: str, path: str, body: bytes) -> bool | None:
        """Whether the request is a turn (True), not one (False), or one past a budget (None)."""
        if not self.is_turn(method, path, body):
            return False
        with self._lock:
            past = self.over.is_set() or (self.limit is not None and self.turns >= self.limit)
            if not past:
                self.turns += 1  # taken now, so the turn limit holds for requests side by side
            answered = self.turns - 1
        if past:
            self._hold("turns")
            return None
        # Outside the lock: the harness may wait for the agent's record of the answered turns.
        if self.spent is not None and answered >= 1 and self.spent(answered):
            self.give_back()
            self._hold("tokens")
            return None
        return True

    def _hold(self, budget: str) -> None:
        """Hold this request: the first one held sets :attr:`over` and tells the listeners."""
        with self._lock:
            first = not self.over.is_set()
            if first:
                self.budget = budget
                self.over_at = time.monotonic()
                self.over.set()
            listeners = list(self._listeners) if first else []
        for listener in listeners:
            listener()

    def give_back(self) -> None:
        with self._lock:
            self.turns -= 1

    def when_over(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` (from the forwarder's thread) when a budget is hit, or now if it was."""
        with self._lock:
            self._listeners.append(listener)
            hit = self.over.is_set()
        if hit:
            listener()


class Forwarder:
    """Listens on ``unix_path`` (or 127.0.0.1 on a free port) and forwards to ``upstream``.

    ``swaps`` maps each placeholder the cell was given to the secret it stands for. ``close``
    stops listening and cuts every connection still open (a cell's end must not wait on a
    hung model). ``turns``, when given, is the cell's turn budget (:class:`TurnGate`).
    """

    def __init__(
        self,
        upstream: str,
        swaps: Mapping[str, str] | None = None,
        *,
        unix_path: Path | None = None,
        turns: TurnGate | None = None,
    ) -> None:
        parts = urllib.parse.urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"model forwarder: upstream {upstream!r} is not an http(s) URL")
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.netloc = parts.netloc.rsplit("@", 1)[-1]
        self.base_path = "/" + parts.path.strip("/") if parts.path.strip("/") else ""
        self.swaps = {k: v for k, v in (swaps or {}).items() if k and v}
        self.secrets = [v.encode() for v in self.swaps.values()]
        self.unix_path = unix_path
        self.turns = turns
        self._closing = threading.Event()
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        if unix_path is not None:
            self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._listener.bind(str(unix_path))
            os.chmod(unix_path, 0o666)  # the sandbox's unprivileged uid connects to it
        else:
            self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self._thread = threading.Thread(target=self._serve, daemon=True, name="akmbench-model-forwarder")
        self._thread.start()

    @property
    def tcp_port(self) -> int:
        return int(self._listener.getsockname()[1]) if self.unix_path is None else 0

    def origin(self, port: int | None = None) -> str:
        """Where a cell reaches the forwarder: its host loopback port, or ``port`` in the cell's
        own network namespace, which the sandbox relays to the Unix socket."""
        return f"http://127.0.0.1:{port or self.tcp_port}"

    @property
    def closed(self) -> bool:
        return self._listener.fileno() == -1

    def close(self) -> None:
        self._closing.set()
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()
        with self._lock:
            conns = list(self._open)
            self._open.clear()
        for sock in conns:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        self._thread.join(timeout=5)
        if self.unix_path is not None:
            try:
                self.unix_path.unlink()
                self.unix_path.parent.rmdir()  # the directory made for this socket alone
            except OSError:
                pass

    def __enter__(self) -> Forwarder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ serving

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self._track(conn)
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.add(sock)

    def _untrack(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.discard(sock)
        sock.close()

    def _handle(self, conn: socket.socket) -> None:
        try:
            reader: BinaryIO = conn.makefile("rb")
            try:
                method, target, headers, body = _read_request(reader)
            except BadRequest as err:
                _answer(conn, 400, str(err))
                return
            path = self._swap(target)
            if not _under(urllib.parse.urlsplit(path).path, self.base_path):
                _answer(conn, 403, f"the cell's model forwarder reaches only {self.base_path or '/'}")
                return
            # The target as the agent sent it: no secret reaches the agent's own judge of a turn.
            turn = self.turns.take(method, target, body) if self.turns is not None else False
            if turn is None:  # past the turn budget: held open until the cell ends, never forwarded
                self._closing.wait()
                return
            status = self._forward(conn, method, path, headers, body)
            if turn and (status is None or status >= 400) and self.turns is not None:
                self.turns.give_back()
        except OSError:
            pass
        finally:
            self._untrack(conn)

    def _forward(
        self, conn: socket.socket, method: str, path: str, headers: list[tuple[str, str]], body: bytes
    ) -> int | None:
        """Forward one request and stream its answer back: the upstream's status, None unreachable."""
        cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        upstream = cls(self.host, self.port, timeout=None)
        try:
            out = {name: self._swap(value) for name, value in headers if name.lower() not in _HOP}
            out["Host"] = self.netloc
            out["Accept-Encoding"] = "identity"  # so a secret in an answer can be masked
            try:
                upstream.request(method, path, body=body or None, headers=out)
                if upstream.sock is not None:
                    self._track(upstream.sock)
                response = upstream.getresponse()
            except (OSError, http.client.HTTPException) as err:
                _answer(conn, 502, f"model forwarder: {self.netloc} unreachable ({err})")
                return None
            head = [f"HTTP/1.1 {response.status} {response.reason}"]
            head += [f"{k}: {v}" for k, v in response.getheaders() if k.lower() not in _HOP]
            head += ["Connection: close", "", ""]
            conn.sendall(self._mask("\r\n".join(head).encode("latin-1")))
            while True:
                data = response.read1(CHUNK)
                if not data:
                    break
                conn.sendall(self._mask(data))
            return int(response.status)
        finally:
            if upstream.sock is not None:
                self._untrack(upstream.sock)
            upstream.close()

    def _swap(self, text: str) -> str:
        for placeholder, value in self.swaps.items():
            text = text.replace(placeholder, value)
        return text

    def _mask(self, data: bytes) -> bytes:
        for secret in self.secrets:
            data = data.replace(secret, b"*" * len(secret))
        return data


def _under(path: str, base: str) -> bool:
    if not base:
        return True
    normal = "/" + "/".join(p for p in path.split("/") if p)
    return ".." not in path.split("/") and (normal == base or normal.startswith(base + "/"))


def _read_request(reader: BinaryIO) -> tuple[str, str, list[tuple[str, str]], bytes]:
    """(method, target, headers, body) of one HTTP/1.1 request."""
    line = reader.readline(HEAD_LIMIT)
    words = line.decode("latin-1").split()
    if len(words) != 3 or not words[2].startswith("HTTP/"):
        raise BadRequest("malformed request line")
    headers: list[tuple[str, str]] = []
    size = len(line)
    while True:
        raw = reader.readline(HEAD_LIMIT)
        size += len(raw)
        if size > HEAD_LIMIT:
            raise BadRequest("request head too large")
        if raw in (b"\r\n", b"\n", b""):
            break
        name, _, value = raw.decode("latin-1").partition(":")
        headers.append((name.strip(), value.strip()))
    fields = {k.lower(): v for k, v in headers}
    if "chunked" in fields.get("transfer-encoding", "").lower():
        body = _dechunk(reader)
    else:
        length = int(fields.get("content-length") or 0)
        if length < 0 or length > BODY_LIMIT:
            raise BadRequest("request body too large")
        body = reader.read(length) if length else b""
    return words[0], words[1], headers, body


def _dechunk(reader: BinaryIO) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        size_line = reader.readline(1024).split(b";")[0].strip()
        try:
            size = int(size_line, 16)
        except ValueError:
            raise BadRequest("malformed chunk") from None
        if size == 0:
            while reader.readline(HEAD_LIMIT) not in (b"\r\n", b"\n", b""):
                pass
            return b"".join(parts)
        total += size
        if total > BODY_LIMIT:
            raise BadRequest("request body too large")
        parts.append(reader.read(size))
        reader.readline(16)


def _answer(conn: socket.socket, status: int, message: str) -> None:
    data = json.dumps({"error": {"message": message, "type": "forwarder_error"}}).encode()
    reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}.get(status, "Error")
    head = f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\nConnection: close\r\n\r\n"
    try:
        conn.sendall(head.encode() + data)
    except OSError:
        pass
