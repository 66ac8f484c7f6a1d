"""The Final check as a person reads it in the trace: what was mended, why, and both queries."""

from __future__ import annotations

from agents.core.engine import run_to_end, start_run
from agents.pipelines import get_pipeline
from final_check_cases import JOINED, PLAIN
from macsql_script import DECOMPOSER, SMALL_SQL, decomposition, make_db
from trace_drawing import codes, draw, texts


def test_the_trace_shows_the_join_left_out_and_both_queries(tmp_path, llm, scripted_llm):
    db = make_db(tmp_path, "concerts", SMALL_SQL)
    scripted_llm.when(DECOMPOSER, decomposition(("French singers?", JOINED)))
    run = run_to_end(start_run(get_pipeline("macsql"), "Which singers are from France?", db,
                               llm, params={"value_grounding": "off"}))
    assert run.status == "done", run.error
    at = draw([e.to_dict() for e in run.events])
    check = at.status[-1]
    assert check.label.split(" — ")[0].endswith(
        "Final check: Leave out joins nothing reads, write values as stored")
    shown = texts(check)
    assert ":blue-badge[join left out] The final SQL joined `concert`, which nothing in it " \
        "reads" in shown
    assert "The run ends on the mended SQL (2 row(s))." in shown
    assert "SQL before" in shown and "SQL after" in shown
    sql = [text for language, text in codes(check) if language == "sql"]
    assert [" ".join(s.split()) for s in sql] == [JOINED, PLAIN]  # each once


def test_the_trace_shows_a_value_written_as_stored(tmp_path, llm, scripted_llm):
    db = make_db(tmp_path, "concerts", SMALL_SQL)
    lower = "SELECT name FROM singer WHERE country = 'france'"
    scripted_llm.when(DECOMPOSER, decomposition(("French singers?", lower)))
    run = run_to_end(start_run(get_pipeline("macsql"), "Which singers are from france?", db,
                               llm, params={"value_grounding": "off",
                                            "refine_empty_result": False}))
    shown = texts(draw([e.to_dict() for e in run.events]).status[-1])
    assert (":blue-badge[written as stored] The column holds no such value but one equal to it "
            "but for case: `france` as `France`.") in shown
    assert "join left out" not in shown


def test_the_trace_says_a_table_was_read_only_through_its_join_key(tmp_path, llm,
                                                                   scripted_llm):
    from final_check_cases import BY_KEY
    db = make_db(tmp_path, "concerts", SMALL_SQL)
    question = "Give the ids of the performers of 2015's concerts."
    scripted_llm.when(DECOMPOSER, decomposition((question, BY_KEY)))
    run = run_to_end(start_run(get_pipeline("macsql"), question, db, llm,
                               params={"value_grounding": "off"}))
    assert run.status == "done", run.error
    shown = texts(draw([e.to_dict() for e in run.events]).status[-1])
    assert (":blue-badge[join left out] The final SQL joined `singer` and read only its join "
            "key") in shown
    assert "which nothing in it reads" not in shown


def test_the_trace_says_a_named_table_of_another_application_was_left_out(tmp_path, llm,
                                                                          scripted_llm):
    from dbfactory import TWO_APPLICATIONS_SQL
    from final_check_cases import ACROSS, SURFACE
    db = make_db(tmp_path, "world", TWO_APPLICATIONS_SQL)
    scripted_llm.when(DECOMPOSER, decomposition((SURFACE, ACROSS)))
    run = run_to_end(start_run(get_pipeline("macsql"), SURFACE, db, llm,
                               params={"value_grounding": "off"}))
    assert run.status == "done", run.error
    assert run.events[-1].parsed["apart"] == ["continents"]
    shown = texts(draw([e.to_dict() for e in run.events]).status[-1])
    assert (":blue-badge[join left out] The final SQL joined `continents`, which the question "
            "names but which no foreign key links to the query's other tables") in shown
    assert "which nothing in it reads" not in shown and "read only its join key" not in shown
