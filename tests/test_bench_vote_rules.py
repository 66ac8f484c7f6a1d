"""``bench/vote_rules.py``: a recorded `selection` run's vote held again without the model, with
one of the vote's rules turned the other way, and the new answer scored."""

from __future__ import annotations

import json
import shutil

from agents.core.engine import run_to_end, start_run
from agents.pipelines.selection import PIPELINE
from bench_scripts import bench_script
from selection_script import FRANCE, decomposition, script, sql_block

HOW_MANY = "How many singers are from France?"
COUNT = "SELECT count(*) FROM singer WHERE country = 'France'"


def _recorded(db, llm, scripted_llm, tmp_path, **params):
    """A folder holding one run of ``HOW_MANY`` whose writer and sample list the names (two
    rows, the vote's majority) while the Decomposer counts them (one row, the right answer)."""
    script(scripted_llm, writer=sql_block(FRANCE), sample=sql_block(FRANCE),
           decomposer=decomposition(COUNT))
    done = run_to_end(start_run(PIPELINE, HOW_MANY, db, llm, params={
        "generators": "writer,decomposer", "samples": 1, "value_grounding": False,
        "stop_when_decided": False, **params}))
    data = tmp_path / "spider"
    (data / "database" / "music").mkdir(parents=True)
    shutil.copy(db.path, data / "database" / "music" / "music.sqlite")
    folder = tmp_path / "recorded"
    folder.mkdir()
    record = {"question_id": 1, "db_id": "music", "pipeline": "selection",
              "question": HOW_MANY, "gold_sql": COUNT, "pred_sql": done.final_sql,
              "correct": done.final_sql == COUNT, "run": done.to_dict()}
    (folder / "results.jsonl").write_text(json.dumps(record) + "\n")
    return done, folder, data


def test_turning_shape_first_on_replays_the_vote_to_the_one_value(
        db, llm, scripted_llm, tmp_path, monkeypatch):
    replay = bench_script(monkeypatch, "vote_rules")
    done, folder, data = _recorded(db, llm, scripted_llm, tmp_path, shape_first=False)
    assert done.final_sql.strip() == FRANCE          # the names won the vote, 2 of 3
    report = replay.measure(str(folder), None, data, None, "shape_first")
    assert report["rule"] == "shape_first" and report["mismatched"] == []
    assert (report["ex_before"], report["ex_after"], report["settled"]) == (0, 1, 1)
    assert report["rows"][0]["sql_after"].strip() == COUNT


def test_turning_shape_first_off_replays_the_vote_to_the_majority(
        db, llm, scripted_llm, tmp_path, monkeypatch):
    replay = bench_script(monkeypatch, "vote_rules")
    done, folder, data = _recorded(db, llm, scripted_llm, tmp_path, shape_first=True)
    assert done.final_sql.strip() == COUNT           # the one value set the names aside
    report = replay.measure(str(folder), None, data, None, "shape_first")
    assert (report["ex_before"], report["ex_after"], report["settled"]) == (1, 0, 1)
    # a rule that changes nothing on the run leaves its verdict alone
    assert replay.measure(str(folder), None, data, None, "empty_not_decisive")["settled"] == 0
