"""Schema retrieval: a schema larger than the model's context is cut down to what the question
needs, every prompt of every pipeline stays within the context, and a schema that fits changes
not one byte of any prompt."""

from __future__ import annotations

import glob
import json
import sqlite3
from pathlib import Path

import pytest

from agents.core.config import Settings
from agents.db.database import open_database
from agents.core.engine import run_to_end, start_run
from agents.pipelines import list_pipelines
from agents.retrieval import NothingFits, Retrieving, fit, rank
from agents.retrieval.fit import form_cost
from agents.db.introspection import introspect
from agents.db.schema import Column, Schema, Table
from agents.llm.token_budget import message_tokens
from dbfactory import build_wide_db, make_db, wide_schema_sql
from retrieval_script import CONTEXT, QUESTION, answer, client
from scripted_llm import ScriptedLLM, last_user_message

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wide_path(tmp_path_factory) -> Path:
    return build_wide_db(tmp_path_factory.mktemp("wide") / "wide.sqlite", tables=1000)


@pytest.fixture(scope="module")
def wide(wide_path):
    database = open_database(wide_path)
    yield database
    database.close()


# -- the token estimate -------------------------------------------------------------------------

def recorded_calls():
    for path in glob.glob(str(ROOT / "bench" / "results" / "*" / "results.jsonl")):
        for line in Path(path).read_text().splitlines():
            for event in json.loads(line)["run"]["events"]:
                for call in event.get("calls", []):
                    if call.get("prompt_tokens") and not call.get("cached"):
                        yield call["messages"], call["prompt_tokens"]


def test_the_estimate_never_counts_fewer_tokens_than_the_model_did():
    calls = list(recorded_calls())
    if not calls:
        pytest.skip("no recorded benchmark runs")
    ratios = [message_tokens(messages) / real for messages, real in calls]
    assert min(ratios) >= 1.0, "the estimate let a prompt through as shorter than it was"
    assert sorted(ratios)[len(ratios) // 2] < 1.5, "the estimate wastes the context"


# -- ranking and fitting ------------------------------------------------------------------------

def test_the_tables_a_question_needs_rank_first_among_a_thousand_distractors(tmp_path):
    # a generous time budget: the example values (which hold 'France') must all be read even
    # on a busy machine; the budget itself is tested with introspection
    schema = introspect(sqlite3.connect(make_db(tmp_path / "w.sqlite", wide_schema_sql(1000))),
                        "wide", budget_seconds=120)
    ranking = rank(schema, QUESTION)
    assert set(ranking.order[:3]) == {"singer", "concert", "singer_in_concert"}
    assert "country" in ranking.columns["singer"]  # 'France' is one of its example values
    assert ranking.scores[ranking.order[3]] < 0.2 * ranking.scores[ranking.order[0]]


BRIDGED = """
CREATE TABLE performer (performer_id INTEGER PRIMARY KEY, name TEXT, nation TEXT);
CREATE TABLE appearance (a_id INTEGER PRIMARY KEY,
                         who INTEGER REFERENCES performer(performer_id),
                         what INTEGER REFERENCES festival(festival_id));
CREATE TABLE festival (festival_id INTEGER PRIMARY KEY, title TEXT, year INTEGER);
CREATE TABLE weather (day TEXT, rain REAL);
"""


TWO_PARTS = """
CREATE TABLE chart_singer (singer_id INTEGER PRIMARY KEY, name TEXT, age INTEGER);
CREATE TABLE chart_song (song_id INTEGER PRIMARY KEY, title TEXT,
                         singer_id INTEGER REFERENCES chart_singer(singer_id));
CREATE TABLE stage_singer (singer_id INTEGER PRIMARY KEY, name TEXT, age INTEGER);
CREATE TABLE stage_performance (performance_id INTEGER PRIMARY KEY, venue TEXT,
                                singer_id INTEGER REFERENCES stage_singer(singer_id));
"""


def test_of_two_look_alike_tables_the_one_whose_neighbours_match_ranks_first(tmp_path):
    schema = introspect(sqlite3.connect(make_db(tmp_path / "two.sqlite", TWO_PARTS)), "two")
    # "venue" is a column of stage_performance only: neither singer table matches it itself
    ranking = rank(schema, "How old is each singer at a venue?")
    assert ranking.own["stage_singer"] == ranking.own["chart_singer"]  # alike on their own
    assert ranking.order[:2] == ["stage_performance", "stage_singer"]
    assert ranking.scores["stage_singer"] > ranking.scores["chart_singer"]
    assert ranking.linked["stage_singer"] == "stage_performance"
    # a table the question reaches only through a matching neighbour gets a share of its score
    unmatched = rank(schema, "Which venue is it?")
    assert "stage_singer" not in unmatched.matched and unmatched.own["stage_singer"] == 0
    assert 0 < unmatched.scores["stage_singer"] < unmatched.scores["stage_performance"]
    assert "chart_song" not in unmatched.linked and unmatched.scores["chart_song"] == 0


POSSESSIVE = """
CREATE TABLE advisor (s_id TEXT, i_id TEXT);
CREATE TABLE pupil (id INTEGER PRIMARY KEY, name TEXT);
""" + "".join(f"CREATE TABLE t{i} (id INTEGER PRIMARY KEY, label TEXT);\n" for i in range(8))


def test_a_possessive_s_is_not_a_word_of_the_question(tmp_path):
    from agents.retrieval.ranking import query_words

    assert query_words("What is Kyle's id?") == ["kyle", "id"]
    assert query_words("each owner\u2019s dogs's name") == ["owner", "dog", "name"]
    assert query_words("KYLE'S ID") == ["kyle", "id"]
    assert query_words("students' names") == ["student", "name"]
    assert query_words("the section s of block h") == ["section", "s", "block", "h"]
    schema = introspect(sqlite3.connect(make_db(tmp_path / "p.sqlite", POSSESSIVE)), "p")
    # "Kyle" is stored in pupil.name; the "s" of "Kyle's" would match advisor's s_id as if
    # the question named it, and a word that rare outweighs the stored value
    ranking = rank(schema, "What is Kyle's id?", value_matches=[
        {"table": "pupil", "column": "name"}])
    assert ranking.order[0] == "pupil" and "s" not in ranking.matched.get("advisor", [])


def test_a_kept_table_names_the_neighbour_only_when_its_share_lifted_it_over_the_floor():
    from agents.retrieval.ranking import Ranking
    from agents.retrieval.stage import _row

    schema = Schema(db_name="d", tables=[Table(name=n, columns=[Column(name="id")])
                                         for n in ("a", "b", "c")])
    ranking = Ranking(own={"a": 1.0, "b": 0.3, "c": 0.6}, scores={"a": 1.0, "b": 0.5, "c": 0.8},
                      linked={"b": "a", "c": "a"}, matched={"b": ["x"], "c": ["y"]},
                      valued={"c"})
    rows = {n: _row(schema, schema, n, "ranked", ranking, best=1.0) for n in "abc"}
    assert rows["b"]["linked"] == "a"            # 0.3 alone is under 0.35, 0.5 is over
    assert rows["c"]["linked"] == "" and rows["c"]["value"] is True
    assert rows["a"]["linked"] == "" and rows["a"]["value"] is False


def test_a_kept_table_says_why_it_was_kept():
    from agents.retrieval.outputs import kept_because

    assert kept_because({"reason": "join path"}) == "on the join path"
    assert kept_because({"reason": "ranked", "words": ["singer"], "value": False,
                         "linked": ""}) == "matches singer"
    assert kept_because({"reason": "ranked", "words": ["singer"], "value": True,
                         "linked": "concert"}) == (
        "matches singer; stored value; with its neighbour concert")
    assert kept_because({"reason": "ranked", "words": [], "value": False,
                         "linked": ""}) == "no match"
    # a row recorded before "value" and "linked" were: a score without words was a value
    assert kept_because({"reason": "ranked", "words": [], "score": 2.0}) == "stored value"


def test_the_join_path_between_kept_tables_is_kept(tmp_path):
    schema = introspect(sqlite3.connect(make_db(tmp_path / "b.sqlite", BRIDGED)), "b")
    cost = form_cost([lambda s: s.render_ddl()])
    kept = fit(schema, ["performer", "festival"], {}, cost, budget=10_000)
    assert kept.reasons == {"performer": "ranked", "festival": "ranked",
                            "appearance": "join path"}
    assert "weather" not in kept.selection
    # a table whose join path does not fit is left out rather than kept unjoinable
    alone = cost(schema.subset({"performer": "keep_all", "festival": "keep_all"}))
    kept = fit(schema, ["performer", "festival"], {}, cost, budget=alone + 5)
    assert list(kept.selection) == ["performer"]


def test_a_table_too_wide_for_the_budget_keeps_its_keys_and_named_columns(tmp_path):
    columns = ", ".join(f"measure_{i} REAL" for i in range(300))
    schema = introspect(sqlite3.connect(make_db(
        tmp_path / "x.sqlite", f"CREATE TABLE readings (reading_id INTEGER PRIMARY KEY, "
                               f"station TEXT, {columns});")), "x")
    cost = form_cost([lambda s: s.render_ddl()])
    kept = fit(schema, ["readings"], {"readings": ["station"]}, cost, budget=200)
    assert kept.selection == {"readings": ["station"]}
    assert schema.subset(kept.selection).table("readings").column_names() == [
        "reading_id", "station"]
    with pytest.raises(NothingFits, match="smallest candidate needs about"):
        fit(schema, ["readings"], {}, cost, budget=200)


# -- every pipeline on a 1,000-table schema -------------------------------------------------------

@pytest.mark.parametrize("pipeline", list_pipelines(), ids=lambda p: p.name)
def test_no_pipeline_sends_a_prompt_over_the_context(pipeline, wide):
    with ScriptedLLM(context_size=CONTEXT) as server:
        server.when(lambda req: True, answer)
        llm = client(server, n_ctx=CONTEXT)
        run = run_to_end(start_run(pipeline, QUESTION, wide, llm))
        assert run.status == "done", run.error
        retrieval = run.events[0]
        assert retrieval.step == "retrieve" and retrieval.kind == "schema_retrieval"
        kept = {row["table"] for row in retrieval.output.kept}
        assert {"singer", "concert", "singer_in_concert"} <= kept
        assert retrieval.output.dropped >= 990 and retrieval.output.tokens <= \
            retrieval.output.budget
        assert len(run.events) > 1 and server.requests
        assert max(server.prompt_tokens) + 1024 <= CONTEXT, "a prompt left no room to answer"
        assert run.final_sql and run.result["ok"]


def test_stored_values_are_found_among_a_thousand_empty_tables_in_the_tables_kept(wide):
    """999 empty tables hold no value and take no place in the value index's column cap, so
    'France' in singer.country reaches the ranking; the selection pipeline's value grounding
    then searches the tables retrieval kept, the ones its writers see, and only those."""
    from agents.pipelines.selection import PIPELINE

    with ScriptedLLM(context_size=CONTEXT) as server:
        server.when(lambda req: True, answer)
        run = run_to_end(start_run(PIPELINE, QUESTION, wide, client(server, n_ctx=CONTEXT)))
        assert run.status == "done", run.error
        retrieval, ground = run.events[:2]
        assert "singer.country = 'France'" in retrieval.output.values
        kept = {row["table"] for row in retrieval.output.kept}
        assert ground.step == "ground" and set(ground.inputs["tables"]) == kept
        matches = ground.parsed["matches"]
        assert {m["table"] for m in matches} <= kept
        assert ("singer", "country", "France") in {(m["table"], m["column"], m["value"])
                                                   for m in matches}
        assert ground.parsed["columns_searched"] < 40 and not ground.parsed["skipped"]
        assert ground.parsed["tables_kept"] == len(kept)
        assert f"text column(s) of the {len(kept)} table(s) kept" in ground.output.where()
        writers = [last_user_message(r) for r in server.requests]
        assert writers and all("singer.country = 'France'" in w for w in writers)


def test_the_whole_schema_would_not_have_fitted(wide):
    with ScriptedLLM(context_size=CONTEXT) as server:
        server.when(lambda req: True, answer)
        llm = client(server, n_ctx=CONTEXT)
        from agents.pipelines.baseline import PIPELINE

        class Unretrieved(type(PIPELINE)):
            def first_step(self, ctx):
                return self.start_step(ctx)

        run = run_to_end(start_run(Unretrieved(), QUESTION, wide, llm))
        assert run.status == "failed" and "does not fit the model's context" in run.error
        assert not server.requests, "the over-long prompt was sent"


def test_a_clear_message_when_no_table_fits(tmp_path):
    columns = ", ".join(f"singer_measure_{i} REAL" for i in range(1500))
    db = open_database(make_db(tmp_path / "huge.sqlite",
                               f"CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, {columns});"))
    try:
        with ScriptedLLM(context_size=CONTEXT) as server:
            from agents.pipelines.baseline import PIPELINE

            run = run_to_end(start_run(PIPELINE, "How old are the performers?", db,
                                       client(server, n_ctx=CONTEXT)))
            assert run.status == "failed"
            assert "too large for the model's context" in run.error
            assert "STUDIO_REMOTE_CONTEXT" in run.error and "Traceback" not in run.error
            assert not server.requests
            run = run_to_end(start_run(PIPELINE, "How old are the performers?", db,
                                       client(server, n_ctx=1200)))
            assert "leave no room for any schema" in run.error
    finally:
        db.close()


# -- a schema that fits ---------------------------------------------------------------------------

def sent_prompts(pipeline, db, retrieving: bool) -> list[list[dict]]:
    original = Retrieving.first_step
    if not retrieving:  # the pipeline as it was before retrieval existed
        Retrieving.first_step = lambda self, ctx: self.start_step(ctx)
    try:
        with ScriptedLLM(context_size=CONTEXT) as server:
            server.when(lambda req: True, answer)
            run = run_to_end(start_run(pipeline, QUESTION, db, client(server, n_ctx=CONTEXT)))
            assert all(e.step != "retrieve" for e in run.events)
            return [req["messages"] for req in server.requests]
    finally:
        Retrieving.first_step = original


@pytest.mark.parametrize("pipeline", list_pipelines(), ids=lambda p: p.name)
def test_prompts_are_byte_identical_when_the_schema_fits(pipeline, sample_dbs):
    db = open_database(sample_dbs / "shop.sqlite")
    try:
        with_retrieval = sent_prompts(pipeline, db, retrieving=True)
        assert with_retrieval == sent_prompts(pipeline, db, retrieving=False)
        assert with_retrieval
    finally:
        db.close()


def test_a_remote_endpoint_is_budgeted_by_remote_context_not_the_embedded_n_ctx():
    from types import SimpleNamespace

    from agents.llm.token_budget import context_setting, context_size

    remote = SimpleNamespace(settings=Settings(provider="openai", n_ctx=2048))
    local = SimpleNamespace(settings=Settings(provider="local", n_ctx=2048))
    assert context_size(remote) == 128_000 and "STUDIO_REMOTE_CONTEXT" in context_setting(remote)
    assert context_size(local) == 2048 and "STUDIO_N_CTX" in context_setting(local)
