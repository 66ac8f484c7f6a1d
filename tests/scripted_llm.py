"""A scripted OpenAI-compatible chat server on 127.0.0.1 for tests.

The real ``openai`` client code talks to it over HTTP, so tests exercise exactly the path used
with the embedded model or a remote endpoint; only the answers are scripted.

A reply can be:
- a string: the assistant message content;
- a dict: ``{"content": str, "status": int, "delay": seconds, "body": raw text, "error": str,
  "prompt_tokens": n, "completion_tokens": n}``; ``status`` other than 200 sends an OpenAI-style
  error (``error`` is its message) or ``body`` verbatim; ``delay`` sleeps before answering;
- a callable ``f(request_json) -> reply`` (one of the above).

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
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, json.dumps({"object": "list", "data": [
                    {"id": owner.model, "object": "model", "created": 0, "owned_by": "tests"}]}))
            else:
                self._send(404, json.dumps({"error": {"message": "not found"}}))

        def do_POST(self) -> None:
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
            if reply.get("delay"):
                time.sleep(float(reply["delay"]))
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
            self._send(200, json.dumps({
                "id": f"chatcmpl-{len(owner.requests)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": req.get("model") or owner.model,
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                          "total_tokens": prompt_tokens + completion_tokens},
            }))

    return Handler
