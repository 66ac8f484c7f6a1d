"""CSMA's global writer: it writes afresh from the global schema when the rounds end on SQL that
fails (global_writer), checks an unchecked ending (global_check), and a result without data
weighs less (global_data_first)."""

from __future__ import annotations

import json

import pytest

from agents.core.engine import ExecLimits, resume_run, run_to_end, start_run
from agents.pipelines.csma import PIPELINE
from csma_script import (AGREEMENT_PARTITION, ALL_HULLS, FAILING_SQL, GOOD_SQL, QUESTION,
                         run_agreement, sql_block, steps_of, tables_answer)


# -- the global writer: the rounds ended on SQL that fails (global_writer) ---------------------

def test_the_global_writer_writes_afresh_from_the_global_schema_when_the_rounds_end_failing(
        fleet, llm, scripted_llm):
    # agent 1 owns harbors and vessels; it publishes vessels only, then writes failing SQL
    scripted_llm.push(tables_answer("vessels"), sql_block(FAILING_SQL),
                      sql_block("SELECT hull_name FROM vessels WHERE tonnage > 1000"))
    run = run_agreement(fleet, llm, max_rounds=1, name_rewrite=False, global_writer=True)
    assert run.status == "done", run.error
    assert steps_of(run) == ["partition", "extract:1", "generate:1", "global_writer"]
    assert any("a writer starts afresh from the global schema" in n for n in run.events[2].notes)
    step = run.events[-1]
    assert step.kind == "global_writer_sql" and step.parsed["taken"] is True
    assert step.parsed["tables"] == ["vessels"] and step.parsed["agents_sql"] == FAILING_SQL
    assert "no such column: cargo" in step.parsed["agents_error"]
    assert run.final_sql == "SELECT hull_name FROM vessels WHERE tonnage > 1000"
    assert step.data["stop_reason"].endswith("the global writer's SQL runs and is the answer")
    # the single prompt, over the shared tables only: never a table no agent published
    prompt = scripted_llm.requests[-1]["messages"][0]["content"]
    assert "CREATE TABLE vessels" in prompt and QUESTION in prompt
    assert "harbors" not in prompt and "voyages" not in prompt and "crew_members" not in prompt
    assert FAILING_SQL not in prompt  # nothing of the failing SQL to copy
    assert scripted_llm.remaining == 0


def test_the_global_writers_failing_sql_is_repaired_once_with_a_hint_from_the_global_schema(
        fleet, llm, scripted_llm):
    # cargo_kind is a column of voyages, which no agent shared: the whole schema's hint would
    # name it, the global schema's names vessels' own columns only
    scripted_llm.push(tables_answer("vessels"), sql_block(FAILING_SQL),
                      sql_block("SELECT cargo_kind FROM vessels"),
                      sql_block("SELECT tonnage FROM vessels"))
    run = run_agreement(fleet, llm, max_rounds=1, name_rewrite=False, global_writer=True)
    step = run.events[-1]
    assert step.step == "global_writer" and step.parsed["taken"] is True
    assert step.parsed["first_sql"] == "SELECT cargo_kind FROM vessels"
    assert "no such column: cargo_kind" in step.parsed["first_error"]
    assert run.final_sql == "SELECT tonnage FROM vessels"
    repair = scripted_llm.requests[-1]["messages"]
    assert [m["role"] for m in repair] == ["user", "assistant", "user"]
    told = repair[2]["content"]
    assert "SELECT cargo_kind FROM vessels" in told and "no such column: cargo_kind" in told
    assert "Hint:" in told and "tonnage" in told
    assert "voyages" not in told and "crew_members" not in told and "harbors" not in told
    assert scripted_llm.remaining == 0
    # with hints off (the evaluation's --no-error-hints) the writer is told the error alone
    scripted_llm.push(tables_answer("vessels"), sql_block(FAILING_SQL),
                      sql_block("SELECT cargo_kind FROM vessels"),
                      sql_block("SELECT tonnage FROM vessels"))
    run_to_end(start_run(PIPELINE, QUESTION, fleet, llm, limits=ExecLimits(hints=False), params={
        "partition": AGREEMENT_PARTITION, "max_rounds": 1, "name_rewrite": False}))
    told = scripted_llm.requests[-1]["messages"][2]["content"]
    assert "no such column: cargo_kind" in told and "Hint:" not in told


def test_the_global_writers_sql_gets_the_name_rewrite_within_the_global_schema(
        fleet, llm, scripted_llm):
    # the defaults: name_rewrite on; one clear change within vessels makes the writer's SQL run
    scripted_llm.push(tables_answer("vessels"), sql_block(FAILING_SQL),
                      sql_block("SELECT hullname FROM vessels WHERE tonnage > 1000"))
    run = run_agreement(fleet, llm, max_rounds=1, global_writer=None)
    step = run.events[-1]
    assert step.step == "global_writer" and step.parsed["taken"] is True
    assert step.parsed["written_sql"] == "SELECT hullname FROM vessels WHERE tonnage > 1000"
    assert "hullname written hull_name" in step.parsed["rewrite"]
    assert run.final_sql == "SELECT hull_name FROM vessels WHERE tonnage > 1000"
    assert scripted_llm.remaining == 0


def test_a_global_writer_answer_without_sql_keeps_the_agents_sql_and_the_run_done(
        fleet, llm, scripted_llm):
    scripted_llm.push(tables_answer("vessels"), sql_block(FAILING_SQL),
                      "I cannot tell.", "Still no query.")
    run = run_agreement(fleet, llm, max_rounds=1, name_rewrite=False, global_writer=True)
    assert run.status == "done", run.error
    step = run.events[-1]
    assert step.step == "global_writer" and step.status == "ok"
    assert step.parsed["taken"] is False and step.parsed["sql"] == ""
    assert run.final_sql == FAILING_SQL
    assert any(n.startswith("the global writer wrote no SQL") for n in step.notes)
    assert "it wrote no SQL" in "\n".join(step.output.text_lines())
    assert scripted_llm.remaining == 0


def test_resumed_at_the_global_writer_with_the_option_off_it_does_nothing(
        fleet, llm, scripted_llm):
    scripted_llm.push(tables_answer("vessels"), sql_block(FAILING_SQL),
                      sql_block("SELECT hull_name FROM vessels"))
    run = run_agreement(fleet, llm, max_rounds=1, name_rewrite=False, global_writer=True)
    index = steps_of(run).index("global_writer")
    again = run_to_end(resume_run(PIPELINE, run, index, fleet, llm,
                                  params={**run.params, "global_writer": False}))
    assert again.events[-1].step == "global_writer" and again.events[-1].status == "skipped"
    assert again.final_sql == FAILING_SQL
    assert scripted_llm.remaining == 0


def test_when_the_global_writer_fails_too_the_agents_sql_stays(fleet, llm, scripted_llm):
    scripted_llm.push(tables_answer("vessels"), sql_block(FAILING_SQL),
                      sql_block("SELECT tons FROM vessels"), sql_block("SELECT weight FROM vessels"))
    run = run_agreement(fleet, llm, max_rounds=1, name_rewrite=False, global_writer=True)
    assert run.status == "done", run.error
    step = run.events[-1]
    assert step.step == "global_writer" and step.parsed["taken"] is False
    assert step.parsed["sql"] == "SELECT weight FROM vessels"
    assert run.final_sql == FAILING_SQL and step.sql == FAILING_SQL
    assert any("the agents' SQL stays" in n for n in step.notes)
    told = "\n".join(step.output.text_lines())
    assert "it fails too:" in told and told.endswith(
        "the run keeps the agents' SQL:\n    SELECT cargo\n    FROM vessels\n"
        "    WHERE hull_name = 'Aurora'")
    assert scripted_llm.remaining == 0


def test_the_global_writer_is_not_asked_when_the_last_sql_runs_or_the_option_is_off(
        fleet, llm, scripted_llm):
    scripted_llm.push(tables_answer("vessels", "voyages"), sql_block(GOOD_SQL))
    runs = run_agreement(fleet, llm, max_rounds=1, global_writer=True)
    assert steps_of(runs) == ["partition", "extract:1", "generate:1"]
    scripted_llm.push(tables_answer("vessels"), sql_block(FAILING_SQL))
    off = run_agreement(fleet, llm, max_rounds=1, name_rewrite=False, global_writer=False)
    assert steps_of(off)[-1] == "generate:1" and off.final_sql == FAILING_SQL
    assert scripted_llm.remaining == 0


def test_retrieval_sizes_the_global_writers_schema_form_when_either_option_is_on():
    forms = PIPELINE.retrieval.forms
    assert len(forms({"global_writer": False, "global_check": False})) == 1
    for on in ({"global_writer": True}, {"global_check": True}):
        assert len(forms({"global_writer": False, "global_check": False, **on})) == 2


def test_the_global_writer_is_on_by_default_and_recorded_runs_keep_it_off():
    for name in ("global_writer", "global_check"):
        assert PIPELINE.resolve_params({})[name] is True
        assert PIPELINE.resolve_recorded({"check_method": "agreement"})[name] is False


# -- the global writer's check of an unchecked ending (global_check) ---------------------------

HEAVY_HULLS = "SELECT hull_name FROM vessels WHERE tonnage > 1000"


def push_unchecked_ending(scripted_llm, writer_sql: str, last_sql: str = HEAVY_HULLS) -> None:
    """Agent 1 writes ALL_HULLS; agent 2's own SQL (``last_sql``) returns another result and is
    the new SQL; the run stops at max_rounds=2 with it unchecked; then the global writer."""
    scripted_llm.push(tables_answer("vessels"), sql_block(ALL_HULLS),
                      tables_answer("vessels", "voyages"), sql_block(last_sql),
                      sql_block(writer_sql))


def test_an_unchecked_ending_takes_the_agents_sql_whose_result_the_global_writer_shares(
        fleet, llm, scripted_llm):
    push_unchecked_ending(scripted_llm, "SELECT v.hull_name FROM vessels AS v ORDER BY v.vessel_id")
    run = run_agreement(fleet, llm, max_rounds=2, global_check=True)
    assert run.status == "done", run.error
    assert steps_of(run)[-2:] == ["generate:2", "global_writer"]
    assert run.events[-2].notes[-1] == ("its SQL runs but no check agreed with it: a writer "
                                        "checks it from the global schema (global_check)")
    step = run.events[-1]
    assert step.parsed["mode"] == "check" and step.parsed["agreed_sql"] == ALL_HULLS
    assert step.parsed["agrees_with_last"] is False and step.parsed["agents_sql"] == HEAVY_HULLS
    assert run.final_sql == ALL_HULLS
    assert "an earlier SQL of the agents, which is the answer" in step.data["stop_reason"]
    assert "the same result as an earlier SQL of the agents" in "\n".join(
        step.output.text_lines())
    assert scripted_llm.remaining == 0


def test_an_unchecked_ending_the_global_writer_agrees_with_or_matches_nothing_stays(
        fleet, llm, scripted_llm):
    push_unchecked_ending(scripted_llm, "SELECT hull_name FROM vessels WHERE tonnage >= 1200")
    same = run_agreement(fleet, llm, max_rounds=2, global_check=True)
    assert same.final_sql == HEAVY_HULLS and same.events[-1].parsed["agrees_with_last"] is True
    push_unchecked_ending(scripted_llm, "SELECT harbor_title FROM harbors")
    other = run_agreement(fleet, llm, max_rounds=2, global_check=True)
    assert other.final_sql == HEAVY_HULLS and other.events[-1].parsed.get("agreed_sql") is None
    assert any(n.startswith("the global writer's result is that of no SQL the agents wrote")
               for n in other.events[-1].notes)
    # off, the run ends where the rounds did, with no writer
    scripted_llm.push(tables_answer("vessels"), sql_block(ALL_HULLS),
                      tables_answer("vessels", "voyages"), sql_block(HEAVY_HULLS))
    plain = run_agreement(fleet, llm, max_rounds=2, global_check=False)
    assert steps_of(plain)[-1] == "generate:2" and plain.final_sql == HEAVY_HULLS
    assert scripted_llm.remaining == 0


# -- a result without data weighs less (global_data_first) ------------------------------------

NO_HULLS = "SELECT hull_name FROM vessels WHERE tonnage > 5000"
NO_TONNAGE = "SELECT MAX(tonnage) FROM vessels WHERE tonnage > 5000"  # one row, NULL


@pytest.mark.parametrize("last_sql", [NO_HULLS, NO_TONNAGE])
def test_an_unchecked_ending_without_data_takes_the_global_writers_sql_that_finds_some(
        fleet, llm, scripted_llm, last_sql):
    push_unchecked_ending(scripted_llm, HEAVY_HULLS, last_sql=last_sql)
    run = run_agreement(fleet, llm, max_rounds=2, global_check=True)
    assert run.status == "done", run.error
    step = run.events[-1]
    assert step.step == "global_writer" and step.parsed["agents_sql"] == last_sql
    assert step.parsed.get("agreed_sql") is None and step.parsed["taken"] is True
    assert run.final_sql == HEAVY_HULLS and step.execution["ok"]
    assert "the agents' last SQL finds no data and the global writer's does" in \
        step.data["stop_reason"]
    assert "the last one finds no data while it does: it is the answer" in "\n".join(
        step.output.text_lines())
    assert scripted_llm.remaining == 0


def test_without_data_on_both_sides_or_with_the_option_off_the_last_sql_stays(
        fleet, llm, scripted_llm):
    push_unchecked_ending(scripted_llm, "SELECT hull_name FROM vessels WHERE tonnage < 0",
                          last_sql=NO_HULLS)
    both = run_agreement(fleet, llm, max_rounds=2, global_check=True)
    assert both.final_sql == NO_HULLS and both.events[-1].parsed["taken"] is False
    push_unchecked_ending(scripted_llm, HEAVY_HULLS, last_sql=NO_HULLS)
    off = run_agreement(fleet, llm, max_rounds=2, global_check=True, global_data_first=False)
    assert off.final_sql == NO_HULLS and off.events[-1].parsed["taken"] is False
    assert any(n.startswith("the global writer's result is that of no SQL the agents wrote")
               for n in off.events[-1].notes)
    # the last SQL finds data: a writer that agrees with nothing does not replace it
    push_unchecked_ending(scripted_llm, "SELECT harbor_title FROM harbors")
    data = run_agreement(fleet, llm, max_rounds=2, global_check=True)
    assert data.final_sql == HEAVY_HULLS and data.events[-1].parsed["taken"] is False
    assert scripted_llm.remaining == 0


def test_an_earlier_sql_with_the_writers_result_wins_over_the_writer_and_nulls_are_no_data(
        fleet, llm, scripted_llm):
    # agent 1's first SQL returns the writer's result: that agreement decides, not the data
    push_unchecked_ending(scripted_llm, "SELECT v.hull_name FROM vessels AS v",
                          last_sql=NO_HULLS)
    agreed = run_agreement(fleet, llm, max_rounds=2, global_check=True)
    step = agreed.events[-1]
    assert step.parsed["agreed_sql"] == ALL_HULLS and step.parsed["taken"] is False
    assert agreed.final_sql == ALL_HULLS
    # a writer whose one row is NULL finds no more data than a last SQL without rows
    push_unchecked_ending(scripted_llm, NO_TONNAGE, last_sql=NO_HULLS)
    nulls = run_agreement(fleet, llm, max_rounds=2, global_check=True)
    assert nulls.final_sql == NO_HULLS and nulls.events[-1].parsed["taken"] is False
    assert scripted_llm.remaining == 0


def test_the_bench_replay_of_global_data_first_takes_the_writers_sql_a_recorded_run_kept(
        fleet, llm, scripted_llm, tmp_path, monkeypatch):
    """``bench/csma_data_first.py``: a run recorded with the option off, whose last SQL finds
    nothing while the writer's finds data, is replayed to the writer's SQL and scored."""
    import shutil

    from bench_scripts import bench_script

    replay = bench_script(monkeypatch, "csma_data_first")
    data = tmp_path / "spider"
    (data / "database" / "fleet").mkdir(parents=True)
    shutil.copy(fleet.path, data / "database" / "fleet" / "fleet.sqlite")
    push_unchecked_ending(scripted_llm, HEAVY_HULLS, last_sql=NO_HULLS)
    done = run_agreement(fleet, llm, max_rounds=2, global_check=True, global_data_first=False)
    assert done.final_sql == NO_HULLS
    folder = tmp_path / "recorded"
    folder.mkdir()
    record = {"question_id": 1, "db_id": "fleet", "pipeline": "csma", "question": QUESTION,
              "gold_sql": HEAVY_HULLS, "pred_sql": done.final_sql, "correct": False,
              "run": done.to_dict()}
    (folder / "results.jsonl").write_text(json.dumps(record) + "\n")
    report = replay.measure(str(folder), [], data, None)
    assert (report["ex_before"], report["ex_after"], report["fixed"]) == (0, 1, [1])
    assert report["acts"] == report["checks_without_agreement"] == 1
    row = report["rows"][0]
    assert row["writer_data"] is True and row["agents_data"] is False
    assert row["sql_after"] == HEAVY_HULLS and row["agents_sql"] == NO_HULLS
    # a folder recorded without the check, the check's measurement laid over it: the step is
    # read from that measurement's row
    scripted_llm.push(tables_answer("vessels"), sql_block(ALL_HULLS),
                      tables_answer("vessels", "voyages"), sql_block(NO_HULLS))
    plain = run_agreement(fleet, llm, max_rounds=2, global_check=False)
    assert plain.final_sql == NO_HULLS and steps_of(plain)[-1] == "generate:2"
    (folder / "results.jsonl").write_text(json.dumps({**record, "run": plain.to_dict()}) + "\n")
    assert replay.measure(str(folder), [], data, None)["checks_without_agreement"] == 0
    later = tmp_path / "check.json"
    later.write_text(json.dumps({"rows": [{
        "question_id": 1, "resumed": True, "before": False, "after": False, "status": "done",
        "sql_after": done.final_sql, "events": [e.to_dict() for e in done.events]}]}))
    laid = replay.measure(str(folder), [str(later)], data, None)
    assert (laid["ex_before"], laid["ex_after"], laid["acts"]) == (0, 1, 1)


def test_global_data_first_is_on_by_default_and_recorded_runs_keep_it_off():
    assert PIPELINE.resolve_params({})["global_data_first"] is True
    assert PIPELINE.resolve_recorded({"check_method": "agreement"})["global_data_first"] is False
