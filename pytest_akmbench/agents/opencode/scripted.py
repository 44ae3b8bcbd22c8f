"""The scripted model: the project's only stand-in for an LLM.

An OpenAI-compatible chat-completions server (stdlib ``ThreadingHTTPServer`` on 127.0.0.1, a
free port, a daemon thread) that answers the real opencode binary with scripted turns, so the
whole agent path (opencode, tools, budgets, token accounting, cleanup) runs offline and
deterministically. It speaks exactly what docs/opencode.md describes ("The model server protocol"): ``POST
{base}/chat/completions`` with ``stream: true``, answered with SSE ``chat.completion.chunk``
deltas, tool calls, a ``finish_reason``, a usage chunk and ``data: [DONE]``.

Cells are told apart by a token in the base URL path: ``{root}/c/<token>/v1``. The adapter
``register``\\ s a cell before spawning opencode and ``unregister``\\ s it afterwards.

Policies (the model name is ``scripted/<policy>``):

``oracle``
    akm arm: ``akm search <keywords>`` (the words as separate arguments, as akm-bench's prompt
    shows it), ``akm show <gold ref>`` (when the task has one; the ref as the search output
    printed it, else the corpus's ref in the akm line's syntax), the
    task's ``solution/solve.sh`` run through the bash tool (its text, fed to ``bash`` on a
    heredoc, with cwd = the workspace), ``akm feedback <gold_ref> --positive``, then a final
    answer. Other arms: the solution and the final answer only. The final answer is the output
    of the solution's tool call, as opencode returned it, so regex tasks see what solve.sh
    printed.
``shortcut`` the oracle without akm on every arm: the solution and the final answer, so its
           akm cells pass while skipping the lookup a workflow spec asks for.
``idle``   answers with text at once, no tools.
``hang``   accepts the request and never answers until the server stops.
``error``  HTTP 500 with ``retry-after-ms: 50`` so opencode's retries are fast, then it gives up.
``loop``   calls a harmless, always different bash command forever.
``learner`` fails a task until the stash holds a lesson on its gold asset (the evolve track).
``lesson``, ``garbage``  stand in for akm's own LLM (``akm distill``): a valid lesson, or prose
           akm's lint refuses.
``snoop``  tries to read what a cell must never see (the solution, the verifier, the stash
           fixture, other cells, the store, the user's home) and answers with what it read;
           see :mod:`snoop`. It shows whether the cell's sandbox holds.
``needs-asset``  akm arm: search, show the first hits, apply the solution only when the gold
           asset was among them; every other arm answers at once and fails (the attribute
           track's tests: masking the gold asset makes the task fail).

Usage is deterministic per turn: ``prompt_tokens = 1000 + 10*turn``, ``completion_tokens = 20``,
no cached or reasoning tokens, where ``turn`` counts the assistant messages already in the
request (0 for the first call). The server keeps per-cell totals of what it reported, in
opencode's own token vocabulary, so tests can compare them with the event stream.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from ...corpus.tasks import Task
from .policies import AKM_LLM_POLICIES, IDLE_TEXT, POLICIES, Action, ScriptedCell, akm_llm_reply, next_action
from .replies import completion, stream_frames

# Names the tests and the docs reach through the server module.
__all__ = ["ERROR_MESSAGE", "IDLE_TEXT", "POLICIES", "TITLE_TEXT", "ScriptedModel", "usage_for_turn"]

ERROR_MESSAGE = "scripted provider failure: the model is unavailable (policy error)"
TITLE_TEXT = "akmbench"


def usage_for_turn(turn: int) -> dict[str, Any]:
    """The usage block reported for the ``turn``-th call of a cell (0-based)."""
    return {
        "prompt_tokens": 1000 + 10 * turn,
        "completion_tokens": 20,
        "total_tokens": 1020 + 10 * turn,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


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
        with those bash commands followed by a final answer echoing the last output."""
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
        """The Authorization headers this cell's requests carried so far."""
        with self._lock:
            cell = self._cells.get(token)
            return set(cell.authorization) if cell else set()

    def _cell(self, token: str) -> ScriptedCell | None:
        with self._lock:
            return self._cells.get(token)


class _Handler(BaseHTTPRequestHandler):
    scripted: ScriptedModel
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        parts = self.path.split("?", 1)[0].strip("/").split("/")
        # c/<token>/v1/chat/completions
        if len(parts) != 5 or parts[0] != "c" or parts[2:] != ["v1", "chat", "completions"]:
            self._json(404, {"error": {"message": f"no such endpoint {self.path}", "type": "invalid_request_error"}})
            return
        cell = self.scripted._cell(parts[1])
        if cell is None:
            self._json(404, {"error": {"message": "unknown scripted cell", "type": "invalid_request_error"}})
            return
        with self.scripted._lock:
            cell.authorization.add(self.headers.get("Authorization") or "")
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._json(400, {"error": {"message": "bad json", "type": "invalid_request_error"}})
            return
        messages = body.get("messages") if isinstance(body.get("messages"), list) else []
        model = str(body.get("model", "scripted"))
        stream = bool(body.get("stream"))
        if not body.get("tools") or cell.policy in AKM_LLM_POLICIES:  # a title, or akm's own LLM call
            text = akm_llm_reply(cell.policy, messages) if cell.policy in AKM_LLM_POLICIES else TITLE_TEXT
            with self.scripted._lock:
                cell.totals["title_requests"] += 1
            self._answer(stream, model, Action("text", text=text), usage_for_turn(0), call_id="")
            return
        turn = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")
        action = next_action(cell, messages, turn)
        if action.kind == "hang":
            with self.scripted._lock:
                cell.totals["requests"] += 1
            self.scripted._stopping.wait()
            self.close_connection = True
            return
        if action.kind == "error":
            with self.scripted._lock:
                cell.totals["requests"] += 1
                cell.totals["errors"] += 1
            self._json(
                500,
                {"error": {"message": ERROR_MESSAGE, "type": "server_error", "code": "unavailable"}},
                headers={"retry-after-ms": "50"},
            )
            return
        usage = usage_for_turn(turn)
        with self.scripted._lock:
            t = cell.totals
            t["requests"] += 1
            t["prompt_tokens"] += usage["prompt_tokens"]
            t["completion_tokens"] += usage["completion_tokens"]
            cached = usage["prompt_tokens_details"]["cached_tokens"]
            reasoning = usage["completion_tokens_details"]["reasoning_tokens"]
            t["input"] += usage["prompt_tokens"] - cached
            t["cache_read"] += cached
            t["output"] += usage["completion_tokens"] - reasoning
            t["reasoning"] += reasoning
            t["total"] += usage["prompt_tokens"] + usage["completion_tokens"]
        self._answer(stream, model, action, usage, call_id=f"call_{turn}")

    # ------------------------------------------------------------------ replies

    def _json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _answer(self, stream: bool, model: str, action: Action, usage: dict[str, Any], call_id: str) -> None:
        cid = f"chatcmpl-{uuid.uuid4().hex[:12]}"
        created = int(time.time())
        if not stream:
            self._json(200, completion(action, model, usage, call_id, cid, created))
            return
        frames = stream_frames(action, model, usage, call_id, cid, created)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            for frame in frames:
                self.wfile.write(frame)
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
