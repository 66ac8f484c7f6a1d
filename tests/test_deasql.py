"""DEA-SQL pipeline: every step's control flow against the scripted OpenAI-compatible server."""

from __future__ import annotations

import hashlib
import json

import pytest

from agents.db.database import open_database
from agents.core.engine import resume_run, run_to_end, start_run
from agents.example_bank import ExampleBank
from agents.pipelines.deasql import PIPELINE
from agents.pipelines.deasql.classification import parse_label
from agents.pipelines.deasql.sql_generation import FEW_SHOT_HEADER
from dbfactory import SINGERS_SQL, make_db
from prompt_markers import (DEA_ACTIVE as ACTIVE, DEA_CLASSIFY as CLASSIFY,
                            DEA_CORRECT as CORRECT, DEA_ELEMENTS as ELEMENTS,
                            DEA_FILTER as FILTER, DEA_GENERATE as GENERATE, DEA_REPAIR as REPAIR)
from scripted_llm import prompt_text

GOOD_SQL = "SELECT name FROM singer WHERE country = 'France'"
DEFAULT_REPLIES = {
    ELEMENTS: json.dumps({"entities": ["singers", "France"],
                          "query": "names of singers from France"}),
    FILTER: json.dumps({
        "main_metric calculation method": "list names",
        "Required table information": [{
            "Table name": "singer", "where statement condition": "country = 'France'",
            "All field names required by SQL under this table": ["name", "country"]}],
        "Multiple table joint fields and conditions": "none",
        "All fields": ["singer.name", "singer.country"]}),
    CLASSIFY: "Let's think step by step. One table.\nLabel: NON-JOIN, NON-NESTED",
    GENERATE: json.dumps({"sql": GOOD_SQL}),
    CORRECT: json.dumps({"sql": GOOD_SQL}),
    ACTIVE: f"The question is not an extremum problem. The modified SQL: {GOOD_SQL}",
    REPAIR: json.dumps({"sql": GOOD_SQL}),
}
QUESTION = "What are the names of singers from France?"


@pytest.fixture
def db(tmp_path):
    database = open_database(make_db(tmp_path / "concerts.sqlite", SINGERS_SQL))
    yield database
    database.close()


@pytest.fixture
def bank():
    b = ExampleBank()
    b.add("How many singers are from Germany?", "SELECT count(*) FROM singer WHERE country = "
          "'Germany'", db_id="music")
    b.add("What are the names of players from Spain?", "SELECT name FROM player WHERE nation = "
          "'Spain'", db_id="sport")
    b.add("What are the names of teachers who teach courses in Math?",
          "SELECT T1.name FROM teacher AS T1 JOIN course AS T2 ON T1.id = T2.teacher_id WHERE "
          "T2.subject = 'Math'", db_id="school")
    b.add("What are the names of students who never took an exam?",
          "SELECT name FROM student WHERE id NOT IN (SELECT T1.student_id FROM exam AS T1 JOIN "
          "room AS T2 ON T1.room = T2.id)", db_id="school")
    return b


def script(server, **overrides):
    """Install one reply per step (``overrides`` keyed by marker replace the defaults)."""
    replies = dict(DEFAULT_REPLIES)
    replies.update(overrides)
    for marker, reply in replies.items():
        server.when(marker, reply)


def run(db, llm, question=QUESTION, bank=None, variant="paper", **params):
    """A run to its end; with the paper's prompts unless another ``variant`` is asked for
    (None: the pipeline's default), as most tests here check the paper's behaviour."""
    services = {"examples": bank} if bank is not None else {}
    if variant is not None:
        params["variant"] = variant
    return run_to_end(start_run(PIPELINE, question, db, llm, params=params, services=services))


def prompts_with(server, marker):
    return [prompt_text(r) for r in server.requests if marker in prompt_text(r)]


def event(run_, step):
    return next(e for e in run_.events if e.step == step)


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


EXTREMUM_Q = "What is the name of the oldest singer?"
SUBQUERY_SQL = "SELECT name FROM singer WHERE age = (SELECT max(age) FROM singer)"
ORDERED_SQL = "SELECT name FROM singer ORDER BY age DESC LIMIT 1"


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
    result = run(db, llm, repair_attempts=0)
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
                 repair_attempts=repair_attempts)
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


# -- the compact variant (for small models) ---------------------------------------------------

TWO_TABLES = json.dumps({"Required table information": [
    {"Table name": "singer", "All field names required by SQL under this table": ["name"]},
    {"Table name": "singer_in_concert",
     "All field names required by SQL under this table": ["singer_id"]}]})
BROKEN_SQL = "SELECT nme FROM singer WHERE country = 'France'"
# sha256 of every request's messages of the scenarios below with the paper's variant, taken
# before the compact variant existed (then the default parameters): the paper's prompts are
# sent byte for byte as before
PAPER_PROMPTS = "deb5c5ea6cf3f922c3af369c09577de151719cb7c3ac2200e722691ebbc3e55a"


def paper_scenarios(db, llm, scripted_llm, bank, **params) -> tuple[list, list]:
    """Runs that reach every prompt (EASY, JOIN and NESTED generation, self-correction, active
    learning, repair); ``(messages of every request, runs)``."""
    scenarios = [
        ({}, QUESTION),
        ({CLASSIFY: "Label: JOIN, NON-NESTED", FILTER: TWO_TABLES}, QUESTION),
        ({CLASSIFY: "Label: JOIN, NESTED", FILTER: TWO_TABLES}, QUESTION),
        ({GENERATE: json.dumps({"sql": BROKEN_SQL}), CORRECT: json.dumps({"sql": BROKEN_SQL})},
         QUESTION),
        ({GENERATE: json.dumps({"sql": SUBQUERY_SQL}), CORRECT: json.dumps({"sql": SUBQUERY_SQL}),
          ACTIVE: f"The question is an extremum problem. The modified SQL: {ORDERED_SQL}"},
         EXTREMUM_Q),
    ]
    messages, runs = [], []
    for overrides, question in scenarios:
        scripted_llm.clear()
        script(scripted_llm, **overrides)
        runs.append(run(db, llm, question=question, bank=bank, **params))
        assert runs[-1].status == "done", runs[-1].error
        messages += [r["messages"] for r in scripted_llm.requests]
    return messages, runs


def digest(messages: list) -> str:
    return hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()


def test_the_compact_variant_is_the_default_and_the_papers_prompts_are_unchanged(
        db, llm, scripted_llm, bank):
    messages, runs = paper_scenarios(db, llm, scripted_llm, bank, variant="paper")
    assert digest(messages) == PAPER_PROMPTS, digest(messages)
    for step in ("information_filter", "classification", "sql_generation", "execution_check"):
        assert event(runs[0], step).inputs["variant"] == "paper"
    assert event(runs[1], "sql_generation").inputs["template"] == "generation_join"
    default, runs = paper_scenarios(db, llm, scripted_llm, bank, variant=None)
    compact, _ = paper_scenarios(db, llm, scripted_llm, bank, variant="compact")
    assert default == compact and default != messages
    for step in ("information_filter", "classification", "sql_generation", "execution_check"):
        assert event(runs[0], step).inputs["variant"] == "compact"
    assert PIPELINE.resolve_recorded({})["variant"] == "paper"


def test_the_compact_variants_prompts_differ_from_the_papers_as_intended(
        db, llm, scripted_llm, bank):
    paper, _ = paper_scenarios(db, llm, scripted_llm, bank)
    compact, runs = paper_scenarios(db, llm, scripted_llm, bank, variant="compact")
    text = lambda messages: "\n".join(m["content"] for m in messages)  # noqa: E731
    pairs = [(text(p), text(c)) for p, c in zip(paper, compact)]
    assert len(paper) == len(compact)
    # elements and the filter ask what the paper asks; classification, self-correction and
    # active learning too, about the schema the filter kept
    for marker in (ELEMENTS, FILTER):
        assert all(p == c for p, c in pairs if marker in p)
    for marker in (CLASSIFY, CORRECT, ACTIVE):
        assert all(p.split("CREATE TABLE")[0] == c.split("CREATE TABLE")[0]
                   for p, c in pairs if marker in p)
    generations = [c for p, c in pairs if GENERATE in c]
    assert len(generations) == 5 and all(p != c for p, c in pairs if GENERATE in c)
    assert any(REPAIR in c and p != c for p, c in pairs)
    for prompt in generations:
        # instructions first, then the schema, the examples and the question; no LIMIT rule
        assert prompt.startswith("Write one SQLite query")
        assert prompt.index("### specification") < prompt.index("CREATE TABLE") < \
            prompt.index("Examples from other databases") < prompt.index("### Query:")
        assert "LIMIT" not in prompt and FEW_SHOT_HEADER not in prompt
        assert "calculation method:" not in prompt and "list names" not in prompt
    easy, join, nested = (next(g for g in generations if marker in g) for marker in (
        "Join another table only when the query needs one of its columns.",
        "connection operation like JOIN", "nested queries like INTERSECT"))
    assert "HINT" not in easy and "Foreign keys:" in join and "Foreign keys:" in nested
    assert 'Don\'t use "IN"' not in nested
    assert event(runs[1], "sql_generation").inputs["template"] == "generation_join_compact"
    for step in ("information_filter", "classification", "sql_generation", "execution_check"):
        assert event(runs[0], step).inputs["variant"] == "compact"
    assert event(runs[0], "classification").parsed["variant"] == "compact"


def test_the_compact_filter_keeps_whole_tables_and_the_tables_a_question_needs(db):
    from agents.pipelines.deasql.information_filter import parse_answer, resolve, widen

    schema = db.schema
    answer = parse_answer(json.dumps({
        "main_metric calculation method": "COUNT(DISTINCT name)",
        "Required table information": [{
            "Table name": "concert",
            "All field names required by SQL under this table": ["concert_name", "singer_id"]}],
        "All fields": ["concert.concert_name"]}))
    selection, _, _, _ = resolve(schema, answer)
    assert selection == {"concert": ["concert_name"]}
    # singer_id is not concert's: it is a column of the one table linked to concert that has it
    widened, rows, notes = widen(schema, answer, selection, "List every concert's name.")
    assert widened == {"concert": "keep_all", "singer_in_concert": "keep_all"}
    assert all(r["decision"] == "keep_all" and not r["dropped"] for r in rows)
    assert any("singer_in_concert: kept too" in n and "'singer_id'" in n for n in notes)
    # a table the question names is kept, with the table that joins it to the others
    answer = parse_answer(json.dumps({"Required table information": [{
        "Table name": "concert", "All field names required by SQL under this table": ["year"]}]}))
    widened, _, notes = widen(schema, answer, resolve(schema, answer)[0],
                              "Which singers sang in 2014?")
    assert set(widened) == {"singer", "concert", "singer_in_concert"}
    assert "singer: kept too (the question names it)" in notes
    assert any(n.startswith("singer_in_concert: kept too (it joins") for n in notes)
    # nothing is added to a question about one table
    widened, _, notes = widen(schema, answer, resolve(schema, answer)[0],
                              "How many concerts were there in 2014?")
    assert widened == {"concert": "keep_all"} and notes == []


def test_the_compact_classification_drops_a_join_label_on_a_one_table_schema(
        db, llm, scripted_llm, bank):
    script(scripted_llm, **{CLASSIFY: "Let's think step by step.\nLabel: JOIN, NON-NESTED"})
    result = run(db, llm, bank=bank, few_shot=1, variant="compact")
    assert result.status == "done", result.error
    step = event(result, "classification")
    assert step.inputs["tables"] == ["singer"]
    assert step.parsed["label"] == "JOIN, NON-NESTED" and step.data["qtype"] == "EASY"
    assert any("has one table: EASY is used" in n for n in step.notes)
    assert event(result, "sql_generation").inputs["template"] == "generation_easy_compact"
    prompt = prompts_with(scripted_llm, GENERATE)[0]
    assert "HINT" not in prompt and "JOIN course" not in prompt
    # the information filter's calculation method is not passed on, its condition is
    filtered = event(result, "information_filter")
    assert filtered.data["key_info"] == ["condition on singer: country = 'France'"]
    assert filtered.data["selection"] == {"singer": "keep_all"}
    assert "age INTEGER" in prompt
    assert sorted(r[0] for r in result.result["rows"]) == ["Ann", "Cleo"]


def test_a_compact_run_answers_a_join_question_the_filter_cut_too_far(db, llm, scripted_llm,
                                                                      bank):
    question = "Which singers sang in the concert Spring?"
    answer = ("SELECT T1.name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.singer_id = "
              "T2.singer_id JOIN concert AS T3 ON T2.concert_id = T3.concert_id "
              "WHERE T3.concert_name = 'Spring'")
    script(scripted_llm, **{
        FILTER: json.dumps({"Required table information": [{
            "Table name": "singer", "All field names required by SQL under this table":
                ["name"]}]}),
        CLASSIFY: "Label: JOIN, NON-NESTED", GENERATE: json.dumps({"sql": answer}),
        CORRECT: json.dumps({"sql": answer})})
    paper = run(db, llm, question=question, bank=bank)
    assert "CREATE TABLE concert" not in prompts_with(scripted_llm, GENERATE)[0]

    scripted_llm.requests.clear()
    result = run(db, llm, question=question, bank=bank, variant="compact")
    assert result.status == "done", result.error
    assert set(event(result, "information_filter").data["selection"]) == {
        "singer", "concert", "singer_in_concert"}
    prompt = prompts_with(scripted_llm, GENERATE)[0]
    assert "CREATE TABLE concert" in prompt and "CREATE TABLE singer_in_concert" in prompt
    assert "connection operation like JOIN" in prompt
    assert "singer_in_concert.`concert_id` = concert.`concert_id`" in prompt
    assert sorted(r[0] for r in result.result["rows"]) == ["Ann", "Bo"]
    assert paper.final_sql == result.final_sql


def test_the_compact_repair_is_shown_the_columns_of_the_tables_its_query_uses(db, llm,
                                                                               scripted_llm):
    broken = "SELECT T1.name FROM singer_in_concert AS T1 WHERE T1.country = 'France'"
    script(scripted_llm, **{GENERATE: json.dumps({"sql": broken}),
                            CORRECT: json.dumps({"sql": broken})})
    result = run(db, llm, variant="compact")
    assert result.status == "done", result.error
    step = event(result, "execution_check")
    assert step.inputs["variant"] == "compact"
    assert "no such column: T1.name" in step.parsed["repairs"][0]["error"]
    repair = prompts_with(scripted_llm, REPAIR)[0]
    block = repair.split("with all their columns:\n")[1]
    assert block.startswith("singer_in_concert: concert_id, singer_id\n"
                            "singer: singer_id, name, country, age\n")
    assert repair.index("CREATE TABLE") < repair.index(QUESTION) < repair.index(broken) < \
        repair.index("with all their columns:")
    assert result.final_sql == GOOD_SQL
    assert sorted(r[0] for r in result.result["rows"]) == ["Ann", "Cleo"]


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
    result = run(db, llm, repeat_temperature=0.8)
    step = event(result, "execution_check")
    assert len(step.calls) == 3  # the repair, the sampled one and its parse retry
    assert "the first answer stands" in step.notes[1]
    assert step.parsed["repairs"][0]["sql_after"] == broken
    assert result.status == "failed" and "does not run" in step.error
