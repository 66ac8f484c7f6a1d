"""The Join check as a person reads it in the trace: the join left out, why, and both queries."""

from __future__ import annotations

from agents.engine import run_to_end, start_run
from agents.pipelines import get_pipeline
from test_app_trace_pipelines import codes, draw, texts
from test_join_ending import JOINED, PLAIN
from test_macsql import DECOMPOSER, SMALL_SQL, decomposition, make_db


def test_the_trace_shows_the_join_left_out_and_both_queries(tmp_path, llm, scripted_llm):
    db = make_db(tmp_path, "concerts", SMALL_SQL)
    scripted_llm.when(DECOMPOSER, decomposition(("French singers?", JOINED)))
    run = run_to_end(start_run(get_pipeline("macsql"), "Which singers are from France?", db,
                               llm, params={"value_grounding": "off"}))
    assert run.status == "done", run.error
    at = draw([e.to_dict() for e in run.events])
    check = at.status[-1]
    assert check.label.split(" — ")[0].endswith(
        "Join check: Leave out joins that nothing reads and the question does not name")
    shown = texts(check)
    assert ":blue-badge[join left out] The final SQL joined `concert`, which nothing in it " \
        "reads" in shown
    assert "The run ends without it (2 row(s))." in shown
    assert "SQL before" in shown and "SQL after" in shown
    sql = [text for language, text in codes(check) if language == "sql"]
    assert [" ".join(s.split()) for s in sql] == [JOINED, PLAIN]  # each once
