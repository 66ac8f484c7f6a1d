"""Streamed output in the browser, and several browser sessions sharing the embedded model.

``.venv/bin/python bench/browser_streaming.py [--repeat 3] [--sessions 3] [--questions 2]
[--decoding standard] [--out bench/results/browser-streaming.json]``

The embedded model is started in this process and reached by the app through a small timing
proxy on 127.0.0.1 (provider ``openai`` with that ``base_url``: the same SDK path, the same
per-endpoint queue), which notes when each answer's first token leaves the model. Headless
Chromium (Debian's package) then measures:

- **first characters**: after clicking Run (MAC-SQL on the sample shop database), when the
  running step's streamed text first shows on the page, against the moment its first token
  left the model (the prompt already processed) and against the click;
- **load**: ``--sessions`` browser sessions at once, each asking ``--questions`` questions in
  turn; whether every run finishes, none times out, and each session saw its queue position
  ("waiting for the model: N runs ahead").

Browser, proxy and app share this machine's clock. Prints and writes one JSON object; nothing is
asserted: it is a measurement.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from agents.llm.local_model import LocalServer
from support.app_server import start_app, stop_app  # noqa: E402

QUESTIONS = ["How many customers are there in each country?",
             "How many orders were cancelled?",
             "What are the five most expensive products?",
             "What is the average shipping fee per channel?",
             "Which city has the most customers?",
             "How many reviews does each product have?"]
LIVE_TEXT = "[data-testid=stExpander] [data-testid=stCode]"
FIRST_CHARS_JS = f"""() => {{
  for (const e of document.querySelectorAll('{LIVE_TEXT}'))
    if (e.innerText.trim().length > 0) return Date.now() / 1000;
  return false; }}"""
RUN_CAPTION = re.compile(r"Run \S+ · \S+ · ([^·]+?) ·")
QUEUE_TEXT = re.compile(r"waiting for the model: \d+ runs? ahead")


class TimingProxy(ThreadingHTTPServer):
    """Forwards requests to the model server, streaming answers through; notes the wall time
    of each streamed answer's first content token in ``first_tokens``."""

    daemon_threads = True

    def __init__(self, upstream: str):
        super().__init__(("127.0.0.1", 0), _Handler)
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname, parts.port)
        self.first_tokens: list[float] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet
        pass

    def _forward(self, method: str) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        upstream = http.client.HTTPConnection(*self.server.upstream, timeout=1800)
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() not in ("host", "content-length", "connection")}
        upstream.request(method, self.path, body=body or None, headers=headers)
        reply = upstream.getresponse()
        self.send_response(reply.status)
        for key, value in reply.getheaders():
            if key.lower() not in ("transfer-encoding", "content-length", "connection"):
                self.send_header(key, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        noted = False
        try:
            while True:
                line = reply.readline()
                if not line:
                    break
                if not noted and _has_content(line):
                    self.server.first_tokens.append(time.time())
                    noted = True
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):  # the app stopped the run
            pass
        finally:
            upstream.close()

    def do_GET(self) -> None:
        self._forward("GET")

    def do_POST(self) -> None:
        self._forward("POST")


def _has_content(line: bytes) -> bool:
    """Whether a server-sent event line carries a piece of the answer's text."""
    if not line.startswith(b"data: {"):
        return False
    try:
        choices = json.loads(line[6:]).get("choices") or [{}]
    except ValueError:
        return False
    return bool((choices[0].get("delta") or {}).get("content"))


async def _idle(page, timeout: float = 900_000) -> None:
    await page.wait_for_selector("[data-testid=stApp][data-test-script-state=notRunning]",
                                 timeout=timeout)


async def _prepare(page, url: str, pipeline: str) -> None:
    await page.goto(url)
    await page.get_by_role("button", name="Run", exact=True).wait_for(timeout=120_000)
    await _idle(page)
    await page.locator("[data-testid=stSelectbox]").filter(has_text="Pipeline").click()
    await page.get_by_role("option", name=re.compile(pipeline, re.I)).first.click()
    await _idle(page)


async def _ask(page, question: str) -> float:
    box = page.get_by_role("textbox", name="Question", exact=True)
    await box.fill(question)
    await box.press("Tab")
    await _idle(page)
    clicked = time.time()
    await page.get_by_role("button", name="Run", exact=True).click()
    return clicked


async def _caption(page) -> str:
    caption = page.get_by_text(RUN_CAPTION)
    return await caption.first.inner_text() if await caption.count() else ""


async def _finished(page, before: str) -> str:
    """Waits for the end of the run started after the answer caption ``before`` was shown
    (a new run id: the previous answer may still be on the page for a moment); its outcome
    ('done, SQL runs', 'failed', ...)."""
    old_id = before.split(" · ")[0]
    deadline = time.time() + 1800
    while time.time() < deadline:
        text = await _caption(page)
        if text and text.split(" · ")[0] != old_id:
            await _idle(page)
            found = RUN_CAPTION.search(await _caption(page))
            return found.group(1) if found else "finished, outcome not shown"
        await asyncio.sleep(0.5)
    return "did not finish: timed out after 30 minutes"


async def first_characters(browser, url: str, proxy: TimingProxy, repeat: int) -> list[dict]:
    page = await browser.new_page(viewport={"width": 1400, "height": 1000})
    await _prepare(page, url, "MAC-SQL")
    rows = []
    for n in range(repeat):
        seen = len(proxy.first_tokens)
        clicked = await _ask(page, QUESTIONS[n % len(QUESTIONS)])
        shown = await (await page.wait_for_function(FIRST_CHARS_JS, timeout=900_000,
                                                    polling=50)).json_value()
        token = proxy.first_tokens[seen] if len(proxy.first_tokens) > seen else None
        rows.append({"click_to_first_characters_s": round(shown - clicked, 3),
                     "first_token_to_first_characters_s":
                         round(shown - token, 3) if token else None,
                     "click_to_first_token_s": round(token - clicked, 3) if token else None})
        await page.get_by_role("button", name="Stop the run").click()
        await _idle(page)
    await page.close()
    return rows


async def one_session(browser, url: str, questions: list[str]) -> dict:
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    page = await context.new_page()
    await _prepare(page, url, "MAC-SQL")
    saw_queue: list[str] = []
    runs = []
    for question in questions:
        started = time.time()
        before = await _caption(page)
        await _ask(page, question)
        done = asyncio.ensure_future(_finished(page, before))
        while not done.done():
            text = await page.locator("[data-testid=stMain]").inner_text()
            found = QUEUE_TEXT.search(text)
            if found:
                saw_queue.append(found.group(0))
            await asyncio.sleep(0.5)
        try:
            status = done.result()
        except Exception as exc:  # a wait that timed out is a result here, not a crash
            status = f"did not finish: {type(exc).__name__}"
        runs.append({"question": question, "status": status,
                     "seconds": round(time.time() - started, 1)})
    await context.close()
    return {"runs": runs, "queue_positions_seen": sorted(set(saw_queue))}


async def measure(url: str, proxy: TimingProxy, args) -> dict:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path="/usr/bin/chromium", args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        warm = await browser.new_page()
        await _prepare(warm, url, "Baseline")
        t0 = time.time()
        await _ask(warm, QUESTIONS[0])
        await _finished(warm, "")
        warm_up = time.time() - t0
        await warm.close()
        first = await first_characters(browser, url, proxy, args.repeat)
        sessions = [QUESTIONS[(i * args.questions + j) % len(QUESTIONS)]
                    for i in range(args.sessions) for j in range(args.questions)]
        t0 = time.time()
        load = await asyncio.gather(*(one_session(
            browser, url, sessions[i * args.questions:(i + 1) * args.questions])
            for i in range(args.sessions)))
        load_seconds = time.time() - t0
        await browser.close()
    return {"warm_up_s": round(warm_up, 1), "first": first, "load": load,
            "load_seconds": round(load_seconds, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=3)
    parser.add_argument("--questions", type=int, default=2)
    parser.add_argument("--decoding", default="standard")
    parser.add_argument("--out", default="bench/results/browser-streaming.json")
    parser.add_argument("--upstream", help="an OpenAI-compatible server to use instead of "
                        "starting the embedded model (its base URL, ending in /v1)")
    parser.add_argument("--model", help="with --upstream: the model name to ask for")
    args = parser.parse_args(argv)
    if args.upstream:
        upstream, model, n_ctx = args.upstream, args.model or "", 8192
    else:
        server = LocalServer("1.5b", decoding=args.decoding)
        upstream, model, n_ctx = server.start(), server.spec.model_name, server.n_ctx
    proxy = TimingProxy(upstream)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    home = Path(tempfile.mkdtemp(prefix="studio-bench-"))
    env = dict(os.environ, STUDIO_HOME=str(home), STUDIO_PROVIDER="openai",
               OPENAI_BASE_URL=proxy.base_url, OPENAI_API_KEY="none",
               STUDIO_MODEL=model, STUDIO_LLM_CACHE="false", STUDIO_REMOTE_CONTEXT=str(n_ctx))
    load_before = os.getloadavg()
    app, url = start_app(env)
    try:
        measured = asyncio.run(measure(url, proxy, args))
    finally:
        stop_app(app)
        proxy.shutdown()

    def summary(values: list[float]) -> dict:
        values = [v for v in values if v is not None]
        return {"median_s": round(statistics.median(values), 3), "max_s": round(max(values), 3),
                "n": len(values)} if values else {}

    runs = [run for session in measured["load"] for run in session["runs"]]
    report = {
        "first_token_to_first_characters_on_screen": summary(
            [r["first_token_to_first_characters_s"] for r in measured["first"]]),
        "click_run_to_first_characters_on_screen": summary(
            [r["click_to_first_characters_s"] for r in measured["first"]]),
        "click_run_to_first_token_from_model": summary(
            [r["click_to_first_token_s"] for r in measured["first"]]),
        "load_test": {"sessions": args.sessions, "questions_each": args.questions,
                      "runs": len(runs),
                      "runs_done": sum(r["status"].startswith("done") for r in runs),
                      "runs_timed_out": sum("timed out" in r["status"] or "did not finish" in
                                            r["status"] for r in runs),
                      "sessions_that_saw_their_queue_position": sum(
                          bool(s["queue_positions_seen"]) for s in measured["load"]),
                      "wall_seconds": measured["load_seconds"], "detail": measured["load"]},
        "raw_first_characters": measured["first"], "warm_up_baseline_run_s": measured["warm_up_s"],
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
                   f"{platform.python_version()}",
        "load_average_before_after": [load_before, os.getloadavg()],
        "settings": (f"model at {args.upstream}" if args.upstream else
                     f"embedded Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 2 threads, n_ctx 8192, "
                     f"decoding {args.decoding}") + "; MAC-SQL on the sample shop database; "
                    "Debian chromium, headless",
    }
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
