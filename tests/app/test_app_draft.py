"""The Ask page's draft answer: candidate selection (the default pipeline) shows the quick
writer's answer as a draft and says what the vote made of it; the page and the stored run
agree on the final answer. (That the draft is on screen before the run ends is the browser
test's to show: AppTest sees a page once its script run is over.)"""

from __future__ import annotations

from agents.store import Store, default_path
from prompt_markers import MAC_DECOMPOSE, R3_WRITER, WRITER

from app_helpers import errors

TOP5 = "SELECT name, price FROM products ORDER BY price DESC LIMIT 5"
CHEAPEST = "SELECT name, price FROM products ORDER BY price ASC LIMIT 5"


def script(server, *, writer: str, others: str) -> None:
    block = lambda sql: f"```sql\n{sql}\n```"  # noqa: E731
    first = lambda marker: (lambda req: marker in str(req["messages"][0].get("content")))  # noqa: E731
    server.when(lambda req: WRITER in str(req["messages"][0].get("content"))
                and (req.get("temperature") or 0) > 0, block(others))
    server.when(first(WRITER), block(writer))
    server.when(first(R3_WRITER), f"The most expensive ones.\n{block(others)}")
    server.when(first(MAC_DECOMPOSE), f"Sub question 1: Which?\nSQL\n{block(others)}\n"
                                      "Question Solved.")


def ask(at, question: str) -> None:
    at.text_area(key="ask_question").input(question)
    at.run()
    at.button(key="ask_run_button").click().run()
    assert not at.exception, at.exception


def test_selection_is_the_default_and_a_confirmed_draft_says_so(app, app_env):
    assert app.selectbox(key="ask_pipeline").value == "selection"
    script(app_env, writer=TOP5, others=TOP5)
    ask(app, "Which five products cost the most?")
    assert errors(app) == []
    run = app.session_state["ask_run"]  # the finished run's answer pane says what the vote did
    assert "Draft answer confirmed: 3 of 3 candidates return the same rows." in [
        c.value for c in app.caption]
    with Store(default_path()) as store:
        assert store.get_run(run.run_id).final_sql == run.final_sql == TOP5
    assert not [r for r in app_env.requests if MAC_DECOMPOSE in str(r["messages"])]


def test_a_replaced_draft_shows_the_chosen_answer_and_why(app, app_env):
    script(app_env, writer=CHEAPEST, others=TOP5)
    ask(app, "Which five products cost the most?")
    assert ("Draft answer replaced: the draft (writer) returned 5 row(s); the vote chose the "
            "answer of cot, decomposer, sample1 (3 of 4 candidates), which returns 5 row(s).") \
        in [c.value for c in app.caption]
    run = app.session_state["ask_run"]
    assert run.final_sql == TOP5 and app.text_area(key=f"sql_{run.run_id}").value.startswith(
        "SELECT name,")
    with Store(default_path()) as store:
        assert store.get_run(run.run_id).final_sql == TOP5
