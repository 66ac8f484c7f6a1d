"""The app served on 127.0.0.1 for the browser benchmarks: start, wait until healthy, stop."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_app(env: dict) -> tuple[subprocess.Popen, str]:
    """``streamlit run app.py`` headless on a free port with ``env``; its URL once healthy."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless",
         "true", "--server.address", "127.0.0.1", "--server.port", str(port),
         "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    for _ in range(200):
        try:
            urllib.request.urlopen(url + "_stcore/health", timeout=2)
            break
        except OSError:
            time.sleep(0.3)
    return proc, url


def stop_app(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:  # a model call still in flight keeps it busy
        proc.kill()
