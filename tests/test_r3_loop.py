"""R³'s review-rebuttal-revision loop against the scripted OpenAI-compatible server: the rounds,
what ends them (consensus, every reviewer approving, the round limit) and a run resumed at a
reviewer with edited SQL."""

from __future__ import annotations

import copy
import json

from agents.core.engine import resume_run, run_to_end
from agents.pipelines.r3 import PIPELINE
from r3_script import SQL_A, SQL_B, SQL_C, approve, invitation, revise, run, writer
from scripted_llm import last_user_message


# -- the loop ----------------------------------------------------------------------------------

def test_stops_at_consensus_when_the_writer_keeps_its_sql(db, llm, scripted_llm):
    scripted_llm.push(writer(SQL_A), invitation(3), approve(), revise(), approve(),
                      "You are right, but the question asks for names only.\n"
                      "```sql\nselect name\n  from singer where country = 'France'\n```")
    result = run(db, llm, n_reviewers=3)

    assert result.status == "done", result.error
    assert [e.agent for e in result.events] == [
        "SQL-Writer", "Execution", "Invitation", "Reviewer: Expert number 1 in music data",
        "Reviewer: Expert number 2 in music data", "Reviewer: Expert number 3 in music data",
        "Rebuttal/Revision"]
    last = result.events[-1]
    assert last.parsed["consensus"] is True and last.parsed["diff"] == ""
    assert "question asks for names only" in last.parsed["rebuttal"]
    assert [c["verdict"] for c in last.parsed["comments"]] == ["approve", "revise", "approve"]
    assert last.data["stop_reason"] == "consensus"
    assert result.final_sql == SQL_A
    assert sorted(r[0] for r in result.result["rows"]) == ["Ann", "Cleo"]
    assert scripted_llm.remaining == 0


def test_revision_round_carries_comments_rebuttal_and_diff(db, llm, scripted_llm):
    scripted_llm.push(writer(SQL_A), invitation(1), revise("Show the age too."),
                      writer(SQL_B, "Agreed: the age is added."),
                      revise("Order by name."), writer(SQL_B, "The order is not asked for."))
    result = run(db, llm, n_reviewers=1, max_rounds=3)

    assert result.status == "done", result.error
    revisions = [e for e in result.events if e.agent == "Rebuttal/Revision"]
    first, second = revisions[0].parsed, revisions[1].parsed
    assert first["changed"] is True and first["round"] == 1
    assert first["comments"][0]["comment"] == "Show the age too."
    assert first["rebuttal"] == "Agreed: the age is added."
    assert "+" in first["diff"] and "age" in first["diff"] and first["diff"].startswith("---")
    assert second["consensus"] is True and second["round"] == 2
    assert result.final_sql == SQL_B
    # the revised SQL was executed before the second review round
    assert [e.agent for e in result.events].count("Execution") == 2
    assert [r["sql_after"] for r in result.events[-1].data["rounds"]] == [SQL_B, SQL_B]


def test_stops_at_the_round_limit(db, llm, scripted_llm):
    scripted_llm.push(writer(SQL_A), invitation(1), revise(), writer(SQL_B), revise(),
                      writer(SQL_C))
    result = run(db, llm, n_reviewers=1, max_rounds=2)

    assert result.status == "done", result.error
    assert result.events[-1].agent == "Execution"
    assert result.events[-1].data["stop_reason"] == "max_rounds"
    assert any("Round limit (2)" in n for n in result.events[-1].notes)
    assert result.final_sql == SQL_C
    assert scripted_llm.remaining == 0
    assert [e.agent for e in result.events].count("Rebuttal/Revision") == 2


def test_all_approve_ends_the_loop_unless_disabled(db, llm, scripted_llm):
    scripted_llm.push(writer(SQL_A), invitation(2), approve(), approve())
    result = run(db, llm, n_reviewers=2)
    assert result.status == "done"
    assert result.events[-1].agent.startswith("Reviewer: ")
    assert result.events[-1].data["stop_reason"] == "all_approved"

    scripted_llm.clear()
    scripted_llm.push(writer(SQL_A), invitation(2), approve(), approve(), writer(SQL_A))
    result = run(db, llm, n_reviewers=2, stop_on_approval=False)
    assert result.events[-1].agent == "Rebuttal/Revision"
    assert result.events[-1].data["stop_reason"] == "consensus"


# -- resume -----------------------------------------------------------------------------------

def test_resume_from_a_reviewer_step_with_edited_sql(db, llm, scripted_llm):
    scripted_llm.push(writer(SQL_A), invitation(2), approve(), revise(), writer(SQL_A))
    first = run(db, llm, n_reviewers=2)
    assert first.status == "done"
    index = next(i for i, e in enumerate(first.events) if e.agent.startswith("Reviewer"))

    edited = copy.deepcopy(first.events[index - 1].data)
    edited["sql"] = SQL_B
    scripted_llm.clear()
    scripted_llm.push(approve("Names and ages are fine."), approve())
    resumed = run_to_end(resume_run(PIPELINE, first, index, db, llm, data=edited))

    assert resumed.status == "done", resumed.error
    assert resumed.parent_run_id == first.run_id and resumed.resumed_from == index
    assert [e.agent for e in resumed.events[index:]] == [
        "Reviewer: Expert number 1 in music data", "Reviewer: Expert number 2 in music data"]
    user = last_user_message(scripted_llm.requests[0])
    assert SQL_B in user and "name | age\nAnn | 30\nCleo | 25" in user
    assert resumed.events[index].execution["ok"] is True  # the edited SQL was run afresh
    assert resumed.final_sql == SQL_B and resumed.events[-1].data["stop_reason"] == "all_approved"
    json.dumps(resumed.to_dict())  # the whole run stays serializable


def test_resume_with_edited_sql_mid_round_restarts_the_round(db, llm, scripted_llm):
    scripted_llm.push(writer(SQL_A), invitation(2), approve(), revise(), writer(SQL_A))
    first = run(db, llm, n_reviewers=2)
    second_reviewer = next(i for i, e in enumerate(first.events)
                           if e.agent == "Reviewer: Expert number 2 in music data")
    edited = copy.deepcopy(first.events[second_reviewer - 1].data)
    edited["sql"] = SQL_C
    scripted_llm.clear()
    scripted_llm.push(approve(), approve())
    resumed = run_to_end(resume_run(PIPELINE, first, second_reviewer, db, llm, data=edited))

    assert resumed.events[second_reviewer].agent == "Reviewer: Expert number 1 in music data"
    assert any("round restarts" in n for n in resumed.events[second_reviewer].notes)
    assert resumed.final_sql == SQL_C
