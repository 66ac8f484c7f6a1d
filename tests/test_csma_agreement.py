"""CSMA's agreement check (check_method=agreement): the checker writes its own SQL and compares
results; a subquery selecting the outer query's column (outer_column_check); an own SQL that
joins a table it reads nothing of (ignore_unread_joins)."""

from __future__ import annotations

import json

import pytest

from agents.core.engine import resume_run, run_to_end
from agents.pipelines.csma import PIPELINE
from csma_script import (ALL_HULLS, GOOD_SQL, HULL_ONLY, QUESTION, run_agreement, run_csma,
                         script_two_rounds, sql_block, steps_of, tables_answer, verdict)


# -- the agreement check (check_method=agreement) -----------------------------------------------

def test_the_agreement_check_is_the_default_and_recorded_runs_keep_the_paper_check():
    assert PIPELINE.resolve_params({})["check_method"] == "agreement"
    assert PIPELINE.resolve_params({})["variant"] == "compact"
    assert PIPELINE.resolve_recorded({})["check_method"] == "verdict"
    assert PIPELINE.resolve_recorded({"check_method": "agreement"})["check_method"] == "agreement"


def test_the_rewrite_is_the_default_and_runs_recorded_before_keep_failing_sql_as_written():
    assert PIPELINE.resolve_params({})["name_rewrite"] is True
    assert PIPELINE.resolve_recorded({"check_method": "agreement"})["name_rewrite"] is False
    assert PIPELINE.resolve_recorded({"name_rewrite": True})["name_rewrite"] is True


def test_every_check_records_its_method(fleet, llm, scripted_llm):
    script_two_rounds(scripted_llm, "correct")
    run = run_csma(fleet, llm, delta=3)
    check = run.events[4]
    assert check.inputs["check_method"] == "verdict" and check.parsed["method"] == "verdict"
    assert check.parsed.get("own_sql") is None and check.parsed.get("agrees") is None


def test_an_agreement_check_that_differs_makes_the_checkers_own_sql_the_new_sql(fleet, llm,
                                                                              scripted_llm):
    """Agent 1, without the voyages, writes a query that runs and answers something else; a
    model judge tends to accept it. Agent 2 writes its own from the voyages it holds: the
    results differ, so its SQL goes on, and agent 1's own SQL in round 3 agrees with it."""
    scripted_llm.push(tables_answer("vessels"),                 # agent 1 extracts
                      sql_block(HULL_ONLY),                     # agent 1 writes
                      tables_answer("vessels", "voyages"),      # agent 2 extracts
                      sql_block(GOOD_SQL),                      # agent 2's own SQL (check)
                      tables_answer("vessels", "voyages"),      # agent 1 extracts
                      sql_block("SELECT voyages.cargo_kind FROM vessels JOIN voyages ON "
                                "voyages.vessel_id = vessels.vessel_id WHERE "
                                "vessels.hull_name = 'Aurora' ORDER BY 1"))  # agent 1's own
    run = run_agreement(fleet, llm)
    assert run.status == "done", run.error
    assert steps_of(run) == ["partition", "extract:1", "generate:1", "extract:2", "check:2",
                             "generate:2", "extract:1", "check:1"]
    assert scripted_llm.remaining == 0 and len(scripted_llm.requests) == 6
    check_2, generate_2, check_1 = run.events[4], run.events[5], run.events[7]
    assert check_2.parsed["method"] == "agreement" and check_2.parsed["verdict"] == "negative"
    assert check_2.parsed["agrees"] is False and check_2.parsed["own_sql"] == GOOD_SQL
    assert check_2.parsed["reason"] == ("its own SQL, written from its extracted schema, "
                                        "returns a different result (2 row(s) against 1)")
    assert "returned 2 row(s)" in check_2.parsed["own_execution"]
    # the checked SQL's execution is what the step records, not the checker's own
    assert check_2.execution["rows"] == [["Aurora"]]
    # the writer's prompt, the same one the generate step sends: its extracted schema, no SQL
    own_prompt = check_2.calls[0].messages[-1]["content"]
    assert "cargo_kind" in own_prompt and HULL_ONLY not in own_prompt
    assert "judged wrong" not in own_prompt and own_prompt.rstrip().endswith(QUESTION)
    # the round's new SQL is the checker's own, with no second call
    assert generate_2.calls == [] and generate_2.inputs["written_in_check"] is True
    assert generate_2.parsed["written_in_check"] is True and generate_2.sql == GOOD_SQL
    assert check_1.parsed["agrees"] is True and check_1.parsed["verdict"] == "positive"
    data = run.events[-1].data
    assert data["stop_reason"] == "Agent 1's own SQL returns the same result"
    assert [c["method"] for c in data["checks"]] == ["agreement", "agreement"]
    assert run.final_sql == GOOD_SQL and sorted(run.result["rows"]) == [["coal"], ["grain"]]


def test_an_agreement_check_with_the_same_result_written_otherwise_is_positive(fleet, llm,
                                                                              scripted_llm):
    scripted_llm.push(tables_answer("vessels", "voyages"), sql_block(GOOD_SQL),
                      tables_answer("voyages"),
                      sql_block("SELECT cargo_kind FROM voyages WHERE vessel_id = 1"))
    run = run_agreement(fleet, llm)
    assert run.status == "done", run.error
    assert steps_of(run)[-1] == "check:2" and len(scripted_llm.requests) == 4
    check = run.events[-1]
    assert check.parsed["verdict"] == "positive" and check.parsed["agrees"] is True
    assert check.parsed["reason"] == ("its own SQL, written from its extracted schema, returns "
                                      "the same result")
    assert run.final_sql == GOOD_SQL


def test_an_agreement_check_whose_own_sql_fails_is_judged_by_the_model(fleet, llm,
                                                                       scripted_llm):
    scripted_llm.push(tables_answer("vessels"), sql_block(HULL_ONLY),
                      tables_answer("vessels", "voyages"),
                      sql_block("SELECT cargo FROM voyages"),        # own SQL: no such column
                      verdict("wrong", "the cargo is in voyages"),   # the model judges instead
                      sql_block(GOOD_SQL))                           # agent 2 rewrites, told
    run = run_agreement(fleet, llm, max_rounds=2)
    assert run.status == "done", run.error
    assert steps_of(run)[-1] == "generate:2"
    assert run.events[-1].data["stop_reason"] == "reached max_rounds (2)"
    check, generate = run.events[4], run.events[5]
    assert len(check.calls) == 2 and check.parsed.get("agrees") is None
    assert check.parsed["own_sql"] == "SELECT cargo FROM voyages"
    assert check.parsed["own_execution"].startswith("failed: no such column: cargo")
    assert check.parsed["reason"] == "the cargo is in voyages"
    assert any("its own SQL fails to execute" in n for n in check.notes)
    assert generate.parsed["written_in_check"] is False and len(generate.calls) == 1
    assert "Reason: the cargo is in voyages" in generate.calls[0].messages[-1]["content"]
    assert run.final_sql == GOOD_SQL


def test_a_checked_sql_that_fails_is_judged_and_rewritten_as_before(fleet, llm, scripted_llm):
    bad_sql = "SELECT cargo FROM vessels WHERE hull_name = 'Aurora'"
    scripted_llm.push(tables_answer("vessels"), sql_block(bad_sql),
                      tables_answer("vessels", "voyages"),
                      verdict("correct", "looks fine"),  # a failing query is never accepted
                      sql_block(GOOD_SQL))
    run = run_agreement(fleet, llm, max_rounds=2)
    assert run.status == "done", run.error
    check = run.events[4]
    assert len(check.calls) == 1 and "### Query to check" in check.calls[0].messages[-1][
        "content"]
    assert check.parsed["verdict"] == "negative" and check.parsed.get("own_sql") is None
    assert run.final_sql == GOOD_SQL and len(scripted_llm.requests) == 5


def differing_agreement_run(fleet, llm, scripted_llm):
    """Two rounds: agent 2's own SQL differs from agent 1's, so round 2's generate step
    (event 5) takes it without a call."""
    scripted_llm.push(tables_answer("vessels"), sql_block(HULL_ONLY),
                      tables_answer("vessels", "voyages"), sql_block(GOOD_SQL))
    first = run_agreement(fleet, llm, max_rounds=2)
    assert first.status == "done", first.error
    return first


def test_an_agreement_run_resumes_from_its_generate_step_without_a_model_call(fleet, llm,
                                                                              scripted_llm):
    first = differing_agreement_run(fleet, llm, scripted_llm)
    assert first.final_sql == GOOD_SQL
    again = run_to_end(resume_run(PIPELINE, first, 5, fleet, llm))
    assert again.status == "done", again.error
    assert again.events[5].calls == [] and again.final_sql == GOOD_SQL
    assert scripted_llm.remaining == 0 and len(scripted_llm.requests) == 4


def test_an_agreement_check_of_the_agents_own_sql_is_judged_by_the_model(fleet, llm,
                                                                         scripted_llm):
    """Agent 2 extracts nothing and writes nothing, so agent 1 checks its own SQL in round 3:
    writing it again would agree with itself, so the model judges."""
    scripted_llm.push(tables_answer("vessels"), sql_block(HULL_ONLY),
                      tables_answer(), verdict("wrong", "no cargo in it"),  # agent 2
                      tables_answer("vessels"), verdict("wrong", "still no cargo"),
                      sql_block(GOOD_SQL))
    run = run_agreement(fleet, llm)
    assert run.status == "done", run.error
    assert steps_of(run) == ["partition", "extract:1", "generate:1", "extract:2", "check:2",
                             "generate:2", "extract:1", "check:1", "generate:1"]
    assert run.events[5].status == "skipped"
    check_2, check_1 = run.events[4], run.events[7]
    assert len(check_2.calls) == 1 and any("writes no SQL of its own" in n
                                           for n in check_2.notes)
    assert len(check_1.calls) == 1 and check_1.parsed.get("own_sql") is None
    assert any("the SQL to check is Agent 1's own" in n for n in check_1.notes)
    assert run.final_sql == GOOD_SQL


def test_two_empty_results_are_no_agreement_and_the_model_judges(fleet, llm, scripted_llm):
    nothing = "SELECT hull_name FROM vessels WHERE tonnage > 5000"
    scripted_llm.push(tables_answer("vessels"), sql_block(nothing),
                      tables_answer("vessels"),
                      sql_block("SELECT v.hull_name FROM vessels AS v WHERE v.tonnage > 9999"),
                      verdict("correct", "it filters the ships"))
    run = run_agreement(fleet, llm)
    assert run.status == "done", run.error
    check = run.events[-1]
    assert check.step == "check:2" and len(check.calls) == 2
    assert check.parsed["verdict"] == "positive" and check.parsed.get("agrees") is None
    assert check.parsed["own_execution"] == "ran without error and returned no rows"
    assert any("returns no rows either" in n for n in check.notes)
    assert run.events[-1].data["stop_reason"] == "Agent 2 judged the SQL correct"


@pytest.mark.parametrize("second_agent, calls, note", [
    # agent 2 extracts nothing, so it has nothing to write its own SQL from
    ([tables_answer()], 1, "writes no SQL of its own"),
    # agent 2's own answer holds no SQL, even after the retry
    ([tables_answer("vessels", "voyages"), "I cannot tell.", "Still no query."], 3,
     "its own SQL could not be read"),
])
def test_an_agreement_check_without_an_own_sql_is_judged_by_the_model(
        fleet, llm, scripted_llm, second_agent, calls, note):
    scripted_llm.push(tables_answer("vessels"), sql_block(HULL_ONLY), *second_agent,
                      verdict("correct", "it names the ship"))
    run = run_agreement(fleet, llm)
    assert run.status == "done", run.error
    check = run.events[-1]
    assert check.step == "check:2" and len(check.calls) == calls
    assert check.parsed["verdict"] == "positive" and check.parsed.get("own_sql") is None
    assert any(note in n for n in check.notes)
    assert run.final_sql == HULL_ONLY


def test_an_agreement_check_with_decomposition_passes_its_sub_questions_on(fleet, llm,
                                                                          scripted_llm):
    decomposed = ("Sub question 1: Which cargo kinds did the ship Aurora carry?\n"
                  f"SQL\n```sql\n{GOOD_SQL}\n```")
    scripted_llm.push(tables_answer("vessels"), f"```sql\n{HULL_ONLY}\n```",
                      tables_answer("vessels", "voyages"), decomposed)
    run = run_agreement(fleet, llm, generation="decompose", max_rounds=2)
    assert run.status == "done", run.error
    generate = run.events[5]
    assert generate.step == "generate:2" and generate.calls == []
    assert generate.parsed["written_in_check"] is True and generate.sql == GOOD_SQL
    assert generate.parsed["sub_questions"][0]["question"].startswith("Which cargo kinds")


def test_an_unknown_check_method_is_refused_clearly():
    with pytest.raises(ValueError, match="check_method must be one of"):
        PIPELINE.resolve_params({"check_method": "vote"})


def test_a_generate_step_resumed_with_another_extraction_writes_anew(fleet, llm,
                                                                     scripted_llm):
    first = differing_agreement_run(fleet, llm, scripted_llm)
    assert first.events[5].calls == [] and first.final_sql == GOOD_SQL
    index = 5
    edited = json.loads(json.dumps(first.events[index - 1].data))
    edited["extracted"] = {"voyages": edited["extracted"]["voyages"]}  # the user drops a table
    other = "SELECT cargo_kind FROM voyages WHERE vessel_id = 1"
    scripted_llm.push(sql_block(other))
    again = run_to_end(resume_run(PIPELINE, first, index, fleet, llm, data=edited))
    assert again.status == "done", again.error
    generate = again.events[index]
    assert len(generate.calls) == 1 and generate.parsed["written_in_check"] is False
    assert generate.parsed["tables"] == ["voyages"] and again.final_sql == other


def test_the_text_views_show_the_checkers_own_sql_and_where_the_new_sql_came_from():
    from agents.pipelines.csma.outputs import AgentSQL, SQLCheck
    check = SQLCheck(verdict="negative", reason="a different result", sql_by="Agent 1",
                     method="agreement", own_sql=GOOD_SQL, agrees=False)
    lines = "\n".join(check.text_lines())
    assert "verdict on Agent 1: negative" in lines and "its own SQL:" in lines
    assert "hull_name = 'Aurora'" in lines
    taken = AgentSQL(sql=GOOD_SQL, tables=["vessels", "voyages"], feedback="a different result",
                     written_in_check=True)
    lines = "\n".join(taken.text_lines())
    assert "the SQL it wrote in its check (no new model call)" in lines
    assert "knows why" not in lines


# -- a subquery selecting the outer query's column (outer_column_check) -----------------------

# harbors has no vessel_id: the subquery returns each vessel's own id, so every vessel is "in"
OUTER_IN_SUBQUERY = ("SELECT hull_name FROM vessels WHERE vessel_id IN "
                     "(SELECT vessel_id FROM harbors)")


def test_sql_whose_subquery_selects_an_outer_column_is_checked_as_sql_that_fails(
        fleet, llm, scripted_llm):
    scripted_llm.push(tables_answer("vessels", "harbors"), sql_block(OUTER_IN_SUBQUERY),
                      tables_answer("vessels", "voyages"),
                      verdict("correct", "looks fine"),  # the model is asked, and overruled
                      sql_block(GOOD_SQL))
    run = run_agreement(fleet, llm, max_rounds=2, outer_column_check=True)
    assert run.status == "done", run.error
    check, generate = run.events[4], run.events[5]
    assert check.inputs["outer_column_check"] is True
    assert check.execution["ok"] is True  # it runs: nothing else would have stopped it
    assert len(check.calls) == 1 and check.parsed.get("own_sql") is None  # judged, no own SQL
    told = ("; but the subquery (SELECT vessel_id FROM harbors) selects vessel_id of the outer "
            "query's vessels, not of its own tables (harbors), so it returns each outer row's "
            "own value")
    assert check.parsed["execution"].endswith(told)
    assert told in check.calls[0].messages[-1]["content"]
    assert check.parsed["verdict"] == "negative"
    assert any("a subquery of the SQL selects a column of the outer query: counted as negative"
               in n for n in check.notes)
    # overruled, the reason is the defect, not the model's "looks fine"; the rewrite is told
    # it and the execution, then writes anew
    assert check.parsed["reason"] == told[len("; but "):]
    assert told in generate.calls[0].messages[-1]["content"]
    assert "looks fine" not in generate.calls[0].messages[-1]["content"]
    assert run.final_sql == GOOD_SQL


def test_the_outer_column_check_is_off_by_default_and_off_checks_such_sql_as_any(
        fleet, llm, scripted_llm):
    assert PIPELINE.resolve_params({})["outer_column_check"] is False
    assert PIPELINE.resolve_recorded({"name_rewrite": True})["outer_column_check"] is False
    scripted_llm.push(tables_answer("vessels", "harbors"), sql_block(OUTER_IN_SUBQUERY),
                      tables_answer("vessels", "voyages"),
                      sql_block(OUTER_IN_SUBQUERY))  # its own SQL, the same result: agreed
    run = run_agreement(fleet, llm, outer_column_check=False)
    check = run.events[4]
    assert check.inputs["outer_column_check"] is False and "; but" not in check.parsed[
        "execution"]
    assert check.parsed["agrees"] is True and run.final_sql == OUTER_IN_SUBQUERY


def test_a_correlated_condition_in_a_subquery_is_not_an_outer_column(fleet, llm, scripted_llm):
    correlated = ("SELECT hull_name FROM vessels AS s WHERE EXISTS (SELECT 1 FROM voyages AS v "
                  "WHERE v.vessel_id = s.vessel_id AND v.cargo_kind = 'coal')")
    scripted_llm.push(tables_answer("vessels", "voyages"), sql_block(correlated),
                      tables_answer("vessels", "voyages"), sql_block(correlated))
    run = run_agreement(fleet, llm, outer_column_check=True)
    check = run.events[4]
    assert "; but" not in check.parsed["execution"] and check.parsed["agrees"] is True
    assert run.final_sql == correlated


# -- an own SQL that joins a table it reads nothing of (ignore_unread_joins) -------------------

# voyages is read only in its own join condition: Aurora comes back once per voyage
HULLS_JOINED = ("SELECT s.hull_name FROM vessels AS s JOIN voyages AS v "
                "ON s.vessel_id = v.vessel_id ORDER BY s.hull_name")


def script_unread_join(scripted_llm, own_sql: str) -> None:
    scripted_llm.push(tables_answer("vessels"), sql_block(ALL_HULLS),     # agent 1 writes
                      tables_answer("vessels", "voyages"), sql_block(own_sql))  # agent 2 checks


def test_an_own_sql_differing_only_by_a_join_it_reads_nothing_of_agrees(fleet, llm,
                                                                         scripted_llm):
    script_unread_join(scripted_llm, HULLS_JOINED)
    run = run_agreement(fleet, llm, question="What are the names of all ships?")
    assert run.status == "done", run.error
    check = run.events[-1]
    assert check.step == "check:2" and check.inputs["ignore_unread_joins"] is True
    assert check.parsed["verdict"] == "positive" and check.parsed["agrees"] is True
    assert check.parsed["own_unread_joins"] == ["voyages"]
    assert check.parsed["own_compared_sql"] == ("SELECT s.hull_name FROM vessels AS s "
                                                "ORDER BY s.hull_name")
    assert check.parsed["reason"] == ("its own SQL, written from its extracted schema, returns "
                                      "the same result once its join of voyages, which "
                                      "nothing in it reads, is left out")
    assert "returned 3 row(s)" in check.parsed["own_execution"]  # as written, it differed
    assert run.final_sql == ALL_HULLS and len(scripted_llm.requests) == 4
    assert "compared without its unread join of voyages:" in "\n".join(
        check.output.text_lines())


def test_off_an_unread_join_is_a_disagreement_as_in_the_paper(fleet, llm, scripted_llm):
    assert PIPELINE.resolve_params({})["ignore_unread_joins"] is True
    assert PIPELINE.resolve_recorded({"name_rewrite": True})["ignore_unread_joins"] is False
    script_unread_join(scripted_llm, HULLS_JOINED)
    run = run_agreement(fleet, llm, question="What are the names of all ships?", max_rounds=2,
                        ignore_unread_joins=False, drop_unread_joins=False)
    check = run.events[4]
    assert check.parsed["verdict"] == "negative" and check.parsed.get("own_unread_joins") is None
    assert run.final_sql == HULLS_JOINED
    # with the Final check on, the run then ends without the join (nothing reads voyages and
    # the question does not name it)
    scripted_llm.clear()
    script_unread_join(scripted_llm, HULLS_JOINED)
    run = run_agreement(fleet, llm, question="What are the names of all ships?", max_rounds=2,
                        ignore_unread_joins=False)
    assert [e.step for e in run.events][-2:] == ["generate:2", "final_check"]
    assert run.events[-1].parsed["tables"] == ["voyages"]
    assert run.final_sql == "SELECT s.hull_name FROM vessels AS s ORDER BY s.hull_name"


@pytest.mark.parametrize("own_sql", [
    # it reads the joined table: a real difference
    "SELECT s.hull_name FROM vessels AS s JOIN voyages AS v ON s.vessel_id = v.vessel_id "
    "WHERE v.cargo_kind = 'coal'",
    # without the join the result is still another one
    "SELECT s.hull_name FROM vessels AS s JOIN voyages AS v ON s.vessel_id = v.vessel_id "
    "WHERE s.tonnage > 1000",
])
def test_an_own_sql_that_answers_otherwise_still_disagrees(fleet, llm, scripted_llm, own_sql):
    script_unread_join(scripted_llm, own_sql)
    run = run_agreement(fleet, llm, question="What are the names of all ships?", max_rounds=2,
                        drop_unread_joins=False)
    check = run.events[4]
    assert check.parsed["verdict"] == "negative" and check.parsed.get("own_unread_joins") is None
    assert run.final_sql == own_sql


def test_an_unread_join_that_leaves_two_empty_results_is_judged_by_the_model(fleet, llm,
                                                                             scripted_llm):
    """Two results with no rows say little, with or without the join: the model judges."""
    own = ("SELECT s.hull_name FROM vessels AS s JOIN voyages AS v ON s.vessel_id = "
           "v.vessel_id GROUP BY s.hull_name HAVING COUNT(*) >= 2")  # Aurora, by its voyages
    checked = ("SELECT hull_name FROM vessels GROUP BY hull_name HAVING COUNT(*) >= 2")
    scripted_llm.push(tables_answer("vessels"), sql_block(checked),
                      tables_answer("vessels", "voyages"), sql_block(own),
                      verdict("correct", "no ship is listed twice"))
    run = run_agreement(fleet, llm, question="Which ships are listed twice?")
    assert run.status == "done", run.error
    check = run.events[-1]
    assert check.parsed.get("agrees") is None and check.parsed["verdict"] == "positive"
    assert check.parsed["own_unread_joins"] == ["voyages"]
    assert any("returns no rows, as the checked SQL does, which says little" in note
               for note in check.notes)
    assert run.final_sql == checked and len(scripted_llm.requests) == 5
