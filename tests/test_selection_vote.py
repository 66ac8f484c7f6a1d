"""Candidate selection's vote and selection agent against the scripted OpenAI-compatible
server: agreeing candidates, ties and the orders the agent is shown them in, and candidates
that fail, time out, answer no SQL or return no rows."""

from __future__ import annotations

import json

from agents.core.engine import ExecLimits
from agents.pipelines.selection import PIPELINE
from agents.pipelines.selection.outputs import CandidateVote
from prompt_markers import R3_EXEC_ERROR, SELECT_CHOICE
from scripted_llm import last_user_message
from selection_script import (ALL, FRANCE, FRANCE_ALIASED, OLDER, SLOW, WRONG_COLUMN, WRONG_TABLE,
                              choice, decomposition, reasoned, requests_for, run, script,
                              sql_block)


def names(rows) -> list[str]:
    return sorted(r[0] for r in rows)


# -- the vote ---------------------------------------------------------------------------------

def test_agreeing_candidates_settle_the_vote_without_the_selection_agent(db, llm, scripted_llm):
    script(scripted_llm, writer=sql_block(FRANCE), sample=sql_block(FRANCE_ALIASED),
           decomposer=decomposition(FRANCE), cot=reasoned(OLDER))
    result = run(db, llm)

    assert result.status == "done", result.error
    # default generators: the writer first (the draft), its sample (right after the writer,
    # whose prompt the server still holds), then cot and decomposer in the order of trust
    assert [e.step for e in result.events] == [
        "ground", "candidate:writer", "candidate:sample1", "candidate:cot",
        "candidate:decomposer", "vote"]
    assert [e.agent for e in result.events[:3]] == [
        "Value grounding", "Candidate: writer", "Candidate: sample1"]
    assert not requests_for(scripted_llm, SELECT_CHOICE)
    vote = result.events[-1].parsed
    assert vote["outcome"] == "decisive" and vote["reason"] == "3 of 4 candidates agree"
    assert [g["generators"] for g in vote["groups"]] == [
        ["writer", "decomposer", "sample1"], ["cot"]]
    assert vote["chosen"] == "writer" and result.final_sql == FRANCE
    assert names(result.result["rows"]) == ["Ann", "Cleo"]

    # the question's value was found and shown to every generator, after the schema
    grounding = result.events[0].parsed
    assert grounding["matches"][0]["value"] == "France"
    prompts = [last_user_message(r) for r in scripted_llm.requests]
    assert all("singer.country = 'France'" in p for p in prompts)
    # the sample repeats the writer's prompt byte for byte, at a higher temperature
    writer_req, sample_req = scripted_llm.requests[0:2]  # the writer runs first
    assert writer_req["messages"] == sample_req["messages"]
    assert sample_req["temperature"] == 0.7 and writer_req["temperature"] == 0.0
    candidate = result.events[4].parsed
    assert candidate["sub_questions"][0]["sql"] == FRANCE and candidate["rows"] == 2


def test_a_tie_goes_to_the_selection_agent_and_its_pick_is_the_answer(db, llm, scripted_llm):
    script(scripted_llm, writer=sql_block(ALL), decomposer=decomposition(FRANCE),
           select=choice("B"))
    result = run(db, llm, generators="writer,decomposer", samples=0)

    assert result.status == "done", result.error
    assert [e.step for e in result.events][-2:] == ["vote", "select"]
    vote = result.events[-2].parsed
    assert vote["outcome"] == "selection" and vote["contenders"] == [0, 1]
    assert vote["reason"].startswith("tie: 2 groups of 1")
    selection = result.events[-1].parsed
    assert selection["choice"] == "B" and selection["chosen"] == "decomposer"
    assert selection["reasoning"] == "Only B filters on the country."
    assert result.events[-1].agent == "Selection agent"
    assert result.final_sql == FRANCE and names(result.result["rows"]) == ["Ann", "Cleo"]

    prompt = last_user_message(requests_for(scripted_llm, SELECT_CHOICE)[0])
    assert "Candidate A (written by 1 of the 2 generators)" in prompt
    assert f"```sql\n{ALL}\n```" in prompt and f"```sql\n{FRANCE}\n```" in prompt
    assert "name\nAnn\nBo\nCleo\n(3 rows)" in prompt  # the results the agent compares
    assert prompt.index("### Database schema") < prompt.index("### Question") \
        < prompt.index("### Candidates")


def test_by_default_a_tie_shows_the_chain_of_thought_writer_first(db, llm, scripted_llm):
    """The default order of trust puts ``cot`` first: it breaks ties and is option A, the
    option a small selection agent picks most often."""
    script(scripted_llm, writer=sql_block(ALL), sample=sql_block(ALL),
           decomposer=decomposition(FRANCE_ALIASED), cot=reasoned(FRANCE),
           select=choice("A", "A filters on the country."))
    result = run(db, llm)

    vote = result.events[-2].parsed
    assert vote["outcome"] == "selection" and vote["reason"].startswith("tie: 2 groups of 2")
    # the writer and its sample agree, as cot and the decomposer do: cot's group is shown first
    assert [g["generators"] for g in vote["groups"]] == [
        ["cot", "decomposer"], ["writer", "sample1"]]
    prompt = last_user_message(requests_for(scripted_llm, SELECT_CHOICE)[0])
    candidates = prompt.split("### Candidates", 1)[1]
    assert candidates.index(f"```sql\n{FRANCE}\n```") < candidates.index(f"```sql\n{ALL}\n```")
    selection = result.events[-1].parsed
    assert selection["chosen"] == "cot" and result.final_sql == FRANCE


def france_label(req: dict) -> str:
    """The selection agent that knows the answer: the label of the candidate filtering on
    France, wherever it is shown."""
    text = last_user_message(req).split("### Candidates", 1)[1]
    blocks = text.split("Candidate ")[1:]
    label = next(b[0] for b in blocks if "'France'" in b.split("Result:")[0])
    return choice(label, f"{label} filters on the country.")


def test_picks_that_follow_the_position_cancel_out_and_the_vote_order_stands(
        db, llm, scripted_llm):
    script(scripted_llm, writer=sql_block(ALL), decomposer=decomposition(FRANCE),
           select=choice("A", "A looks right."))
    result = run(db, llm, generators="writer,decomposer", samples=0, select_orders=2)

    assert result.status == "done", result.error
    prompts = [last_user_message(r) for r in requests_for(scripted_llm, SELECT_CHOICE)]
    assert len(prompts) == 2  # each candidate shown first once
    everyone, france = f"```sql\n{ALL}\n```", f"```sql\n{FRANCE}\n```"
    assert prompts[0].index(everyone) < prompts[0].index(france)
    assert prompts[1].index(france) < prompts[1].index(everyone)
    selection = result.events[-1].parsed
    assert selection["ballots"] == [
        {"order": ["A", "B"], "choice": "A", "reasoning": "A looks right."},
        {"order": ["B", "A"], "choice": "B", "reasoning": "A looks right."}]
    assert selection["choice"] == "A" and selection["chosen"] == "writer"
    assert not selection["fallback"] and result.final_sql == ALL
    assert any("compared in 2 orders" in n for n in result.events[-1].notes)


def test_a_pick_that_holds_in_every_order_wins(db, llm, scripted_llm):
    script(scripted_llm, writer=sql_block(ALL), decomposer=decomposition(FRANCE),
           cot=reasoned(OLDER), select=france_label)
    result = run(db, llm, generators="writer,decomposer,cot", samples=0, select_orders=3)

    selection = result.events[-1].parsed
    assert [b["order"] for b in selection["ballots"]] == [
        ["A", "B", "C"], ["B", "C", "A"], ["C", "A", "B"]]
    assert [b["choice"] for b in selection["ballots"]] == ["B", "B", "B"]
    assert selection["chosen"] == "decomposer" and result.final_sql == FRANCE
    assert "shown in the order BCA: picked B" in "\n".join(
        result.events[-1].output.text_lines())


def test_an_unusable_selection_answer_keeps_the_leading_group(db, llm, scripted_llm):
    script(scripted_llm, writer=sql_block(ALL), decomposer=decomposition(FRANCE),
           select="I cannot decide.")
    result = run(db, llm, generators="writer,decomposer", samples=0)

    assert result.status == "done", result.error
    selection = result.events[-1].parsed
    assert selection["fallback"] is True and selection["chosen"] == "writer"
    assert len(result.events[-1].calls) == 2  # the answer was retried once
    assert result.final_sql == ALL


# -- candidates that take no part, and results with no data -----------------------------------

def test_when_no_candidate_runs_the_run_fails_and_says_so(db, llm, scripted_llm):
    script(scripted_llm, writer=sql_block(WRONG_TABLE), decomposer=decomposition(WRONG_COLUMN),
           repair=lambda req: sql_block(WRONG_TABLE if WRONG_TABLE in json.dumps(req)
                                        else WRONG_COLUMN))
    result = run(db, llm, generators="writer,decomposer", samples=0)

    assert result.status == "failed"
    assert [e.step for e in result.events] == [
        "ground", "candidate:writer", "repair:writer", "candidate:decomposer",
        "repair:decomposer", "vote"]
    assert result.error == ("Vote: none of the 2 candidates ran: writer (OperationalError), "
                            "decomposer (OperationalError); the SQL of writer is kept")
    assert result.events[-1].parsed["outcome"] == "none_ran"
    assert result.final_sql == WRONG_TABLE and result.result["ok"] is False

    scripted_llm.clear()
    script(scripted_llm, writer=sql_block(WRONG_TABLE), decomposer=decomposition(WRONG_COLUMN))
    result = run(db, llm, generators="writer,decomposer", samples=0, repair=False)
    assert result.status == "failed" and not requests_for(scripted_llm, R3_EXEC_ERROR)
    assert [e.step for e in result.events][1:] == [
        "candidate:writer", "candidate:decomposer", "vote"]


def test_a_candidate_that_times_out_joins_no_group(db, llm, scripted_llm):
    script(scripted_llm, writer=sql_block(FRANCE), decomposer=decomposition(SLOW),
           cot=reasoned(FRANCE_ALIASED))
    result = run(db, llm, limits=ExecLimits(timeout=0.5), generators="writer,decomposer,cot",
                 samples=0, repair=False)

    assert result.status == "done", result.error
    timed_out = result.events[2]
    assert timed_out.step == "candidate:decomposer"
    assert timed_out.parsed["error_class"] == "Timeout" and timed_out.parsed["ok"] is False
    vote = result.events[-1].parsed
    assert [g["generators"] for g in vote["groups"]] == [["writer", "cot"]]
    assert vote["failed"][0]["generator"] == "decomposer"
    assert vote["failed"][0]["error_class"] == "Timeout"
    assert vote["outcome"] == "decisive"
    assert vote["reason"] == "2 of 3 candidates agree (2 of 3 ran)"
    assert result.final_sql == FRANCE


def test_an_unparseable_candidate_takes_no_part(db, llm, scripted_llm):
    script(scripted_llm, writer=sql_block(FRANCE), decomposer="I do not know.")
    result = run(db, llm, generators="writer,decomposer", samples=0, min_share=0.75)
    assert result.status == "done", result.error
    assert result.events[2].parsed["error_class"] == "NoSQL" and result.events[2].sql is None
    vote = result.events[-1].parsed
    # below the minimum share, but there is nothing else to choose
    assert vote["outcome"] == "only_result" and vote["failed"][0]["error_class"] == "NoSQL"
    assert vote["reason"] == ("weak: 1 of 2 candidates agree, below the minimum share 0.75 "
                              "(1 of 2 ran)")
    assert result.final_sql == FRANCE


NOBODY = "SELECT name FROM singer WHERE country = 'france'"   # the value's case missed


def test_agreement_on_no_rows_is_set_aside_for_the_result_with_data(db, llm, scripted_llm):
    script(scripted_llm, writer=sql_block(NOBODY), sample=sql_block(NOBODY),
           decomposer=decomposition(NOBODY), cot=reasoned(FRANCE))
    result = run(db, llm)
    assert result.status == "done", result.error
    vote = result.events[-1].parsed
    assert [g["generators"] for g in vote["groups"]] == [
        ["cot"], ["writer", "decomposer", "sample1"]]
    assert vote["set_aside"] == [1] and vote["outcome"] == "only_result"
    assert vote["reason"] == ("the only result with data: 1 of 4 candidates; 3 returned no "
                              "data and are set aside")
    assert result.final_sql == FRANCE and not requests_for(scripted_llm, SELECT_CHOICE)
    assert CandidateVote.from_dict(vote).text_lines() == [
        "  group 1 (1 of 4): cot -> 2 row(s)",
        "  group 2 (3 of 4): writer, decomposer, sample1 -> 0 row(s), no data: set aside",
        "  the only result with data: 1 of 4 candidates; 3 returned no data and are set aside",
        "  chosen: the SQL of cot",
        "  draft answer replaced: the draft (writer) returned no rows; the vote chose the answer "
        "of cot (1 of 4 candidates), which returns 2 row(s)"]

    # one switch away, and what runs recorded before the rule are resumed with: three agree
    without = run(db, llm, data_first=False, match_stored_case=False)
    assert without.events[-1].parsed["outcome"] == "decisive"
    assert without.events[-1].parsed.get("set_aside") is None and without.final_sql == NOBODY
    assert PIPELINE.resolve_recorded({})["data_first"] is False
    # (the Final check, on by default, then writes 'france' as the column stores it)
    checked = run(db, llm, data_first=False)
    assert checked.events[-1].step == "final_check" and checked.final_sql == FRANCE
