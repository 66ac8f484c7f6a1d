"""The Ask page as the app tests drive it: ``ask`` a question of a pipeline, and the scripted
MAC-SQL replies (Selector and Decomposer, told apart by their prompts' markers) that answer
with the five most expensive products (``TOP5``)."""

from __future__ import annotations

import json

TOP5 = "SELECT name, price FROM products ORDER BY price DESC LIMIT 5"
SELECTOR = "As an experienced and professional database administrator"
DECOMPOSER = "decompose the question into subquestions"
SELECTOR_REPLY = json.dumps({"products": ["name", "price"], "customers": "drop_all",
                             "orders": "drop_all", "order_items": "drop_all",
                             "payments": "drop_all", "reviews": "drop_all",
                             "categories": "drop_all"})
DECOMPOSER_REPLY = ("Sub question 1: Which products are the most expensive?\nSQL\n```sql\n"
                    f"{TOP5}\n```\nQuestion Solved.")


def ask(at, question: str, pipeline: str = "baseline", **params):
    at.text_area(key="ask_question").input(question)
    at.selectbox(key="ask_pipeline").select(pipeline)
    at.run()
    for name, value in params.items():
        at.get_by_key(f"ask_param_{pipeline}_{name}").set_value(value)
    at.button(key="ask_run_button").click().run()
    assert not at.exception, at.exception
    return at
