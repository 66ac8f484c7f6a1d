"""The Ask page end to end: databases, a live run on the scripted model, the answer pane,
edit-and-resume and every kind of bad input."""

from __future__ import annotations

import pytest

from agents.store import Store, default_path

from app_helpers import errors, sqlite_bytes
from ask_page import DECOMPOSER, DECOMPOSER_REPLY, SELECTOR, SELECTOR_REPLY, TOP5, ask


def stored_runs() -> list[dict]:
    with Store(default_path()) as store:
        return store.list_runs()


def test_landing_shows_the_sample_database_at_once(app):
    assert errors(app) == []
    assert app.selectbox(key="db_picker_ask").value == "sample:shop"
    assert any("7 tables" in c.value for c in app.caption)
    tables = app.dataframe[0].value
    assert {"products", "orders", "customers"} <= set(tables["table"])
    assert (tables["rows"] > 0).all()
    examples = app.selectbox(key="ask_example")
    examples.select(examples.options[0]).run()
    assert app.text_area(key="ask_question").value == examples.options[0]


def test_upload_of_a_good_database_becomes_the_active_one(app, tmp_path):
    data = sqlite_bytes(tmp_path, "CREATE TABLE pets (id INTEGER PRIMARY KEY, kind TEXT);"
                                  "INSERT INTO pets (kind) VALUES ('cat'), ('dog'), ('cat');")
    app.file_uploader[0].set_value(("pets.sqlite", data, "application/octet-stream")).run()
    assert errors(app) == []
    assert app.selectbox(key="db_picker_ask").value == "upload:pets"
    assert app.dataframe[0].value.to_dict("records") == [
        {"table": "pets", "rows": 3, "columns": 2}]


@pytest.mark.parametrize("name, content, expected", [
    ("notes.sqlite", b"just some text, not a database at all", "not a SQLite database"),
    ("cut.db", None, "damaged"),
    ("empty.sqlite3", b"", "empty"),
    ("nothing.sqlite", "no tables", "no tables"),
    ("big.sqlite", "too large", "limit is 1.0 MiB"),
])
def test_bad_uploads_give_one_clear_error_and_keep_the_app_usable(app, tmp_path, name,
                                                                  content, expected,
                                                                  server_upload_limit):
    good = sqlite_bytes(tmp_path, "CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);",
                        name="good.sqlite")
    if content is None:  # a real file cut in half
        content = sqlite_bytes(tmp_path, "CREATE TABLE t (x TEXT);" + "".join(
            f"INSERT INTO t VALUES ('{'y' * 500}');" for _ in range(50)), name="c.sqlite")
        content = content[: len(content) // 2]
    elif content == "no tables":
        content = sqlite_bytes(tmp_path, "PRAGMA user_version = 1;", name="n.sqlite")
    elif content == "too large":
        server_upload_limit(1)  # as if set in .streamlit/config.toml
        app.run()
        content = good + b"\0" * (1024 * 1024)
    app.file_uploader[0].set_value((name, content, "application/octet-stream")).run()
    assert not app.exception
    assert len(errors(app)) == 1 and expected in errors(app)[0], errors(app)
    assert app.selectbox(key="db_picker_ask").value == "sample:shop"  # still usable
    assert app.button(key="ask_run_button").disabled is False


def test_empty_question_is_refused_without_calling_the_model(app, app_env):
    app.button(key="ask_run_button").click().run()
    assert errors(app) == ["Type a question first."]
    assert app_env.requests == []
    assert len(app.status) == 0


def test_baseline_run_live_trace_answer_and_store(app, app_env):
    app_env.push(f"```sql\n{TOP5}\n```")
    ask(app, "What are the five most expensive products?")
    assert errors(app) == []
    [status] = app.status
    assert status.label.startswith("1. SQL Writer: Write the SQL — ") and "tokens" in status.label
    assert status.state == "complete"
    sql_box = [t for t in app.text_area if t.key.startswith("sql_")][0]
    assert "ORDER BY price DESC" in sql_box.value
    result = [d.value for d in app.dataframe if list(d.value.columns) == ["name", "price"]]
    assert len(result[0]) == 5
    assert any(c.value.startswith("5 row(s)") for c in app.caption)
    assert app.button(key="ask_run_button").disabled is False
    [saved] = stored_runs()
    assert saved["status"] == "done" and saved["pipeline"] == "baseline"
    assert saved["question"] == "What are the five most expensive products?"
    # A rerun (any widget) draws from session state and never calls the model again.
    app.run()
    assert len(app_env.requests) == 1 and len(app.status) == 1


def test_macsql_steps_render_selector_table_and_sub_questions(app, app_env):
    app_env.when(SELECTOR, SELECTOR_REPLY).when(DECOMPOSER, DECOMPOSER_REPLY)
    ask(app, "Top five products by price?", "macsql", use_selector="always",
        value_grounding="off")
    labels = [s.label for s in app.status]
    assert [label.split(" — ")[0] for label in labels] == [
        "1. Selector: Select the relevant tables and columns",
        "2. Decomposer: Decompose the question and write SQL",
        "3. Refiner: Execute the SQL and repair it"]
    assert all(s.state == "complete" for s in app.status)
    [selector_table] = [m.value for m in app.status[0].markdown if "| table |" in m.value]
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in selector_table.splitlines()[2:]}
    decision, kept, _ = rows["`products`"]
    assert decision == "keep some columns" and "`price`" in kept
    assert rows["`orders`"][0] == "dropped"
    assert any("Which products are the most expensive?" in m.value
               for m in app.status[1].markdown)
    assert any(TOP5 in " ".join(c.value.split()) for c in app.status[1].code)
    assert any("nothing to repair" in m.value for m in app.status[2].markdown)
    prompt_box = app.status[0].expander[0]
    assert prompt_box.label == "Prompt and raw model output"
    assert any("keep_all" in c.value or "drop_all" in c.value for c in prompt_box.code)


def test_edited_sql_runs_safely_and_writes_are_refused(app, app_env, sample_dbs):
    app_env.push(f"```sql\n{TOP5}\n```")
    ask(app, "What are the five most expensive products?")
    sql_key = [t.key for t in app.text_area if t.key.startswith("sql_")][0]
    run_key = sql_key.replace("sql_", "run_sql_")
    app.text_area(key=sql_key).input("SELECT COUNT(*) AS n FROM products")
    app.button(key=run_key).click().run()
    assert errors(app) == []
    assert any(list(d.value.columns) == ["n"] for d in app.dataframe)
    app.text_area(key=sql_key).input("DELETE FROM products")
    app.button(key=run_key).click().run()
    [message] = errors(app)
    assert message.startswith("Refused:") and "DELETE" in message.upper()
    from agents.db.database import open_database

    with open_database(sample_dbs / "shop.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM products").rows[0][0] > 5


def test_slow_edited_query_hits_the_time_limit(app, app_env):
    app_env.push(f"```sql\n{TOP5}\n```")
    ask(app, "What are the five most expensive products?")
    app.session_state["exec_limits"] = {"timeout": 0.3, "max_rows": 1000}
    sql_key = [t.key for t in app.text_area if t.key.startswith("sql_")][0]
    app.text_area(key=sql_key).input(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT max(i) FROM n")
    app.button(key=sql_key.replace("sql_", "run_sql_")).click().run()
    [message] = errors(app)
    assert "too long" in message or "time" in message.lower()


def test_accept_stores_the_answer_and_the_run(app, app_env):
    app_env.push(f"```sql\n{TOP5}\n```")
    ask(app, "What are the five most expensive products?")
    accept = [b for b in app.button if b.key and b.key.startswith("accept_")][0]
    accept.click().run()
    assert any("Accepted" in s.value for s in app.success)
    with Store(default_path()) as store:
        [accepted] = store.list_accepted()
        assert accepted["db_name"] == "shop" and "LIMIT 5" in accepted["sql"]
        assert len(accepted["result_preview"]["rows"]) == 5
        assert len(store.list_runs()) == 1


def test_accepting_the_same_answer_again_says_it_was_accepted_before(app, app_env):
    app_env.push(f"```sql\n{TOP5}\n```", f"```sql\n{TOP5}\n```")
    for _ in range(2):
        ask(app, "What are the five most expensive products?")
        [b for b in app.button if b.key and b.key.startswith("accept_")][0].click().run()
    [message] = [s.value for s in app.success if "Accepted" in s.value]
    assert "were already an accepted answer" in message and "linked to it too" in message
    assert "\\\\" not in message  # escaped for Markdown once by the page, not twice
    with Store(default_path()) as store:
        [accepted] = store.list_accepted()  # the same pair is stored once
        assert len(store.list_runs(accepted=True)) == 2


def test_resume_from_an_edited_step_makes_a_linked_run(app, app_env):
    app_env.when(SELECTOR, SELECTOR_REPLY).when(DECOMPOSER, DECOMPOSER_REPLY)
    ask(app, "Top five products by price?", "macsql", use_selector="always",
        value_grounding="off")
    first = app.session_state["ask_run"]
    step = [s for s in app.selectbox if s.key and s.key.startswith("resume_step_")][0]
    step.select(1).run()  # the Decomposer
    mode = [r for r in app.radio if r.key and r.key.startswith("resume_mode_")][0]
    assert mode.options == ["Selection", "SQL", "JSON"]
    mode.set_value("SQL").run()
    edited = "SELECT name FROM products ORDER BY price ASC LIMIT 2"
    [t for t in app.text_area if t.key.startswith("resume_sql_")][0].input(edited)
    [b for b in app.button if b.key and b.key.startswith("resume_go_")][0].click().run()
    assert not app.exception and errors(app) == []
    second = app.session_state["ask_run"]
    assert second.run_id != first.run_id and second.parent_run_id == first.run_id
    assert second.resumed_from == 2 and second.final_sql == edited
    assert second.events[1].edited and [e.step for e in second.events] == [
        "selector", "decomposer", "refiner"]
    assert len(app_env.requests) == 2  # selector + decomposer once; the resume asked nothing
    assert "edited" in app.status[1].label
    # the page is drawn again once the resumed run ends: Run is usable, Stop is gone
    assert app.button(key="ask_run_button").disabled is False
    assert not [b for b in app.button if b.key == "ask_stop"]
    runs = {r["run_id"]: r for r in stored_runs()}
    assert runs[second.run_id]["parent_run_id"] == first.run_id


def test_resume_with_invalid_json_is_refused(app, app_env):
    app_env.push(f"```sql\n{TOP5}\n```")
    ask(app, "What are the five most expensive products?")
    mode = [r for r in app.radio if r.key and r.key.startswith("resume_mode_")][0]
    mode.set_value("JSON").run()
    [t for t in app.text_area if t.key.startswith("resume_json_")][0].input("{not json")
    [b for b in app.button if b.key and b.key.startswith("resume_go_")][0].click().run()
    [message] = errors(app)
    assert "not valid JSON" in message
    assert len(stored_runs()) == 1


def test_model_error_fails_the_run_with_one_message(app, app_env):
    app_env.push({"status": 401, "error": "Incorrect API key provided"})
    ask(app, "How many orders are there?")
    [status] = app.status
    assert status.state == "error" and "failed" in status.label
    [message] = errors(app)
    assert message.startswith("The run failed:") and "key" in message.lower()
    [saved] = stored_runs()
    assert saved["status"] == "failed"
    # the page stays usable: a new question runs normally
    app_env.push(f"```sql\n{TOP5}\n```")
    ask(app, "What are the five most expensive products?")
    assert errors(app) == [] and app.status[0].state == "complete"


def test_run_and_stop_reflect_the_real_state_after_a_slow_resumed_run(app, app_env):
    """A resumed run that takes a while: when it ends the page is drawn again, so Run is
    enabled (not left disabled until another widget is touched) and Stop is gone."""
    app_env.when(SELECTOR, SELECTOR_REPLY).when(DECOMPOSER, DECOMPOSER_REPLY)
    ask(app, "Top five products by price?", "macsql", use_selector="always",
        value_grounding="off")
    app_env.clear()
    app_env.when(DECOMPOSER, {"content": DECOMPOSER_REPLY, "delay": 1.5})
    step = [s for s in app.selectbox if s.key and s.key.startswith("resume_step_")][0]
    step.select(0).run()  # go on after the Selector: the Decomposer asks the (slow) model
    [b for b in app.button if b.key and b.key.startswith("resume_go_")][0].click().run()
    assert not app.exception and errors(app) == []
    assert len(app_env.requests) == 1
    assert app.session_state["ask_run"].resumed_from == 1
    assert app.button(key="ask_run_button").disabled is False
    assert not [b for b in app.button if b.key == "ask_stop"]


def test_a_resumed_runs_cost_line_counts_the_steps_it_ran(app, app_env):
    """Calls, tokens and seconds of a resumed run are those of the steps it ran itself; the
    steps carried over from the run it was resumed from are named, not counted."""
    from ui.widgets.result import cost_text

    app_env.when(SELECTOR, SELECTOR_REPLY).when(DECOMPOSER, DECOMPOSER_REPLY)
    ask(app, "Top five products by price?", "macsql", use_selector="always",
        value_grounding="off")
    first = app.session_state["ask_run"]
    step = [s for s in app.selectbox if s.key and s.key.startswith("resume_step_")][0]
    step.select(0).run()  # go on after the Selector: the Decomposer asks the model again
    [b for b in app.button if b.key and b.key.startswith("resume_go_")][0].click().run()
    second = app.session_state["ask_run"]
    own = second.events[1:]
    tokens = sum(e.prompt_tokens + e.completion_tokens for e in own)
    assert second.resumed_from == 1 and tokens < second.prompt_tokens + second.completion_tokens
    assert cost_text(second).startswith(f"{sum(len(e.calls) for e in own)} model call(s) · "
                                        f"{tokens:,} tokens · ")
    assert cost_text(second).endswith(f"s from step 2 on, resumed from run {first.run_id} "
                                      f"(step 1 carried over)")
    assert any(cost_text(second) in c.value for c in app.caption)
