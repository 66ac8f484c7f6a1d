"""Browser latency of the app with the embedded model warm.

Starts ``streamlit run app.py`` on 127.0.0.1 with the embedded model, warms it with one baseline
run, then measures in headless Chromium (Debian's package):

- page load: navigation start until the Ask page is idle with its Run button shown;
- click to first step: from clicking Run until the first agent's status block is visible
  (the run is then stopped, so each repetition costs only its first model call).

Prints one JSON object. A measurement, not a test: nothing is asserted.

    .venv/bin/python bench/browser_latency.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from support.app_server import start_app, stop_app  # noqa: E402

QUESTION = "How many customers are there in each country?"


def _idle(page, timeout: float = 600_000) -> None:
    page.wait_for_selector("[data-testid=stApp][data-test-script-state=notRunning]",
                           timeout=timeout)


def _load(page, url: str) -> float:
    t0 = time.perf_counter()
    page.goto(url)
    page.get_by_role("button", name="Run", exact=True).wait_for(timeout=120_000)
    _idle(page)
    return time.perf_counter() - t0


def _ask(page, pipeline: str) -> None:
    page.locator("[data-testid=stSelectbox]").filter(has_text="Pipeline").click()
    page.get_by_role("option", name=re.compile(pipeline, re.I)).first.click()
    _idle(page)
    box = page.get_by_role("textbox", name="Question", exact=True)
    box.fill(QUESTION)
    box.press("Tab")
    _idle(page)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    home = Path(tempfile.mkdtemp(prefix="studio-bench-"))
    env = dict(os.environ, STUDIO_HOME=str(home), STUDIO_PROVIDER="local",
               STUDIO_LLM_CACHE="false")
    env.pop("OPENAI_API_KEY", None)
    env.pop("OPENAI_BASE_URL", None)
    proc, url = start_app(env)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=[
                "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            first_load = _load(page, url)
            # Warm-up: one complete baseline run starts the embedded model (once per server).
            _ask(page, "Baseline")
            t0 = time.perf_counter()
            page.get_by_role("button", name="Run", exact=True).click()
            page.get_by_text("Final SQL").first.wait_for(timeout=900_000)
            _idle(page)
            warmup = time.perf_counter() - t0
            loads, first_steps = [], []
            for _ in range(args.repeat):
                loads.append(_load(page, url))
                _ask(page, "MAC-SQL")
                t0 = time.perf_counter()
                page.get_by_role("button", name="Run", exact=True).click()
                page.get_by_text(re.compile(r"1\. Selector|1\. Decomposer")).first.wait_for(
                    timeout=120_000)
                first_steps.append(time.perf_counter() - t0)
                page.get_by_role("button", name="Stop the run").click()
                _idle(page)
            browser.close()
    finally:
        stop_app(proc)

    def summary(values: list[float]) -> dict:
        return {"median_s": round(statistics.median(values), 3),
                "max_s": round(max(values), 3), "n": len(values)}

    print(json.dumps({
        "first_page_load_s (cold server)": round(first_load, 2),
        "warm_up_baseline_run_s (includes starting the embedded model)": round(warmup, 2),
        "page_load": summary(loads),
        "click_run_to_first_step_visible": summary(first_steps),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
                   f"{platform.python_version()}",
        "browser": "Debian chromium, headless",
        "settings": "embedded Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 2 threads, n_ctx 8192; "
                    "pipeline macsql on the sample shop database",
    }, indent=2))


if __name__ == "__main__":
    main()
