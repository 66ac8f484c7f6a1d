"""A scripted OpenAI-compatible chat server on 127.0.0.1 for tests.

The real ``openai`` client code talks to it over HTTP, so tests exercise exactly the path used
with the embedded model or a remote endpoint; only the answers are scripted.

A reply can be:
- a string: the assistant message content;
- a dict: ``{"content": str, "status": int, "delay": seconds, "body": raw text, "error": str,
  "prompt_tokens": n, "completion_tokens": n}``; ``status`` other than 200 sends an OpenAI-style
  error (``error`` is its message) or ``body`` verbatim; ``delay`` waits before answering (the
  time a real server spends reading the prompt);
- a callable ``f(request_json) -> reply`` (one of the above).

A request with ``"stream": true`` is answered with server-sent events the way llama.cpp and
OpenAI send them: a role chunk, the content in pieces (``chunks``: the pieces, else one per
word), a closing chunk, then the usage chunk (left out with ``"usage": False``) and ``[DONE]``.
``chunk_delay`` waits between pieces; ``hang`` stops sending for that many seconds after
``hang_after`` pieces. While it waits the server watches the connection: a client that goes
away is counted in ``disconnects`` and the answer is abandoned, as llama.cpp abandons a
generation. ``max_active`` is the most requests ever answered at the same time.

Replies are taken first from rules (``when(substring_or_predicate, reply)``, matched against the
whole prompt text, first match wins, reusable) and then from the queue (``push(*replies)``, each
used once). With nothing left, the server answers HTTP 400 "no scripted reply left", which the
client does not retry, so a test with a missing reply fails at once and clearly.

``context_size=n`` makes the server refuse, as llama.cpp does (HTTP 400, "exceeds the available
context size"), a request whose prompt is longer than ``n`` tokens, counted by
:func:`count_tokens`, a stand-in for Qwen's tokenizer that never counted fewer tokens than the
real one on the prompts the Spider benchmark recorded (median 1.15 times as many).
"""

from __future__ import annotations

import json
import re
import select
import socket
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


class ScriptedLLM:
    def __init__(self, model: str = "scripted-model", context_size: int | None = None):
        self.model = model
        self.context_size = context_size
        self.requests: list[dict] = []
        self.prompt_tokens: list[int] = []  # count_tokens of every chat request, in order
        self.authorizations: list[str | None] = []  # each request's Authorization header
        self.disconnects = 0
        self.active = 0
        self.max_active = 0
        self._queue: deque = deque()
        self._rules: list[tuple[Callable[[dict], bool], Any]] = []
        self._lock = threading.Lock()
        handler = _make_handler(self)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=lambda: self._server.serve_forever(poll_interval=0.05), daemon=True)
        self._thread.start()

    # -- script -------------------------------------------------------------------------------
    def push(self, *replies: Any) -> "ScriptedLLM":
        with self._lock:
            self._queue.extend(replies)
        return self

    def when(self, match: str | Callable[[dict], bool], reply: Any) -> "ScriptedLLM":
        if isinstance(match, str):
            needle = match
            pred = lambda req: needle in prompt_text(req)  # noqa: E731
        else:
            pred = match
        with self._lock:
            self._rules.append((pred, reply))
        return self

    def clear(self) -> None:
        with self._lock:
            self._queue.clear()
            self._rules.clear()
            self.requests.clear()
            self.prompt_tokens.clear()
            self.disconnects = self.max_active = 0

    @property
    def remaining(self) -> int:
        return len(self._queue)

    # -- address ------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "ScriptedLLM":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- internals ----------------------------------------------------------------------------
    def _next_reply(self, req: dict) -> Any:
        with self._lock:
            self.requests.append(req)
            reply = None
            for pred, rule_reply in self._rules:
                try:
                    if pred(req):
                        reply = rule_reply
                        break
                except Exception:
                    continue
            if reply is None and self._queue:
                reply = self._queue.popleft()
        while callable(reply):
            reply = reply(req)
        return reply


def prompt_text(req: dict) -> str:
    """All message contents of a chat request joined, for matching rules."""
    parts = []
    for m in req.get("messages", []):
        c = m.get("content")
        if isinstance(c, list):
            c = " ".join(p.get("text", "") for p in c if isinstance(p, dict))
        parts.append(str(c or ""))
    return "\n".join(parts)


_PIECE = re.compile(r"\d|[A-Za-z]+|\n[ \t]*|[ \t]+|[^\sA-Za-z\d]")


def count_tokens(req: dict) -> int:
    """A chat request's prompt tokens as a byte-level BPE tokenizer would roughly count them:
    a digit or a punctuation mark is a token, a word one per 7 letters, a line break one, a
    non-ASCII character one per byte, plus each message's and the template's markers."""
    total = 10
    for m in req.get("messages", []):
        total += 4
        content = m.get("content")
        if isinstance(content, list):
            content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        for piece in _PIECE.findall(str(content or "")):
            if piece[0].isalpha():
                total += -(-len(piece) // 7)
            elif piece[0] in " \t":
                continue
            elif piece.isascii():
                total += 1
            else:
                total += len(piece.encode())
    return total


def last_user_message(req: dict) -> str:
    for m in reversed(req.get("messages", [])):
        if m.get("role") == "user":
            return str(m.get("content") or "")
    return ""


def _make_handler(owner: ScriptedLLM):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # keep test output clean
            pass

        def _send(self, status: int, body: str, ctype: str = "application/json") -> None:
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            owner.authorizations.append(self.headers.get("Authorization"))
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, json.dumps({"object": "list", "data": [
                    {"id": owner.model, "object": "model", "created": 0, "owned_by": "tests"}]}))
            else:
                self._send(404, json.dumps({"error": {"message": "not found"}}))

        def do_POST(self) -> None:
            owner.authorizations.append(self.headers.get("Authorization"))
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b"{}"
            try:
                req = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                self._send(400, json.dumps({"error": {"message": "bad json"}}))
                return
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, json.dumps({"error": {"message": "not found"}}))
                return
            tokens = count_tokens(req)
            too_long = owner.context_size is not None and tokens > owner.context_size
            with owner._lock:
                owner.prompt_tokens.append(tokens)
                if too_long:
                    owner.requests.append(req)
            if too_long:
                self._send(400, json.dumps({"error": {
                    "code": 400, "type": "exceed_context_size_error",
                    "message": f"request ({tokens} tokens) exceeds the available context size "
                               f"({owner.context_size} tokens), try increasing it",
                    "n_prompt_tokens": tokens, "n_ctx": owner.context_size}}))
                return
            reply = owner._next_reply(req)
            if reply is None:
                self._send(400, json.dumps({"error": {"message": "no scripted reply left",
                                                      "type": "invalid_request_error"}}))
                return
            if isinstance(reply, str):
                reply = {"content": reply}
            with owner._lock:
                owner.active += 1
                owner.max_active = max(owner.max_active, owner.active)
            try:
                self._answer(req, reply)
            except (BrokenPipeError, ConnectionResetError):
                self._gone()
            finally:
                with owner._lock:
                    owner.active -= 1

        def _answer(self, req: dict, reply: dict) -> None:
            if reply.get("delay") and not self._wait(float(reply["delay"])):
                return
            status = int(reply.get("status", 200))
            if status != 200:
                body = reply.get("body") or json.dumps({"error": {
                    "message": reply.get("error", f"scripted error {status}"),
                    "type": "scripted", "code": reply.get("code")}})
                self._send(status, body)
                return
            if "body" in reply:
                self._send(200, reply["body"])
                return
            content = reply.get("content", "")
            prompt_tokens = reply.get("prompt_tokens", max(1, len(prompt_text(req).split())))
            completion_tokens = reply.get("completion_tokens", max(1, len(content.split())))
            usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                     "total_tokens": prompt_tokens + completion_tokens}
            base = {"id": f"chatcmpl-{len(owner.requests)}", "created": int(time.time()),
                    "model": req.get("model") or owner.model}
            if req.get("stream"):
                self._stream(base, content, usage, reply)
                return
            self._send(200, json.dumps({
                **base, "object": "chat.completion",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}],
                "usage": usage,
            }))

        def _stream(self, base: dict, content: str, usage: dict, reply: dict) -> None:
            self.close_connection = True
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()

            def event(choices: list, **extra) -> None:
                data = {**base, "object": "chat.completion.chunk", "choices": choices, **extra}
                self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()

            event([{"index": 0, "delta": {"role": "assistant", "content": ""},
                    "finish_reason": None}])
            pieces = reply.get("chunks") or re.findall(r"\S+\s*|\s+", content)
            assert "".join(pieces) == content, "chunks must join to the content"
            hang_at = int(reply.get("hang_after", 0)) if reply.get("hang") else -1
            for n, piece in enumerate(pieces):
                if n == hang_at and not self._wait(float(reply["hang"])):
                    return
                if n and reply.get("chunk_delay") and not self._wait(float(reply["chunk_delay"])):
                    return
                event([{"index": 0, "delta": {"content": piece}, "finish_reason": None}])
            if hang_at >= len(pieces) and not self._wait(float(reply["hang"])):
                return
            event([{"index": 0, "delta": {}, "finish_reason": "stop"}])
            if reply.get("usage", True):
                event([], usage=usage)
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

        def _wait(self, seconds: float) -> bool:
            """Sleep ``seconds`` unless the client goes away first (then False)."""
            deadline = time.monotonic() + seconds
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return True
                readable, _, _ = select.select([self.connection], [], [], min(left, 0.05))
                if readable:
                    try:
                        data = self.connection.recv(1, socket.MSG_PEEK)
                    except OSError:
                        data = b""
                    if not data:
                        self._gone()
                        return False

        def _gone(self) -> None:
            self.close_connection = True
            with owner._lock:
                owner.disconnects += 1

    return Handler
