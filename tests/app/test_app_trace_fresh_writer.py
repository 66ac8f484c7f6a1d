"""The writer afresh as a person reads it in the trace: the repairs ended on SQL that fails, a
writer wrote the SQL again from the schema, and whether its SQL is the answer."""

from __future__ import annotations

import json

import deasql_script
from agents.db.sqltext import format_sql
from agents.pipelines import fresh_writer
from deasql_script import script
from prompt_markers import DEA_CORRECT, DEA_GENERATE, DEA_REPAIR, WRITER
from trace_drawing import codes, draw, texts

db = deasql_script.db

BROKEN = "SELECT nme FROM singer WHERE country = 'France'"
FRESH = "SELECT name FROM singer WHERE country = 'France'"


def _run(db, llm, server, answer: str):
    server.when(WRITER, f"```sql\n{answer}\n```")
    script(server, **{DEA_GENERATE: json.dumps({"sql": BROKEN}),
                      DEA_CORRECT: json.dumps({"sql": BROKEN}),
                      DEA_REPAIR: json.dumps({"sql": BROKEN})})
    return deasql_script.run(db, llm, variant=None, name_rewrite=False, repair_from_hint=False)


def test_the_trace_says_the_writer_wrote_afresh_and_its_sql_is_the_answer(db, llm, scripted_llm):
    run = _run(db, llm, scripted_llm, FRESH)
    assert run.events[-1].step == fresh_writer.STEP
    at = draw([e.to_dict() for e in run.events])
    block = at.status[-1]
    shown = texts(block)
    assert "The repairs ended on SQL that fails (no such column: nme)" in shown
    assert "writes the SQL afresh with the single prompt" in shown
    assert "its SQL runs: it is the answer" in shown
    assert codes(block) == [("sql", format_sql(BROKEN)), ("sql", format_sql(FRESH))]


def test_the_trace_says_when_the_writers_sql_fails_too(db, llm, scripted_llm):
    run = _run(db, llm, scripted_llm, "SELECT a1 FROM singer")
    assert run.status == "failed"
    # the writer repairs once; its repair answers the same way
    at = draw([e.to_dict() for e in run.events])
    shown = texts(at.status[-1])
    assert "its SQL fails too: the run ends as the repairs left it" in shown
    assert "Its first SQL failed (no such column: a1) and was repaired once" in shown
