"""Candidate selection's generators and graph: the Decomposer's prompts, the declared steps,
the generators a run starts with, the steps ``ask`` prints and a run on the embedded model."""

from __future__ import annotations

import pytest

from agents.cli import main as cli
from agents.db.database import open_database
from agents.core.engine import END, resume_run, run_to_end, start_run
from agents.pipelines.selection import PIPELINE
from prompt_markers import MAC_DECOMPOSE
from scripted_llm import last_user_message
from selection_script import (ALL, FRANCE, QUESTION, WRONG_COLUMN, choice, decomposition,
                              first_message, requests_for, run, script, sql_block)


# -- the Decomposer's prompts -----------------------------------------------------------------

ONE_STEP = "If one SQL query can answer the [Question], write it as Sub question 1 and stop"


def test_the_decomposer_generator_sends_the_graded_prompt_by_default(db, llm, scripted_llm):
    """As in MAC-SQL; a run recorded before the default changed keeps the paper's prompt."""
    script(scripted_llm, decomposer=decomposition(FRANCE))
    result = run(db, llm, generators="decomposer", samples=0)
    assert result.events[1].inputs["prompt"] == "graded"
    assert ONE_STEP in first_message(requests_for(scripted_llm, MAC_DECOMPOSE)[0])
    del result.params["decomposer_prompt"]
    resumed = run_to_end(resume_run(PIPELINE, result, 1, db, llm))
    assert resumed.events[1].inputs["prompt"] == "paper"
    assert ONE_STEP not in first_message(requests_for(scripted_llm, MAC_DECOMPOSE)[-1])


def test_the_decomposer_generator_sends_the_prompt_its_parameter_names(db, llm, scripted_llm):
    """The paper's Decomposer prompt or MAC-SQL's graded one, also when the failing candidate
    is repaired; the trace says which ran."""
    script(scripted_llm, decomposer=decomposition(WRONG_COLUMN), repair=sql_block(FRANCE))
    paper = run(db, llm, generators="decomposer", samples=0, decomposer_prompt="paper")
    graded = run(db, llm, generators="decomposer", samples=0, decomposer_prompt="graded")

    for result, prompt in [(paper, "paper"), (graded, "graded")]:
        assert result.status == "done", result.error
        assert [e.step for e in result.events] == [
            "ground", "candidate:decomposer", "repair:decomposer", "vote"]
        assert result.events[1].inputs["prompt"] == prompt
        assert result.final_sql == FRANCE
    sent = [first_message(r) for r in requests_for(scripted_llm, MAC_DECOMPOSE)]
    assert len(sent) == 4  # two candidates, each repaired in its own conversation
    assert [ONE_STEP in text for text in sent] == [False, False, True, True]
    assert sent[0] == sent[1] and sent[2] == sent[3]
    # resumed at the repair with the other prompt chosen, the repair still continues the
    # conversation its candidate came from
    at = [e.step for e in graded.events].index("repair:decomposer")
    resumed = run_to_end(resume_run(PIPELINE, graded, at, db, llm,
                                    params={**graded.params, "decomposer_prompt": "paper"}))
    assert resumed.status == "done" and resumed.final_sql == FRANCE
    assert ONE_STEP in first_message(requests_for(scripted_llm, MAC_DECOMPOSE)[-1])
    # the graded prompt is the paper's with more static text: it needs a larger reserve
    assert PIPELINE.retrieval.reserve_for(PIPELINE.resolve_params(
        {"decomposer_prompt": "graded"})) > PIPELINE.retrieval.reserve_for(
        PIPELINE.resolve_params({"decomposer_prompt": "paper"}))


# -- the graph and the generators -------------------------------------------------------------

def test_the_step_graph_is_declared():
    assert PIPELINE.edges() == [
        ("retrieve", "ground"), ("retrieve", "candidate"), ("ground", "candidate"), ("candidate", "repair"), ("candidate", "candidate"),
        ("candidate", "vote"), ("repair", "repair"), ("repair", "candidate"), ("repair", "vote"),
        ("vote", "select"), ("vote", END), ("vote", "final_check"), ("select", END),
        ("select", "final_check"), ("final_check", END)]
    assert {s.name for s in PIPELINE.steps if s.takes_arg} == {"candidate", "repair"}


def test_without_grounding_the_run_starts_at_the_first_generator(db, llm, scripted_llm):
    script(scripted_llm, writer=sql_block(FRANCE), sample=sql_block(FRANCE))
    result = run(db, llm, generators="writer", samples=1, value_grounding=False)
    assert [e.step for e in result.events] == ["candidate:writer", "candidate:sample1", "vote"]
    assert "Values in the database" not in last_user_message(scripted_llm.requests[0])


def test_each_sample_of_the_writers_prompt_has_its_own_seed(db, llm, scripted_llm):
    script(scripted_llm, writer=sql_block(FRANCE), sample=sql_block(FRANCE))
    run(db, llm, generators="writer", samples=2, value_grounding=False, stop_when_decided=False)
    seeds = [r.get("seed") for r in scripted_llm.requests]
    assert seeds == [None, 1, 2]           # the writer at temperature 0, then sample1, sample2


def test_generators_are_checked_when_set():
    with pytest.raises(ValueError, match="unknown generator 'poet'"):
        PIPELINE.resolve_params({"generators": "writer,poet"})
    assert PIPELINE.resolve_params({"generators": " fewshot; writer ,writer"})[
        "generators"] == "fewshot,writer"


def test_no_generator_at_all_is_a_clear_failure(db, llm):
    result = run(db, llm, generators="", samples=0)
    assert result.status == "failed" and "no generator to run" in result.error


# -- the command line -------------------------------------------------------------------------

def test_ask_prints_every_step_of_the_selection(db, scripted_llm, capsys, monkeypatch):
    monkeypatch.setenv("STUDIO_MAX_RETRIES", "0")
    script(scripted_llm, writer=sql_block(ALL), decomposer=decomposition(FRANCE),
           select=choice("B"))
    code = cli.main(["ask", "--db", db.path, QUESTION, "--pipeline", "selection",
                     "--param", "generators=writer,decomposer", "--param", "samples=0",
                     "--base-url", scripted_llm.base_url, "--no-cache"])
    out, err = capsys.readouterr()
    assert code == 0, err
    expected = ["[1] Value grounding", "singer.country = 'France'",
                "[2] Candidate: writer", "generator writer: the baseline's one prompt",
                "runs: 3 row(s)", "[3] Candidate: decomposer", "Sub question 1",
                "[4] Vote", "group 1 (1 of 2): writer -> 3 row(s)",
                "group 2 (1 of 2): decomposer -> 2 row(s)", "not decisive: tie",
                "the selection agent compares groups 1, 2", "[5] Selection agent",
                "chose B: the SQL of decomposer", "reasoning: Only B filters on the country.",
                "Final SQL:", "(2 rows)"]
    positions = [out.index(text) for text in expected]
    assert positions == sorted(positions), out


# -- the embedded model -----------------------------------------------------------------------

@pytest.mark.real_model
def test_selection_on_the_embedded_model_ends_with_sql_that_runs(real_llm, sample_dbs):
    database = open_database(sample_dbs / "shop.sqlite")
    try:
        result = run_to_end(start_run(PIPELINE, "How many customers are there in each country?",
                                      database, real_llm))
        assert result.status == "done", result.error
        assert result.final_sql and result.result["ok"], result.result
        assert [e.step for e in result.events][:2] == ["ground", "candidate:writer"]
    finally:
        database.close()
