"""The Schema and Settings pages, and the pure helpers behind the diagram and the charts."""

from __future__ import annotations

import pandas as pd

from app_helpers import errors, sqlite_bytes
from ui.widgets.charts import choose_chart
from ui.widgets.diagram import dot_id, schema_dot
from ui.widgets.resume import selection_from_rows, selection_rows


def button(at, label: str):
    [found] = [b for b in at.button if b.label == label]
    return found


def test_schema_page_shows_columns_rows_and_relations(app):
    app.switch_page("pages/schema.py").run()
    assert not app.exception and errors(app) == []
    [chart] = app.get("graphviz_chart")
    dot = chart.proto.spec
    assert '"orders" -> "customers"' in dot and "digraph" in dot
    app.selectbox(key="schema_table").select("products").run()
    columns = app.table[0].value  # a static table: long examples wrap
    assert "price" in set(columns["column"])
    assert columns.set_index("column").loc["category_id", "key"].startswith("→ categories")
    first_rows = app.dataframe[0].value
    assert len(first_rows) == 20 and "price" in first_rows.columns


def test_schema_of_an_upload_with_odd_names(app, tmp_path):
    data = sqlite_bytes(tmp_path, 'CREATE TABLE "my table" (id INTEGER PRIMARY KEY, "a""b" TEXT);'
                                  'CREATE TABLE kids (id INTEGER, parent INTEGER REFERENCES '
                                  '"my table"(id)); INSERT INTO "my table" VALUES (1, \'x\');')
    app.file_uploader[0].set_value(("odd.sqlite", data, "application/octet-stream")).run()
    app.switch_page("pages/schema.py").run()
    assert not app.exception and errors(app) == []
    assert app.selectbox(key="db_picker_schema").value == "upload:odd"
    dot = app.get("graphviz_chart")[0].proto.spec
    assert '"kids" -> "my table"' in dot


def test_a_large_schema_is_searched_and_its_diagram_kept_readable(app, tmp_path):
    from dbfactory import wide_schema_sql

    data = sqlite_bytes(tmp_path, wide_schema_sql(300), name="wide.sqlite")
    app.file_uploader[0].set_value(("wide.sqlite", data, "application/octet-stream")).run()
    app.switch_page("pages/schema.py").run()
    assert not app.exception and errors(app) == []
    assert not app.get("graphviz_chart")  # 303 boxes would be unreadable
    assert any("at most 40 tables" in c.value for c in app.caption)
    app.text_input(key="schema_filter").input("concert").run()
    dot = app.get("graphviz_chart")[0].proto.spec
    assert '"singer_in_concert" -> "concert"' in dot and "ledger" not in dot
    # the tables a found one links to are drawn too, so its relations show
    assert '"singer_in_concert" -> "singer"' in dot
    assert any("Also drawn" in c.value for c in app.caption)
    assert app.selectbox(key="schema_table").options == ["concert", "singer_in_concert"]
    app.text_input(key="schema_filter").input("no such name").run()
    assert not app.exception and "No table or column name" in app.info[0].value
    assert not app.get("graphviz_chart")  # no empty diagram above the message


def test_dot_quotes_odd_names():
    assert dot_id('a "b" \\ c') == '"a \\"b\\" \\\\ c"'

    class T:  # the few attributes the diagram reads
        def __init__(self, name, cols):
            self.name, self.row_count, self.primary_key = name, 1, []
            self.columns = [type("C", (), {"name": c, "type": "TEXT", "primary_key": False})()
                            for c in cols]

    schema = type("S", (), {"tables": [T("x<y>", ["a&b"])], "foreign_keys": []})()
    dot = schema_dot(schema)
    assert "x&lt;y&gt;" in dot and "a&amp;b" in dot and '"x<y>" [label=<' in dot


def test_chart_choice():
    months = pd.DataFrame({"month": ["2024-01", "2024-02", "2024-03"], "orders": [3, 5, 4]})
    assert (choose_chart(months).kind, choose_chart(months).x) == ("line", "month")
    cities = pd.DataFrame({"city": ["Oslo", "Rome"], "customer_id": [1, 2], "n": [10, 20]})
    choice = choose_chart(cities)
    assert (choice.kind, choice.x, choice.y) == ("bar", "city", "n")
    assert choose_chart(pd.DataFrame({"n": [42]})) is None
    assert choose_chart(pd.DataFrame({"a": ["x", "y"], "b": ["p", "q"]})) is None


def test_selection_editor_round_trip():
    selection = {"orders": "keep_all", "products": ["name", "price"]}
    rows = selection_rows(selection, ["orders", "products", "reviews"])
    assert rows["keep"].tolist() == [True, True, False]
    assert selection_from_rows(rows) == selection


def test_settings_validation_keeps_the_previous_settings(app):
    app.switch_page("pages/settings.py").run()
    app.text_input(key="set_base_url").input("ftp://example.org")
    app.radio(key="set_provider").set_value("openai")
    button(app, "Save model settings").click().run()
    [message] = errors(app)
    assert message.startswith("Not saved:") and "base_url" in message
    assert "llm_overrides" not in app.session_state or \
        app.session_state["llm_overrides"].get("base_url") != "ftp://example.org"


def test_test_connection_reports_model_and_latency(app):
    app.switch_page("pages/settings.py").run()
    app.button(key="set_test").click().run()
    [ok] = app.success
    assert "scripted-model" in ok.value and " s." in ok.value


def test_a_typed_key_is_applied_but_never_stored(app, app_env, isolated_studio):
    secret = "sk-session-only-123456789"
    app.switch_page("pages/settings.py").run()
    app.radio(key="set_provider").set_value("openai")
    app.text_input(key="set_base_url").input("http://127.0.0.1:9/v1")
    app.text_input(key="set_api_key").input(secret)
    button(app, "Save model settings").click().run()
    assert not app.exception and errors(app) == []
    assert app.session_state["llm_overrides"]["api_key"] == secret
    app.button(key="set_test").click().run()
    [message] = errors(app)
    assert message.startswith("Connection failed:") and secret not in message
    app.text_input(key="set_base_url").input(app_env.base_url)
    button(app, "Save model settings").click().run()
    app.button(key="set_test").click().run()
    assert errors(app) == [] and "scripted-model" in app.success[-1].value
    assert app_env.requests == []  # the test asks for the model list, never a completion
    for path in isolated_studio.rglob("*"):  # the key is never written anywhere
        if path.is_file():
            assert secret.encode() not in path.read_bytes()


def test_the_configured_key_never_goes_to_an_endpoint_a_session_types(app, app_env):
    """A visitor who points the studio at their own listener and leaves the key empty gets
    no key sent there; the configured endpoint still gets the configured key."""
    from scripted_llm import ScriptedLLM

    with ScriptedLLM() as listener:
        app.switch_page("pages/settings.py").run()
        app.radio(key="set_provider").set_value("openai")
        app.text_input(key="set_base_url").input(listener.base_url)
        button(app, "Save model settings").click().run()
        app.button(key="set_test").click().run()
        assert listener.authorizations, "the listener was never contacted"
        assert all("test-key" not in (a or "") for a in listener.authorizations)
    app.text_input(key="set_base_url").input(app_env.base_url)
    button(app, "Save model settings").click().run()
    app.button(key="set_test").click().run()
    assert errors(app) == []
    assert app_env.authorizations[-1] == "Bearer test-key"


def test_limits_and_pipeline_defaults_apply_at_once(app):
    app.switch_page("pages/settings.py").run()
    app.number_input[0].set_value(2.5)
    app.number_input[1].set_value(50)
    button(app, "Save limits").click().run()
    assert app.session_state["exec_limits"] == {"timeout": 2.5, "max_rows": 50}
    key = "set_param_macsql_max_refine"
    app.get_by_key(key).set_value(1)
    [b for b in app.button if "MAC-SQL" in b.label][0].click().run()
    assert app.session_state["pipeline_defaults"]["macsql"]["max_refine"] == 1
    app.switch_page("pages/ask.py").run()
    app.selectbox(key="ask_pipeline").select("macsql").run()
    assert app.get_by_key("ask_param_macsql_max_refine").value == 1


def test_an_unknown_row_count_is_shown_as_unknown_not_minus_one(tmp_path):
    from agents.db.schema import Column, Table

    table = Table(name="big", columns=[Column(name="x", type="TEXT")], row_count=-1)
    assert table.row_count_label == "unknown"
