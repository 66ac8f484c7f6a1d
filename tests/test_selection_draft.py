"""Candidate selection at conversational speed: the quick writer's answer first, as a draft the
vote confirms or replaces, and the candidates a decided vote does not need left unwritten."""

from __future__ import annotations

import pytest

from agents.core.engine import run_to_end, start_run
from agents.db.database import open_database
from agents.pipelines.selection import PIPELINE
from agents.pipelines.selection.outputs import CandidateVote
from agents.runs.candidates import Candidate, settled
from dbfactory import SINGERS_SQL, make_db
from prompt_markers import MAC_DECOMPOSE
from selection_script import (FRANCE, FRANCE_ALIASED, OLDER, QUESTION, decomposition,
                              reasoned, script, sql_block)


@pytest.fixture
def db(tmp_path):
    database = open_database(make_db(tmp_path / "music.sqlite", SINGERS_SQL))
    yield database
    database.close()


def run(db, llm, **params):
    return run_to_end(start_run(PIPELINE, QUESTION, db, llm, params=params))


def by_step(result) -> dict:
    return {e.step: e for e in result.events}


def test_the_writer_answers_first_and_a_decided_vote_skips_the_rest(db, llm, scripted_llm):
    script(scripted_llm, writer=sql_block(FRANCE), sample=sql_block(FRANCE_ALIASED),
           cot=reasoned(FRANCE), decomposer=decomposition(OLDER))
    result = run(db, llm)
    assert result.status == "done", result.error
    assert [e.step for e in result.events] == [
        "ground", "candidate:writer", "candidate:sample1", "candidate:cot", "vote"]
    steps = by_step(result)
    assert steps["candidate:writer"].parsed["draft"] is True
    assert "draft" not in steps["candidate:sample1"].parsed
    assert steps["candidate:writer"].execution["ok"]  # the draft's table is on the event
    assert any("the vote is decided: 3 of 4 candidates agree already; the 1 not yet written "
               "could not change the vote; not written: decomposer" in n
               for n in steps["candidate:cot"].notes)
    assert not [r for r in scripted_llm.requests if MAC_DECOMPOSE in str(r["messages"])]
    vote = steps["vote"].parsed
    assert vote["skipped"] == ["decomposer"] and vote["draft"] == "writer"
    assert vote["draft_outcome"] == "confirmed"
    assert vote["draft_note"] == "confirmed: 3 of 3 candidates return the same rows"
    assert "  not written (the vote was decided): decomposer" in \
        CandidateVote.from_dict(vote).text_lines()
    assert result.final_sql == FRANCE  # cot's SQL text would be the same rows; trust order
    assert vote["groups"][0]["generators"] == ["cot", "writer", "sample1"]


def test_a_vote_against_the_draft_replaces_it_and_says_why(db, llm, scripted_llm):
    script(scripted_llm, writer=sql_block(OLDER), sample=sql_block(FRANCE),
           cot=reasoned(FRANCE), decomposer=decomposition(FRANCE))
    result = run(db, llm)
    assert result.status == "done", result.error
    steps = by_step(result)
    assert "candidate:decomposer" in steps  # 2 of 4 so far could still be tied
    vote = steps["vote"].parsed
    assert vote["draft_outcome"] == "replaced" and "skipped" not in vote
    rows = steps["candidate:writer"].execution["row_count"]
    assert vote["draft_note"] == (
        f"replaced: the draft (writer) returned {rows} row(s); the vote chose the answer of "
        "cot, decomposer, sample1 (3 of 4 candidates), which returns 2 row(s)")
    assert result.final_sql == FRANCE


def test_both_switches_off_restore_the_order_of_trust_and_every_candidate(db, llm,
                                                                           scripted_llm):
    script(scripted_llm, writer=sql_block(FRANCE), sample=sql_block(FRANCE_ALIASED),
           cot=reasoned(FRANCE), decomposer=decomposition(FRANCE))
    result = run(db, llm, draft_first=False, stop_when_decided=False)
    assert [e.step for e in result.events] == [
        "ground", "candidate:cot", "candidate:writer", "candidate:sample1",
        "candidate:decomposer", "vote"]
    assert by_step(result)["candidate:cot"].parsed["draft"] is True  # still the first that ran
    assert "skipped" not in by_step(result)["vote"].parsed


def test_a_run_recorded_before_the_switches_resumes_without_them():
    params = PIPELINE.resolve_recorded({})
    assert params["draft_first"] is False and params["stop_when_decided"] is False


def _ran(name: str, rows: list, ok: bool = True) -> Candidate:
    return Candidate(generator=name, sql="SELECT 1",
                     result={"ok": ok, "columns": ["x"], "rows": rows,
                             "row_count": len(rows)} if ok else {"ok": False, "error": "x"})


def test_settled_only_when_the_rest_could_not_change_the_winner():
    a, b = [[1]], [[2]]
    assert settled([_ran("w", a), _ran("s", a)], 2) is None  # 2 more could tie it
    assert settled([_ran("w", a), _ran("s", a), _ran("c", a)], 1) is not None
    assert settled([_ran("w", a), _ran("s", a), _ran("c", b)], 1) is None
    assert settled([_ran("w", a), _ran("s", a), _ran("c", a)], 0) is None  # nothing to skip
    assert settled([_ran("w", a), _ran("s", a), _ran("c", a)], 3, min_share=0.5) is None
    empty = [_ran("w", []), _ran("s", []), _ran("c", [])]
    assert settled(empty, 1, data_first=True) is None  # one result with data would win
    assert settled(empty, 1, data_first=False) is not None
    failed = [_ran("w", a), _ran("s", a), _ran("c", a, ok=False)]
    assert settled(failed, 1) is not None  # 2 of 4 and one more: at best 1 against 2
    assert settled([_ran("w", a), _ran("s", b), _ran("c", a, ok=False)], 1) is None
