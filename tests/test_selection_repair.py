"""Candidate selection's repairs of a failing candidate: from its error and the hint, in its
writer's own conversation, again on another error up to ``repair_attempts``, and no more on
the same error."""

from __future__ import annotations

from agents.core.engine import resume_run, run_to_end
from agents.pipelines.selection import PIPELINE
from prompt_markers import R3_EXEC_ERROR, WRITER
from selection_script import (FRANCE, FRANCE_ALIASED, WRONG_COLUMN, WRONG_TABLE, decomposition,
                              requests_for, run, script, sql_block)


def test_a_failing_candidate_is_repaired_from_its_error_and_the_hint(db, llm, scripted_llm):
    script(scripted_llm, writer=sql_block(WRONG_TABLE), decomposer=decomposition(FRANCE),
           repair=sql_block(FRANCE_ALIASED))
    result = run(db, llm, generators="writer,decomposer", samples=0)

    assert result.status == "done", result.error
    assert [e.step for e in result.events] == [
        "ground", "candidate:writer", "repair:writer", "candidate:decomposer", "vote"]
    repair = result.events[2]
    assert repair.parsed["error"] == "no such table: singers"
    assert repair.parsed["sql_after"] == FRANCE_ALIASED and repair.execution["ok"]
    # the repair continues the writer's own conversation with the error and the hint
    request = requests_for(scripted_llm, R3_EXEC_ERROR)[0]
    assert [m["role"] for m in request["messages"]] == ["user", "assistant", "user"]
    assert WRITER in request["messages"][0]["content"]
    assert "Closest tables: singer" in request["messages"][-1]["content"]
    vote = result.events[-1].parsed
    assert vote["outcome"] == "decisive" and vote["groups"][0]["size"] == 2
    assert result.final_sql == FRANCE_ALIASED  # the writer's repaired SQL represents the group


def repaired_in_turns(*sqls: str):
    """A repair reply by attempt: the first repair answers ``sqls[0]``, the second ``sqls[1]``
    (a repair's conversation grows by two messages an attempt)."""
    return lambda req: sql_block(sqls[min((len(req["messages"]) - 3) // 2, len(sqls) - 1)])


def test_a_repair_failing_on_another_error_is_repaired_again_in_the_same_conversation(
        db, llm, scripted_llm):
    script(scripted_llm, writer=sql_block(WRONG_TABLE), decomposer=decomposition(FRANCE),
           repair=repaired_in_turns(WRONG_COLUMN, FRANCE_ALIASED))
    result = run(db, llm, generators="writer,decomposer", samples=0, repair_attempts=2)

    assert result.status == "done", result.error
    assert [e.step for e in result.events] == [
        "ground", "candidate:writer", "repair:writer", "repair:writer", "candidate:decomposer",
        "vote"]
    first, second = result.events[2], result.events[3]
    assert first.parsed["attempt"] == 1 and "attempt" not in first.inputs
    assert first.parsed["sql_after"] == WRONG_COLUMN and not first.execution["ok"]
    assert "another error" in " ".join(first.notes)
    assert second.parsed["attempt"] == 2 and second.inputs["attempt"] == 2
    assert second.parsed["error"] == "no such column: singer_name"
    assert second.parsed["sql_before"] == WRONG_COLUMN and second.execution["ok"]
    # the second repair continues the first one's conversation: the candidate, the first
    # error, the first repair, then the new error
    request = requests_for(scripted_llm, R3_EXEC_ERROR)[-1]
    assert [m["role"] for m in request["messages"]] == [
        "user", "assistant", "user", "assistant", "user"]
    assert WRONG_TABLE in request["messages"][1]["content"]
    assert "no such table: singers" in request["messages"][2]["content"]
    assert request["messages"][3]["content"] == sql_block(WRONG_COLUMN)  # its own reply
    assert "no such column: singer_name" in request["messages"][4]["content"]
    assert result.events[-1].parsed["outcome"] == "decisive"
    assert result.final_sql == FRANCE_ALIASED

    # resumed at the second repair, the conversation is rebuilt from the run's state
    resumed = run_to_end(resume_run(PIPELINE, result, 3, db, llm))
    assert resumed.status == "done" and resumed.final_sql == FRANCE_ALIASED
    assert requests_for(scripted_llm, R3_EXEC_ERROR)[-1]["messages"] == request["messages"]


def test_repairs_stop_at_repair_attempts_even_on_yet_another_error(db, llm, scripted_llm):
    script(scripted_llm, writer=sql_block(WRONG_TABLE), decomposer=decomposition(FRANCE),
           repair=repaired_in_turns(WRONG_COLUMN, "SELECT name FROM singer WHERE nation = 'F'",
                                    FRANCE_ALIASED))
    result = run(db, llm, generators="writer,decomposer", samples=0, repair_attempts=2)
    assert [e.step for e in result.events] == [
        "ground", "candidate:writer", "repair:writer", "repair:writer", "candidate:decomposer",
        "vote"]
    assert result.events[3].execution["error"] == "no such column: nation"
    assert "takes no part in the vote" in " ".join(result.events[3].notes)
    assert len(requests_for(scripted_llm, R3_EXEC_ERROR)) == 2
    assert result.final_sql == FRANCE


def test_the_same_error_again_ends_the_repairs(db, llm, scripted_llm):
    script(scripted_llm, writer=sql_block(WRONG_TABLE), decomposer=decomposition(FRANCE),
           repair=sql_block("SELECT name FROM singers"))
    result = run(db, llm, generators="writer,decomposer", samples=0, repair_attempts=3)
    assert [e.step for e in result.events] == [
        "ground", "candidate:writer", "repair:writer", "candidate:decomposer", "vote"]
    assert "takes no part in the vote" in " ".join(result.events[2].notes)
    assert result.final_sql == FRANCE


def test_one_repair_by_default_whatever_the_next_error(db, llm, scripted_llm):
    script(scripted_llm, writer=sql_block(WRONG_TABLE), decomposer=decomposition(FRANCE),
           repair=repaired_in_turns(WRONG_COLUMN, FRANCE_ALIASED))
    result = run(db, llm, generators="writer,decomposer", samples=0)
    assert [e.step for e in result.events] == [
        "ground", "candidate:writer", "repair:writer", "candidate:decomposer", "vote"]
    assert len(requests_for(scripted_llm, R3_EXEC_ERROR)) == 1
    assert result.final_sql == FRANCE
