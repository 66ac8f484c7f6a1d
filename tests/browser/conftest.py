"""Real-browser fixtures: the app under ``streamlit run`` on 127.0.0.1, driven by Chromium.

The app talks to a scripted OpenAI-compatible server on loopback (the same real client code as
with any endpoint). Chromium comes from Debian's package (Playwright cannot download its own
browser here); without it every browser test is skipped with a message saying so.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from scripted_llm import ScriptedLLM

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "screenshots"
CHROMIUM = os.environ.get("STUDIO_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def chromium_path() -> str:
    if not Path(CHROMIUM).exists():
        pytest.skip("browser tests skipped: Chromium is not installed "
                    "(apt-get install chromium chromium-driver)")
    return CHROMIUM


@pytest.fixture(scope="session")
def browser_llm():
    server = ScriptedLLM()
    yield server
    server.close()


def _answer_in_words_off(home: Path) -> None:
    """The app starts Ask with the result summary on; the scripted server answers a pipeline's
    calls only, so the studio starts as one whose user saved it off."""
    from agents.store import Store

    with Store(home / "studio.db") as store:
        store.save_preferences({"ask_summary": False})


def start_app(home: Path, llm: ScriptedLLM, **extra_env: str):
    """``streamlit run app.py`` on a free loopback port with the studio in ``home``, talking to
    ``llm``; yields its URL and stops it afterwards."""
    port = _free_port()
    env = dict(os.environ)
    env.update({
        "STUDIO_HOME": str(home),
        "STUDIO_CACHE": str(home / "cache"),
        "STUDIO_PROVIDER": "openai",
        "OPENAI_BASE_URL": llm.base_url,
        "OPENAI_API_KEY": "test-key",
        "STUDIO_MODEL": "scripted-model",
        "STUDIO_LLM_CACHE": "false",
        "STUDIO_MAX_RETRIES": "0",
        "STUDIO_WARMUP": "0",
        **extra_env,
    })
    _answer_in_words_off(home)
    log = open(home / "streamlit.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"),
         "--server.headless", "true", "--server.address", "127.0.0.1",
         "--server.port", str(port), "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            time.sleep(0.3)
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited: {(home / 'streamlit.log').read_text()}")
    else:
        proc.terminate()
        raise RuntimeError("streamlit did not become healthy within 60 s")
    yield url
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


@pytest.fixture(scope="session")
def app_url(chromium_path, browser_llm, tmp_path_factory):
    yield from start_app(tmp_path_factory.mktemp("browser_home"), browser_llm)


@pytest.fixture(scope="session")
def browser(chromium_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium_path, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        yield b
        b.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.rep_call = report


@pytest.fixture
def page(browser, request):
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    yield pg
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:  # what the page showed when the test failed
        try:
            screenshot(pg, f"FAILED-{request.node.name}")
        except Exception:
            pass
    context.close()


def idle(page, timeout: float = 60_000) -> None:
    """Wait until the Streamlit script run has finished."""
    page.wait_for_selector("[data-testid=stApp][data-test-script-state=notRunning]",
                           timeout=timeout)


def shown(page, text, timeout: float = 60_000) -> None:
    """Wait until ``text`` (a string or a pattern) is visible; when it is not, fail with what the
    page shows instead (its main text, and a screenshot beside the others), so a failure seen
    only on a loaded machine can be read from the test's output."""
    try:
        page.get_by_text(text).first.wait_for(timeout=timeout)
    except Exception:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "not-shown.png"), full_page=True)
        main = page.locator("[data-testid=stMain]")
        seen = main.inner_text(timeout=5_000) if main.count() else page.content()
        state = page.locator("[data-testid=stApp]").get_attribute("data-test-script-state")
        raise AssertionError(f"{text!r} is not shown (script {state}); the page shows:\n"
                             f"{seen[-4000:]}") from None


def screenshot(page, name: str, width: int = 1400) -> Path:
    """Save a screenshot of the whole app (grown to its content height, ``width`` pixels wide)
    as a test artifact."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    height = page.evaluate(
        "() => Array.from(document.querySelectorAll('[data-testid=stMain], "
        "[data-testid=stMainBlockContainer], [data-testid=stAppViewContainer], "
        "[data-testid=stSidebarContent]')).reduce((m, e) => Math.max(m, e.scrollHeight || 0), 1000)")
    page.set_viewport_size({"width": width, "height": min(int(height) + 80, 8000)})
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size({"width": width, "height": 1000})
    return path
