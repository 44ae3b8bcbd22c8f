"""The scripted model: the project's only stand-in for an LLM.

A stdlib ``ThreadingHTTPServer`` on 127.0.0.1 (a free port, a daemon thread) that answers real
agent binaries with scripted turns, so the whole agent path (the agent, tools, budgets, token
accounting, cleanup) runs offline and deterministically. It speaks each protocol of ``WIRES`` at
``/c/<token>/<route>`` (docs/scripted.md); the chat-completions wire is what docs/opencode.md
describes ("The model server protocol"). The policies are listed in :mod:`.policies`.

Cells are told apart by the token in the path: ``{root}/c/<token>/v1`` is a cell's base URL. The
adapter ``register``\\ s a cell before spawning its agent and ``unregister``\\ s it afterwards.

Usage is deterministic per turn: ``1000 + 10*turn`` input tokens, 20 output tokens, no cached or
reasoning tokens, where ``turn`` counts the assistant messages already in the request (0 for the
first call). The server keeps per-cell totals of what it reported, in opencode's own token
vocabulary, so tests can compare them with the event stream.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from ..corpus.tasks import Task
from . import anthropic, chat, responses
from .policies import AKM_LLM_POLICIES, IDLE_TEXT, POLICIES, ScriptedCell, akm_llm_reply, next_action
from .wire import Action, Reply, Usage, Wire, json_reply

# Names the tests and the docs reach through the server module.
__all__ = ["ERROR_MESSAGE", "IDLE_TEXT", "POLICIES", "TITLE_TEXT", "WIRES", "ScriptedModel", "usage_for_turn"]

ERROR_MESSAGE = "scripted provider failure: the model is unavailable (policy error)"
TITLE_TEXT = "akmbench"
# Every protocol the server speaks; a new wire is one entry here (docs/scripted.md).
WIRES: tuple[Wire, ...] = (chat.WIRE, anthropic.WIRE, responses.WIRE)


def turn_usage(turn: int) -> Usage:
    """What the server reports for the ``turn``-th call of a cell (0-based)."""
    return Usage(input=1000 + 10 * turn, output=20)


def usage_for_turn(turn: int) -> dict[str, Any]:
    """The chat-completions usage block reported for the ``turn``-th call of a cell (0-based)."""
    return chat.usage_block(turn_usage(turn))


def find_wire(path: str) -> tuple[str, Wire] | None:
    """The cell token and the wire of a request path ``/c/<token>/<route>[?query]``."""
    parts = path.split("?", 1)[0].strip("/").split("/")
    if len(parts) < 3 or parts[0] != "c":
        return None
    route = tuple(parts[2:])
    wire = next((w for w in WIRES if w.route == route), None)
    return (parts[1], wire) if wire is not None else None


def _error(status: int, message: str) -> Reply:
    return json_reply(status, {"error": {"message": message, "type": "invalid_request_error"}})


class ScriptedModel:
    """Start with :meth:`start`, register cells, read :meth:`totals`, :meth:`stop` at the end."""

    def __init__(self) -> None:
        self._cells: dict[str, ScriptedCell] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.root: str | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> str:
        """Bind 127.0.0.1 on a free port, serve in a daemon thread; returns the root URL."""
        if self._server is not None:
            assert self.root is not None
            return self.root
        model = self

        class Handler(_Handler):
            scripted = model

        self._stopping.clear()
        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True, name="akmbench-scripted-model"
        )
        self._thread.start()
        self.root = f"http://127.0.0.1:{server.server_address[1]}"
        return self.root

    def stop(self) -> None:
        """Release hanging requests, stop serving and close the socket."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None
        self.root = None

    def __enter__(self) -> ScriptedModel:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ cells

    def base_url(self, token: str) -> str:
        if self.root is None:
            raise RuntimeError("scripted model not started")
        return f"{self.root}/c/{token}/v1"

    def register(
        self,
        token: str,
        policy: str,
        task: Task | None = None,
        arm: str = "noakm",
        run_dir: Path | None = None,
        *,
        commands: list[str] | None = None,
        akm_line: str | None = None,
    ) -> str:
        """Script a cell; returns its base URL. ``commands`` (tests) replaces the oracle's plan
        with those shell commands followed by a final answer echoing the last output."""
        if policy not in POLICIES:
            raise ValueError(f"unknown scripted policy {policy!r}; use one of {', '.join(POLICIES)}")
        if policy in ("oracle", "shortcut", "snoop", "needs-asset") and task is None and commands is None:
            raise ValueError(f"the {policy} policy needs the task")
        with self._lock:
            self._cells[token] = ScriptedCell(
                policy=policy, task=task, arm=arm, run_dir=run_dir, commands=commands, akm_line=akm_line
            )
        return self.base_url(token)

    def unregister(self, token: str) -> None:
        with self._lock:
            self._cells.pop(token, None)

    def totals(self, token: str) -> dict[str, int]:
        """What the server reported to this cell so far (copy); zeros for an unknown token."""
        with self._lock:
            cell = self._cells.get(token)
            return dict(cell.totals) if cell else dict(ScriptedCell("idle", None, "", None).totals)

    def authorization(self, token: str) -> set[str]:
        """The Authorization and x-api-key headers this cell's requests carried so far."""
        with self._lock:
            cell = self._cells.get(token)
            return set(cell.authorization) if cell else set()

    def _cell(self, token: str) -> ScriptedCell | None:
        with self._lock:
            return self._cells.get(token)

    def _count(self, cell: ScriptedCell, usage: Usage | None, *, title: bool = False, error: bool = False) -> None:
        """Add one call to the cell's totals, in opencode's token vocabulary."""
        with self._lock:
            t = cell.totals
            if title:
                t["title_requests"] += 1
                return
            t["requests"] += 1
            t["errors"] += int(error)
            if usage is None:
                return
            t["prompt_tokens"] += usage.input
            t["completion_tokens"] += usage.output
            t["input"] += usage.input - usage.cached
            t["cache_read"] += usage.cached
            t["output"] += usage.output - usage.reasoning
            t["reasoning"] += usage.reasoning
            t["total"] += usage.input + usage.output


class _Handler(BaseHTTPRequestHandler):
    scripted: ScriptedModel
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._send(_error(404, "not found"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        found = find_wire(self.path)
        if found is None:
            self._send(_error(404, f"no such endpoint {self.path}"))
            return
        token, wire = found
        cell = self.scripted._cell(token)
        if cell is None:
            self._send(_error(404, "unknown scripted cell"))
            return
        keys = [v for v in (self.headers.get("Authorization"), self.headers.get("x-api-key")) if v]
        with self.scripted._lock:
            cell.authorization.update(keys or [""])
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send(_error(400, "bad json"))
            return
        self._send_turn(cell, wire, body if isinstance(body, dict) else {})

    def _send_turn(self, cell: ScriptedCell, wire: Wire, body: dict[str, Any]) -> None:
        turn = wire.parse(body)
        model = self.scripted
        if not turn.tools or cell.policy in AKM_LLM_POLICIES:  # a title, or akm's own LLM call
            text = akm_llm_reply(cell.policy, turn.prompt) if cell.policy in AKM_LLM_POLICIES else TITLE_TEXT
            model._count(cell, None, title=True)
            self._send(wire.answer(turn, Action("text", text=text), turn_usage(0), ""))
            return
        action = next_action(cell, turn)
        if action.kind == "hang":
            model._count(cell, None)
            model._stopping.wait()
            self.close_connection = True
            return
        if action.kind == "error":
            model._count(cell, None, error=True)
            self._send(wire.failure(ERROR_MESSAGE))
            return
        usage = turn_usage(turn.turn)
        model._count(cell, usage)
        self._send(wire.answer(turn, action, usage, f"call_{turn.turn}"))

    def _send(self, reply: Reply) -> None:
        """Write a reply, each chunk flushed; a stream closes the connection after it."""
        self.send_response(reply.status)
        for key, value in reply.headers:
            self.send_header(key, value)
        self.end_headers()
        if any(k.lower() == "connection" and v.lower() == "close" for k, v in reply.headers):
            self.close_connection = True
        try:
            for chunk in reply.chunks:
                self.wfile.write(chunk)
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
