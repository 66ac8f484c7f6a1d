"""Schema retrieval's whole part: the best-ranked table's part of the schema (the tables its
foreign keys connect) kept whole and written first, so that questions about one application of a
large database send prompts that begin alike; never over the budget, never for a part too large,
and the prompts as before with the option off."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agents.db.database import open_database
from agents.core.engine import run_to_end, start_run
from agents.pipelines import get_pipeline, list_pipelines
from agents.retrieval.fit import Fit
from agents.retrieval.outputs import SchemaRetrieval
from agents.retrieval.parts import schema_parts
from agents.retrieval.whole_part import (PARAM, REASON, WHOLE_PART_MARGIN, WHOLE_PART_SHARE,
                                         whole_part)
from agents.db.schema import Column, ForeignKey, Schema, Table
from dbfactory import SINGERS_SQL, make_db, wide_schema_sql
from retrieval_script import CONTEXT, answer, client
from scripted_llm import ScriptedLLM

# the concerts application with a stadium table no question below names
CONCERTS_SQL = """
CREATE TABLE stadium (stadium_id INTEGER PRIMARY KEY, location TEXT, capacity INTEGER);
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT,
                     age INTEGER);
CREATE TABLE concert (concert_id INTEGER PRIMARY KEY, concert_name TEXT, year INTEGER,
                      stadium_id INTEGER REFERENCES stadium(stadium_id));
CREATE TABLE singer_in_concert (concert_id INTEGER REFERENCES concert(concert_id),
                                singer_id INTEGER REFERENCES singer(singer_id));
INSERT INTO stadium VALUES (1, 'Raith', 10104);
INSERT INTO singer VALUES (1, 'Ann', 'France', 30), (2, 'Bo', 'Norway', 41);
INSERT INTO concert VALUES (1, 'Spring', 2014, 1);
INSERT INTO singer_in_concert VALUES (1, 1), (1, 2);
"""
PART = ["stadium", "singer", "concert", "singer_in_concert"]   # in the database's order
ASKED = ["Which singers from France sang in the Spring concert?",
         "How old is the oldest singer?"]
SCHEMA_HEAD = "### Database schema\n"


@pytest.fixture(scope="module")
def concerts(tmp_path_factory):
    sql = wide_schema_sql(400)
    assert SINGERS_SQL in sql
    path = make_db(tmp_path_factory.mktemp("whole") / "wide.sqlite",
                   sql.replace(SINGERS_SQL, CONCERTS_SQL))
    database = open_database(path)
    yield database
    database.close()


def asked(db, questions, **params):
    """Each question's baseline run and the writer's prompt, asked one after the other."""
    from agents.pipelines.baseline import PIPELINE

    with ScriptedLLM(context_size=CONTEXT) as server:
        server.when(lambda req: True, answer)
        llm = client(server, n_ctx=CONTEXT)
        runs = [run_to_end(start_run(PIPELINE, q, db, llm, params=params)) for q in questions]
        prompts = [str(r["messages"][0]["content"]) for r in server.requests]
    assert all(run.status == "done" for run in runs), [run.error for run in runs]
    assert max(server.prompt_tokens) + 1024 <= CONTEXT
    return runs, prompts


def schema_tables(prompt: str) -> list[str]:
    body = prompt[prompt.index(SCHEMA_HEAD):]
    return [line.split()[2] for line in body.splitlines() if line.startswith("CREATE TABLE")]


def test_the_best_tables_whole_part_is_kept_and_written_first(concerts):
    runs, prompts = asked(concerts, ASKED)
    for run, prompt in zip(runs, prompts):
        retrieval = run.events[0].output
        assert isinstance(retrieval, SchemaRetrieval) and retrieval.first == PART
        assert schema_tables(prompt)[:len(PART)] == PART
        reasons = {row["table"]: row["reason"] for row in retrieval.kept}
        assert set(PART) <= set(reasons) and retrieval.tokens <= retrieval.budget
        assert any("written first, whole" in line for line in retrieval.text_lines())
    # nothing about stadiums was asked: it is there as a table of the part
    assert {row["table"]: row["reason"] for row in runs[1].events[0].output.kept}[
        "stadium"] == REASON
    # the two prompts begin alike through the whole part
    shared = len(os.path.commonprefix(prompts))
    last = prompts[0].index("CREATE TABLE singer_in_concert")
    assert shared > prompts[0].index(");", last)


def test_off_the_prompts_hold_only_what_retrieval_chose_in_the_databases_order(concerts):
    runs, prompts = asked(concerts, ASKED[1:], **{PARAM: False})
    retrieval = runs[0].events[0].output
    assert retrieval.first == [] and "stadium" not in {r["table"] for r in retrieval.kept}
    names = [t.name for t in concerts.schema.tables]
    assert schema_tables(prompts[0]) == sorted(schema_tables(prompts[0]), key=names.index)
    assert REASON not in {row["reason"] for row in retrieval.kept}


def test_only_baseline_keeps_the_whole_part_by_default_and_its_recorded_runs_did_not():
    for pipeline in list_pipelines():
        spec = next(p for p in pipeline.params if p.name == PARAM)
        assert spec.default is (pipeline.name == "baseline"), pipeline.name
    baseline = get_pipeline("baseline")
    assert baseline.resolve_recorded({})[PARAM] is False


# -- the rule itself ------------------------------------------------------------------------

def _table(name: str, width: int = 2) -> Table:
    return Table(name=name, columns=[Column(name="id")] +
                 [Column(name=f"c{i}") for i in range(width - 1)])


def _link(child: str, parent: str) -> ForeignKey:
    return ForeignKey(table=child, column="c0", ref_table=parent, ref_column="id")


def _schema() -> Schema:
    # a-b-c one part, x-y another, lone by itself
    # y is wide: 200 of the cost
    return Schema(db_name="d", tables=[_table(n, 20 if n == "y" else 2)
                                       for n in ("x", "a", "b", "y", "c", "lone")],
                  foreign_keys=[_link("b", "a"), _link("c", "b"), _link("y", "x")])


# the best table scores 10; y, of another part, half that
SCORES = {"b": 10.0, "lone": 10.0, "y": 5.0, "a": 4.0, "c": 1.0, "x": 1.0}


def _cost(schema: Schema) -> int:
    return sum(len(t.columns) for t in schema.tables) * 10


def test_the_part_is_completed_in_the_databases_order_with_its_reason():
    schema = _schema()
    kept = Fit(selection={"b": "keep_all", "y": "keep_all"},
               reasons={"b": "ranked", "y": "ranked"}, tokens=220)
    result, first = whole_part(schema, schema_parts(schema), kept, ["b", "y", "a"], SCORES,
                               _cost, budget=1000)
    assert first == ["a", "b", "c"]
    assert result.selection == {"b": "keep_all", "y": "keep_all", "a": "keep_all",
                                "c": "keep_all"}
    assert result.reasons == {"b": "ranked", "y": "ranked", "a": REASON, "c": REASON}
    assert result.tokens == _cost(schema.subset(result.selection))
    # a table the budget had cut to some columns is kept whole with its part
    cut = Fit(selection={"b": ["c0"]}, reasons={"b": "ranked"}, tokens=20)
    result, _ = whole_part(schema, schema_parts(schema), cut, ["b"], SCORES, _cost,
                          budget=1000)
    assert result.selection["b"] == "keep_all"
    # the schema as written: the part first, each group in the database's order
    shown = schema.subset(result.selection).with_first(first)
    assert shown.table_names() == ["a", "b", "c"]
    assert schema.subset({"y": "keep_all", **result.selection}).with_first(first)\
        .table_names() == ["a", "b", "c", "y"]


@pytest.mark.parametrize("budget, best, why", [
    (1000, "lone", "a table no foreign key links stands alone"),
    (239, "b", "the part is over its share of the budget"),
    (250, "b", "the selection would not fit the budget"),
])
def test_nothing_is_completed_when(budget, best, why):
    schema = _schema()
    kept = Fit(selection={best: "keep_all", "y": "keep_all"},
               reasons={best: "ranked", "y": "ranked"}, tokens=220)
    result, first = whole_part(schema, schema_parts(schema), kept, [best, "y"], SCORES, _cost,
                               budget)
    assert (result, first) == (kept, []), why


def test_the_share_is_of_the_budget():
    schema = _schema()
    kept = Fit(selection={"b": "keep_all"}, reasons={"b": "ranked"}, tokens=20)
    part = _cost(schema.subset(dict.fromkeys("abc", "keep_all")))      # 60
    enough = int(part / WHOLE_PART_SHARE)
    assert whole_part(schema, schema_parts(schema), kept, ["b"], SCORES, _cost, enough)[1]
    assert not whole_part(schema, schema_parts(schema), kept, ["b"], SCORES, _cost,
                          enough - 1)[1]


def test_a_kept_table_of_another_part_scoring_close_to_the_best_leaves_the_selection_as_it_is():
    """The best part may then be the look-alike, which, written first, the model answers from."""
    schema = _schema()
    kept = Fit(selection={"b": "keep_all", "y": "keep_all"},
               reasons={"b": "ranked", "y": "ranked"}, tokens=220)
    close = {**SCORES, "y": WHOLE_PART_MARGIN * SCORES["b"]}
    assert whole_part(schema, schema_parts(schema), kept, ["b", "y"], close, _cost,
                      1000) == (kept, [])
    under = {**SCORES, "y": WHOLE_PART_MARGIN * SCORES["b"] - 0.01}
    assert whole_part(schema, schema_parts(schema), kept, ["b", "y"], under, _cost, 1000)[1]
    # a table of the best part itself is no rival, however close
    own = {**SCORES, "a": SCORES["b"]}
    with_a = Fit(selection={"b": "keep_all", "a": "keep_all"},
                 reasons={"b": "ranked", "a": "ranked"}, tokens=40)
    assert whole_part(schema, schema_parts(schema), with_a, ["b", "a"], own, _cost, 1000)[1]


def test_a_resumed_run_writes_the_part_first_again(concerts):
    """The tables to write first are state like the selection, so a run resumed at the
    writer sends the prompt the first run sent."""
    from agents.core.engine import resume_run
    from agents.pipelines.baseline import PIPELINE

    with ScriptedLLM(context_size=CONTEXT) as server:
        server.when(lambda req: True, answer)
        llm = client(server, n_ctx=CONTEXT)
        first = run_to_end(start_run(PIPELINE, ASKED[1], concerts, llm))
        again = run_to_end(resume_run(PIPELINE, first, 1, concerts, llm))
        prompts = [str(r["messages"][0]["content"]) for r in server.requests]
    assert again.status == "done" and prompts[0] == prompts[1]
    assert schema_tables(prompts[1])[:len(PART)] == PART


def test_every_pipeline_stays_within_the_context_with_it_on(concerts):
    for pipeline in list_pipelines():
        with ScriptedLLM(context_size=CONTEXT) as server:
            server.when(lambda req: True, answer)
            run = run_to_end(start_run(pipeline, ASKED[0], concerts,
                                       client(server, n_ctx=CONTEXT), params={PARAM: True}))
            assert run.status == "done", (pipeline.name, run.error)
            assert run.events[0].output.first == PART, pipeline.name
            assert max(server.prompt_tokens) + 1024 <= CONTEXT, pipeline.name


def test_the_rule_changes_nothing_on_a_schema_within_the_budget(tmp_path):
    db = open_database(make_db(Path(tmp_path) / "small.sqlite", CONCERTS_SQL))
    try:
        runs, _ = asked(db, ASKED[1:])
        assert runs[0].events[0].step == "writer"
    finally:
        db.close()


def test_recorded_runs_with_the_part_completed_are_not_taken_for_changed_ones(monkeypatch,
                                                                              concerts):
    """``bench/retrieval_reruns.py`` asks retrieval again with the run's recorded parameters:
    a run that kept the whole part reads back as unchanged, one recorded without it (or with
    another order) as changed."""
    from agents.core.step_context import RETRIEVED_FIRST, RETRIEVED_SCHEMA
    from bench_scripts import bench_script

    reruns = bench_script(monkeypatch, "retrieval_reruns")
    runs, _ = asked(concerts, ASKED[1:])
    run = runs[0]
    find = reruns.retrieval_changed(str(concerts.path))
    assert find(run) is None
    retrieval = run.events[0]
    retrieval.data[RETRIEVED_FIRST] = list(reversed(PART))
    assert find(run) == 0                       # written in another order
    retrieval.data[RETRIEVED_FIRST] = PART
    retrieval.data[RETRIEVED_SCHEMA].pop("stadium")
    assert find(run) == 0                       # recorded without the part's other tables


def test_csma_splits_the_kept_tables_in_the_databases_order(concerts):
    """The part written first is a matter of the prompts' text: CSMA's agents still own equal,
    contiguous runs of the kept tables in the database's order."""
    from agents.pipelines.csma import PIPELINE as CSMA

    with ScriptedLLM(context_size=CONTEXT) as server:
        server.when(lambda req: True, answer)
        run = run_to_end(start_run(CSMA, ASKED[0], concerts, client(server, n_ctx=CONTEXT),
                                   params={PARAM: True}))
    assert run.events[0].output.first == PART
    partition = next(e for e in run.events if e.step == "partition")
    names = [t.name for t in concerts.schema.tables]
    owned = [t for agent in partition.parsed["agents"]
             for t in sorted(agent["tables"], key=names.index)]
    assert len(partition.parsed["agents"]) == 2 and set(PART) <= set(owned)
    assert owned == sorted(owned, key=names.index)


def test_pipelines_write_the_part_first_in_their_prompts(concerts):
    for name in ("macsql", "r3", "selection"):
        with ScriptedLLM(context_size=CONTEXT) as server:
            server.when(lambda req: True, answer)
            run = run_to_end(start_run(get_pipeline(name), ASKED[0], concerts,
                                       client(server, n_ctx=CONTEXT), params={PARAM: True}))
            assert run.status == "done", (name, run.error)
            texts = [str(m.get("content") or "") for r in server.requests
                     for m in r["messages"]]
        shown = next(t for t in texts if "stadium" in t and "singer_in_concert" in t)
        places = [shown.index(t) for t in ("stadium", "concert", "singer_in_concert")]
        assert places == sorted(places), name
        others = [t.name for t in concerts.schema.tables if t.name not in PART
                  and t.name in shown]
        assert all(shown.index(o) > places[-1] for o in others), name


def test_nothing_matched_leaves_nothing_to_complete():
    schema = _schema()
    kept = Fit(selection={"a": "keep_all"}, reasons={"a": "ranked"}, tokens=20)
    assert whole_part(schema, schema_parts(schema), kept, ["a"], {}, _cost, 1000) == (kept, [])
