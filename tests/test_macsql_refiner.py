"""MAC-SQL's Refiner, resuming a run and the embedded model, against a scripted model and real
SQLite files (the Selector, value grounding and the Decomposer: ``test_macsql.py``)."""

from __future__ import annotations

import json

import pytest

from agents.db.database import open_database
from agents.core.engine import resume_run, run_to_end, start_run
from macsql_script import DECOMPOSER, PIPELINE, REFINER, SELECTOR, decomposition, requests_for, run
from scripted_llm import last_user_message, prompt_text


# -- Refiner ---------------------------------------------------------------------------------------
def test_refiner_repairs_an_error_and_re_executes_the_repair(small_db, llm, scripted_llm):
    scripted_llm.when(DECOMPOSER, decomposition(
        ("q", "SELECT COUNT(*) FROM singers WHERE country = 'France'")))
    scripted_llm.when(REFINER, "The table is singer.\n```sql\n"
                               "SELECT COUNT(*) FROM singer WHERE country = 'France'\n```")
    result = run(small_db, llm)

    assert result.status == "done"
    agents = [e.agent for e in result.events]
    assert agents == ["Selector", "Decomposer", "Refiner", "Refiner"]
    repair, check = result.events[2], result.events[3]
    assert repair.parsed["error_class"] == "OperationalError"
    assert "no such table: singers" in repair.parsed["error"]
    assert repair.parsed["sql_before"].startswith("SELECT COUNT(*) FROM singers")
    assert repair.parsed["sql_after"] == "SELECT COUNT(*) FROM singer WHERE country = 'France'"
    assert repair.parsed["attempt"] == 1 and repair.next_step == "refiner"
    assert repair.execution["ok"] is False
    assert check.parsed == {"status": "ok", "rows": 1} and check.calls == []
    assert check.execution["ok"] is True and check.execution["rows"] == [[2]]
    refiner_prompt = last_user_message(requests_for(scripted_llm, REFINER)[0])
    assert "no such table: singers" in refiner_prompt and "OperationalError" in refiner_prompt
    # the error reaches the model with the real table names, and the trace shows that hint
    assert "Hint: There is no table singers. Closest tables: singer." in refiner_prompt
    assert "Closest tables: singer" in repair.parsed["hint"]
    assert "Closest tables: singer" in repair.execution["hint"]
    assert result.final_sql == "SELECT COUNT(*) FROM singer WHERE country = 'France'"
    assert result.result["rows"] == [[2]]


def test_refiner_gives_up_after_max_refine(small_db, llm, scripted_llm):
    scripted_llm.when(DECOMPOSER, decomposition(("q", "SELECT nope0 FROM singer")))
    counter = iter(range(1, 100))
    scripted_llm.when(REFINER, lambda req: f"```sql\nSELECT nope{next(counter)} FROM singer\n```")
    result = run(small_db, llm, max_refine=2)

    refiner_events = [e for e in result.events if e.agent == "Refiner"]
    assert len(refiner_events) == 3  # two repairs, each executed again, then the give-up
    assert len(requests_for(scripted_llm, REFINER)) == 2
    assert [e.parsed.get("attempt") for e in refiner_events] == [1, 2, 2]
    last = refiner_events[-1]
    assert last.parsed["status"] == "gave_up" and "nope2" in last.execution["sql"]
    assert "max_refine=2" in last.notes[0]
    assert result.status == "done" and result.result["ok"] is False


def test_refiner_stops_when_the_repair_changes_nothing(small_db, llm, scripted_llm):
    scripted_llm.when(DECOMPOSER, decomposition(("q", "SELECT nope FROM singer")))
    scripted_llm.when(REFINER, "```sql\nSELECT nope FROM singer;\n```")
    result = run(small_db, llm, fresh_writer=False)
    assert [e.agent for e in result.events].count("Refiner") == 1
    assert "same SQL" in result.events[-1].notes[0]


WRONG_ALIAS = ("SELECT T1.name FROM concert AS T1 JOIN singer AS T2 ON T1.singer_id = T2.singer_id "
               "WHERE T1.year = 2015")


@pytest.mark.parametrize("max_refine", [0, 3])
def test_a_loop_ending_on_a_name_error_ends_on_the_version_that_runs(small_db, llm, scripted_llm,
                                                                      max_refine):
    """max_refine=0: the repairs are spent at once; 3: the repair repeats the failing SQL. Either
    way the run ends on the one clear rewrite (``name`` is a column of singer, T2), shown as
    such, with the SQL as written and its error kept in the output."""
    scripted_llm.when(DECOMPOSER, decomposition(("q", WRONG_ALIAS)))
    scripted_llm.when(REFINER, f"```sql\n{WRONG_ALIAS}\n```")
    result = run(small_db, llm, "Who sang in 2015?", max_refine=max_refine,
                 repair_from_hint=False)  # the model is asked, and repeats the SQL

    last = [e for e in result.events if e.agent == "Refiner"][-1]
    assert last.parsed["status"] == "rewritten" and last.inputs["name_rewrite"] is True
    assert last.parsed["written_sql"] == WRONG_ALIAS
    assert "no such column: T1.name" in last.parsed["written_error"]
    assert "T2.name" in last.parsed["rewrite"] and "T2.name" in last.sql
    assert last.execution["ok"] and last.execution["sql"] == last.sql
    assert not any("rewrit" in n for n in last.notes)  # the output says it, once
    assert result.final_sql == last.sql and result.result["ok"]
    assert sorted(r[0] for r in result.result["rows"]) == ["Ana", "Bo"]
    assert len(requests_for(scripted_llm, REFINER)) == (0 if max_refine == 0 else 1)


def test_the_ending_leaves_other_errors_as_they_are(small_db, llm, scripted_llm):
    """A syntax error, or a name no clear change mends, is not rewritten: the Refiner gives up
    as before, with the option on."""
    for broken in ("SELECT name FROM singer WHERE", "SELECT nope FROM singer"):
        scripted_llm.clear()
        scripted_llm.when(DECOMPOSER, decomposition(("q", broken)))
        result = run(small_db, llm, max_refine=0, fresh_writer=False)
        last = result.events[-1]
        assert last.parsed["status"] == "gave_up" and "rewrite" not in last.parsed
        assert result.final_sql == broken and result.result["ok"] is False


def test_without_name_rewrite_the_failing_sql_is_kept(small_db, llm, scripted_llm):
    scripted_llm.when(DECOMPOSER, decomposition(("q", WRONG_ALIAS)))
    result = run(small_db, llm, "Who sang in 2015?", max_refine=0, name_rewrite=False,
                 fresh_writer=False)
    last = result.events[-1]
    assert last.parsed["status"] == "gave_up" and last.inputs["name_rewrite"] is False
    assert result.final_sql == WRONG_ALIAS and result.result["ok"] is False


def test_runs_recorded_before_the_runnable_ending_keep_the_failing_sql():
    assert PIPELINE.resolve_recorded({"decomposer_prompt": "graded"})["name_rewrite"] is False
    assert PIPELINE.resolve_params({})["name_rewrite"] is True


@pytest.mark.parametrize("refine_empty", [True, False])
def test_empty_result_refinement_can_be_switched_off(refine_empty, small_db, llm, scripted_llm):
    scripted_llm.when(DECOMPOSER, decomposition(
        ("q", "SELECT name FROM singer WHERE country = 'france'")))
    scripted_llm.when(REFINER, "```sql\nSELECT name FROM singer WHERE country = 'France'\n```")
    result = run(small_db, llm, "Which singers are from France?",
                 refine_empty_result=refine_empty)

    refiner_events = [e for e in result.events if e.agent == "Refiner"]
    if refine_empty:
        assert refiner_events[0].parsed["error_class"] == "EmptyResult"
        assert "returned no rows" in refiner_events[0].parsed["error"]
        assert "EmptyResult" in last_user_message(requests_for(scripted_llm, REFINER)[0])
        assert sorted(result.result["rows"]) == [["Ana"], ["Cy"]]
    else:
        assert len(refiner_events) == 1
        assert refiner_events[0].parsed == {"status": "ok", "rows": 0}
        assert requests_for(scripted_llm, REFINER) == []


# -- resuming --------------------------------------------------------------------------------------
def test_resume_from_the_decomposer_with_an_edited_selection(wide_db, llm, scripted_llm):
    scripted_llm.when(SELECTOR, json.dumps({"t0": "keep_all", "t1": "keep_all"}))
    scripted_llm.when(DECOMPOSER, decomposition(("q", "SELECT name FROM t0")))
    first = run(wide_db, llm, use_selector="auto")
    assert first.status == "done"

    edited = dict(first.events[0].data, selection={"t3": ["value"]})
    scripted_llm.requests.clear()
    second = run_to_end(resume_run(PIPELINE, first, 1, wide_db, llm, data=edited))

    assert second.status == "done" and second.parent_run_id == first.run_id
    assert second.events[0].step == "selector" and second.events[0].edited
    assert second.events[0].calls[0].raw == first.events[0].calls[0].raw  # kept, not re-run
    assert requests_for(scripted_llm, SELECTOR) == []
    prompt = last_user_message(requests_for(scripted_llm, DECOMPOSER)[0])
    target = prompt.split("[Database schema]")[-1]
    assert "# Table: t3" in target and "# Table: t0" not in target
    assert "(value," in target and "(note," not in target


def test_resume_from_the_refiner_with_edited_sql(small_db, llm, scripted_llm):
    scripted_llm.when(DECOMPOSER, decomposition(("q", "SELECT COUNT(*) FROM singer")))
    first = run(small_db, llm)
    refiner_index = next(e.index for e in first.events if e.agent == "Refiner")

    edited = dict(first.events[refiner_index - 1].data,
                  sql="SELECT COUNT(*) FROM singer WHERE country = 'France'")
    calls_before = len(scripted_llm.requests)
    second = run_to_end(resume_run(PIPELINE, first, refiner_index, small_db, llm, data=edited))

    assert len(scripted_llm.requests) == calls_before  # only the execution check ran
    assert [e.agent for e in second.events] == ["Selector", "Decomposer", "Refiner"]
    assert second.events[1].to_dict()["calls"] == first.events[1].to_dict()["calls"]
    assert second.events[1].edited and not first.events[1].edited
    assert second.final_sql == "SELECT COUNT(*) FROM singer WHERE country = 'France'"
    assert second.result["rows"] == [[2]]


# -- the embedded model ----------------------------------------------------------------------------
@pytest.mark.real_model
def test_macsql_answers_a_simple_count_with_the_embedded_model(real_llm, sample_dbs):
    db = open_database(sample_dbs / "shop.sqlite")
    reference = db.execute("SELECT COUNT(*) FROM customers")
    result = run_to_end(start_run(PIPELINE, "How many customers are there?", db, real_llm))
    assert result.status == "done", result.error
    assert result.result["ok"] and result.result["rows"] == [list(r) for r in reference.rows]


def test_a_sub_question_left_empty_does_not_replace_the_answer():
    from agents.pipelines.macsql.decomposer import parse_answer

    text = ("Sub question 1: How many cars have over 6 cylinders?\nSQL\n```sql\n"
            "SELECT COUNT(*) FROM cars_data WHERE cylinders > 6;\n```\n\n"
            "Sub question 2: None\nSQL\n```sql\nNone\n```\n\nQuestion Solved.")
    answer = parse_answer(text)
    assert answer["sql"] == "SELECT COUNT(*) FROM cars_data WHERE cylinders > 6"
    assert len(answer["sub_questions"]) == 1


def test_a_repair_that_repeats_the_failing_sql_is_asked_again_sampled(small_db, llm,
                                                                      scripted_llm):
    scripted_llm.when(DECOMPOSER, decomposition(("q", "SELECT nope FROM singer")))
    scripted_llm.when(lambda req: REFINER in prompt_text(req) and req.get("temperature"),
                      "```sql\nSELECT COUNT(*) FROM singer WHERE country = 'France'\n```")
    scripted_llm.when(REFINER, "```sql\nSELECT nope FROM singer;\n```")
    result = run(small_db, llm, repeat_temperature=0.7)

    first = next(e for e in result.events if e.agent == "Refiner")
    assert [c.raw.startswith("```sql\nSELECT nope") for c in first.calls] == [True, False]
    assert [r.get("temperature") for r in requests_for(scripted_llm, REFINER)] == [0.0, 0.7]
    assert "asked once more at temperature 0.7" in first.notes[0]
    assert result.final_sql == "SELECT COUNT(*) FROM singer WHERE country = 'France'"
    assert result.result["rows"] == [[2]]


def test_an_empty_result_repeated_by_the_refiner_is_not_asked_again(small_db, llm, scripted_llm):
    empty = "SELECT name FROM singer WHERE country = 'Peru'"
    scripted_llm.when(DECOMPOSER, decomposition(("q", empty)))
    scripted_llm.when(REFINER, f"```sql\n{empty}\n```")
    result = run(small_db, llm, "Which singers are from Peru?", repeat_temperature=0.7)
    assert len(requests_for(scripted_llm, REFINER)) == 1
    assert "same SQL" in result.events[-1].notes[0]
    assert result.final_sql == empty


def test_a_repair_that_returns_to_an_earlier_failing_sql_is_asked_again(small_db, llm,
                                                                        scripted_llm):
    right = "SELECT COUNT(*) FROM singer WHERE country = 'France'"
    scripted_llm.when(DECOMPOSER, decomposition(("q", "SELECT nope FROM singer")))
    scripted_llm.when(lambda req: REFINER in prompt_text(req) and req.get("temperature"),
                      f"```sql\n{right}\n```")
    answers = iter(["SELECT nope2 FROM singer", "SELECT nope FROM singer"])
    scripted_llm.when(REFINER, lambda req: f"```sql\n{next(answers)}\n```")
    result = run(small_db, llm, repeat_temperature=0.7)

    temperatures = [r.get("temperature") for r in requests_for(scripted_llm, REFINER)]
    assert temperatures == [0.0, 0.0, 0.7]  # nope -> nope2 -> nope again: asked once more
    assert result.final_sql == right and result.result["rows"] == [[2]]


def test_the_tables_refiner_prompt_spells_out_the_tables_around_a_name_error(small_db, llm,
                                                                           scripted_llm):
    wrong = ("SELECT T2.name FROM concert AS T1 JOIN singer AS T2 ON T1.singer_id = "
             "T2.singer_id WHERE T2.year = 2015")
    right = wrong.replace("T2.year", "T1.year")
    scripted_llm.when(DECOMPOSER, decomposition(("q", wrong)))
    answers = iter([wrong.replace(" JOIN ", " INNER JOIN "), wrong, right])
    scripted_llm.when(REFINER, lambda req: f"```sql\n{next(answers)}\n```")
    result = run(small_db, llm, "Who sang in 2015?", refiner_prompt="tables",
                 repair_from_hint=False)  # the model is asked: what its prompt shows

    prompts = [last_user_message(r) for r in requests_for(scripted_llm, REFINER)]
    first = prompts[0]
    # the paper's prompt, the error and its hint, then the tables of the SQL in its own terms
    assert first.startswith("[Instruction]") and "[old SQL]" in first
    assert "no such column: T2.year" in first
    assert "- concert AS T1: concert_id, singer_id, year" in first
    assert "year is a column of concert, which this SQL names T1: write T1.year." in first
    assert first.index("Keys that join these tables") < first.index("[Exception class]")
    assert "failed before" not in first and "failed before" not in prompts[1]
    # the Refiner's third pass is shown the first failing SQL again: it is told so
    assert "This SQL has failed before in the same way" in prompts[2]
    assert [e.inputs.get("prompt") for e in result.events if e.agent == "Refiner"] == [
        "tables"] * 4
    assert result.final_sql == right and result.result["rows"] == [["Ana"], ["Bo"]]

    # the rest of the prompt is the paper's, byte for byte
    scripted_llm.clear()
    scripted_llm.when(DECOMPOSER, decomposition(("q", wrong)))
    scripted_llm.when(REFINER, f"```sql\n{right}\n```")
    run(small_db, llm, "Who sang in 2015?", refiner_prompt="paper", repair_from_hint=False)
    paper = last_user_message(requests_for(scripted_llm, REFINER)[0])
    before, error_part = paper.split("[SQLite error]\n")
    error, after = error_part.split("[Exception class]")
    assert first.startswith(before + "[SQLite error]\n" + error)
    assert first.endswith("[Exception class]" + after)
    assert len(first) > len(paper) + 200


def test_the_tables_refiner_prompt_is_the_default_and_the_papers_one_switch_away(
        small_db, llm, scripted_llm):
    scripted_llm.when(DECOMPOSER, decomposition(("q", "SELECT T1.nope FROM singer AS T1")))
    scripted_llm.when(REFINER, "```sql\nSELECT COUNT(*) FROM singer\n```")
    result = run(small_db, llm)
    prompt = last_user_message(requests_for(scripted_llm, REFINER)[0])
    assert "The tables this SQL uses" in prompt
    assert result.events[2].inputs["prompt"] == "tables"
    scripted_llm.requests.clear()
    result = run(small_db, llm, refiner_prompt="paper")
    prompt = last_user_message(requests_for(scripted_llm, REFINER)[0])
    assert "The tables this SQL uses" not in prompt and "failed before" not in prompt
    assert prompt.split("[SQLite error]\n")[1].startswith("no such column: T1.nope")
    assert result.events[2].inputs["prompt"] == "paper"


# sha256 of the JSON of every request's messages of one scripted run with the paper's prompts
# whose SQL fails (a name error, repaired), taken before refiner_prompt existed (when the
# paper's prompts were the default parameters).
PAPER_PROMPTS_SHA = "30bf03a0b4512c39031e46f4b36a3eba9ad5689e42bd1f4d87163b2b1dfe6a4c"


def test_the_papers_prompts_are_sent_byte_for_byte(small_db, llm, scripted_llm):
    import hashlib

    scripted_llm.when(DECOMPOSER, decomposition(("q", "SELECT T1.nme FROM singer AS T1 JOIN "
                                                      "concert AS T2 ON T1.singer_id = "
                                                      "T2.singer_id")))
    scripted_llm.when(REFINER, "```sql\nSELECT T1.name FROM singer AS T1 JOIN concert AS T2 "
                               "ON T1.singer_id = T2.singer_id\n```")
    result = run(small_db, llm, "Who sang?", decomposer_prompt="paper", refiner_prompt="paper")
    assert result.status == "done" and result.result["ok"]
    messages = [req["messages"] for req in scripted_llm.requests]
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()
    assert digest == PAPER_PROMPTS_SHA
