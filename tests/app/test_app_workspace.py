"""The analyst's workspace in the app: follow-up questions carry the previous SQL, knowledge notes
are kept on their page and reach every run, and the trace shows what a run was given."""

from __future__ import annotations

import time

from agents.store import Store, default_path
from scripted_llm import prompt_text

from app_helpers import errors

TOP5 = "SELECT name, price FROM products ORDER BY price DESC LIMIT 5"
CHEAP = "SELECT name, price FROM products WHERE price < 20 ORDER BY price DESC LIMIT 5"


def ask(at, question: str, pipeline: str = "baseline"):
    at.text_area(key="ask_question").input(question)
    at.selectbox(key="ask_pipeline").select(pipeline)
    at.run()
    at.button(key="ask_run_button").click().run()
    assert not at.exception, at.exception
    return at


def expander_text(at, label: str) -> str:
    [box] = [e for e in at.expander if e.label == label]
    return " ".join([m.value for m in box.markdown] + [c.value for c in box.code]
                    + [c.value for c in box.caption])


def add_button(at):
    return [b for b in at.button if b.label == "Add note"][0]


def test_a_follow_up_carries_the_previous_question_sql_and_result(app, app_env):
    app_env.push(f"```sql\n{TOP5}\n```", f"```sql\n{CHEAP}\n```")
    ask(app, "What are the five most expensive products?")
    first = app.session_state["ask_run"]
    assert first.context == {}
    follow = app.checkbox(key="ask_follow_up")  # there as soon as the run has ended
    assert follow.label == "Follow up on the previous question" and follow.value is False
    assert any("five most expensive products" in c.value for c in app.caption)
    follow.check().run()
    ask(app, "And only those under 20?")
    assert errors(app) == []
    second = app.session_state["ask_run"]
    prompt = prompt_text(app_env.requests[1])
    assert "And only those under 20?" in prompt
    assert "Previous question: What are the five most expensive products?" in prompt
    assert f"Its SQL: {TOP5}" in prompt
    assert "Its result: 5 row(s); columns name, price; first rows: " in prompt
    assert "previous question" not in prompt_text(app_env.requests[0]).lower()
    assert second.context["follow_up"]["run_id"] == first.run_id
    assert second.context["thread_id"] == first.run_id
    # the trace says what the run was given, and the conversation is listed
    given = expander_text(app, "Given to the agents besides the question")
    assert "five most expensive products" in given and "LIMIT 5" in given
    assert any("This conversation" in m.value and "2 questions" in m.value for m in app.markdown)
    with Store(default_path()) as store:
        thread = store.thread_runs(first.run_id)
    assert [r["run_id"] for r in thread] == [first.run_id, second.run_id]
    assert [r["question"] for r in thread] == ["What are the five most expensive products?",
                                               "And only those under 20?"]


def test_the_follow_up_box_and_run_button_are_ready_when_a_run_ends(app, app_env):
    """The page draws itself once more when a run ends, so the next click on Run, straight
    after the run, already sees the follow-up box (not a question box drawn mid-run)."""
    app_env.push(f"```sql\n{TOP5}\n```", f"```sql\n{CHEAP}\n```")
    ask(app, "What are the five most expensive products?")
    first = app.session_state["ask_run"]
    assert app.session_state["ask_box_saw"] == first.run_id
    assert not app.button(key="ask_run_button").disabled
    app.checkbox(key="ask_follow_up").check()
    app.text_area(key="ask_question").input("And only those under 20?")
    app.button(key="ask_run_button").click().run()
    assert not app.exception and errors(app) == []
    second = app.session_state["ask_run"]
    assert second.context["follow_up"]["run_id"] == first.run_id
    app.checkbox(key="ask_follow_up")
    assert any("Previous question: “And only those under 20?”" in c.value
               for c in app.caption)  # the box now offers the newest run


def test_a_run_that_ends_before_the_page_looks_still_brings_the_follow_up_box(app, app_env,
                                                                            monkeypatch):
    """A run can be over before Run's own handler checks on it (a cached or very short run):
    the page still draws itself once more, so the follow-up box is there at once."""
    import agents.core.jobs

    real_run_job = agents.core.jobs.run_job

    def run_to_the_end(*args, **kwargs):
        job = real_run_job(*args, **kwargs)
        deadline = time.time() + 20
        while not job.finished and time.time() < deadline:
            time.sleep(0.02)
        return job

    monkeypatch.setattr(agents.core.jobs, "run_job", run_to_the_end)
    app_env.push(f"```sql\n{TOP5}\n```")
    ask(app, "What are the five most expensive products?")
    first = app.session_state["ask_run"]
    app.checkbox(key="ask_follow_up")
    assert any("five most expensive products" in c.value for c in app.caption)
    assert app.session_state["ask_box_saw"] == first.run_id


def test_a_new_question_without_the_follow_up_box_starts_from_nothing(app, app_env):
    app_env.push(f"```sql\n{TOP5}\n```", f"```sql\n{TOP5}\n```")
    ask(app, "What are the five most expensive products?")
    ask(app, "Which products are the most expensive?")
    assert "Previous question" not in prompt_text(app_env.requests[1])
    assert app.session_state["ask_run"].context == {}


def test_knowledge_page_notes_reach_the_next_run_and_its_trace(app, app_env):
    app.switch_page("pages/knowledge.py").run()
    assert errors(app) == [] and not app.exception
    assert any("No notes yet" in i.value for i in app.info)
    app.text_input(key="kn_new_title").input("premium product")
    app.text_area(key="kn_new_text").input("a product whose price is above 100")
    add_button(app).click().run()
    app.switch_page("pages/knowledge.py").run()
    assert errors(app) == []
    with Store(default_path()) as store:
        [note] = store.list_notes("shop")
    assert note["title"] == "premium product" and note["enabled"] == 1
    assert "- premium product: a product whose price is above 100" in " ".join(
        c.value for c in app.code)

    app.switch_page("pages/ask.py").run()
    assert "1 note" in app.checkbox(key="ask_use_knowledge").label
    app_env.push(f"```sql\n{TOP5}\n```")
    ask(app, "Which premium products are there?")
    prompt = prompt_text(app_env.requests[0])
    assert ("Knowledge about this database:\n- premium product: a product whose price is "
            "above 100") in prompt
    run = app.session_state["ask_run"]
    assert run.context["notes"][0]["id"] == note["id"]
    assert "premium product" in expander_text(app, "Given to the agents besides the question")

    # switched off for one run: the prompt is the plain question again
    app.checkbox(key="ask_use_knowledge").uncheck().run()
    app_env.push(f"```sql\n{TOP5}\n```")
    ask(app, "Which premium products are there?")
    assert "Knowledge about this database" not in prompt_text(app_env.requests[1])


def test_knowledge_page_edits_disables_removes_and_refuses_empty_notes(app, app_env):
    with Store(default_path()) as store:
        nid = store.add_note("shop", "status = 'cancelled'", "cancelled order")
        store.accept(None, "How many orders are there?", "SELECT COUNT(*) FROM orders", "shop")
    app.switch_page("pages/knowledge.py").run()
    app.text_area(key=f"kn_text_{nid}").input("status is 'cancelled'")
    app.checkbox(key=f"kn_on_{nid}").uncheck()
    app.button(key=f"kn_save_{nid}").click().run()
    assert any("Note saved" in s.value for s in app.success)
    with Store(default_path()) as store:
        note = store.get_note(nid)
    assert note["text"] == "status is 'cancelled'" and note["enabled"] == 0
    assert not [e for e in app.expander if e.label == "What the agents receive"]

    app.text_area(key="kn_new_text").input("   ")
    add_button(app).click().run()
    assert errors(app) == ["Write the note first: the definition or the fact itself."]
    # shown under the form it is about, after the notes, not at the top of the page
    order = [getattr(e, "type", "") for e in app.main.children.values()]
    assert order.index("form") + 1 == order.index("error")

    [keep] = [b for b in app.button if b.key and b.key.startswith("kn_accept_")]
    keep.click().run()
    with Store(default_path()) as store:
        notes = store.list_notes("shop")
    assert notes[-1]["source"] == "accepted"
    assert notes[-1]["text"] == "answered by the SQL SELECT COUNT(*) FROM orders"

    app.button(key=f"kn_remove_{nid}").click().run()
    with Store(default_path()) as store:
        assert [n["id"] for n in store.list_notes("shop")] == [notes[-1]["id"]]


def test_an_upload_is_there_again_after_a_restart_and_can_be_removed(app, app_env, tmp_path):
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from app_helpers import APP, TIMEOUT, sqlite_bytes

    data = sqlite_bytes(tmp_path, "CREATE TABLE pets (id INTEGER PRIMARY KEY, kind TEXT);"
                                  "INSERT INTO pets (kind) VALUES ('cat'), ('dog');")
    app.file_uploader[0].set_value(("pets.sqlite", data, "application/octet-stream")).run()
    assert errors(app) == [] and app.selectbox(key="db_picker_ask").value == "upload:pets"
    assert "pets (kept upload)" in app.selectbox(key="db_picker_ask").options

    st.cache_resource.clear()  # a restart: nothing of the old process or session is left
    again = AppTest.from_file(APP, default_timeout=TIMEOUT)
    again.run()
    picker = again.selectbox(key="db_picker_ask")
    assert "pets (kept upload)" in picker.options
    picker.select("upload:pets").run()
    assert again.dataframe[0].value.to_dict("records") == [
        {"table": "pets", "rows": 2, "columns": 2}]
    again.button(key="saved_remove_ask_pets").click().run()
    assert any("Removed pets" in s.value for s in again.success)
    assert "upload:pets" not in again.selectbox(key="db_picker_ask").options
    with Store(default_path()) as store:
        assert store.saved_databases() == []


def test_a_server_file_is_registered_by_path_and_opened_read_only(app, tmp_path, monkeypatch):
    import sqlite3

    assert not [t for t in app.text_input if t.key == "server_path_ask"]  # off by default
    monkeypatch.setenv("STUDIO_SERVER_PATHS", str(tmp_path))
    app.run()
    path = tmp_path / "crm.db"
    conn = sqlite3.connect(path)
    conn.executescript("CREATE TABLE leads (id INTEGER PRIMARY KEY, name TEXT);"
                       "INSERT INTO leads (name) VALUES ('Ada');")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    app.text_input(key="server_path_ask").input("/no/such/crm.db")
    app.button(key="server_register_ask").click().run()
    [message] = errors(app)
    assert message.startswith("no SQLite file this server may open at /no/such/crm.db")
    app.text_input(key="server_path_ask").input(str(path))
    app.button(key="server_register_ask").click().run()
    assert errors(app) == [] and not app.exception
    assert app.selectbox(key="db_picker_ask").value == "path:crm"
    assert app.dataframe[0].value.to_dict("records") == [
        {"table": "leads", "rows": 1, "columns": 2}]
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("crm")) == ["crm.db"]


def test_an_upload_over_the_kept_size_limit_stays_for_this_session_only(app, tmp_path,
                                                                        monkeypatch):
    from app_helpers import sqlite_bytes

    monkeypatch.setenv("STUDIO_SAVED_DB_MB", "0.001")
    data = sqlite_bytes(tmp_path, "CREATE TABLE pets (id INTEGER PRIMARY KEY, kind TEXT);")
    app.file_uploader[0].set_value(("pets.sqlite", data, "application/octet-stream")).run()
    assert errors(app) == []
    [warning] = app.warning
    assert "not kept after a restart" in warning.value and "over the limit of 1.0 KiB" in warning.value
    picker = app.selectbox(key="db_picker_ask")
    assert picker.value == "upload:pets" and "pets (uploaded, this session only)" in picker.options
