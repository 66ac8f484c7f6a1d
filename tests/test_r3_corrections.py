"""R³'s corrections of SQL that fails: the error sent back in the writer's dialogue, the
tables fix prompt and its name-error context, the name rewrite once corrections are spent,
and a repeated correction asked again sampled."""

from __future__ import annotations

from agents.pipelines.r3 import PIPELINE
from agents.pipelines.r3.dialogue import writer_messages
from r3_script import REVIEWER, SQL_A, WRITER, approve, invitation, requests_with, run, writer
from scripted_llm import last_user_message, prompt_text


# -- execution errors go back to the writer ---------------------------------------------------

def test_execution_error_goes_back_to_the_writer_in_its_dialogue(db, llm, scripted_llm):
    bad = "SELECT nme FROM singer WHERE country = 'France'"
    scripted_llm.push(writer(bad, "First try."), writer(SQL_A, "Fixed the column name."),
                      invitation(1), approve())
    result = run(db, llm, n_reviewers=1)

    assert result.status == "done", result.error
    assert [e.agent for e in result.events[:4]] == ["SQL-Writer", "Execution", "SQL-Writer",
                                                    "Execution"]
    failed = result.events[1]
    assert failed.execution["ok"] is False and "nme" in failed.parsed["error"]
    fix_request = scripted_llm.requests[1]["messages"]
    assert [m["role"] for m in fix_request] == ["user", "assistant", "user"]
    assert WRITER in fix_request[0]["content"]
    assert "First try." in fix_request[1]["content"]  # the writer's own earlier answer
    assert "no such column: nme" in fix_request[2]["content"]
    # with the real column names of the table, so the writer need not guess again
    assert "Hint: Table singer has columns:" in fix_request[2]["content"]
    assert result.events[2].parsed["sql_before"] == bad
    assert result.events[2].parsed["sql_after"] == SQL_A
    assert result.final_sql == SQL_A


def test_the_dialogue_history_is_truncated_to_the_kept_turns(db, llm, scripted_llm):
    scripted_llm.push(writer("SELECT a1 FROM singer", "answer one"),
                      writer("SELECT a2 FROM singer", "answer two"),
                      writer("SELECT a3 FROM singer", "answer three"))
    result = run(db, llm, n_reviewers=1, history_turns=1, max_fix_attempts=2)

    assert result.status == "failed"
    assert "still fails after 2 correction(s)" in result.error and "a3" in result.error
    third = scripted_llm.requests[2]["messages"]
    assert [m["role"] for m in third] == ["user", "assistant", "user"]
    assert "answer two" in third[1]["content"]
    assert "answer one" not in prompt_text(scripted_llm.requests[2])
    assert "no such column: a2" in third[2]["content"]


def test_writer_messages_keep_the_first_prompt_and_the_last_turns():
    dialogue = [{"role": "assistant", "content": "a0"}, {"role": "user", "content": "u1"},
                {"role": "assistant", "content": "a1"}]
    kept = writer_messages("first", dialogue, "u2", turns=2)
    assert [m["content"] for m in kept] == ["first", "a0", "u1", "a1", "u2"]
    kept = writer_messages("first", dialogue, "u2", turns=1)
    assert [m["content"] for m in kept] == ["first", "a1", "u2"]


# -- the tables fix prompt, the name rewrite and repeated corrections -------------------------

ALIAS_ERROR = ("SELECT T2.name FROM singer AS T1 JOIN singer_in_concert AS T2 "
               "ON T1.singer_id = T2.singer_id")


def test_tables_fix_prompt_names_the_alias_to_write_and_notices_a_repeat(db, llm, scripted_llm):
    scripted_llm.push(writer(ALIAS_ERROR, "First try."), writer(ALIAS_ERROR, "Again."),
                      writer(SQL_A, "Fixed."), invitation(1), approve())
    result = run(db, llm, n_reviewers=1, fix_prompt="tables", repair_from_hint=False)

    assert result.status == "done", result.error
    first, second = (last_user_message(scripted_llm.requests[i]) for i in (1, 2))
    assert first.startswith("This SQL:\n```sql\n" + ALIAS_ERROR)
    assert "failed with the error: no such column: T2.name\nHint: T2 is table" in first
    assert ("The tables this SQL uses, with all their columns:\n"
            "- singer AS T1: singer_id, name, country, age\n"
            "- singer_in_concert AS T2: concert_id, singer_id\n") in first
    assert "name is a column of singer, which this SQL names T1: write T1.name." in first
    assert "singer_in_concert.singer_id = singer.singer_id" in first
    assert "You gave this same SQL before" not in first
    assert first.endswith("Use only the columns listed for each table.\n"
                          "Correct the SQL and give it in one ```sql ... ``` block.\n")
    assert "You gave this same SQL before and it failed then too" in second
    fixes = [e for e in result.events if e.step == "fix"]
    assert [e.inputs["prompt"] for e in fixes] == ["tables", "tables"]
    assert result.final_sql == SQL_A


def test_spent_corrections_on_a_name_error_go_on_with_the_version_that_runs(db, llm,
                                                                            scripted_llm):
    """The writer repeats the failing SQL until its corrections are spent: the version one
    clear change makes run (``name`` from singer, T1) goes on to the reviewers, who see it."""
    scripted_llm.push(writer(ALIAS_ERROR, "First try."), writer(ALIAS_ERROR, "Again."),
                      invitation(1), approve())
    # (the Final check would then leave out the join of singer_in_concert, which nothing reads)
    result = run(db, llm, n_reviewers=1, max_fix_attempts=1, drop_unread_joins=False,
                 repair_from_hint=False)

    assert result.status == "done", result.error
    execution = [e for e in result.events if e.step == "execute"][-1]
    assert execution.inputs["name_rewrite"] is True
    assert execution.parsed["ok"] is True and execution.parsed["written_sql"] == ALIAS_ERROR
    assert "no such column: T2.name" in execution.parsed["written_error"]
    assert "T1.name" in execution.parsed["rewrite"] and execution.sql == result.final_sql
    assert "T1.name" in result.final_sql and execution.execution["ok"]
    review = requests_with(scripted_llm, REVIEWER)[0]
    assert "T1.name" in prompt_text(review) and ALIAS_ERROR not in prompt_text(review)
    # the loop's state is that of SQL that runs: the reviews see its result, no error is left
    data = execution.data
    assert data["sql"] == result.final_sql and data["result"]["sql"] == result.final_sql
    assert data["fix_attempts"] == 0 and data["last_error"] is None
    assert data["failed_sqls"][-1] == ALIAS_ERROR


def test_without_name_rewrite_spent_corrections_fail_the_run(db, llm, scripted_llm):
    scripted_llm.push(writer(ALIAS_ERROR), writer(ALIAS_ERROR))
    result = run(db, llm, n_reviewers=1, max_fix_attempts=1, name_rewrite=False,
                 repair_from_hint=False)
    assert result.status == "failed" and "still fails after 1 correction(s)" in result.error
    assert PIPELINE.resolve_recorded({"writer_style": "direct"})["name_rewrite"] is False


def test_tables_fix_prompt_adds_nothing_for_other_errors(db, llm, scripted_llm):
    scripted_llm.push(writer("SELECT name FROM singer WHERE"), writer(SQL_A), invitation(1),
                      approve())
    result = run(db, llm, n_reviewers=1, fix_prompt="tables")
    message = last_user_message(scripted_llm.requests[1])
    # no name error, no repeat: the paper's message, word for word
    assert message == ("This SQL:\n```sql\nSELECT name FROM singer WHERE\n```\n"
                       "failed with the error: incomplete input\n"
                       "Correct the SQL and give it in one ```sql ... ``` block.\n")
    assert result.final_sql == SQL_A


def test_name_error_context_in_a_join_condition_and_for_a_table_not_joined(db):
    from agents.rules.name_context import name_error_context

    schema = db.schema
    join = ("SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.concert_id = "
            "T2.concert_id")
    block = name_error_context("no such column: T1.concert_id", join, schema)
    assert "T1.concert_id is written in a join condition" in block
    assert "concert_id is a column of concert, which this SQL names T2." in block
    assert "write T2.concert_id" not in block  # T2.concert_id = T2.concert_id would be no join
    assert "singer_in_concert.concert_id = concert.concert_id" in block

    bare = "SELECT year FROM singer"
    block = name_error_context("no such column: year", bare, schema)
    assert "- singer: singer_id, name, country, age" in block
    assert ("year is a column of concert, which this SQL does not use: join it if the question "
            "needs it. concert has the columns: concert_id, concert_name, year") in block

    block = name_error_context("no such table: country", "SELECT name FROM country", schema)
    assert "country is a column of singer, which this SQL does not use" in block
    assert name_error_context("near \"FROM\": syntax error", bare, schema) == ""


def test_a_correction_that_repeats_the_failing_sql_is_asked_again_sampled(db, llm,
                                                                          scripted_llm):
    """The second try replaces the repeated answer in the writer's dialogue, so the next
    prompt holds one answer per correction."""
    scripted_llm.push(writer(ALIAS_ERROR, "First try."), writer(ALIAS_ERROR, "Again."),
                      writer(SQL_A, "Fixed."), invitation(1), approve(), approve())
    result = run(db, llm, n_reviewers=1, fix_prompt="tables", repeat_temperature=0.8,
                 repair_from_hint=False)

    assert result.status == "done", result.error
    fixes = [e for e in result.events if e.step == "fix"]
    assert len(fixes) == 1 and len(fixes[0].calls) == 2
    assert [r.get("temperature") for r in scripted_llm.requests[1:3]] == [0.0, 0.8]
    assert scripted_llm.requests[1]["messages"] == scripted_llm.requests[2]["messages"]
    assert "asked once more at temperature 0.8" in fixes[0].notes[0]
    assert fixes[0].parsed["sql_after"] == SQL_A
    correction = last_user_message(scripted_llm.requests[1])
    assert fixes[0].data["dialogue"] == [
        {"role": "assistant", "content": writer(ALIAS_ERROR, "First try.")},
        {"role": "user", "content": correction},
        {"role": "assistant", "content": writer(SQL_A, "Fixed.")}]
    assert result.final_sql == SQL_A


def test_an_unusable_sampled_correction_leaves_the_first_answer_in_the_dialogue(
        db, llm, scripted_llm):
    scripted_llm.push(writer(ALIAS_ERROR, "First try."), writer(ALIAS_ERROR, "Again."),
                      "no idea", "still no idea", writer(SQL_A, "Fixed."), invitation(1),
                      approve())
    result = run(db, llm, n_reviewers=1, fix_prompt="tables", repeat_temperature=0.8,
                 repair_from_hint=False)

    assert result.status == "done", result.error
    first_fix = next(e for e in result.events if e.step == "fix")
    assert len(first_fix.calls) == 3 and "the first answer stands" in first_fix.notes[1]
    assert first_fix.parsed["sql_after"] == ALIAS_ERROR
    assert first_fix.data["dialogue"][-1] == {"role": "assistant",
                                              "content": writer(ALIAS_ERROR, "Again.")}
    assert len(first_fix.data["dialogue"]) == 3
    assert result.final_sql == SQL_A
