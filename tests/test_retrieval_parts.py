"""Schema retrieval's part rule: a table that matches the question well enough to pass the floor
is still left out when its part of the schema (the tables its foreign keys connect) matches the
question only weakly -- a look-alike of another application in the same file -- and the trace
says so; a table no foreign key links to another is left to the floor alone."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from agents.db.database import open_database
from agents.core.engine import run_to_end, start_run
from agents.pipelines.baseline import PIPELINE as BASELINE
from agents.retrieval.fit import form_cost
from agents.retrieval.parts import Parts, schema_parts, strong_parts
from agents.retrieval.stage import PART_FLOOR, RELATIVE_FLOOR, choose, over_floor
from agents.db.schema import Column, ForeignKey, Schema, Table
from dbfactory import make_db
from retrieval_script import CONTEXT, QUESTION, charts_run, client
from scripted_llm import ScriptedLLM


def table(name: str) -> Table:
    return Table(name=name, columns=[Column(name="id"), Column(name="ref")])


def link(child: str, parent: str) -> ForeignKey:
    return ForeignKey(table=child, column="ref", ref_table=parent, ref_column="id")


def test_parts_are_the_tables_foreign_keys_connect_and_tables_without_keys_stand_alone():
    schema = Schema(db_name="d", tables=[table(n) for n in ("a", "b", "c", "x", "y", "lone")],
                    foreign_keys=[link("b", "a"), link("c", "b"), link("y", "x")])
    parts = schema_parts(schema)
    assert parts.of == {"a": "a", "b": "a", "c": "a", "x": "x", "y": "x", "lone": "lone"}
    assert parts.alone == {"lone"}
    # a table linked only to itself has no neighbour: it stands alone too
    looped = Schema(db_name="d", tables=[table("t")], foreign_keys=[link("t", "t")])
    assert schema_parts(looped).alone == {"t"}


def test_a_part_whose_best_table_scores_under_the_share_is_left_out_but_a_lone_table_stays():
    parts = Parts(of={"a": "a", "b": "a", "x": "x", "y": "x", "z": "z", "lone": "lone"},
                  alone=frozenset({"lone"}))
    scores = {"a": 10.0, "b": 4.0, "x": 4.9, "y": 4.0, "z": 5.0, "lone": 4.0}
    candidates = ["a", "z", "x", "b", "y", "lone"]
    # b is weak but lies in the best table's part; z's part reaches half the best on its own;
    # x and y's best is x, under half; the lone table has no part to judge it by
    assert strong_parts(candidates, scores, parts, 0.5) == ["a", "z", "b", "lone"]
    assert strong_parts(candidates, scores, parts, 0.49) == candidates
    assert strong_parts([], {}, parts, 0.5) == []
    # a share no part reaches leaves every candidate, unless a lone table stays anyway
    assert strong_parts(["a", "x", "b"], scores, parts, 1.5) == ["a", "x", "b"]
    assert strong_parts(candidates, scores, parts, 1.5) == ["lone"]


def test_the_floor_without_parts_is_as_before():
    ranking = SimpleNamespace(scores={"a": 10.0, "x": 4.0, "n": 0.0}, order=["a", "x", "n"],
                              matched={}, valued=set())
    parts = Parts(of={"a": "a", "x": "x", "n": "n"}, alone=frozenset())
    assert over_floor(ranking) == ["a", "x"]
    assert over_floor(ranking, parts=parts) == ["a"]
    assert over_floor(ranking, parts=parts, part_floor=0) == ["a", "x"]
    # a part floor no part reaches (over 1) leaves the floor's list rather than nothing
    assert over_floor(ranking, parts=parts, part_floor=1.5) == ["a", "x"]


def test_retrieval_sets_a_look_alike_part_apart_and_the_trace_names_it(charts_db):
    cost = form_cost(BASELINE.retrieval.forms({p.name: p.default for p in BASELINE.params}))
    plain, kept = choose(charts_db, QUESTION, "", cost, budget=6000, part_floor=0,
                         part_coverage=0)
    best = plain.ranking.scores[plain.ranking.order[0]]
    # the case the rule is for: over the floor, in a part that matches weakly
    for name in ("chart_singer", "chart_week"):
        assert RELATIVE_FLOOR * best <= plain.ranking.scores[name] < PART_FLOOR * best
        assert name in kept.selection
    assert not plain.apart

    run, requests = charts_run(charts_db)
    assert run.status == "done", run.error
    retrieval = run.events[0].output
    kept = {row["table"] for row in retrieval.kept}
    assert {"singer", "concert", "singer_in_concert"} <= kept
    assert not kept & {"chart_singer", "chart_week"}
    assert retrieval.apart == ["chart_week", "chart_singer"]
    assert requests and all("chart_" not in str(m.get("content")) for req in requests
                            for m in req["messages"])
    text = "\n".join(retrieval.text_lines())
    assert ("2 of them matched, but their part of the schema (the tables their foreign keys "
            "connect) matches the question only weakly, or fewer of its words than another "
            "part: chart_week, chart_singer") in text


def test_a_run_recorded_before_the_rule_reads_back_with_nothing_set_apart():
    from agents.retrieval import SchemaRetrieval

    recorded = SchemaRetrieval.from_dict({"kept": [{"table": "singer", "reason": "ranked"}],
                                          "dropped": 3, "dropped_best": ["chart_singer"]})
    assert recorded.apart == []
    assert not any("weakly" in line for line in recorded.text_lines())


def test_recorded_runs_are_resumed_only_where_retrieval_now_keeps_other_tables(monkeypatch,
                                                                                charts_db):
    """``bench/retrieval_reruns.py`` resumes a recorded run from retrieval when what it would
    keep now, or the values it would find, differ from the record: a change to the rule is
    measured on the runs it touches, and the others keep their prompts and answers."""
    from agents.retrieval import STATE_KEY
    from bench_scripts import bench_script

    reruns = bench_script(monkeypatch, "retrieval_reruns")
    run, _ = charts_run(charts_db)
    find = reruns.retrieval_changed(str(charts_db.path))
    assert find(run) is None
    retrieval = run.events[0]
    retrieval.data[STATE_KEY] = {**retrieval.data[STATE_KEY], "chart_singer": "keep_all"}
    assert find(run) == 0                      # recorded before the part rule
    del retrieval.data[STATE_KEY]["chart_singer"]
    retrieval.parsed["values"] = []
    assert find(run) == 0                      # recorded with other values


def test_the_finder_passes_over_a_recorded_retrieval_that_failed_and_resumes_one_now_failing(
        monkeypatch, charts_db):
    from bench_scripts import bench_script

    reruns = bench_script(monkeypatch, "retrieval_reruns")
    run, _ = charts_run(charts_db)
    find = reruns.retrieval_changed(str(charts_db.path))
    retrieval = run.events[0]
    retrieval.inputs["budget"] = 5            # no table fits now: a change, not a crash
    assert find(run) == 0
    retrieval.status = "error"                # failed when recorded: it would fail again
    assert find(run) is None


def test_every_named_run_is_resumed_from_retrieval_even_when_it_keeps_the_same(
        monkeypatch, charts_db):
    """``--every-named``: a change after retrieval is measured on the runs named, from
    retrieval on, whether or not retrieval changed; a retrieval that failed is not resumed."""
    from bench_scripts import bench_script

    reruns = bench_script(monkeypatch, "retrieval_reruns")
    run, _ = charts_run(charts_db)
    assert reruns.retrieval_changed(str(charts_db.path))(run) is None
    assert reruns.any_retrieval(run) == 0
    run.events[0].status = "error"
    assert reruns.any_retrieval(run) is None
    with pytest.raises(SystemExit, match="needs --question"):
        reruns.main(["--results", "somewhere", "--ask-db", str(charts_db.path),
                     "--every-named", "--data", "x", "--out", "y"])


def test_a_question_no_table_matches_is_noted_even_when_nothing_fits(tmp_path):
    columns = ", ".join(f"measure_{i} REAL" for i in range(1500))
    script = f"CREATE TABLE readings (reading_id INTEGER PRIMARY KEY, {columns});"
    db = open_database(make_db(tmp_path / "huge.sqlite", script))
    try:
        with ScriptedLLM(context_size=CONTEXT) as server:
            run = run_to_end(start_run(BASELINE, "Zzyzx?", db, client(server, n_ctx=CONTEXT)))
            assert run.status == "failed" and "too large for the model's context" in run.error
            assert any("no table matches" in note for note in run.events[0].notes)
            assert not server.requests
    finally:
        db.close()
