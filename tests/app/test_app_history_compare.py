"""History & annotation (list, filter, replay, annotate, export) and the Compare page."""

from __future__ import annotations

import re

import pytest

from agents.db.database import open_database
from agents.core.engine import run_to_end, start_run
from agents.pipelines import get_pipeline
from agents.store import Store, default_path

from app_helpers import errors
from history_page import open_history, submit

TOP5 = "SELECT name, price FROM products ORDER BY price DESC LIMIT 5"
WRITER = "You are a SQLite expert."


@pytest.fixture
def saved_runs(app_env, llm, sample_dbs):
    """Two finished baseline runs in the store, as the Ask page would have saved them."""
    app_env.push(f"```sql\n{TOP5}\n```", "```sql\nSELECT COUNT(*) FROM orders\n```")
    runs = []
    with open_database(sample_dbs / "shop.sqlite") as db, Store(default_path()) as store:
        for question in ("Five most expensive products?", "How many orders?"):
            run = run_to_end(start_run(get_pipeline("baseline"), question, db, llm))
            store.save_run(run)
            runs.append(run)
    app_env.clear()
    return runs


def test_history_lists_replays_without_model_calls(app, app_env, saved_runs):
    open_history(app)
    listing = app.dataframe[0].value
    assert set(listing["question"]) == {"Five most expensive products?", "How many orders?"}
    open_history(app, saved_runs[0].run_id)
    [status] = app.status
    assert status.label.startswith("1. SQL Writer") and status.state == "complete"
    assert any("LIMIT 5" in c.value for c in app.code)
    assert app_env.requests == []
    labels = [b.label for b in app.get("download_button")]
    assert labels == ["Export CSV", "Export JSONL", "Export this run (Markdown)",
                      "Export this run (HTML)"]


def test_annotate_with_checked_corrected_sql_and_filter(app, saved_runs):
    run = saved_runs[1]
    open_history(app, run.run_id)
    submit(app, verdict="incorrect", error_type="aggregation_grouping", step=0,
           corrected="SELECT COUNT(DISTINCT order_id) FROM orders", notes="count distinct")
    assert errors(app) == []
    assert any("Annotation saved" in s.value and "runs on shop" in s.value for s in app.success)
    with Store(default_path()) as store:
        note = store.get_annotation(run.run_id)
    assert (note["verdict"], note["error_type"], note["faulty_step"]) == (
        "incorrect", "aggregation_grouping", "writer")
    app.selectbox(key="hist_verdict").select("incorrect").run()
    assert app.dataframe[0].value["run"].tolist() == [run.run_id]
    app.selectbox(key="hist_verdict").select("(any)").run()
    app.selectbox(key="hist_error_type").select("join").run()
    assert not any(d.value.shape[0] for d in app.dataframe[:1]) or "No saved runs" in \
        " ".join(i.value for i in app.info)


def test_corrected_sql_that_writes_is_refused_and_not_saved(app, saved_runs):
    run = saved_runs[0]
    open_history(app, run.run_id)
    submit(app, verdict="incorrect", error_type="logic", corrected="DROP TABLE products")
    [message] = errors(app)
    assert message.startswith("Refused:")
    with Store(default_path()) as store:
        assert store.get_annotation(run.run_id) is None


def test_correct_verdict_with_an_error_type_is_explained(app, saved_runs):
    open_history(app, saved_runs[0].run_id)
    submit(app, verdict="correct", error_type="join")
    [message] = errors(app)
    assert "no error type" in message


def test_compare_runs_pipelines_side_by_side(app, app_env):
    compared(app, app_env)
    assert any("same rows" in s.value for s in app.success)
    assert sum("LIMIT 5" in c.value for c in app.code) >= 2
    costs = [m.value for m in app.markdown if " tokens · " in m.value]
    assert len(costs) == 2 and all(re.search(r"\*\*\d+ calls?\*\* · \*\*[\d,]+\*\* tokens · "
                                             r"\*\*[\d.]+\*\* s", c) for c in costs)
    with Store(default_path()) as store:
        assert {r["pipeline"] for r in store.list_runs()} == {"baseline", "macsql"}


def test_compare_does_not_call_a_failed_run_agreement(app, app_env):
    """R³ fails at its Invitation after its SQL ran: the rows agree, the banner says it did not
    finish instead of a plain success."""
    app_env.when(WRITER, f"```sql\n{TOP5}\n```").when(
        "Write an SQL to answer the question", f"```sql\n{TOP5}\n```").when(
        "invite", "no experts today")
    app.switch_page("pages/compare.py").run()
    app.text_area(key="cmp_question").input("Five most expensive products?")
    app.multiselect(key="cmp_pipelines").set_value(["baseline", "r3"])
    app.button(key="cmp_go").click().run()
    assert not app.exception
    result = app.session_state["cmp_result"]
    assert result.outcome("r3").status == "failed" and result.all_agree
    assert not app.success
    assert any("R³ (Review-Rebuttal-Revision) did not finish its run" in w.value
               for w in app.warning)


def test_compare_needs_two_pipelines_and_a_question(app):
    app.switch_page("pages/compare.py").run()
    app.button(key="cmp_go").click().run()
    assert errors(app) == ["Type a question first."]
    app.text_area(key="cmp_question").input("Anything?")
    app.multiselect(key="cmp_pipelines").set_value(["baseline"])
    app.button(key="cmp_go").click().run()
    assert errors(app) == ["Choose at least two pipelines to compare."]


TOP3 = "SELECT name FROM products ORDER BY price DESC LIMIT 3"


def compared(app, app_env):
    app_env.when(WRITER, f"```sql\n{TOP5}\n```").when(
        "As an experienced and professional database administrator",
        '{"products": "keep_all", "reviews": "drop_all"}').when(
        "decompose the question into subquestions",
        f"Sub question 1: Most expensive products?\nSQL\n```sql\n{TOP5}\n```")
    app.switch_page("pages/compare.py").run()
    app.text_area(key="cmp_question").input("Five most expensive products?")
    app.multiselect(key="cmp_pipelines").set_value(["baseline", "macsql"])
    app.button(key="cmp_go").click().run()
    assert not app.exception and errors(app) == []
    return app.session_state["cmp_result"]


def test_compare_accepts_one_pipelines_sql_as_ask_does(app, app_env):
    result = compared(app, app_env)
    choice = app.radio(key="cmp_accept_choice")
    assert choice.value == "baseline"  # first of the pipelines that agree
    assert choice.options == ["Quick — one prompt",
                              "MAC-SQL — breaks the question down, repairs the SQL"]
    choice.set_value("macsql").run()
    app.button(key="cmp_accept").click().run()
    assert not app.exception and errors(app) == []
    assert any(s.value.startswith("Accepted: the question, SQL and result are saved")
               for s in app.success)
    macsql_run = result.outcome("macsql").run
    with Store(default_path()) as store:
        [answer] = store.list_accepted()
        info = store.run_info(macsql_run.run_id)
    assert answer["run_id"] == macsql_run.run_id
    assert answer["question"] == "Five most expensive products?"
    assert " ".join(answer["sql"].split()) == TOP5 and answer["db_name"] == "shop"
    assert info["accepted"] == "yes"
    assert any("Accepted by" in c.value and "see History" in c.value for c in app.caption)
    # History lists it with the run and under Accepted answers
    at = open_history(app)
    listing = at.dataframe[0].value.set_index("run")
    assert listing.loc[macsql_run.run_id, "accepted"] == "yes"
    assert any("Five most expensive products?" in m.value for m in at.markdown)


def test_compare_accepts_edited_sql_and_refuses_sql_that_does_not_run(app, app_env):
    result = compared(app, app_env)
    run_id = result.outcome("baseline").run.run_id
    box = app.text_area(key=f"cmp_accept_sql_{run_id}")
    box.input("DROP TABLE products").run()
    app.button(key="cmp_accept").click().run()
    [message] = errors(app)
    assert message.startswith("Refused:")
    app.text_area(key=f"cmp_accept_sql_{run_id}").input("SELECT nope FROM products").run()
    app.button(key="cmp_accept").click().run()
    assert "no such column" in errors(app)[0]
    with Store(default_path()) as store:
        assert store.list_accepted() == []
    app.text_area(key=f"cmp_accept_sql_{run_id}").input(TOP3).run()
    app.button(key="cmp_accept").click().run()
    assert not app.exception and errors(app) == []
    assert any("edited SQL" in c.value for c in app.caption)
    with Store(default_path()) as store:
        [answer] = store.list_accepted()
    assert answer["sql"] == TOP3 and answer["run_id"] == run_id
    assert len(answer["result_preview"]["rows"]) == 3


def test_a_store_from_a_newer_studio_is_one_message_on_every_page(app_env):
    """History and Knowledge read the store: each says what is wrong, no page shows a
    traceback (Ask works until a run is to be saved), and the file is left as it was. (A
    damaged or emptied one is moved aside instead: ``test_app_store_damage.py``.)"""
    from streamlit.testing.v1 import AppTest

    from app_helpers import APP

    path = default_path()
    with Store(path) as store:
        store.db["meta"].upsert({"key": "schema_version", "value": "999"}, pk="key")
    content = path.read_bytes()
    at = AppTest.from_file(APP, default_timeout=30)
    at.run()
    for page in ("pages/history.py", "pages/knowledge.py", "pages/ask.py"):
        at.switch_page(page).run()
        assert not at.exception, (page, at.exception)
        if page != "pages/ask.py":
            assert any("run store" in e for e in errors(at)), (page, errors(at))
    assert path.read_bytes() == content
