"""``python -m agents``: streaming output, JSON traces, and one clear line for every bad input."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import types
from pathlib import Path

import pytest

from agents.cli import main as cli

ROOT = Path(__file__).resolve().parent.parent

SQL = """
CREATE TABLE author (author_id INTEGER PRIMARY KEY, name TEXT, country TEXT);
CREATE TABLE book (book_id INTEGER PRIMARY KEY, title TEXT,
                   author_id INTEGER REFERENCES author(author_id), year INTEGER);
INSERT INTO author VALUES (1, 'Le Guin', 'USA'), (2, 'Lem', 'Poland');
INSERT INTO book VALUES (1, 'The Dispossessed', 1, 1974), (2, 'Solaris', 2, 1961),
                        (3, 'Lathe of Heaven', 1, 1971);
"""
DECOMPOSER = "thinking step by step"
REFINER = "Now please fixup old SQL"


@pytest.fixture
def db_path(tmp_path) -> str:
    path = tmp_path / "books.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(SQL)
    conn.close()
    return str(path)


@pytest.fixture(autouse=True)
def quick_model_settings(monkeypatch):
    monkeypatch.setenv("STUDIO_MAX_RETRIES", "0")
    monkeypatch.setenv("STUDIO_REQUEST_TIMEOUT", "5")


def ask(db_path, question, *extra, url):
    return cli.main(["ask", "--db", db_path, question, "--base-url", url, "--no-cache", *extra])


def assert_one_error_line(err: str, *fragments: str) -> None:
    assert err.startswith("error: "), err
    assert err.strip().count("\n") == 0, err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, err


# -- ask ------------------------------------------------------------------------------------------
def test_ask_streams_each_step_then_the_sql_and_the_result(db_path, scripted_llm, capsys):
    scripted_llm.when(DECOMPOSER, "Sub question 1: Books by Le Guin?\nSQL\n```sql\n"
                                  "SELECT title FROM book JOIN authors USING (author_id) "
                                  "WHERE name = 'Le Guin'\n```")
    scripted_llm.when(REFINER, "```sql\nSELECT title FROM book JOIN author USING (author_id) "
                               "WHERE name = 'Le Guin' ORDER BY year\n```")
    code = ask(db_path, "Which books did Le Guin write?", url=scripted_llm.base_url)
    out, err = capsys.readouterr()

    assert code == 0, err
    assert err == ""
    expected_order = ["[1] Selector", "skipped: the whole schema fits the Decomposer's prompt",
                      "[2] Value grounding", "author.name = 'Le Guin'",
                      "[3] Decomposer", "Sub question 1: Books by Le Guin?",
                      "[4] Refiner", "error (OperationalError): no such table: authors",
                      "repair 1:", "[5] Refiner", "the SQL runs and returns 2 row(s)",
                      "Final SQL:", "title\n-----", "Lathe of Heaven", "The Dispossessed",
                      "(2 rows)"]
    positions = [out.index(text) for text in expected_order]
    assert positions == sorted(positions), out
    assert "model call(s)" in out and "tokens" in out
    assert "    SELECT title\n    FROM book\n    JOIN authors" in out  # laid out by sqlparse
    assert "ORDER BY year" in out  # identifiers keep their case


def test_ask_prints_the_model_output_as_it_is_written(db_path, scripted_llm, capsys):
    answer = "Counting the books:\n```sql\nSELECT COUNT(*) FROM book\n```"
    scripted_llm.push({"content": answer, "chunk_delay": 0.01})
    code = ask(db_path, "How many books?", "--pipeline", "baseline", url=scripted_llm.base_url)
    out, err = capsys.readouterr()
    assert code == 0, err
    live = ("  model output:\n    Counting the books:\n    ```sql\n    SELECT COUNT(*) FROM book"
            "\n    ```\n")
    assert live in out
    assert out.index("[1] SQL Writer") < out.index(live) < out.index("model call(s)")


def test_ask_no_stream_prints_only_finished_steps(db_path, scripted_llm, capsys):
    scripted_llm.push("```sql\nSELECT COUNT(*) FROM book\n```")
    code = ask(db_path, "How many books?", "--pipeline", "baseline", "--no-stream",
               url=scripted_llm.base_url)
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "model output" not in out and "[1] SQL Writer" in out and "(1 row)" in out


def test_ask_json_prints_the_whole_trace(db_path, scripted_llm, capsys):
    scripted_llm.push("```sql\nSELECT COUNT(*) FROM book\n```")
    code = ask(db_path, "How many books?", "--pipeline", "baseline", "--json",
               url=scripted_llm.base_url)
    out, err = capsys.readouterr()
    assert code == 0, err
    trace = json.loads(out)
    assert trace["status"] == "done" and trace["pipeline"] == "baseline"
    assert trace["final_sql"] == "SELECT COUNT(*) FROM book"
    assert trace["result"]["rows"] == [[3]]
    assert trace["events"][0]["agent"] == "SQL Writer" and trace["events"][0]["calls"]
    assert trace["totals"]["llm_calls"] == 1


def test_ask_caps_the_rows_it_shows(db_path, scripted_llm, capsys):
    scripted_llm.push("```sql\nSELECT title FROM book ORDER BY title\n```")
    ask(db_path, "All titles?", "--pipeline", "baseline", "--max-rows", "2",
        url=scripted_llm.base_url)
    out = capsys.readouterr().out
    assert "Lathe of Heaven" in out and "Solaris" in out and "The Dispossessed" not in out
    assert "(truncated: showing 2 of 3 rows)" in out


def test_ask_passes_params_and_evidence_to_the_pipeline(db_path, scripted_llm, capsys):
    scripted_llm.push("```sql\nSELECT name FROM author\n```")
    code = ask(db_path, "Authors?", "--pipeline", "baseline", "--param", "schema_format=macsql",
               "--evidence", "authors write books", url=scripted_llm.base_url)
    assert code == 0
    prompt = scripted_llm.requests[0]["messages"][-1]["content"]
    assert "# Table: author" in prompt and "Hint: authors write books" in prompt


def test_a_failed_run_prints_the_steps_and_one_error_line(db_path, scripted_llm, capsys):
    scripted_llm.when(DECOMPOSER, "I cannot do that.")
    code = ask(db_path, "Which books?", url=scripted_llm.base_url)
    out, err = capsys.readouterr()
    assert code == 1
    assert "FAILED" in out
    assert_one_error_line(err, "Decomposer", "could not be parsed")


# -- bad input: one line, no traceback -------------------------------------------------------------
def _closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.mark.parametrize("case", ["missing", "folder", "text", "empty_file", "no_tables"])
def test_unusable_databases_exit_1_with_one_line(case, tmp_path, scripted_llm, capsys):
    path = tmp_path / "x.sqlite"
    if case == "folder":
        path.mkdir()
    elif case == "text":
        path.write_text("name,age\nAna,3\n")
    elif case == "empty_file":
        path.write_bytes(b"")
    elif case == "no_tables":
        sqlite3.connect(path).execute("PRAGMA user_version = 1").connection.close()
    code = ask(str(path), "How many?", url=scripted_llm.base_url)
    err = capsys.readouterr().err
    assert code == 1
    assert_one_error_line(err)
    assert scripted_llm.requests == []


@pytest.mark.parametrize("args, fragment", [
    (["ask", "--db", "{db}", "   "], "the question is empty"),
    (["ask", "--db", "{db}", "x" * 20_001],
     "too long (20,001 characters; the limit is 20,000)"),
    (["ask", "--db", "{db}", "q", "--pipeline", "nope"], "unknown pipeline 'nope'"),
    (["ask", "--db", "{db}", "q", "--param", "max_refine"], "NAME=VALUE"),
    (["ask", "--db", "{db}", "q", "--param", "colour=red"], "no parameter 'colour'"),
    (["ask", "--db", "{db}", "q", "--param", "max_refine=lots"], "max_refine must be"),
    (["ask", "--db", "{db}", "q", "--param", "use_selector=sometimes"], "must be one of"),
    (["ask", "q"], "required: --db"),
    (["ask", "--db", "{db}", "q", "--max-rows", "0"], "--max-rows"),
    (["compare", "--db", "{db}", "q", "--pipelines", "baseline,nope"], "unknown pipeline"),
    (["compare", "--db", "{db}", "q", "--param", "r9.x=1"], "not one of the compared"),
    (["frobnicate"], "invalid choice"),
    (["model"], "choose an action"),
])
def test_usage_mistakes_exit_2_with_one_line(args, fragment, db_path, capsys):
    code = cli.main([a.replace("{db}", db_path) for a in args])
    err = capsys.readouterr().err
    assert code == 2
    assert_one_error_line(err, fragment)


def test_an_unreachable_model_exits_1_with_one_line(db_path, capsys):
    code = cli.main(["ask", "--db", db_path, "How many books?", "--base-url", _closed_port_url(),
                     "--no-cache"])
    out, err = capsys.readouterr()
    assert code == 1
    assert_one_error_line(err, "model call failed")


def test_bad_model_settings_exit_1_with_one_line(db_path, capsys):
    code = cli.main(["ask", "--db", db_path, "q", "--base-url", "ftp://x", "--no-cache"])
    assert code == 1
    assert_one_error_line(capsys.readouterr().err, "base_url")


def test_the_module_entry_point_never_shows_a_traceback(tmp_path, scripted_llm):
    env = dict(os.environ, PYTHONPATH=str(ROOT), STUDIO_MAX_RETRIES="0")
    missing = subprocess.run([sys.executable, "-m", "agents", "ask", "--db",
                              str(tmp_path / "nope.sqlite"), "q"],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert missing.returncode == 1
    assert_one_error_line(missing.stderr, "no such file")


# -- schema, compare, model, plug-ins --------------------------------------------------------------
def test_schema_prints_the_macsql_form_and_the_ddl(db_path, capsys):
    assert cli.main(["schema", "--db", db_path]) == 0
    out = capsys.readouterr().out
    assert "# Table: author" in out and "[Foreign keys]" in out
    assert "book.`author_id` = author.`author_id`" in out
    assert cli.main(["schema", "--db", db_path, "--format", "ddl"]) == 0
    out = capsys.readouterr().out
    assert "CREATE TABLE book (" in out and "REFERENCES author" in out


def test_compare_prints_a_side_by_side_summary(db_path, scripted_llm, capsys):
    scripted_llm.when("You are a SQLite expert", "```sql\nSELECT COUNT(*) FROM book\n```")
    scripted_llm.when(DECOMPOSER, "Sub question 1: count\nSQL\n```sql\n"
                                  "SELECT COUNT(book_id) AS n FROM book\n```")
    code = cli.main(["compare", "--db", db_path, "How many books?", "--pipelines",
                     "baseline,macsql", "--param", "macsql.max_refine=1", "--base-url",
                     scripted_llm.base_url, "--no-cache"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "[macsql] Decomposer done" in out
    header = next(line for line in out.splitlines() if line.startswith("pipeline"))
    assert "agrees with" in header
    assert "Agreement: all pipelines return the same result." in out
    assert "== baseline ==" in out and "== macsql ==" in out

    scripted_llm.clear()
    scripted_llm.when("You are a SQLite expert", "```sql\nSELECT COUNT(*) FROM book\n```")
    scripted_llm.when(DECOMPOSER, "```sql\nSELECT COUNT(*) FROM author\n```")
    cli.main(["compare", "--db", db_path, "How many books?", "--json", "--base-url",
              scripted_llm.base_url, "--no-cache"])
    data = json.loads(capsys.readouterr().out)
    assert data["all_agree"] is False and data["groups"] == [["baseline"], ["macsql"]]


def test_model_prepare_delegates_to_the_local_model(monkeypatch):
    from agents.llm import local_model

    seen = []
    monkeypatch.setattr(local_model, "prepare_main", lambda argv: seen.append(argv) or 0)
    assert cli.main(["model", "prepare", "--fast"]) == 0
    assert cli.main(["model", "prepare"]) == 0
    assert seen == [["--fast"], []]


def test_command_modules_plug_in(monkeypatch, capsys):
    plugin = types.ModuleType("tests_fake_command")

    def register(subparsers):
        p = subparsers.add_parser("hello", help="say hello")
        p.add_argument("--name", default="world")
        p.set_defaults(func=lambda args: print(f"hello {args.name}") or 0)

    plugin.register = register
    monkeypatch.setattr(cli, "COMMANDS", (*cli.COMMANDS, plugin))
    assert cli.main(["hello", "--name", "there"]) == 0
    assert capsys.readouterr().out.strip() == "hello there"


def test_render_event_shows_the_selectors_choices_and_a_give_up():
    from agents.core.events import LLMCall, StepEvent
    from agents.runs.textview import render_event

    tables = [
        {"table": "book", "decision": "keep_all", "kept": ["book_id", "title"], "dropped": []},
        {"table": "author", "decision": "columns", "kept": ["author_id", "name"],
         "dropped": ["country"]},
        {"table": "loan", "decision": "drop_all", "kept": [], "dropped": ["loan_id"]}]
    selector = StepEvent(
        index=0, step="selector", agent="Selector", parsed={"used": True, "tables": tables},
        notes=["ignored unknown table 'ghost'"],
        calls=[LLMCall(messages=[], prompt_tokens=120, completion_tokens=30)], seconds=2.0)
    lines = render_event(selector)
    assert lines[:3] == ["  keep book (all columns)",
                         "  keep author: author_id, name (dropped 1 column(s))",
                         "  drop loan"]
    assert "  note: ignored unknown table 'ghost'" in lines
    assert lines[-1] == "  (1 model call(s), 120+30 tokens, 2.0 s)"

    gave_up = StepEvent(index=5, step="refiner", agent="Refiner", sql="SELECT x FROM t",
                        parsed={"status": "gave_up", "error": "no such column: x",
                                "error_class": "OperationalError", "attempt": 3})
    text = "\n".join(render_event(gave_up))
    assert "still failing (OperationalError): no such column: x" in text
    assert "SQL:" not in text


def test_names_with_control_characters_cannot_drive_the_terminal(tmp_path, capsys):
    import sqlite3

    path = tmp_path / "odd.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute('CREATE TABLE "t\x1b[2J" ("c\x07" TEXT)')
        conn.execute('INSERT INTO "t\x1b[2J" VALUES (\'x\')')
    assert cli.main(["schema", "--db", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "t\\x1b[2J" in out and "c\\x07" in out
