"""DEA-SQL's execution check and its failures: repairs of failing SQL, the name rewrite, a
repeated repair asked again sampled, SQL that still fails, and malformed replies."""

from __future__ import annotations

import json

import pytest

import deasql_script
from agents.pipelines.deasql import PIPELINE
from deasql_script import (DEFAULT_REPLIES, EXTREMUM_Q, GOOD_SQL, QUESTION, event, prompts_with,
                           run, script)
from prompt_markers import (DEA_ACTIVE as ACTIVE, DEA_CLASSIFY as CLASSIFY, DEA_CORRECT as CORRECT,
                            DEA_ELEMENTS as ELEMENTS, DEA_FILTER as FILTER,
                            DEA_GENERATE as GENERATE, DEA_REPAIR as REPAIR)
from scripted_llm import prompt_text


# Fixtures of deasql_script, shared by the DEA-SQL test modules (its db is not conftest's).
db = deasql_script.db


def test_execution_check_repairs_failing_sql(db, llm, scripted_llm):
    broken = "SELECT nme FROM singer WHERE country = 'France'"
    script(scripted_llm, **{GENERATE: json.dumps({"sql": broken}),
                            CORRECT: json.dumps({"sql": broken})})
    result = run(db, llm)
    assert result.status == "done", result.error
    step = event(result, "execution_check")
    assert step.parsed["repairs"][0]["sql_before"] == broken
    assert "no such column" in step.parsed["repairs"][0]["error"]
    assert result.final_sql == GOOD_SQL
    repair_prompt = prompts_with(scripted_llm, REPAIR)[0]
    assert "no such column" in repair_prompt and "CREATE TABLE concert" in repair_prompt
    assert "Hint: Table singer has columns:" in repair_prompt


def test_sql_that_still_fails_is_a_failed_step_with_the_error(db, llm, scripted_llm):
    broken = "SELECT nme FROM singer"
    script(scripted_llm, **{GENERATE: json.dumps({"sql": broken}),
                            CORRECT: json.dumps({"sql": broken})})
    result = run(db, llm, repair_attempts=0, fresh_writer=False)
    step = event(result, "execution_check")
    assert step.status == "error" and "does not run" in step.error and "nme" in step.error
    assert result.status == "failed" and result.final_sql == broken


WRONG_ALIAS = ("SELECT T1.name FROM singer_in_concert AS T1 JOIN singer AS T2 "
               "ON T1.singer_id = T2.singer_id WHERE T1.concert_id = 2")


@pytest.mark.parametrize("repair_attempts", [0, 1])
def test_repairs_ending_on_a_name_error_end_on_the_version_that_runs(db, llm, scripted_llm,
                                                                     repair_attempts):
    """The repair repeats the failing SQL (or there is none): the run ends on the one clear
    rewrite, ``name`` taken from singer (T2), and says so."""
    script(scripted_llm, **{GENERATE: json.dumps({"sql": WRONG_ALIAS}),
                            CORRECT: json.dumps({"sql": WRONG_ALIAS}),
                            REPAIR: json.dumps({"sql": WRONG_ALIAS})})
    result = run(db, llm, "Who sang in the Autumn concert?", variant=None,
                 repair_attempts=repair_attempts, repair_from_hint=False)
    assert result.status == "done", result.error
    step = event(result, "execution_check")
    assert step.inputs["name_rewrite"] is True and step.parsed["ok"] is True
    assert step.parsed["written_sql"] == WRONG_ALIAS and "T2.name" in step.parsed["rewrite"]
    assert "no such column: T1.name" in step.parsed["written_error"]
    assert len(step.parsed["repairs"]) == repair_attempts
    assert step.notes[-1].endswith("; rewritten to run")
    assert result.final_sql == step.sql and "T2.name" in result.final_sql
    assert [r[0] for r in result.result["rows"]] == ["Ann"]


def test_without_name_rewrite_a_name_error_still_fails_the_step(db, llm, scripted_llm):
    script(scripted_llm, **{GENERATE: json.dumps({"sql": WRONG_ALIAS}),
                            CORRECT: json.dumps({"sql": WRONG_ALIAS})})
    result = run(db, llm, variant=None, repair_attempts=0, name_rewrite=False)
    assert result.status == "failed" and result.final_sql == WRONG_ALIAS
    assert PIPELINE.resolve_recorded({"variant": "compact"})["name_rewrite"] is False


def script_repeating_repair(server, sampled: str = json.dumps({"sql": GOOD_SQL})) -> str:
    """A failing SQL whose repair repeats it at temperature 0; a sampled repair answers
    ``sampled`` (by default the right SQL)."""
    broken = "SELECT nme FROM singer WHERE country = 'France'"
    server.when(lambda req: REPAIR in prompt_text(req) and (req.get("temperature") or 0) > 0,
                sampled)
    script(server, **{GENERATE: json.dumps({"sql": broken}), CORRECT: json.dumps({"sql": broken}),
                      REPAIR: json.dumps({"sql": broken})})
    return broken


def test_a_repair_that_repeats_the_failing_sql_is_asked_again_sampled(db, llm, scripted_llm):
    script_repeating_repair(scripted_llm)
    result = run(db, llm, repeat_temperature=0.8)

    assert result.status == "done", result.error
    step = event(result, "execution_check")
    assert [c.messages == step.calls[0].messages for c in step.calls] == [True, True]
    assert [r["temperature"] for r in scripted_llm.requests if REPAIR in prompt_text(r)] == [
        0.0, 0.8]
    assert "asked once more at temperature 0.8" in step.notes[0]
    assert step.parsed["repairs"][0]["sql_after"] == GOOD_SQL
    assert result.final_sql == GOOD_SQL


def test_without_repeat_temperature_a_repeated_repair_ends_the_check(db, llm, scripted_llm):
    broken = script_repeating_repair(scripted_llm)
    result = run(db, llm)
    step = event(result, "execution_check")
    assert len(step.calls) == 1 and "returned the same SQL" in step.notes[0]
    assert result.status == "failed" and result.final_sql == broken


def test_an_unusable_sampled_repair_leaves_the_first_answer(db, llm, scripted_llm):
    broken = script_repeating_repair(scripted_llm, sampled="I do not know.")
    result = run(db, llm, repeat_temperature=0.8, fresh_writer=False)
    step = event(result, "execution_check")
    assert len(step.calls) == 3  # the repair, the sampled one and its parse retry
    assert "the first answer stands" in step.notes[1]
    assert step.parsed["repairs"][0]["sql_after"] == broken
    assert result.status == "failed" and "does not run" in step.error


@pytest.mark.parametrize("marker, step, params, question", [
    (ELEMENTS, "elements", {}, QUESTION),
    (FILTER, "information_filter", {}, QUESTION),
    (CLASSIFY, "classification", {}, QUESTION),
    (GENERATE, "sql_generation", {}, QUESTION),
    (CORRECT, "self_correction", {}, QUESTION),
    (ACTIVE, "active_learning", {}, EXTREMUM_Q),
])
def test_malformed_output_is_a_failed_step_with_a_clear_message(db, llm, scripted_llm, marker,
                                                                step, params, question):
    script(scripted_llm, **{marker: "I am not sure what you mean."})
    result = run(db, llm, question=question, **params)
    failed = result.events[-1]
    assert failed.step == step and failed.status == "error"
    assert "could not be parsed after a retry" in failed.error
    assert len(failed.calls) == 2 and "could not be used" in prompt_text(
        scripted_llm.requests[-1])
    assert result.status == "failed" and failed.agent in result.error


def test_a_malformed_repair_is_a_failed_step(db, llm, scripted_llm):
    broken = "SELECT nme FROM singer"
    script(scripted_llm, **{GENERATE: json.dumps({"sql": broken}),
                            CORRECT: json.dumps({"sql": broken}), REPAIR: "no idea"})
    result = run(db, llm)
    failed = result.events[-1]
    assert failed.step == "execution_check" and failed.status == "error"
    assert "could not be parsed" in failed.error


def test_a_parse_error_is_retried_once_and_then_succeeds(db, llm, scripted_llm):
    answers = iter(["not json at all", DEFAULT_REPLIES[ELEMENTS]])
    script(scripted_llm, **{ELEMENTS: lambda req: next(answers)})
    result = run(db, llm)
    assert result.status == "done"
    assert len(event(result, "elements").calls) == 2
