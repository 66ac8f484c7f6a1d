"""Limits as the browser sees them: the server's upload limit, names shown as text, WAL uploads,
and results cut by the byte budget flagged in the page and bounded in the session state."""

from __future__ import annotations

import io
import json
import re
import sqlite3
import zipfile

from agents.db.exec_result import MAX_RESULT_BYTES

from app_helpers import errors, sqlite_bytes

IMAGE = "![x](http://example.invalid/p.png)"
# Markdown that would render: an unescaped "](" (a link or image) or "<" (HTML, an autolink).
LIVE_MARKDOWN = re.compile(r"(?<!\\)\]\(|(?<!\\)<[a-z/!]", re.I)


def rendered_texts(at) -> list[str]:
    """The Markdown source of every text element on the page."""
    kinds = ("markdown", "caption", "error", "warning", "info", "success")
    return [e.value for kind in kinds for e in getattr(at, kind)]


def ask_baseline(at, app_env) -> str:
    """Run the one-prompt pipeline (its answer: SELECT 1); the key of the answer's SQL box."""
    app_env.push("```sql\nSELECT 1\n```")
    at.text_area(key="ask_question").input("How many are there?")
    at.selectbox(key="ask_pipeline").select("baseline")
    at.run()
    at.button(key="ask_run_button").click().run()
    assert not at.exception and errors(at) == [], errors(at)
    return [t.key for t in at.text_area if t.key.startswith("sql_")][0]


def upload(at, name: str, data: bytes):
    at.file_uploader[0].set_value((name, data, "application/octet-stream")).run()
    assert not at.exception, at.exception
    return at


def test_the_upload_limit_is_the_servers_and_no_session_raises_it(app, tmp_path,
                                                                 server_upload_limit):
    server_upload_limit(1)
    app.session_state["upload_limit_mb"] = 4096  # the old per-session key means nothing now
    app.run()
    good = sqlite_bytes(tmp_path, "CREATE TABLE t (x); INSERT INTO t VALUES (1);")
    upload(app, "big.sqlite", good + b"\0" * (2 * 1024 * 1024))
    [message] = errors(app)
    assert "too large" in message and "limit is 1.0 MiB" in message
    app.switch_page("pages/settings.py").run()
    labels = [n.label for n in app.number_input]
    assert labels[:2] == ["Query time limit (seconds, 0.5 to 300)",
                          "Row cap per query (10 to 1,000,000)"]
    assert not any("upload" in label.lower() for label in labels)
    assert any("limited to 1 MB by the server" in c.value for c in app.caption)


def test_limits_out_of_range_are_refused_with_a_message_and_change_nothing(app):
    app.switch_page("pages/settings.py").run()
    app.number_input[1].set_value(2)
    app.button[[b.label for b in app.button].index("Save limits")].click().run()
    assert not app.exception, app.exception
    [message] = errors(app)
    assert message == ("Limits not changed: the row cap must be 10 to 1,000,000 rows, not 2. "
                       "Queries still stop after 10 s and return at most 1,000 rows.")
    app.number_input[1].set_value(10)
    app.button[[b.label for b in app.button].index("Save limits")].click().run()
    assert errors(app) == []
    assert any("return at most 10 rows" in m.value for m in app.success)


def test_the_operator_caps_what_any_session_may_raise_its_limits_to(app, monkeypatch):
    app.switch_page("pages/settings.py").run()
    app.number_input[0].set_value(120.0)
    app.button[[b.label for b in app.button].index("Save limits")].click().run()
    assert errors(app) == [] and app.session_state["exec_limits"]["timeout"] == 120.0
    monkeypatch.setenv("STUDIO_MAX_QUERY_SECONDS", "30")
    monkeypatch.setenv("STUDIO_MAX_QUERY_ROWS", "5000")
    app.run()
    labels = [n.label for n in app.number_input]
    assert labels[:2] == ["Query time limit (seconds, 0.5 to 30)",
                          "Row cap per query (10 to 5,000)"]
    assert app.number_input[0].value == 30.0  # the session's 120 s is held to the new cap
    app.number_input[1].set_value(50_000)
    app.button[[b.label for b in app.button].index("Save limits")].click().run()
    [message] = errors(app)
    assert "the row cap must be 10 to 5,000 rows, not 50,000" in message


def test_names_from_the_database_are_shown_as_text(app, app_env, tmp_path):
    quoted = IMAGE.replace('"', '""')
    # a view that fails when read, so its name reaches an error message
    data = sqlite_bytes(tmp_path, f'CREATE TABLE base (body TEXT); INSERT INTO base VALUES '
                                  f'(\'not json\'); CREATE VIEW "{quoted}" AS SELECT '
                                  f'json(body) AS "<img src=x>" FROM base;')
    upload(app, "![f](javascript:alert(1)).sqlite", data)
    assert app.selectbox(key="db_picker_ask").value.startswith("upload:")
    app.switch_page("pages/schema.py").run()
    app.selectbox(key="schema_table").select(IMAGE).run()
    assert not app.exception
    [failure] = errors(app)
    assert failure.startswith("Could not read !\\[x\\](http\\:")
    texts = rendered_texts(app)
    assert any("javascript" in t for t in texts)  # the database's name is on the page
    assert [t for t in texts if LIVE_MARKDOWN.search(t)] == []

    app.switch_page("pages/ask.py").run()
    sql_key = ask_baseline(app, app_env)
    app.text_area(key=sql_key).input(f'SELECT * FROM "{IMAGE}y"')
    app.button(key=sql_key.replace("sql_", "run_sql_")).click().run()
    [message] = errors(app)
    assert "no such table" in message and "\\](http\\:" in message
    assert [t for t in errors(app) + [c.value for c in app.caption if "row(s)" in c.value]
            if LIVE_MARKDOWN.search(t)] == []


def _wal_files(tmp_path) -> tuple[bytes, bytes]:
    path = tmp_path / "w.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.executescript("CREATE TABLE pets (id INTEGER PRIMARY KEY, kind TEXT);"
                       "INSERT INTO pets (kind) VALUES ('cat'), ('dog');")
    main, wal = path.read_bytes(), (tmp_path / "w.db-wal").read_bytes()
    conn.close()
    return main, wal


def test_a_wal_database_uploads_with_its_wal_or_says_what_is_missing(app, tmp_path):
    main, wal = _wal_files(tmp_path)
    upload(app, "w.db", main)
    [message] = errors(app)
    assert "WAL mode" in message and ".zip" in message
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("w.db", main)
        archive.writestr("w.db-wal", wal)
    upload(app, "w.zip", buffer.getvalue())
    assert errors(app) == []
    assert app.selectbox(key="db_picker_ask").value == "upload:w"
    assert app.dataframe[0].value.to_dict("records") == [{"table": "pets", "rows": 2,
                                                          "columns": 2}]


def test_a_checkpointed_wal_upload_opens_with_a_notice(app, tmp_path):
    path = tmp_path / "done.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE t (x)")
    conn.close()  # the last connection checkpoints and removes the -wal
    upload(app, "done.db", path.read_bytes())
    assert errors(app) == []
    [notice] = app.warning
    assert "WAL-mode" in notice.value and ".zip" in notice.value


def test_a_result_cut_by_the_byte_budget_is_flagged_and_bounded(app, app_env):
    sql_key = ask_baseline(app, app_env)
    app.text_area(key=sql_key).input(
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000) "
        "SELECT x, printf('%.*c', 1000000, 'y') AS big FROM c")
    app.button(key=sql_key.replace("sql_", "run_sql_")).click().run()
    assert errors(app) == []
    [note] = [c.value for c in app.caption if "row(s)" in c.value and "budget" in c.value]
    assert "size budget" in note and "cut to 64 KiB" in note
    preview = app.session_state[f"edited_result_{app.session_state['ask_run'].run_id}"]["preview"]
    assert preview["truncated_reason"] == "bytes" and preview["cells_cut"] > 0
    assert len(json.dumps(preview)) < MAX_RESULT_BYTES * 1.1
