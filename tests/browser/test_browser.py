"""The app in a real browser: upload, ask, watch the agents, edit, accept, annotate, export.

Headless Debian Chromium drives ``streamlit run app.py``; the model is the scripted
OpenAI-compatible server (each answer delayed, so agent steps are visibly in progress before the
run ends). Screenshots of every page are saved under ``test-artifacts/screenshots/``.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil

import pytest

from conftest import idle, screenshot, shown

pytestmark = pytest.mark.browser
MACSQL = "MAC-SQL — breaks the question down, repairs the SQL"  # its label in the pickers

STEP_DELAY = 1.5  # seconds per scripted model answer

SELECTOR_ANSWER = '```json\n{"orders": "keep_all", "customers": "keep_all"}\n```'
DECOMPOSER_ANSWER = """Subquestion 1: Which orders were cancelled?
SQL
```sql
SELECT order_id FROM orders WHERE status = 'cancelled'
```
Subquestion 2: How many orders were cancelled?
SQL
```sql
SELECT COUNT(*) AS cancelled_orders FROM orders WHERE status = 'cancelled'
```
Question Solved."""


def _commit(page, box) -> None:
    """Leave a text box so Streamlit commits its value, and wait for that rerun to end: it may
    start a moment after the key press, later still on a loaded machine, and a button pressed
    while it runs can be lost."""
    box.press("Tab")
    page.wait_for_timeout(500)
    idle(page)


def _choose_pipeline(page, title: str) -> None:
    """Pick a pipeline other than the Ask page's default (candidate selection)."""
    page.locator("[data-testid=stSelectbox]").filter(has_text="Pipeline").first.click()
    page.get_by_role("option", name=title, exact=True).click()
    idle(page)


def _nav(page, url: str, path: str) -> None:
    page.goto(f"{url}/{path}")
    page.wait_for_selector("[data-testid=stApp]")
    page.locator("[data-testid=stSidebarNav]").wait_for()
    page.wait_for_timeout(500)
    idle(page)


@pytest.fixture
def scripted(browser_llm):
    browser_llm.clear()
    browser_llm.when("database administrator",
                     {"content": SELECTOR_ANSWER, "delay": STEP_DELAY})
    browser_llm.when("decompose the question",
                     {"content": DECOMPOSER_ANSWER, "delay": STEP_DELAY})
    return browser_llm


def test_ask_watch_edit_accept_annotate_export(page, app_url, scripted, sample_dbs, tmp_path):
    upload = tmp_path / "my_shop.sqlite"
    shutil.copy(sample_dbs / "shop.sqlite", upload)
    before = upload.read_bytes()

    # -- Ask: upload a database -----------------------------------------------------------------
    _nav(page, app_url, "")
    page.get_by_role("button", name="Run", exact=True).wait_for()
    idle(page)
    page.locator("[data-testid=stFileUploader] input[type=file]").first.set_input_files(str(upload))
    # the summary of the upload (the collapsed "Saved databases" list names it too, hidden)
    page.locator("strong:visible", has_text="my_shop").first.wait_for()
    idle(page)
    # Table names and row counts are shown at once (inside a data grid: its cells are
    # accessible elements, drawn on a canvas, so they are attached rather than visible).
    page.get_by_text("order_items").first.wait_for(state="attached")
    screenshot(page, "01-ask-uploaded")

    # -- ask a question, watch the agents work ------------------------------------------------------
    question = page.get_by_role("textbox", name="Question", exact=True)
    question.fill("How many orders were cancelled?")
    question.press("Tab")
    idle(page)
    _choose_pipeline(page, MACSQL)
    page.get_by_role("button", name="Run", exact=True).click()
    # While the run is going, the first agent's status block is already on the page.
    # While the run is going, the first agent's status block is on the page, marked running,
    # and the second agent has not answered yet.
    # (the Selector is skipped on a schema the Decomposer can read whole, and value grounding
    # takes no model call, so the Decomposer is the first agent at work)
    page.get_by_text(re.compile(r"3\. Decomposer.*running")).first.wait_for(timeout=30_000)
    assert page.get_by_text(re.compile(r"4\. Refiner")).count() == 0
    screenshot(page, "02-ask-running")
    page.get_by_text(re.compile(r"4\. Refiner")).first.wait_for(timeout=30_000)
    page.get_by_text("Final SQL").first.wait_for(timeout=90_000)
    idle(page)
    for heading in ("1. Selector", "2. Value grounding", "3. Decomposer", "4. Refiner"):
        assert page.get_by_text(heading).count() >= 1
    page.get_by_text("cancelled_orders").first.wait_for(state="attached")
    screenshot(page, "03-ask-answered")
    # The step graph under the run: the pipeline's declared steps, the ones taken filled in.
    page.get_by_text("Step graph of this run").first.click()
    page.locator("[data-testid=stGraphVizChart] svg").first.wait_for(timeout=15_000)
    assert page.locator("[data-testid=stGraphVizChart] svg text", has_text="Refiner").count() >= 1
    screenshot(page, "03b-ask-step-graph")
    page.get_by_text("Step graph of this run").first.click()
    idle(page)

    # -- edit the SQL and run it again --------------------------------------------------------------
    editor = page.get_by_role("textbox", name="Final SQL (you can edit it)")
    editor.fill("SELECT status, COUNT(*) AS n FROM orders GROUP BY status ORDER BY n DESC")
    _commit(page, editor)
    page.get_by_role("button", name="Run edited SQL").click()
    idle(page)
    page.locator("[role=gridcell]", has_text="delivered").first.wait_for(state="attached")
    # A write statement is refused with a clear reason and the file is untouched.
    editor.fill("DELETE FROM orders")
    _commit(page, editor)
    page.get_by_role("button", name="Run edited SQL").click()
    idle(page)
    page.get_by_text("not allowed").first.wait_for()
    editor.fill("SELECT status, COUNT(*) AS n FROM orders GROUP BY status ORDER BY n DESC")
    _commit(page, editor)
    page.get_by_role("button", name="Run edited SQL").click()
    idle(page)
    page.locator("[role=gridcell]", has_text="delivered").first.wait_for(state="attached")
    page.get_by_role("button", name="Accept").first.click()
    idle(page)
    page.get_by_text("Accepted").first.wait_for()
    screenshot(page, "04-ask-edited-accepted")
    assert upload.read_bytes() == before

    # -- History: open the run, annotate, export ------------------------------------------------------
    _nav(page, app_url, "history")
    page.locator("[role=gridcell]", has_text="How many orders were cancelled?").first.wait_for(
        state="attached")
    screenshot(page, "05-history")
    opener = page.locator("[data-testid=stSelectbox]").filter(has_text="Open a run").first
    opener.click()
    page.get_by_role("option").filter(has_text="How many orders were cancelled?").first.click()
    idle(page)
    page.get_by_text(re.compile(r"3\. Decomposer")).first.wait_for()
    page.locator("[data-testid=stRadio]").get_by_text("incorrect", exact=True).first.click()
    page.get_by_role("textbox", name="Notes", exact=True).fill("counted all cancelled orders; the user meant 2024 only")
    page.get_by_role("button", name="Save annotation").click()
    idle(page)
    page.get_by_text("saved").first.wait_for()
    screenshot(page, "06-history-annotated")

    with page.expect_download() as csv_download:
        page.get_by_role("button", name="Export CSV").click()
    rows = list(csv.DictReader(io.StringIO(open(csv_download.value.path()).read())))
    mine = [r for r in rows if r["question"] == "How many orders were cancelled?"]
    assert mine and mine[0]["verdict"] == "incorrect"
    with page.expect_download() as jsonl_download:
        page.get_by_role("button", name="Export JSONL").click()
    lines = [json.loads(line) for line in open(jsonl_download.value.path()) if line.strip()]
    assert any(entry["run"]["question"] == "How many orders were cancelled?" for entry in lines)


@pytest.mark.parametrize("path,expect", [
    ("schema", "Foreign keys"),
    ("compare", "Compare"),
    ("benchmark", "Benchmark"),
    ("settings", "Test connection"),
])
def test_every_page_renders(page, app_url, path, expect):
    _nav(page, app_url, path)
    page.get_by_text(expect).first.wait_for()
    assert page.locator("[data-testid=stException]").count() == 0
    page.wait_for_timeout(2500)  # let tables and charts draw before the screenshot
    screenshot(page, f"page-{path}")


REVIEW_QUESTION = "Which three products cost the most?"


def _open_run(page, question: str) -> None:
    opener = page.locator("[data-testid=stSelectbox]").filter(has_text="Open a run").first
    opener.click()
    page.get_by_role("option").filter(has_text=question).first.click()
    idle(page)


def _export_csv(page) -> list[dict]:
    with page.expect_download() as download:
        page.get_by_role("button", name="Export CSV").click()
    rows = list(csv.DictReader(io.StringIO(open(download.value.path()).read())))
    return [r for r in rows if r["question"] == REVIEW_QUESTION]


def test_accepted_correction_and_blamed_step_survive_a_reload(page, app_url, browser_llm):
    browser_llm.clear()
    browser_llm.when("You are a SQLite expert",
                     "```sql\nSELECT nme, price FROM products ORDER BY price DESC LIMIT 3\n```")
    _nav(page, app_url, "")
    page.get_by_role("button", name="Run", exact=True).wait_for()
    question = page.get_by_role("textbox", name="Question", exact=True)
    question.fill(REVIEW_QUESTION)
    question.press("Tab")
    idle(page)
    page.locator("[data-testid=stSelectbox]").filter(has_text="Pipeline").first.click()
    page.get_by_role("option", name="Quick — one prompt", exact=True).click()
    idle(page)
    page.get_by_role("button", name="Run", exact=True).click()
    page.get_by_text("done, SQL fails").first.wait_for(timeout=60_000)
    idle(page)

    # -- correct the SQL and accept it ------------------------------------------------------------
    editor = page.get_by_role("textbox", name="Final SQL (you can edit it)")
    editor.fill("SELECT name, price FROM products ORDER BY price DESC LIMIT 3")
    _commit(page, editor)
    page.get_by_role("button", name="Run edited SQL").click()
    idle(page)
    page.get_by_role("button", name="Accept").first.click()
    idle(page)
    page.get_by_text("Accepted:").first.wait_for()
    screenshot(page, "review-01-accepted")

    # -- History after a reload: marked accepted, exported with the accepted SQL ---------------
    _nav(page, app_url, "history")
    page.reload()
    page.wait_for_selector("[data-testid=stApp]")
    idle(page)
    page.locator("[role=gridcell]", has_text=REVIEW_QUESTION).first.wait_for(state="attached")
    [row] = _export_csv(page)
    assert row["outcome"] == "done, SQL fails" and "nme" in row["final_sql"]
    assert row["accepted"] == "yes" and "name, price" in row["accepted_sql"]
    _open_run(page, REVIEW_QUESTION)
    page.get_by_text("the user's corrected SQL").first.wait_for()
    screenshot(page, "review-02-history-accepted")

    # -- annotate with a faulty step, reopen, save again: the step is kept -------------------------
    page.locator("[data-testid=stRadio]").get_by_text("incorrect", exact=True).first.click()
    page.locator("[data-testid=stSelectbox]").filter(has_text="Step at fault").first.click()
    page.get_by_role("option").filter(has_text="step 1 · SQL Writer").first.click()
    page.get_by_role("button", name="Save annotation").click()
    idle(page)
    page.get_by_text("Annotation saved").first.wait_for()
    page.reload()
    page.wait_for_selector("[data-testid=stApp]")
    idle(page)
    _open_run(page, REVIEW_QUESTION)
    step_box = page.locator("[data-testid=stSelectbox]").filter(has_text="Step at fault").first
    step_box.wait_for()
    shown = step_box.evaluate(  # the picked option is drawn as text or as the input's value
        "e => e.textContent + ' ' + [...e.querySelectorAll('input')]"
        ".map(i => i.value + ' ' + (i.getAttribute('aria-label') || '')).join(' ')")
    assert "step 1 · SQL Writer" in shown, shown  # the saved step, not "(none)"
    page.get_by_role("textbox", name="Notes", exact=True).fill("misspelt the name column")
    page.get_by_role("button", name="Save annotation").click()
    idle(page)
    page.get_by_text("Annotation saved").first.wait_for()
    screenshot(page, "review-03-annotated-twice")
    [row] = _export_csv(page)
    assert row["verdict"] == "incorrect" and row["faulty_step_index"] == "0"
    assert row["notes"] == "misspelt the name column"


def test_a_step_text_grows_while_it_runs_and_a_new_run_replaces_the_old(page, app_url,
                                                                         browser_llm):
    """The Decomposer's answer is streamed slowly: its text is on the page and growing while the
    step is still running; Run is disabled meanwhile and enabled after; a second run clears the
    first one's answer from the page while it works, and leaves no faded copy of the question
    box's controls."""
    pieces = [DECOMPOSER_ANSWER[i:i + 3] for i in range(0, len(DECOMPOSER_ANSWER), 3)]
    browser_llm.clear()
    browser_llm.when("decompose the question",
                     {"content": DECOMPOSER_ANSWER, "chunks": pieces, "chunk_delay": 0.3})
    _nav(page, app_url, "")
    run_button = page.get_by_role("button", name="Run", exact=True)
    run_button.wait_for()
    _choose_pipeline(page, MACSQL)

    def ask(question: str) -> None:
        box = page.get_by_role("textbox", name="Question", exact=True)
        box.fill(question)
        box.press("Tab")
        idle(page)
        run_button.click()

    ask("How many orders were cancelled?")
    running = page.get_by_text(re.compile(r"3\. Decomposer.*running"))
    live_text = page.locator("[data-testid=stExpander] [data-testid=stCode]").first
    live_text.wait_for(timeout=30_000)
    first = live_text.inner_text()
    page.wait_for_timeout(1500)
    second = live_text.inner_text()
    assert running.count() >= 1  # the step has not completed yet...
    assert len(second) > len(first) > 0  # ...and its text has grown meanwhile
    assert DECOMPOSER_ANSWER.replace("\n", "").startswith(second.replace("\n", ""))
    assert run_button.is_disabled()
    screenshot(page, "07-ask-streaming")
    page.get_by_text("Final SQL").first.wait_for(timeout=90_000)
    idle(page)
    assert run_button.is_enabled()

    assert page.get_by_text("Follow up on the previous question").count() == 1
    ask("How many orders were cancelled, again?")
    running.first.wait_for(timeout=30_000)
    assert page.get_by_text("Final SQL").count() == 0  # the previous answer is gone, not faded
    # the follow-up box is not drawn while a run goes on; the controls under it keep their
    # places, so no faded copy of them is left below (there was a second parameters panel)
    assert page.get_by_text(f"Parameters of {MACSQL}").count() == 1
    assert run_button.is_disabled()
    page.get_by_text("Final SQL").first.wait_for(timeout=90_000)
    idle(page)
    assert run_button.is_enabled()


# -- every page at a narrow and a wide window -------------------------------------------------------

BROKEN_DECOMPOSITION = """Subquestion 1: How many orders were cancelled?
SQL
```sql
SELECT COUNT(*) AS cancelled_orders FROM orders WHERE order_status = 'cancelled'
```"""
REFINED = "```sql\nSELECT COUNT(*) AS cancelled_orders FROM orders WHERE status = 'cancelled'\n```"
WRITTEN = "```sql\nSELECT COUNT(*) AS cancelled_orders FROM orders WHERE status = 'cancelled'\n```"
PAGES = ["schema", "history", "knowledge", "benchmark", "settings"]


def _no_cut_labels(page) -> None:
    """No button label is cut short with an ellipsis (as "Export JS…" was)."""
    cut = page.evaluate("""() => Array.from(document.querySelectorAll('button p'))
        .filter(p => p.offsetWidth > 0 && p.scrollWidth > p.offsetWidth + 1)
        .map(p => p.textContent)""")
    assert cut == [], cut


@pytest.mark.parametrize("width", [1024, 1600])
def test_every_page_is_readable_at_narrow_and_wide_windows(page, app_url, browser_llm, width):
    """Every page after real work (a MAC-SQL run whose Refiner repairs the SQL, a comparison):
    no error, no label cut short, a screenshot to look at for each page at each width."""
    browser_llm.clear()
    browser_llm.when("Decompose the question", {"content": BROKEN_DECOMPOSITION, "delay": 0.2})
    browser_llm.when("some errors occurred", {"content": REFINED, "delay": 0.2})
    browser_llm.when("Write one SQLite query", {"content": WRITTEN, "delay": 0.2})
    page.set_viewport_size({"width": width, "height": 1000})
    _nav(page, app_url, "")
    box = page.get_by_role("textbox", name="Question", exact=True)
    box.fill("How many orders were cancelled?")
    box.press("Tab")
    idle(page)
    _choose_pipeline(page, MACSQL)
    page.get_by_role("button", name="Run", exact=True).click()
    page.get_by_text("Final SQL").first.wait_for(timeout=90_000)
    idle(page)
    shown(page, "SQL before")
    shown(page, re.compile(r"2\. Value grounding"))
    shown(page, re.compile("Follow up on"))  # there without a click
    assert page.locator("[data-testid=stException]").count() == 0
    _no_cut_labels(page)
    screenshot(page, f"w{width}-ask", width)

    _nav(page, app_url, "compare")
    page.get_by_role("textbox", name="Question", exact=True).fill("How many orders were "
                                                                   "cancelled?")
    page.get_by_role("textbox", name="Question", exact=True).press("Tab")
    idle(page)
    page.get_by_role("button", name="Compare", exact=True).click()
    page.get_by_text("Accept an answer").first.wait_for(timeout=90_000)
    idle(page)
    assert page.locator("[data-testid=stException]").count() == 0
    _no_cut_labels(page)
    screenshot(page, f"w{width}-compare", width)

    for path in PAGES:
        _nav(page, app_url, path)
        page.wait_for_timeout(1500)  # let tables and charts draw
        assert page.locator("[data-testid=stException]").count() == 0, path
        _no_cut_labels(page)
        screenshot(page, f"w{width}-{path}", width)
