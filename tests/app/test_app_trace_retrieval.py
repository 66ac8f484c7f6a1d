"""The Schema Retriever as a person reads it in the trace: what was kept, and why the tables of a
look-alike part of the schema were not."""

from __future__ import annotations

import pytest

from agents.database import open_database
from agents.engine import run_to_end, start_run
from agents.pipelines.baseline import PIPELINE as BASELINE
from dbfactory import make_db, wide_schema_sql
from scripted_llm import ScriptedLLM
from test_app_trace_pipelines import draw, texts
from test_retrieval import CONTEXT, QUESTION, answer, client
from test_retrieval_parts import CHARTS


@pytest.fixture(scope="module")
def charts_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("charts") / "charts.sqlite"
    make_db(path, wide_schema_sql(300).replace("COMMIT;", CHARTS + "COMMIT;"))
    database = open_database(path)
    yield database
    database.close()


def test_the_retriever_view_names_the_tables_set_apart(charts_db):
    with ScriptedLLM(context_size=CONTEXT) as server:
        server.when(lambda req: True, answer)
        run = run_to_end(start_run(BASELINE, QUESTION, charts_db,
                                   client(server, n_ctx=CONTEXT)))
    shown = texts(draw([e.to_dict() for e in run.events]).status[0])
    assert "matches the question only weakly: `chart_week`, `chart_singer`" in shown
    assert "table(s) left out" in shown
