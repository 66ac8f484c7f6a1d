"""The Schema Retriever as a person reads it in the trace: what was kept, and why the tables of a
look-alike part of the schema were not."""

from __future__ import annotations

from retrieval_script import charts_run
from trace_drawing import draw, texts


def test_the_retriever_view_names_the_tables_set_apart(charts_db):
    run, _ = charts_run(charts_db)
    shown = texts(draw([e.to_dict() for e in run.events]).status[0])
    assert ("matches the question only weakly, or fewer of its words than another part: "
            "`chart_week`, `chart_singer`") in shown
    assert "table(s) left out" in shown


def test_the_retriever_view_says_which_part_is_written_first(charts_db):
    run, _ = charts_run(charts_db)
    assert run.events[0].output.first == ["singer", "concert", "singer_in_concert"]
    shown = texts(draw([e.to_dict() for e in run.events]).status[0])
    assert ("Written first, whole: the best table's part of the schema (3 tables), the same "
            "text for every question about it: `singer`, `concert`, `singer_in_concert`") in shown
