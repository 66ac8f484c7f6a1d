"""R³'s gates on a revision: the execution gate keeping the SQL before a revision that fails or
empties the result, the aggregate gate refusing one that answers from an arbitrary row, and
how the trace says a revision was not adopted."""

from __future__ import annotations

import copy

from agents.core.engine import resume_run, run_to_end
from agents.pipelines.r3 import PIPELINE
from r3_script import SQL_A, SQL_B, SQL_C, approve, invitation, revise, run, writer


# -- the execution gate -----------------------------------------------------------------------

def test_execution_gate_keeps_the_sql_before_a_revision_that_fails(db, llm, scripted_llm):
    broken = "SELECT nme FROM singer WHERE country = 'France'"
    scripted_llm.push(writer(SQL_A), invitation(1), revise("Use the nme column."),
                      writer(broken, "Agreed."))
    result = run(db, llm, n_reviewers=1, revision_gate="execution")

    assert result.status == "done", result.error
    assert scripted_llm.remaining == 0  # no correction was asked for the failing revision
    assert [e.agent for e in result.events][-2:] == ["Rebuttal/Revision", "Execution"]
    check = result.events[-1]
    assert check.execution["ok"] is False and check.inputs["revision_gate"] == "execution"
    assert check.sql == SQL_A and any("Execution decides" in n and "not adopted" in n
                                      for n in check.notes)
    assert check.data["stop_reason"] == "revision_rejected"
    assert check.data["rounds"][-1]["adopted"] is False
    assert result.final_sql == SQL_A
    assert sorted(r[0] for r in result.result["rows"]) == ["Ann", "Cleo"]


def test_without_the_gate_a_failing_revision_goes_back_to_the_writer(db, llm, scripted_llm):
    broken = "SELECT nme FROM singer WHERE country = 'France'"
    scripted_llm.push(writer(SQL_A), invitation(1), revise("Use the nme column."),
                      writer(broken, "Agreed."), writer(SQL_C, "Fixed."), approve())
    result = run(db, llm, n_reviewers=1)

    assert result.status == "done", result.error
    assert [e.agent for e in result.events][4:8] == ["Rebuttal/Revision", "Execution",
                                                    "SQL-Writer", "Execution"]
    assert result.final_sql == SQL_C and scripted_llm.remaining == 0


def test_execution_gate_rejects_a_revision_that_empties_a_non_empty_result(
        db, llm, scripted_llm):
    empty = "SELECT name FROM singer WHERE country = 'Peru'"
    scripted_llm.push(writer(SQL_A), invitation(1), revise("Only singers from Peru."),
                      writer(empty, "Agreed."))
    result = run(db, llm, n_reviewers=1, revision_gate="execution")

    assert result.status == "done", result.error
    check = result.events[-1]
    assert check.agent == "Execution" and check.execution["ok"] is True
    assert check.parsed["rows"] == 0
    assert any("returns no rows where the SQL before it returned 2" in n for n in check.notes)
    assert result.final_sql == SQL_A and check.data["stop_reason"] == "revision_rejected"


def test_execution_gate_adopts_a_revision_that_runs(db, llm, scripted_llm):
    peru = "SELECT name FROM singer WHERE country = 'Peru'"
    chile = "SELECT name FROM singer WHERE country = 'Chile'"
    scripted_llm.push(writer(SQL_A), invitation(1), revise("Show the age too."),
                      writer(SQL_B, "Agreed."), approve())
    result = run(db, llm, n_reviewers=1, revision_gate="execution")
    assert result.final_sql == SQL_B and result.events[-1].data["stop_reason"] == "all_approved"
    assert result.events[-1].data["round"] == 2

    # an empty result revised into another empty one is no loss: adopted
    scripted_llm.clear()
    scripted_llm.push(writer(peru), invitation(1), revise("Try Chile."),
                      writer(chile, "Agreed."), approve())
    result = run(db, llm, n_reviewers=1, revision_gate="execution")
    assert result.final_sql == chile and result.events[-1].data["stop_reason"] == "all_approved"


def test_execution_gate_leaves_an_edited_sql_to_the_correction_loop(db, llm, scripted_llm):
    scripted_llm.push(writer(SQL_A), invitation(1), revise("Show the age too."),
                      writer(SQL_B, "Agreed."), approve())
    first = run(db, llm, n_reviewers=1, revision_gate="execution")
    index = next(i for i, e in enumerate(first.events) if e.agent == "Execution" and i > 1)
    edited = copy.deepcopy(first.events[index - 1].data)
    assert edited["revised_from"]["revision"] == SQL_B
    edited["sql"] = "SELECT nme FROM singer"  # a person's edit, not the writer's revision
    scripted_llm.clear()
    scripted_llm.push(writer(SQL_C, "Fixed."), approve())
    resumed = run_to_end(resume_run(PIPELINE, first, index, db, llm, data=edited))
    assert resumed.status == "done", resumed.error
    assert resumed.events[index + 1].agent == "SQL-Writer"
    assert resumed.final_sql == SQL_C


# -- the aggregate gate -----------------------------------------------------------------------

PER_COUNTRY = "SELECT country, COUNT(*) FROM singer GROUP BY country"
ONE_ARBITRARY_ROW = "SELECT country, COUNT(*) FROM singer WHERE age > 20"


def test_aggregate_gate_refuses_a_revision_that_drops_the_group_by(db, llm, scripted_llm):
    scripted_llm.push(writer(PER_COUNTRY), invitation(1), revise("Simplify: no GROUP BY."),
                      writer(ONE_ARBITRARY_ROW, "Simplified."))
    result = run(db, llm, n_reviewers=1, aggregate_gate=True)

    assert result.status == "done", result.error
    assert scripted_llm.remaining == 0
    check = result.events[-1]
    assert check.agent == "Execution" and check.execution["ok"] is True
    assert check.inputs["aggregate_gate"] is True and "revision_gate" not in check.inputs
    assert any(n.startswith("The aggregate check: the revised SQL takes its other columns from "
                            "an arbitrary row (COUNT(*) beside country without GROUP BY)")
               and "not adopted" in n for n in check.notes)
    assert check.sql == PER_COUNTRY and check.data["stop_reason"] == "revision_rejected"
    assert check.data["rounds"][-1]["adopted"] is False
    assert result.final_sql == PER_COUNTRY
    assert sorted(tuple(r) for r in result.result["rows"]) == [("France", 2), ("Norway", 1)]


def test_aggregate_gate_is_a_default_and_off_adopts_the_revision(db, llm, scripted_llm):
    assert PIPELINE.resolve_params({})["aggregate_gate"] is True
    assert PIPELINE.resolve_recorded({})["aggregate_gate"] is False  # runs recorded before it
    scripted_llm.push(writer(PER_COUNTRY), invitation(1), revise("Simplify: no GROUP BY."),
                      writer(ONE_ARBITRARY_ROW, "Simplified."), approve())
    result = run(db, llm, n_reviewers=1, aggregate_gate=False)
    assert result.final_sql == ONE_ARBITRARY_ROW
    assert result.events[-1].data["stop_reason"] == "all_approved"


def test_aggregate_gate_passes_revisions_that_add_no_arbitrary_row(db, llm, scripted_llm):
    # already such an aggregate before the revision: not the revision's doing
    other = "SELECT name, COUNT(*) FROM singer"
    scripted_llm.push(writer(other), invitation(1), revise("Use the country."),
                      writer(ONE_ARBITRARY_ROW, "Agreed."), approve())
    result = run(db, llm, n_reviewers=1, aggregate_gate=True)
    assert result.final_sql == ONE_ARBITRARY_ROW

    # a single max() takes its other columns from the row that holds it (defined by SQLite)
    oldest = "SELECT name, MAX(age) FROM singer"
    scripted_llm.clear()
    scripted_llm.push(writer(SQL_A), invitation(1), revise("The oldest singer."),
                      writer(oldest, "Agreed."), approve())
    result = run(db, llm, n_reviewers=1, aggregate_gate=True)
    assert result.final_sql == oldest and result.result["rows"] == [["Bo", 41]]


def test_aggregate_gate_with_the_execution_gate_each_says_why(db, llm, scripted_llm):
    scripted_llm.push(writer(PER_COUNTRY), invitation(1), revise("Simplify."),
                      writer(ONE_ARBITRARY_ROW, "Simplified."))
    result = run(db, llm, n_reviewers=1, aggregate_gate=True, revision_gate="execution")
    check = result.events[-1]
    assert check.inputs["aggregate_gate"] is True and check.inputs["revision_gate"] == "execution"
    assert any(n.startswith("The aggregate check:") for n in check.notes)
    assert result.final_sql == PER_COUNTRY

    # a revision that fails is the execution gate's: its own words, not the aggregate check's
    scripted_llm.clear()
    scripted_llm.push(writer(PER_COUNTRY), invitation(1), revise("Simplify."),
                      writer("SELECT cntry, COUNT(*) FROM singer", "Simplified."))
    result = run(db, llm, n_reviewers=1, aggregate_gate=True, revision_gate="execution")
    assert any(n.startswith("Execution decides: the revised SQL fails") for n in
               result.events[-1].notes)
    assert result.final_sql == PER_COUNTRY


def test_the_text_view_says_a_revision_was_not_adopted(db, llm, scripted_llm):
    from agents.runs.textview import render_event

    scripted_llm.push(writer(PER_COUNTRY), invitation(1), revise("Simplify: no GROUP BY."),
                      writer(ONE_ARBITRARY_ROW, "Simplified."))
    result = run(db, llm, n_reviewers=1, aggregate_gate=True)
    check = result.events[-1]
    assert "the revision is not adopted: the revised SQL takes its other columns from an " \
           "arbitrary row" in "\n".join(check.output.text_lines())
    assert check.output.executed_label() == "The revision, not adopted, executed"
    shown = "\n".join(render_event(check))
    assert "  the revision runs and returns 1 row(s)" in shown
    assert "  the revision is not adopted: the revised SQL takes" in shown
