"""R³'s SQL-Writer prompts: related examples from the bank, the writer styles and the
small-model defaults, the paper's prompts sent byte for byte, and a run on the embedded model."""

from __future__ import annotations

import json

import pytest

from agents.db.database import open_database
from agents.core.engine import run_to_end, start_run
from agents.example_bank import ExampleBank
from agents.pipelines.r3 import PIPELINE
from agents.core.paths import SAMPLE_DBS
from r3_script import PAPER, QUESTION, SQL_A, SQL_B, approve, invitation, revise, run, writer
from scripted_llm import prompt_text


# -- examples ---------------------------------------------------------------------------------

def test_related_examples_from_the_bank_enter_the_writer_prompt(db, llm, scripted_llm):
    bank = ExampleBank()
    bank.add("What are the names of teachers from Spain?",
             "SELECT name FROM teacher WHERE country = 'Spain'")
    bank.add("How many concerts were held in 2014?",
             "SELECT count(*) FROM concert WHERE year = 2014")
    scripted_llm.push(writer(SQL_A), invitation(1), approve())
    result = run_to_end(start_run(PIPELINE, QUESTION, db, llm,
                                  params={"k": 1, "n_reviewers": 1, **PAPER},
                                  services={"examples": bank}))

    first_prompt = prompt_text(scripted_llm.requests[0])
    assert "### RELATED SQL:\nQUESTION: What are the names of teachers from Spain?" in first_prompt
    assert "concerts were held" not in first_prompt
    assert result.events[0].inputs["examples"] == ["What are the names of teachers from Spain?"]


def test_without_an_example_bank_the_writer_runs_zero_shot(db, llm, scripted_llm):
    scripted_llm.push(writer(SQL_A), invitation(1), approve())
    result = run(db, llm, k=3, n_reviewers=1)
    assert "RELATED SQL" not in prompt_text(scripted_llm.requests[0])
    assert any("zero-shot" in n for n in result.events[0].notes)


def test_program_of_thoughts_writer_prompt_and_reply(db, llm, scripted_llm):
    scripted_llm.push("```python\nresult = db_dict['singer']\n```\n```sql\n" + SQL_A + "\n```",
                      invitation(1), approve())
    result = run(db, llm, writer_style="pot", n_reviewers=1)
    assert "Program of Thoughts (PoT)" in prompt_text(scripted_llm.requests[0])
    assert result.final_sql == SQL_A
    assert "db_dict['singer']" in result.events[0].parsed["reasoning"]


def test_the_small_model_options_are_the_defaults_and_each_step_says_which_ran(
        db, llm, scripted_llm):
    """A run with no parameters writes directly and reviews strictly; a run recorded before the
    switch, which names none of them, keeps the paper's behaviour when read back."""
    scripted_llm.push("```sql\n" + SQL_A + "\n```", invitation(1), approve())
    result = run_to_end(start_run(PIPELINE, QUESTION, db, llm,
                                  params={"k": 0, "n_reviewers": 1}))
    assert result.final_sql == SQL_A
    assert result.events[0].parsed["style"] == "direct"
    assert {k: result.params[k] for k in PAPER} == {
        "writer_style": "direct", "review_prompt": "strict", "revision_gate": "execution",
        "fix_prompt": "tables", "aggregate_gate": True}
    assert "Give only the SQL" in prompt_text(scripted_llm.requests[0])
    old = PIPELINE.resolve_recorded({"k": 0, "n_reviewers": 1})
    assert {k: old[k] for k in PAPER} == PAPER


def test_direct_writer_prompt_asks_for_the_sql_alone_and_the_trace_says_so(
        db, llm, scripted_llm):
    scripted_llm.push("```sql\n" + SQL_A + "\n```", invitation(1), approve())
    result = run(db, llm, writer_style="direct", n_reviewers=1)
    first = prompt_text(scripted_llm.requests[0])
    assert "Give only the SQL" in first and "Describe how you understand" not in first
    assert result.final_sql == SQL_A
    assert result.events[0].parsed["style"] == "direct"


# -- the paper's prompts stay the default ------------------------------------------------------

# sha256 of the JSON of every request's messages of one scripted run with the default
# parameters (a name error and its correction, an invitation, two reviewers, a revision, a
# second round ending in consensus), taken before the small-model variants existed.
DEFAULT_PROMPTS_SHA = "6e857e8c311d90667a66704064a05ef3b20bffdc133a76d93451ffdc37aed469"


def test_default_parameters_send_the_papers_prompts_byte_for_byte(db, llm, scripted_llm):
    import hashlib

    scripted_llm.push(writer("SELECT nme FROM singer WHERE country = 'France'"),
                      writer(SQL_A), invitation(2), approve(), revise("Show the age too."),
                      writer(SQL_B, "Agreed."), approve(), revise("Order by name."),
                      writer(SQL_B, "No order is asked for."))
    result = run(db, llm, n_reviewers=2)
    assert result.status == "done", result.error
    assert result.final_sql == SQL_B and scripted_llm.remaining == 0
    messages = [req["messages"] for req in scripted_llm.requests]
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()
    assert digest == DEFAULT_PROMPTS_SHA


# -- the embedded model -----------------------------------------------------------------------

@pytest.mark.real_model
def test_r3_on_the_embedded_model_matches_the_reference(real_llm, sample_dbs):
    questions = json.loads((SAMPLE_DBS / "questions.json").read_text())
    case = next(q for q in questions["databases"]["shop"]["questions"]
                if q["question"] == "List the five most expensive products with their price.")
    database = open_database(sample_dbs / "shop.sqlite")
    try:
        # the paper's behaviour: with the direct writer (today's default) the embedded model
        # answered this question with product ids instead of names, twice; how often each is
        # right is measured in bench/README.md
        result = run_to_end(start_run(PIPELINE, case["question"], database, real_llm,
                                      params={"k": 0, "n_reviewers": 2, "max_rounds": 1,
                                              **PAPER}))
        assert result.status == "done", result.error
        expected = database.execute(case["sql"])
        assert sorted(map(tuple, result.result["rows"])) == sorted(map(tuple, expected.rows))
    finally:
        database.close()
