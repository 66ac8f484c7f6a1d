"""How R³ reads its agents' replies: review verdicts, personas, the writer's SQL, the result
table and SQL comparison, and a malformed reply failing its step with a clear message."""

from __future__ import annotations

import pytest

from agents.core.engine import ParseError
from agents.pipelines.r3.replies import parse_personas, parse_review, parse_writer_reply
from agents.pipelines.r3.result_table import result_table
from agents.db.sqltext import same_sql, sql_diff
from r3_script import SQL_A, invitation, run, writer
from scripted_llm import last_user_message


@pytest.mark.parametrize("step, replies, message", [
    ("Invitation", [writer(SQL_A), "I would invite some experts.", "Still no JSON, sorry."],
     "no JSON object found"),
    ("Reviewer", [writer(SQL_A), invitation(1), "Hmm, interesting query.", "No idea."],
     "no verdict found"),
    ("SQL-Writer", ["I cannot answer that.", "Really, I cannot."], "no SQL query found"),
])
def test_malformed_output_fails_the_step_with_a_clear_message(db, llm, scripted_llm, step,
                                                               replies, message):
    scripted_llm.push(*replies)
    result = run(db, llm, n_reviewers=1)

    assert result.status == "failed"
    failed = result.events[-1]
    assert failed.status == "error" and failed.agent.startswith(step)
    assert "could not be parsed after a retry" in failed.error and message in failed.error
    assert len(failed.calls) == 2  # the parse error was fed back once
    assert message in last_user_message(scripted_llm.requests[-1])
    assert scripted_llm.remaining == 0


def test_a_persona_list_without_expertise_is_malformed(db, llm, scripted_llm):
    scripted_llm.push(writer(SQL_A), '{"Reviewer 1": ""}', '[]')
    result = run(db, llm, n_reviewers=1)
    assert result.status == "failed"
    assert "names no reviewer" in result.events[-1].error


# -- parsing and SQL text ---------------------------------------------------------------------

@pytest.mark.parametrize("text, verdict, comment", [
    ("COMMENT: Missing a filter.\nVERDICT: revise", "revise", "Missing a filter."),
    ("VERDICT: revise\nCOMMENT: Join the concert table.", "revise", "Join the concert table."),
    ("**Comment:** All good.\n\n**Verdict:** **Approve**", "approve", "All good."),
    ("The SQL is correct, I approve it.", "approve", "The SQL is correct, I approve it."),
    ("It needs revision: join the concert table.", "revise",
     "It needs revision: join the concert table."),
])
def test_review_verdicts_are_read_robustly(text, verdict, comment):
    assert parse_review(text) == {"verdict": verdict, "comment": comment}


def test_a_revise_verdict_without_a_comment_is_rejected():
    with pytest.raises(ParseError, match="needs a comment"):
        parse_review("VERDICT: revise")


def test_personas_come_from_the_papers_dictionary_or_a_list():
    assert parse_personas('{"Reviewer X": "Data Analyst", "Reviewer Y": "DB Engineer",}') == [
        {"name": "Reviewer X", "expertise": "Data Analyst"},
        {"name": "Reviewer Y", "expertise": "DB Engineer"}]
    assert parse_personas('[{"name": "Ana", "description": "joins"}, {"name": "Ana", '
                          '"expertise": "filters"}]') == [
        {"name": "Ana", "expertise": "joins"}, {"name": "Ana (2)", "expertise": "filters"}]
    with pytest.raises(ParseError, match="placeholders"):
        parse_personas('{"Reviewer A": "Data Analyst in <the domain of the database>"}')


def test_writer_reply_separates_reasoning_from_sql():
    reply = parse_writer_reply("We need names.\n```sql\nSELECT name FROM t;\n```\nDone.")
    assert reply.sql == "SELECT name FROM t" and reply.text == "We need names.\n\nDone."


def test_consensus_ignores_layout_but_not_literals():
    assert same_sql("SELECT name FROM t WHERE c = 'France';",
                    "select name\nfrom t where c='France'")
    assert not same_sql("SELECT name FROM t WHERE c = 'France'",
                        "SELECT name FROM t WHERE c = 'france'")
    diff = sql_diff("SELECT a FROM t", "SELECT a, b FROM t")
    assert "-SELECT a" in diff and "+SELECT a," in diff


def test_result_table_is_compact():
    rows = [[i, "x" * 60] for i in range(12)]
    table = result_table({"ok": True, "columns": ["id", "text"], "rows": rows, "row_count": 12})
    lines = table.splitlines()
    assert lines[0] == "id | text" and len(lines) == 7
    assert lines[-1] == "(12 rows in total, first 5 shown)" and lines[1].endswith("…")
    assert "empty" in result_table({"ok": True, "columns": ["n"], "rows": [], "row_count": 0})
