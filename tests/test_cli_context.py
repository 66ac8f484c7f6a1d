"""``ask`` on the command line with the database's knowledge, a follow-up of a stored run and the
result summary, as the Ask page gives them."""

from __future__ import annotations


import pytest

from agents.cli import main as cli
from agents.core.engine import run_to_end, start_run
from agents.db.database import open_database
from agents.pipelines import get_pipeline
from agents.store import Store
from dbfactory import make_db
from scripted_llm import prompt_text

NOTE_TEXT = "a writer whose country is Poland"


@pytest.fixture
def db_path(tmp_path) -> str:
    return str(make_db(tmp_path / "books.sqlite",
                       "CREATE TABLE author (author_id INTEGER PRIMARY KEY, name TEXT, "
                       "country TEXT); INSERT INTO author VALUES (1, 'Le Guin', 'USA'), "
                       "(2, 'Lem', 'Poland');"))


@pytest.fixture(autouse=True)
def quick_model_settings(monkeypatch):
    monkeypatch.setenv("STUDIO_MAX_RETRIES", "0")
    monkeypatch.setenv("STUDIO_REQUEST_TIMEOUT", "5")


def ask(db_path, *extra, url):
    return cli.main(["ask", "--db", db_path, "Which authors?", "--pipeline", "baseline",
                     "--base-url", url, "--no-cache", *extra])


def test_ask_gives_the_databases_notes_unless_told_not_to(db_path, scripted_llm, capsys):
    with Store() as store:
        store.add_note("books", NOTE_TEXT, "pole")
    scripted_llm.when(lambda req: True, "```sql\nSELECT name FROM author\n```")
    assert ask(db_path, url=scripted_llm.base_url) == 0
    out = capsys.readouterr().out
    assert "Knowledge notes given (1):" in out and f"- pole: {NOTE_TEXT}" in out
    assert NOTE_TEXT in prompt_text(scripted_llm.requests[0])
    assert ask(db_path, "--no-knowledge", url=scripted_llm.base_url) == 0
    assert "Knowledge notes" not in capsys.readouterr().out
    assert NOTE_TEXT not in prompt_text(scripted_llm.requests[1])


def test_ask_follows_up_a_stored_run_and_summarizes(db_path, llm, scripted_llm, capsys):
    scripted_llm.push("```sql\nSELECT name FROM author\n```")
    with open_database(db_path) as db:
        first = run_to_end(start_run(get_pipeline("baseline"), "Which authors are there?", db,
                                     llm))
    with Store() as store:
        store.save_run(first)
    scripted_llm.push("```sql\nSELECT name FROM author WHERE country = 'Poland'\n```",
                      "Only Lem is from Poland.")
    code = ask(db_path, "--follow-up", first.run_id, "--summary", "--json",
               url=scripted_llm.base_url)
    assert code == 0
    prompt = prompt_text(scripted_llm.requests[1])
    assert "Previous question: Which authors are there?" in prompt
    assert "Its SQL: SELECT name FROM author" in prompt
    scripted_llm.push("```sql\nSELECT name FROM author WHERE country = 'Poland'\n```",
                      "Only Lem is from Poland.")
    capsys.readouterr()
    assert ask(db_path, "--follow-up", first.run_id, "--summary",
               url=scripted_llm.base_url) == 0
    out = capsys.readouterr().out
    assert f"Follow-up of run {first.run_id}: Which authors are there?" in out
    assert "Result Summarizer" in out and "In words:\n  Only Lem is from Poland." in out


def test_ask_says_so_when_the_run_to_follow_up_is_unknown(db_path, scripted_llm, capsys):
    assert ask(db_path, "--follow-up", "no-such-run", url=scripted_llm.base_url) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "no stored run 'no-such-run'" in err
    assert "Traceback" not in err and not scripted_llm.requests
