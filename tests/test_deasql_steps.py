"""DEA-SQL's steps with the paper's prompts against the scripted OpenAI-compatible server: the
information filter, classification and its hints, few-shot examples, self-correction and
active learning, a run resumed with an edited question type, and one on the embedded model."""

from __future__ import annotations

import json

import pytest

import deasql_script
from agents.db.database import open_database
from agents.core.engine import resume_run, run_to_end, start_run
from agents.pipelines.deasql import PIPELINE
from agents.pipelines.deasql.classification import parse_label
from agents.pipelines.deasql.sql_generation import FEW_SHOT_HEADER
from deasql_script import (EXTREMUM_Q, GOOD_SQL, ORDERED_SQL, QUESTION, SUBQUERY_SQL, event,
                           prompts_with, run, script)
from prompt_markers import (DEA_ACTIVE as ACTIVE, DEA_CLASSIFY as CLASSIFY, DEA_CORRECT as CORRECT,
                            DEA_ELEMENTS as ELEMENTS, DEA_FILTER as FILTER,
                            DEA_GENERATE as GENERATE)


# Fixtures of deasql_script, shared by the DEA-SQL test modules (its db is not conftest's).
bank, db = deasql_script.bank, deasql_script.db


def test_every_module_is_a_visible_step_and_the_answer_runs(db, llm, scripted_llm, bank):
    script(scripted_llm)
    result = run(db, llm, bank=bank)
    assert result.status == "done", result.error
    assert [e.agent for e in result.events] == [
        "Elements identification", "Information filter", "Classification & hint",
        "SQL generation", "Self-correction", "Active learning", "Execution check"]
    assert [e.status for e in result.events] == ["ok"] * 4 + ["ok", "skipped", "ok"]
    assert result.final_sql == GOOD_SQL
    assert sorted(r[0] for r in result.result["rows"]) == ["Ann", "Cleo"]
    elements = event(result, "elements")
    assert elements.parsed == {"entities": ["singers", "France"],
                               "rewritten_question": "names of singers from France"}
    data = result.events[-1].data
    assert data["qtype"] == "EASY"
    assert data["selection"] == {"singer": ["singer_id", "name", "country"]} or \
        data["selection"] == {"singer": ["name", "country"]}
    assert "condition on singer: country = 'France'" in data["key_info"]
    # the rewritten question is the prompt's [main_metric]; the key info reaches generation
    generation_prompt = prompts_with(scripted_llm, GENERATE)[0]
    assert "calculation methods of 'names of singers from France'" in generation_prompt
    assert "condition on singer: country = 'France'" in generation_prompt
    # static instructions first, then the schema, then the question
    correction = prompts_with(scripted_llm, CORRECT)[0]
    assert correction.index(CORRECT) < correction.index("CREATE TABLE") < \
        correction.index(QUESTION)


def test_the_filter_drops_unknown_tables_and_columns(db, llm, scripted_llm):
    script(scripted_llm, **{FILTER: json.dumps({"Required table information": [
        {"Table name": "singer", "All field names required by SQL under this table":
            ["name", "invented_col"]},
        {"Table name": "ghost_table", "All field names required by SQL under this table":
            ["x"]}]})})
    result = run(db, llm)
    assert result.status == "done", result.error
    step = event(result, "information_filter")
    assert set(step.data["selection"]) == {"singer"}
    assert "invented_col" not in json.dumps(step.data["selection"])
    notes = " ".join(step.notes)
    assert "invented_col" in notes and "ghost_table" in notes
    assert step.parsed["tables"][0]["table"] == "singer"
    later = prompts_with(scripted_llm, CLASSIFY)[0] + prompts_with(scripted_llm, GENERATE)[0]
    assert "ghost_table" not in later and "invented_col" not in later
    assert "CREATE TABLE concert" not in prompts_with(scripted_llm, GENERATE)[0]


def test_a_filter_answer_with_no_real_table_falls_back_to_the_whole_schema(db, llm,
                                                                        scripted_llm):
    script(scripted_llm, **{FILTER: json.dumps({"Required table information": [
        {"Table name": "nothing_here", "All field names required by SQL under this table": []}]})})
    result = run(db, llm)
    assert result.status == "done", result.error
    step = event(result, "information_filter")
    assert step.data["selection"] is None
    assert any("whole schema" in n for n in step.notes)
    assert "CREATE TABLE concert" in prompts_with(scripted_llm, GENERATE)[0]


def test_the_filter_can_be_switched_off(db, llm, scripted_llm):
    script(scripted_llm)
    result = run(db, llm, information_filter=False)
    assert result.status == "done"
    assert event(result, "information_filter").status == "skipped"
    assert not prompts_with(scripted_llm, FILTER)
    assert "CREATE TABLE singer_in_concert" in prompts_with(scripted_llm, GENERATE)[0]


def test_classification_changes_the_generation_prompt(db, llm, scripted_llm, bank):
    prompts = {}
    for label in ("NON-JOIN, NON-NESTED", "JOIN, NON-NESTED", "JOIN, NESTED"):
        scripted_llm.clear()
        script(scripted_llm, **{
            CLASSIFY: f"Label: {label}",
            FILTER: json.dumps({"Required table information": [
                {"Table name": "singer", "All field names required by SQL under this table":
                    ["name"]},
                {"Table name": "singer_in_concert",
                 "All field names required by SQL under this table": ["singer_id"]}]})})
        result = run(db, llm, bank=bank, few_shot=1)
        assert result.status == "done", result.error
        prompts[label] = prompts_with(scripted_llm, GENERATE)[0]
    easy, join, nested = prompts.values()
    assert "HINT" not in easy and "Foreign keys:" not in easy
    assert "connection operation like JOIN" in join and "Foreign keys:" in join
    assert "singer_in_concert.`singer_id` = singer.`singer_id`" in join
    assert "nested queries like INTERSECT" in nested and "Foreign keys:" in nested
    # few-shot examples are retrieved per question type
    assert "SELECT name FROM player WHERE nation = 'Spain'" in easy
    assert "JOIN course" in join and "JOIN course" not in easy
    assert "NOT IN (SELECT T1.student_id" in nested


def test_foreign_key_hint_can_be_switched_off(db, llm, scripted_llm):
    script(scripted_llm, **{CLASSIFY: "Label: JOIN, NON-NESTED", FILTER: json.dumps(
        {"Required table information": [
            {"Table name": "singer", "All field names required by SQL under this table": []},
            {"Table name": "singer_in_concert",
             "All field names required by SQL under this table": []}]})})
    run(db, llm, foreign_key_hint=False)
    assert "Foreign keys:" not in prompts_with(scripted_llm, GENERATE)[0]


def test_classification_off_uses_one_fixed_hint(db, llm, scripted_llm):
    script(scripted_llm)
    result = run(db, llm, classification=False)
    assert result.status == "done"
    assert event(result, "classification").status == "skipped"
    assert not prompts_with(scripted_llm, CLASSIFY)
    assert "connection operation like JOIN" in prompts_with(scripted_llm, GENERATE)[0]


def test_retrieved_examples_appear_in_the_generation_prompt(db, llm, scripted_llm, bank):
    script(scripted_llm)
    result = run(db, llm, bank=bank, few_shot=2)
    generation = event(result, "sql_generation")
    prompt = prompts_with(scripted_llm, GENERATE)[0]
    assert prompt.startswith(FEW_SHOT_HEADER)
    shown = generation.parsed["examples"]
    assert 1 <= len(shown) <= 2
    # the same template ("what are the names of <m> from <m>") ranks first
    assert shown[0]["question"] == "What are the names of players from Spain?"
    for example in shown:
        assert example["question"] in prompt and json.dumps({"sql": example["sql"]}) in prompt
    assert generation.data["examples"][0]["db_id"] == "sport"


def test_same_database_examples_can_be_excluded(db, llm, scripted_llm, bank):
    bank.add("What are the names of singers from Italy?",
             "SELECT name FROM singer WHERE country = 'Italy'", db_id=db.name)
    script(scripted_llm)
    run(db, llm, bank=bank, few_shot=1)
    assert "'Italy'" in prompts_with(scripted_llm, GENERATE)[0]
    scripted_llm.clear()
    script(scripted_llm)
    run(db, llm, bank=bank, few_shot=1, exclude_same_db_examples=True)
    assert "'Italy'" not in prompts_with(scripted_llm, GENERATE)[0]


def test_without_an_example_bank_generation_is_zero_shot(db, llm, scripted_llm):
    script(scripted_llm)
    result = run(db, llm)
    generation = event(result, "sql_generation")
    assert any("zero-shot" in n for n in generation.notes)
    assert FEW_SHOT_HEADER not in prompts_with(scripted_llm, GENERATE)[0]


def test_self_correction_applies_a_working_fix_and_rejects_a_broken_one(db, llm, scripted_llm):
    fixed = "SELECT name FROM singer WHERE country = 'France' ORDER BY name"
    script(scripted_llm, **{CORRECT: json.dumps({"sql": fixed})})
    result = run(db, llm)
    step = event(result, "self_correction")
    assert step.parsed["changed"] is True and result.final_sql == fixed

    scripted_llm.clear()
    script(scripted_llm, **{CORRECT: json.dumps({"sql": "SELECT nme FROM singer"})})
    result = run(db, llm)
    step = event(result, "self_correction")
    assert step.parsed["changed"] is False and result.final_sql == GOOD_SQL
    assert any("corrected SQL fails" in n for n in step.notes)


def test_self_correction_can_be_switched_off(db, llm, scripted_llm):
    script(scripted_llm)
    result = run(db, llm, self_correction=False)
    assert event(result, "self_correction").status == "skipped"
    assert not prompts_with(scripted_llm, CORRECT)


def test_active_learning_is_skipped_when_not_an_extremum_question(db, llm, scripted_llm):
    script(scripted_llm)
    result = run(db, llm)
    step = event(result, "active_learning")
    assert step.status == "skipped" and "not an extremum question" in step.notes[0]
    assert not prompts_with(scripted_llm, ACTIVE)


def test_active_learning_applies_a_rewrite_that_changes_the_sql(db, llm, scripted_llm):
    script(scripted_llm, **{
        GENERATE: json.dumps({"sql": SUBQUERY_SQL}), CORRECT: json.dumps({"sql": SUBQUERY_SQL}),
        ACTIVE: ("The question is an extremum problem, so i should modify the SQL. "
                 f"The modified SQL: {ORDERED_SQL}")})
    result = run(db, llm, question=EXTREMUM_Q)
    step = event(result, "active_learning")
    assert step.status == "ok" and step.parsed["applied"] is True
    assert step.parsed["sql_before"] == SUBQUERY_SQL
    assert result.final_sql == ORDERED_SQL and result.result["rows"] == [["Bo"]]
    prompt = prompts_with(scripted_llm, ACTIVE)[0]
    assert prompt.index("Q3:") < prompt.index("CREATE TABLE") < prompt.index(EXTREMUM_Q)


@pytest.mark.parametrize("answer, reason", [
    (f"The question is an extremum problem. The modified SQL: {SUBQUERY_SQL}", "the same"),
    (f"The question is not an extremum problem. The modified SQL: {ORDERED_SQL}",
     "not an extremum problem"),
    ("The question is an extremum problem. The modified SQL: SELECT nme FROM singer "
     "ORDER BY age DESC LIMIT 1", "fails"),
])
def test_active_learning_leaves_the_sql_alone_unless_it_changes_it(db, llm, scripted_llm,
                                                                    answer, reason):
    script(scripted_llm, **{GENERATE: json.dumps({"sql": SUBQUERY_SQL}),
                            CORRECT: json.dumps({"sql": SUBQUERY_SQL}), ACTIVE: answer})
    result = run(db, llm, question=EXTREMUM_Q)
    step = event(result, "active_learning")
    assert step.parsed["applied"] is False and reason in step.parsed["reason"]
    assert result.final_sql == SUBQUERY_SQL and result.status == "done"


def test_active_learning_always_mode_asks_for_any_question(db, llm, scripted_llm):
    script(scripted_llm)
    result = run(db, llm, active_learning="always")
    assert event(result, "active_learning").status == "ok"
    assert len(prompts_with(scripted_llm, ACTIVE)) == 1


def test_resuming_with_an_edited_question_type_changes_generation(db, llm, scripted_llm):
    script(scripted_llm)
    first = run(db, llm)
    index = next(i for i, e in enumerate(first.events) if e.step == "sql_generation")
    data = dict(first.events[index - 1].data, qtype="JOIN-NESTED")
    scripted_llm.requests.clear()
    second = run_to_end(resume_run(PIPELINE, first, index, db, llm, data=data))
    assert second.status == "done"
    assert "nested queries like INTERSECT" in prompts_with(scripted_llm, GENERATE)[0]
    assert not prompts_with(scripted_llm, ELEMENTS)


def test_parse_label_reads_the_label_line_or_the_conclusion():
    assert parse_label("Label: NON-JOIN, NESTED")["question_type"] == "NESTED"
    assert parse_label("blah\nThus it can be classified as JOIN, NON-NESTED.")[
        "question_type"] == "JOIN"
    assert parse_label("Label: JOIN-NESTED")["question_type"] == "JOIN-NESTED"
    assert parse_label("Label: EASY")["question_type"] == "EASY"


@pytest.mark.real_model
def test_deasql_answers_a_simple_sample_question_with_the_embedded_model(real_llm, sample_dbs):
    from sample_dbs.build import SAMPLE_DIR

    questions = json.loads((SAMPLE_DIR / "questions.json").read_text())
    library = questions["databases"]["library"]
    item = next(q for q in library["questions"] if "not been returned" in q["question"])
    database = open_database(sample_dbs / library["file"])
    try:
        result = run_to_end(start_run(PIPELINE, item["question"], database, real_llm))
        expected = database.execute(item["sql"])
        assert result.status == "done", result.error
        assert sorted(map(tuple, result.result["rows"])) == sorted(map(tuple, expected.rows))
    finally:
        database.close()
