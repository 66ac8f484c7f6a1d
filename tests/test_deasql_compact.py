"""DEA-SQL's compact variant (for small models), the default: the paper's prompts still sent
byte for byte, how the compact prompts differ, and its filter, classification and repair."""

from __future__ import annotations

import hashlib
import json

import deasql_script
from agents.pipelines.deasql import PIPELINE
from agents.pipelines.deasql.sql_generation import FEW_SHOT_HEADER
from deasql_script import (EXTREMUM_Q, GOOD_SQL, ORDERED_SQL, QUESTION, SUBQUERY_SQL, event,
                           prompts_with, run, script)
from prompt_markers import (DEA_ACTIVE as ACTIVE, DEA_CLASSIFY as CLASSIFY, DEA_CORRECT as CORRECT,
                            DEA_ELEMENTS as ELEMENTS, DEA_FILTER as FILTER,
                            DEA_GENERATE as GENERATE, DEA_REPAIR as REPAIR)


# Fixtures of deasql_script, shared by the DEA-SQL test modules (its db is not conftest's).
bank, db = deasql_script.bank, deasql_script.db


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
    result = run(db, llm, variant="compact", repair_from_hint=False)  # the model repairs
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
