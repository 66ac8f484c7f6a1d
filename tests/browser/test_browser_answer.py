"""The answer first, in a real browser: when a run ends the page brings its answer into view,
above the agent steps, with what the answer's review found (here: the question asks for the
top 3 and the result has 5 rows)."""

from __future__ import annotations

import pytest

from conftest import ARTIFACTS, idle, screenshot

pytestmark = pytest.mark.browser

TOP5 = "SELECT name, price FROM products ORDER BY price DESC LIMIT 5"


def test_the_answer_is_in_view_when_the_run_ends(page, app_url, browser_llm):
    block = f"```sql\n{TOP5}\n```"
    browser_llm.clear()
    browser_llm.when("Write one SQLite query", {"content": block, "delay": 0.2})
    browser_llm.when("help me write an SQL", {"content": f"Most expensive.\n{block}"})
    browser_llm.when("Decompose the question", {
        "content": f"Sub question 1: Which?\nSQL\n{block}\nQuestion Solved."})
    browser_llm.when("summar", {"content": "The three most expensive products are shown."})
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(app_url)
    run_button = page.get_by_role("button", name="Run", exact=True)
    run_button.wait_for()
    idle(page)
    box = page.get_by_role("textbox", name="Question", exact=True)
    box.fill("List the 3 most expensive products")
    box.press("Tab")
    idle(page)
    run_button.click()
    page.get_by_text("This result may not answer the question").wait_for(timeout=90_000)
    idle(page)
    page.wait_for_timeout(1_500)  # the smooth scroll
    answer = page.locator("#answer")
    answer.wait_for()
    top = answer.bounding_box()["y"]
    assert 0 <= top < 800, f"the answer's heading is at y={top}, out of view"
    assert top < page.get_by_text("Agent steps").first.bounding_box()["y"]
    assert page.get_by_text("the question asks for the top 3; the result has 5 rows").count()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "ask-answer-in-view.png"))  # what the user sees
    screenshot(page, "ask-answer-first")
