"""The draft answer in a real browser: candidate selection (the Ask page's default) puts the
quick writer's SQL and table on screen while the other candidates are still being written,
then says what the vote made of it."""

from __future__ import annotations

import pytest

from conftest import idle, screenshot

pytestmark = pytest.mark.browser

TOP5 = "SELECT name, price FROM products ORDER BY price DESC LIMIT 5"
SLOW = 4.0  # seconds each of the other candidates takes


def test_the_draft_table_is_on_screen_before_the_run_ends(page, app_url, browser_llm):
    block = f"```sql\n{TOP5}\n```"
    browser_llm.clear()
    browser_llm.when(lambda req: "Write one SQLite query" in str(req["messages"][0]["content"])
                     and (req.get("temperature") or 0) > 0, {"content": block, "delay": SLOW})
    browser_llm.when("Write one SQLite query", {"content": block, "delay": 0.2})
    browser_llm.when("help me write an SQL", {"content": f"Most expensive.\n{block}",
                                              "delay": SLOW})
    browser_llm.when("Decompose the question", {
        "content": f"Sub question 1: Which?\nSQL\n{block}\nQuestion Solved.", "delay": SLOW})
    page.goto(app_url)
    run_button = page.get_by_role("button", name="Run", exact=True)
    run_button.wait_for()
    idle(page)
    assert page.get_by_text(
        "Parameters of Thorough — several writers, results compared").count() == 1  # the default
    box = page.get_by_role("textbox", name="Question", exact=True)
    box.fill("Which five products cost the most?")
    box.press("Tab")
    idle(page)
    run_button.click()
    page.get_by_text("being checked by the other candidates").wait_for(timeout=30_000)
    # its table is there: the five rows, once in the draft and once in the writer's step
    page.get_by_text("Noise-Cancelling Headphones").nth(1).wait_for(state="attached")
    draft_top = page.get_by_text("Draft answer", exact=True).first.bounding_box()["y"]
    assert draft_top < page.get_by_text("Agent steps").first.bounding_box()["y"]
    assert page.get_by_role("button", name="Stop the run").is_visible()  # the run goes on
    screenshot(page, "ask-draft-answer")
    page.get_by_text("Draft answer confirmed").first.wait_for(timeout=60_000)
    idle(page)
    screenshot(page, "ask-draft-confirmed")
