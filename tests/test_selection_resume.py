"""Candidate selection resumed from a recorded run: any step reproduces it, an edited candidate
is run again, and the vote resumed in another order of trust breaks its tie that way."""

from __future__ import annotations

import copy

from agents.core.engine import resume_run, run_to_end
from agents.pipelines.selection import PIPELINE
from agents.pipelines.selection.generators import priority
from selection_script import (ALL, FRANCE, FRANCE_ALIASED, OLDER, WRONG_TABLE, _stable, choice,
                              decomposition, run, script, sql_block)


def test_resuming_from_any_step_reproduces_the_run(db, llm, scripted_llm):
    script(scripted_llm, writer=sql_block(WRONG_TABLE), repair=sql_block(FRANCE),
           sample=sql_block(OLDER), decomposer=decomposition(ALL), select=choice("A"))
    first = run(db, llm, generators="writer,decomposer", samples=1)
    assert first.status == "done", first.error
    assert [e.step for e in first.events] == [
        "ground", "candidate:writer", "repair:writer", "candidate:sample1",
        "candidate:decomposer", "vote", "select"]
    assert first.final_sql == FRANCE

    for index in range(len(first.events) + 1):
        resumed = run_to_end(resume_run(PIPELINE, first, index, db, llm))
        assert resumed.status == "done", (index, resumed.error)
        assert [_stable(e) for e in resumed.events] == [_stable(e) for e in first.events]
        assert resumed.final_sql == first.final_sql
        assert resumed.result["rows"] == first.result["rows"]


def test_resuming_the_vote_with_an_edited_candidate_runs_it_again(db, llm, scripted_llm):
    script(scripted_llm, writer=sql_block(ALL), decomposer=decomposition(FRANCE),
           select=choice("A"))
    first = run(db, llm, generators="writer,decomposer", samples=0)
    vote_index = [e.step for e in first.events].index("vote")
    edited = copy.deepcopy(first.events[vote_index - 1].data)
    edited["candidates"][0]["sql"] = FRANCE_ALIASED  # the writer's SQL, edited by hand

    resumed = run_to_end(resume_run(PIPELINE, first, vote_index, db, llm, data=edited))
    assert resumed.status == "done", resumed.error
    vote = resumed.events[vote_index].parsed
    assert vote["outcome"] == "decisive" and vote["groups"][0]["generators"] == [
        "writer", "decomposer"]
    assert resumed.final_sql == FRANCE_ALIASED


def test_resuming_the_vote_in_another_order_of_trust_breaks_the_tie_that_way(
        db, llm, scripted_llm):
    """The tie order is read from ``generators`` at the vote, not from the state the run
    started with: the recorded candidates, resumed with the decomposer first, put its group
    first and the selection agent's option A is the decomposer's SQL."""
    script(scripted_llm, writer=sql_block(ALL), decomposer=decomposition(FRANCE),
           select=choice("A", "A is first."))
    first = run(db, llm, generators="writer,decomposer", samples=0)
    assert first.final_sql == ALL  # option A: the writer's group leads the tie
    vote_index = [e.step for e in first.events].index("vote")

    resumed = run_to_end(resume_run(PIPELINE, first, vote_index, db, llm,
                                    params={**first.params, "generators": "decomposer,writer"}))
    assert resumed.status == "done", resumed.error
    assert [e.step for e in resumed.events] == [e.step for e in first.events]
    assert [g["generators"] for g in resumed.events[vote_index].parsed["groups"]] == [
        ["decomposer"], ["writer"]]
    assert resumed.events[-1].parsed["chosen"] == "decomposer"
    assert resumed.final_sql == FRANCE
    assert "priority" not in resumed.events[-1].data


def test_candidates_the_new_order_leaves_out_still_count_last():
    params = {"generators": "decomposer", "samples": 0}
    assert priority(params, ["cot", "writer", "sample1", "decomposer"]) == [
        "decomposer", "cot", "writer", "sample1"]
