"""Candidate selection: generators, execution, the vote and the selection agent, against the
scripted OpenAI-compatible server."""

from __future__ import annotations

import copy
import json

import pytest

from agents.cli import main as cli
from agents.db.database import open_database
from agents.core.engine import END, ExecLimits, resume_run, run_to_end, start_run
from agents.pipelines.selection import PIPELINE
from agents.pipelines.selection.generators import priority
from agents.pipelines.selection.outputs import CandidateVote
from dbfactory import SINGERS_SQL, TWO_APPLICATIONS_SQL, make_db
from prompt_markers import MAC_DECOMPOSE, R3_EXEC_ERROR, SELECT_CHOICE, SELECT_PARTS, WRITER
from scripted_llm import last_user_message

from selection_script import (ALL, FRANCE, FRANCE_ALIASED, OLDER, QUESTION, SLOW, WRONG_COLUMN,
                              WRONG_TABLE, choice, decomposition, first_message, reasoned,
                              script, sql_block)


@pytest.fixture
def db(tmp_path):
    database = open_database(make_db(tmp_path / "music.sqlite", SINGERS_SQL))
    yield database
    database.close()


def run(db, llm, limits=None, **params):
    return run_to_end(start_run(PIPELINE, QUESTION, db, llm, params=params, limits=limits))


def requests_for(server, marker: str) -> list[dict]:
    return [r for r in server.requests if marker in json.dumps(r["messages"])]


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


def test_a_failing_candidate_is_repaired_from_its_error_and_the_hint(db, llm, scripted_llm):
    script(scripted_llm, writer=sql_block(WRONG_TABLE), decomposer=decomposition(FRANCE),
           repair=sql_block(FRANCE_ALIASED))
    result = run(db, llm, generators="writer,decomposer", samples=0)

    assert result.status == "done", result.error
    assert [e.step for e in result.events] == [
        "ground", "candidate:writer", "repair:writer", "candidate:decomposer", "vote"]
    repair = result.events[2]
    assert repair.parsed["error"] == "no such table: singers"
    assert repair.parsed["sql_after"] == FRANCE_ALIASED and repair.execution["ok"]
    # the repair continues the writer's own conversation with the error and the hint
    request = requests_for(scripted_llm, R3_EXEC_ERROR)[0]
    assert [m["role"] for m in request["messages"]] == ["user", "assistant", "user"]
    assert WRITER in request["messages"][0]["content"]
    assert "Closest tables: singer" in request["messages"][-1]["content"]
    vote = result.events[-1].parsed
    assert vote["outcome"] == "decisive" and vote["groups"][0]["size"] == 2
    assert result.final_sql == FRANCE_ALIASED  # the writer's repaired SQL represents the group


def repaired_in_turns(*sqls: str):
    """A repair reply by attempt: the first repair answers ``sqls[0]``, the second ``sqls[1]``
    (a repair's conversation grows by two messages an attempt)."""
    return lambda req: sql_block(sqls[min((len(req["messages"]) - 3) // 2, len(sqls) - 1)])


def test_a_repair_failing_on_another_error_is_repaired_again_in_the_same_conversation(
        db, llm, scripted_llm):
    script(scripted_llm, writer=sql_block(WRONG_TABLE), decomposer=decomposition(FRANCE),
           repair=repaired_in_turns(WRONG_COLUMN, FRANCE_ALIASED))
    result = run(db, llm, generators="writer,decomposer", samples=0, repair_attempts=2)

    assert result.status == "done", result.error
    assert [e.step for e in result.events] == [
        "ground", "candidate:writer", "repair:writer", "repair:writer", "candidate:decomposer",
        "vote"]
    first, second = result.events[2], result.events[3]
    assert first.parsed["attempt"] == 1 and "attempt" not in first.inputs
    assert first.parsed["sql_after"] == WRONG_COLUMN and not first.execution["ok"]
    assert "another error" in " ".join(first.notes)
    assert second.parsed["attempt"] == 2 and second.inputs["attempt"] == 2
    assert second.parsed["error"] == "no such column: singer_name"
    assert second.parsed["sql_before"] == WRONG_COLUMN and second.execution["ok"]
    # the second repair continues the first one's conversation: the candidate, the first
    # error, the first repair, then the new error
    request = requests_for(scripted_llm, R3_EXEC_ERROR)[-1]
    assert [m["role"] for m in request["messages"]] == [
        "user", "assistant", "user", "assistant", "user"]
    assert WRONG_TABLE in request["messages"][1]["content"]
    assert "no such table: singers" in request["messages"][2]["content"]
    assert request["messages"][3]["content"] == sql_block(WRONG_COLUMN)  # its own reply
    assert "no such column: singer_name" in request["messages"][4]["content"]
    assert result.events[-1].parsed["outcome"] == "decisive"
    assert result.final_sql == FRANCE_ALIASED

    # resumed at the second repair, the conversation is rebuilt from the run's state
    resumed = run_to_end(resume_run(PIPELINE, result, 3, db, llm))
    assert resumed.status == "done" and resumed.final_sql == FRANCE_ALIASED
    assert requests_for(scripted_llm, R3_EXEC_ERROR)[-1]["messages"] == request["messages"]


def test_repairs_stop_at_repair_attempts_even_on_yet_another_error(db, llm, scripted_llm):
    script(scripted_llm, writer=sql_block(WRONG_TABLE), decomposer=decomposition(FRANCE),
           repair=repaired_in_turns(WRONG_COLUMN, "SELECT name FROM singer WHERE nation = 'F'",
                                    FRANCE_ALIASED))
    result = run(db, llm, generators="writer,decomposer", samples=0, repair_attempts=2)
    assert [e.step for e in result.events] == [
        "ground", "candidate:writer", "repair:writer", "repair:writer", "candidate:decomposer",
        "vote"]
    assert result.events[3].execution["error"] == "no such column: nation"
    assert "takes no part in the vote" in " ".join(result.events[3].notes)
    assert len(requests_for(scripted_llm, R3_EXEC_ERROR)) == 2
    assert result.final_sql == FRANCE


def test_the_same_error_again_ends_the_repairs(db, llm, scripted_llm):
    script(scripted_llm, writer=sql_block(WRONG_TABLE), decomposer=decomposition(FRANCE),
           repair=sql_block("SELECT name FROM singers"))
    result = run(db, llm, generators="writer,decomposer", samples=0, repair_attempts=3)
    assert [e.step for e in result.events] == [
        "ground", "candidate:writer", "repair:writer", "candidate:decomposer", "vote"]
    assert "takes no part in the vote" in " ".join(result.events[2].notes)
    assert result.final_sql == FRANCE


def test_one_repair_by_default_whatever_the_next_error(db, llm, scripted_llm):
    script(scripted_llm, writer=sql_block(WRONG_TABLE), decomposer=decomposition(FRANCE),
           repair=repaired_in_turns(WRONG_COLUMN, FRANCE_ALIASED))
    result = run(db, llm, generators="writer,decomposer", samples=0)
    assert [e.step for e in result.events] == [
        "ground", "candidate:writer", "repair:writer", "candidate:decomposer", "vote"]
    assert len(requests_for(scripted_llm, R3_EXEC_ERROR)) == 1
    assert result.final_sql == FRANCE


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
    assert vote["outcome"] == "decisive" and vote["reason"] == "2 of 3 candidates agree"
    assert result.final_sql == FRANCE


def test_an_unparseable_candidate_takes_no_part(db, llm, scripted_llm):
    script(scripted_llm, writer=sql_block(FRANCE), decomposer="I do not know.")
    result = run(db, llm, generators="writer,decomposer", samples=0, min_share=0.75)
    assert result.status == "done", result.error
    assert result.events[2].parsed["error_class"] == "NoSQL" and result.events[2].sql is None
    vote = result.events[-1].parsed
    # below the minimum share, but there is nothing else to choose
    assert vote["outcome"] == "only_result" and vote["failed"][0]["error_class"] == "NoSQL"
    assert vote["reason"] == "weak: 1 of 2 candidates agree, below the minimum share 0.75"
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


# -- resume and the graph ---------------------------------------------------------------------

def _stable(event) -> tuple:
    """What a step did, without its timings."""
    parsed = {k: v for k, v in (event.parsed or {}).items() if k != "seconds"}
    return event.step, event.status, event.kind, parsed, event.sql, event.next_step


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


# -- a candidate reading unrelated parts of the schema ----------------------------------------

SURFACE = "What is the total surface area of the continents Asia and Europe?"
ACROSS = ("SELECT SUM(T2.SurfaceArea) FROM continents AS T1 JOIN country AS T2 "
          "ON T1.Continent = T2.Continent WHERE T1.Continent IN ('asia', 'europe')")
ACROSS_AGAIN = ("SELECT SUM(T2.SurfaceArea) FROM countries AS T1 JOIN country AS T2 "
                "ON T1.CountryName = T2.Name")
WITHIN = "SELECT SUM(SurfaceArea) FROM country WHERE Continent IN ('Asia', 'Europe')"


@pytest.fixture
def world(tmp_path):
    database = open_database(make_db(tmp_path / "world.sqlite", TWO_APPLICATIONS_SQL))
    yield database
    database.close()


def told_of_parts(req: dict) -> bool:
    return SELECT_PARTS in last_user_message(req)


def ask_surface(db, llm, **params):
    params = {"generators": "writer,decomposer", "samples": 0, "unrelated_parts": True,
              **params}
    return run_to_end(start_run(PIPELINE, SURFACE, db, llm, params=params))


def test_a_candidate_reading_unrelated_parts_is_told_so_and_takes_a_repair_within_one(
        world, llm, scripted_llm):
    scripted_llm.when(told_of_parts, sql_block(WITHIN))
    script(scripted_llm, writer=sql_block(ACROSS), decomposer=decomposition(WITHIN))
    result = ask_surface(world, llm)

    assert result.status == "done", result.error
    assert [e.step for e in result.events] == [
        "ground", "candidate:writer", "repair:writer", "candidate:decomposer", "vote"]
    assert result.events[1].execution["ok"]  # it ran: SQLite had nothing to say
    assert any("It gets a repair told so" in n for n in result.events[1].notes)
    repair = result.events[2]
    assert repair.parsed["error_class"] == "UnrelatedParts"
    assert repair.parsed["error"].startswith("it reads tables of 2 parts of the database that "
                                             "no foreign key connects (continents and country)")
    assert repair.parsed["sql_after"] == WITHIN and repair.sql == WITHIN
    # told in the writer's own conversation, after its answer
    request = [r for r in scripted_llm.requests if told_of_parts(r)][0]
    assert [m["role"] for m in request["messages"]] == ["user", "assistant", "user"]
    assert request["messages"][-1]["content"].startswith(f"This SQL:\n```sql\n{ACROSS}\n```\n"
                                                         "runs, but it reads tables of 2 parts")
    vote = result.events[-1].parsed
    assert vote["outcome"] == "decisive" and vote["groups"][0]["size"] == 2
    assert result.final_sql == WITHIN


@pytest.mark.parametrize("reply", [ACROSS_AGAIN, "SELECT SUM(area) FROM country", ACROSS])
def test_a_repair_that_does_not_read_one_part_leaves_the_candidate_as_it_was(
        world, llm, scripted_llm, reply):
    scripted_llm.when(told_of_parts, sql_block(reply))
    script(scripted_llm, writer=sql_block(ACROSS), decomposer=decomposition(WITHIN),
           select=choice("B"))
    result = ask_surface(world, llm)

    assert result.status == "done", result.error
    repair = result.events[2]
    assert repair.step == "repair:writer" and repair.sql == ACROSS
    if reply == ACROSS:  # the same SQL again: nothing new to run
        assert repair.execution is None
    else:  # the step ends on the SQL the candidate keeps
        assert repair.execution["ok"] and repair.execution["sql"] == ACROSS
    assert any("keeps" in n for n in repair.notes)
    assert len([r for r in scripted_llm.requests if told_of_parts(r)]) == 1  # told once
    vote = next(e for e in result.events if e.step == "vote").parsed
    assert {g["sql"] for g in vote["groups"]} == {ACROSS, WITHIN}  # the writer's own SQL votes


def test_a_repaired_candidate_that_then_reads_unrelated_parts_is_told_so_too(
        world, llm, scripted_llm):
    failing = "SELECT SUM(T2.SurfaceArea) FROM continent AS T1 JOIN country AS T2 USING (Continent)"
    scripted_llm.when(told_of_parts, sql_block(WITHIN))
    script(scripted_llm, writer=sql_block(failing), decomposer=decomposition(WITHIN),
           repair=sql_block(ACROSS))
    result = ask_surface(world, llm)

    assert result.status == "done", result.error
    assert [e.step for e in result.events] == [
        "ground", "candidate:writer", "repair:writer", "repair:writer", "candidate:decomposer",
        "vote"]
    first, second = result.events[2], result.events[3]
    assert first.parsed["error_class"] != "UnrelatedParts" and first.sql == ACROSS
    assert second.parsed["error_class"] == "UnrelatedParts" and second.parsed["attempt"] == 2
    # the second repair continues the conversation: the error, the first reply, then the parts
    request = [r for r in scripted_llm.requests if told_of_parts(r)][0]
    assert [m["role"] for m in request["messages"]] == [
        "user", "assistant", "user", "assistant", "user"]
    assert R3_EXEC_ERROR in request["messages"][2]["content"]
    assert result.final_sql == WITHIN


def test_off_a_candidate_reading_unrelated_parts_votes_as_written(world, llm, scripted_llm):
    scripted_llm.when(told_of_parts, sql_block(WITHIN))
    script(scripted_llm, writer=sql_block(ACROSS), decomposer=decomposition(WITHIN),
           select=choice("A"))
    for params in ({"unrelated_parts": False}, {"repair": False}):
        result = ask_surface(world, llm, **params)
        assert result.status == "done", result.error
        assert not any(e.step.startswith("repair") for e in result.events)
        vote = next(e for e in result.events if e.step == "vote").parsed
        assert {g["sql"] for g in vote["groups"]} == {ACROSS, WITHIN}
    assert not [r for r in scripted_llm.requests if told_of_parts(r)]


def test_the_parts_repair_is_off_by_default_and_for_recorded_runs():
    assert PIPELINE.resolve_params({})["unrelated_parts"] is False
    assert PIPELINE.resolve_recorded({})["unrelated_parts"] is False
    assert PIPELINE.resolve_recorded({"unrelated_parts": True})["unrelated_parts"] is True


FAILING_SURFACE = ("SELECT SUM(T2.SurfaceArea) FROM continent AS T1 JOIN country AS T2 "
                   "USING (Continent)")


@pytest.mark.parametrize("writer, repair, parts_reply", [
    (ACROSS, None, WITHIN),                 # told, and the repair reads one part
    (ACROSS, None, ACROSS_AGAIN),           # told, and the candidate keeps its SQL
    (FAILING_SURFACE, ACROSS, WITHIN),      # a repaired candidate told after its repair
])
def test_resuming_from_any_step_reproduces_a_run_told_of_unrelated_parts(
        world, llm, scripted_llm, writer, repair, parts_reply):
    scripted_llm.when(told_of_parts, sql_block(parts_reply))
    script(scripted_llm, writer=sql_block(writer), decomposer=decomposition(WITHIN),
           repair=sql_block(repair) if repair else None, select=choice("A"))
    first = ask_surface(world, llm)
    assert first.status == "done", first.error
    assert any((e.parsed or {}).get("error_class") == "UnrelatedParts" for e in first.events)
    for index in range(len(first.events) + 1):
        again = run_to_end(resume_run(PIPELINE, first, index, world, llm))
        assert again.status == "done" and again.final_sql == first.final_sql
        assert [_stable(e) for e in again.events] == [_stable(e) for e in first.events]
        assert _candidates_state(again) == _candidates_state(first)


def _candidates_state(run) -> list[dict]:
    """The candidates as a run ends with them, without the timings of their results."""
    keys = ("name", "sql", "answer", "repaired_from", "repair_turns", "parts_told")
    return [{k: c.get(k) for k in keys} for c in run.events[-1].data["candidates"]]
