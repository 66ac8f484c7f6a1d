"""The result summary on the Ask page, and Compare given knowledge notes and follow-ups the way
Ask gives them."""

from __future__ import annotations

from agents.store import Store, default_path
from scripted_llm import prompt_text

from app_helpers import errors

TOP5 = "SELECT name, price FROM products ORDER BY price DESC LIMIT 5"
CHEAP = "SELECT name, price FROM products WHERE price < 20 ORDER BY price DESC LIMIT 5"
WORDS = "The five most expensive products are listed with their prices."
NOTE = "a product whose price is above 100"


def test_ask_summarizes_the_result_in_words_when_asked(app, app_env):
    app_env.push(f"```sql\n{TOP5}\n```", WORDS)
    app.run()
    box = app.checkbox(key="ask_summary")
    assert box.label == "Summarize the result in words" and box.value is False
    box.check().run()
    app.text_area(key="ask_question").input("Five most expensive products?")
    app.selectbox(key="ask_pipeline").select("baseline")
    app.run()
    app.button(key="ask_run_button").click().run()
    assert not app.exception and errors(app) == []
    run = app.session_state["ask_run"]
    assert run.status == "done" and run.events[-1].kind == "result_summary"
    assert any(s.label.startswith("2. Result Summarizer") for s in app.status)
    assert any(WORDS in m.value for m in app.markdown)
    with Store(default_path()) as store:
        assert store.get_run(run.run_id).events[-1].output.summary == WORDS


def _compare(app, question: str) -> None:
    app.text_area(key="cmp_question").input(question)
    app.multiselect(key="cmp_pipelines").set_value(["baseline", "macsql"])
    app.button(key="cmp_go").click().run()
    assert not app.exception and errors(app) == []


def test_compare_gives_knowledge_and_follows_up(app, app_env):
    with Store(default_path()) as store:
        store.add_note("shop", NOTE, "premium product")
    app_env.when("You are a SQLite expert.", f"```sql\n{TOP5}\n```").when(
        "As an experienced and professional database administrator",
        '{"products": "keep_all"}').when(
        "decompose the question into subquestions",
        f"Sub question 1: Most expensive?\nSQL\n```sql\n{TOP5}\n```")
    app.switch_page("pages/compare.py").run()
    assert "1 note" in app.checkbox(key="cmp_use_knowledge").label
    _compare(app, "Which premium products are there?")
    assert all("Knowledge about this database:\n- premium product: " + NOTE in prompt_text(r)
               for r in app_env.requests)
    result = app.session_state["cmp_result"]
    assert all(o.run.context["notes"][0]["title"] == "premium product" for o in result.outcomes)
    assert any(e.label == "Given to the agents besides the question" for e in app.expander)
    assert all(c.wrap_lines for c in app.code if "LIMIT 5" in c.value)

    follow = app.checkbox(key="cmp_follow_up")
    assert follow.value is False
    follow.check().run()
    app.checkbox(key="cmp_use_knowledge").uncheck().run()
    app_env.clear()
    app_env.when("You are a SQLite expert.", f"```sql\n{CHEAP}\n```").when(
        "As an experienced and professional database administrator",
        '{"products": "keep_all"}').when(
        "decompose the question into subquestions",
        f"Sub question 1: Cheap ones?\nSQL\n```sql\n{CHEAP}\n```")
    first = result.outcomes[0].run
    _compare(app, "And only those under 20?")
    prompts = [prompt_text(r) for r in app_env.requests]
    assert all("Previous question: Which premium products are there?" in p for p in prompts)
    assert all("Knowledge about this database" not in p for p in prompts)
    second = app.session_state["cmp_result"]
    assert all(o.run.context["follow_up"]["run_id"] == first.run_id for o in second.outcomes)
