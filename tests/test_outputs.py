"""The typed output contract: kinds, their records, older runs, and the declared step graphs."""

from __future__ import annotations

import pytest

from agents.core.engine import END, Pipeline, Step, run_to_end, start_run
from agents.core.events import Run, StepEvent
from agents.core.graph import to_dot, to_mermaid
from agents.outputs import Generic, SchemaSelection, SQLRepair, infer_kind, kinds, load
from agents.pipelines import list_pipelines
from agents.runs.textview import render_event


def test_every_kind_round_trips_through_json():
    list_pipelines()  # each pipeline registers its own kinds when imported
    for kind, cls in kinds().items():
        if cls is Generic:
            continue
        record = cls.from_dict({name: None for name in cls.required})
        again = load(kind, record.to_dict())
        assert type(again) is cls and again.to_dict() == record.to_dict(), kind


def test_a_record_keeps_keys_it_does_not_declare():
    record = load("schema_selection", {"tables": [], "used": False, "reviewed_by": "ann"})
    assert isinstance(record, SchemaSelection) and record.extra == {"reviewed_by": "ann"}
    assert record.to_dict()["reviewed_by"] == "ann"


def test_a_shape_its_kind_does_not_accept_is_shown_generically():
    assert isinstance(load("schema_selection", {"no_tables": 1}), Generic)
    assert isinstance(load("schema_selection", ["a", "list"]), Generic)
    assert isinstance(load("no_such_kind", {"a": 1}), Generic)


@pytest.mark.parametrize("agent, parsed, kind", [
    ("Selector", {"tables": [], "used": False}, "schema_selection"),
    ("Information filter", {"tables": []}, "information_filter"),
    ("Decomposer", {"sub_questions": []}, "decomposition"),
    ("Refiner", {"status": "ok", "rows": 3}, "sql_repair"),
    ("SQL Writer", {"sql": "SELECT 1"}, "sql_draft"),                # baseline
    ("SQL-Writer", {"reasoning": "...", "style": "cot"}, "sql_draft"),  # R3 draft
    ("SQL-Writer", {"error": "x", "sql_before": "a", "sql_after": "b"}, "sql_repair"),
    ("Reviewer: Data analyst", {"verdict": "approve"}, "review"),
    ("Agent 2", {"global_schema": [], "extracted": []}, "schema_extraction"),
    ("Agent 2", {"verdict": "negative"}, "sql_check"),
    ("Agent 2", {"sql": "SELECT 1"}, "agent_sql"),
    ("Agent 2", {"mood": "?"}, "generic"),
    ("Someone new", {"a": 1}, "generic"),
])
def test_runs_stored_before_kinds_are_read_by_agent_name_and_shape(agent, parsed, kind):
    assert infer_kind(agent, parsed) == kind
    event = StepEvent.from_dict({"index": 0, "step": "s", "agent": agent, "parsed": parsed})
    assert event.kind == "" and event.output_kind == kind


def test_new_events_name_their_kind_and_keep_it_when_stored():
    event = StepEvent(index=0, step="refiner", agent="Refiner", kind="sql_repair",
                      parsed=SQLRepair(status="gave_up", error="boom").to_dict())
    again = StepEvent.from_dict(Run.from_dict(
        Run(pipeline="p", question="q", db_name="d", events=[event]).to_dict()).events[0].to_dict())
    assert again.kind == "sql_repair" and isinstance(again.output, SQLRepair)
    assert again.output.error == "boom"
    assert "still failing (None): boom" in "\n".join(render_event(again))


def test_every_pipeline_declares_its_step_graph():
    for pipeline in list_pipelines():
        names = {s.name for s in pipeline.steps}
        for step in pipeline.steps:
            assert step.then, f"{pipeline.name}.{step.name} declares no next step"
            assert set(step.then) <= names | {END}, f"{pipeline.name}.{step.name}"
        reachable = {pipeline.steps[0].name}
        for _ in pipeline.steps:
            reachable |= {t for s, t in pipeline.edges() if s in reachable and t}
        assert reachable == names, f"{pipeline.name}: unreachable steps"
        assert any(t is END for _, t in pipeline.edges()), f"{pipeline.name} never ends"
        dot, mermaid = to_dot(pipeline), to_mermaid(pipeline)
        assert dot.count("->") == len(pipeline.edges()) == mermaid.count("-->")


def _jump(ctx):
    return "c"


class Jumper(Pipeline):
    name = "jumper"
    steps = [Step("a", "A", _jump, then=("b",)), Step("b", "B", lambda ctx: None, then=(END,)),
             Step("c", "C", lambda ctx: None, then=(END,))]


def test_a_transition_the_graph_does_not_declare_fails_the_step(tmp_path):
    from agents.db.database import open_database
    import sqlite3

    path = tmp_path / "t.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x)")
    with open_database(path) as db:
        run = run_to_end(start_run(Jumper(), "q", db, llm=None))
    assert run.status == "failed" and [e.step for e in run.events] == ["a"]
    assert "does not allow after a" in run.events[0].error


def test_graph_marks_the_steps_a_run_went_through():
    macsql = next(p for p in list_pipelines() if p.name == "macsql")
    dot = to_dot(macsql, ["selector", "decomposer", "refiner", "refiner"])
    assert 'label="Refiner\\nExecute the SQL and repair it (×2)", fillcolor="#d7ecff"' in dot


def test_the_docs_draw_the_graphs_the_code_declares():
    from pathlib import Path

    docs = (Path(__file__).resolve().parent.parent / "docs" / "architecture.md").read_text()
    for pipeline in list_pipelines():
        if pipeline.name in ("baseline", "macsql", "deasql", "r3", "csma"):
            assert f"```mermaid\n{to_mermaid(pipeline)}\n```" in docs, pipeline.name
