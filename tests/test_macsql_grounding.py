"""MAC-SQL's value grounding: the question's values found in the database reach the
Decomposer and the Refiner, as a list or as the first value examples of their columns."""

from __future__ import annotations

import json

from agents.pipelines.common import macsql_schema
from macsql_script import DECOMPOSER, PIPELINE, REFINER, SELECTOR, decomposition, requests_for, run
from scripted_llm import last_user_message


GROUNDED = "Values in the database that match the question:"


def test_value_grounding_shows_the_stored_values_to_the_decomposer_and_the_refiner(
        small_db, llm, scripted_llm):
    scripted_llm.when(DECOMPOSER, decomposition(
        ("q", "SELECT COUNT(*) FROM singers WHERE country = 'french'")))
    scripted_llm.when(REFINER, "```sql\nSELECT COUNT(*) FROM singer WHERE country = 'France'\n```")
    result = run(small_db, llm, "How many singers come from france?", value_grounding="list")

    assert result.status == "done", result.error
    assert [e.step for e in result.events] == ["selector", "ground", "decomposer", "refiner",
                                               "refiner"]
    ground = result.events[1]
    assert ground.agent == "Value grounding" and ground.kind == "value_matches"
    assert ("singer", "country", "France") in {(m["table"], m["column"], m["value"])
                                               for m in ground.parsed["matches"]}
    assert ground.output.shown_to == "the Decomposer and the Refiner, beside the evidence"
    assert "shown to the Decomposer and the Refiner, beside" in "\n".join(
        ground.output.text_lines())
    for marker in (DECOMPOSER, REFINER):
        sent = last_user_message(requests_for(scripted_llm, marker)[0])
        assert GROUNDED in sent and "- singer.country = 'France'" in sent
        # after the schema and the question, so the static prefix stays the same
        assert sent.index(GROUNDED) > sent.index("france?")
    assert result.final_sql == "SELECT COUNT(*) FROM singer WHERE country = 'France'"


def test_value_grounding_as_examples_puts_the_stored_value_first_in_its_column(
        small_db, llm, scripted_llm):
    """``examples``: no list of conditions, the matched value leads the column's value
    examples in the schema the Decomposer and the Refiner read; the database's own schema is
    not changed."""
    scripted_llm.when(DECOMPOSER, decomposition(
        ("q", "SELECT COUNT(*) FROM singers WHERE country = 'Chile'")))
    scripted_llm.when(REFINER, "```sql\nSELECT COUNT(*) FROM singer WHERE country = 'Chile'\n```")
    before = macsql_schema(small_db.schema)
    assert "Value examples: ['France', 'Chile']" in before[0]
    result = run(small_db, llm, "How many singers come from chile?", value_grounding="examples")

    assert [e.step for e in result.events][:2] == ["selector", "ground"]
    assert "value examples" in result.events[1].output.shown_to
    for marker in (DECOMPOSER, REFINER):
        sent = last_user_message(requests_for(scripted_llm, marker)[0])
        assert GROUNDED not in sent
        assert "Value examples: ['Chile', 'France']" in sent
    assert macsql_schema(small_db.schema) == before


def test_value_examples_are_the_default_and_earlier_runs_resume_without_a_lookup():
    assert PIPELINE.resolve_params({})["value_grounding"] == "examples"
    assert PIPELINE.resolve_recorded({"decomposer_prompt": "graded"})["value_grounding"] == "off"


def test_without_value_grounding_there_is_no_step_and_the_prompt_is_unchanged(
        small_db, llm, scripted_llm):
    scripted_llm.when(DECOMPOSER, decomposition(("q", "SELECT COUNT(*) FROM singer")))
    result = run(small_db, llm, "How many singers come from france?", value_grounding="off")
    assert [e.step for e in result.events] == ["selector", "decomposer", "refiner"]
    assert GROUNDED not in last_user_message(requests_for(scripted_llm, DECOMPOSER)[0])


def test_value_grounding_searches_only_the_tables_the_selector_kept(small_db, llm,
                                                                    scripted_llm):
    scripted_llm.when(SELECTOR, json.dumps({"singer": "drop_all", "concert": "keep_all"}))
    scripted_llm.when(DECOMPOSER, decomposition(("q", "SELECT COUNT(*) FROM concert")))
    result = run(small_db, llm, "How many concerts were in france?", use_selector="always",
                 value_grounding="list")
    ground = result.events[1]
    assert ground.step == "ground" and ground.inputs["tables"] == ["concert"]
    assert ground.parsed["matches"] == []
    assert GROUNDED not in last_user_message(requests_for(scripted_llm, DECOMPOSER)[0])


# -- Decomposer ------------------------------------------------------------------------------------
