"""``bench/first_drafts.py``: a pipeline's first SQL and its final answer, each against
``baseline``'s, scored with the evaluation's own scoring on the question's database."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench_scripts import bench_script
from dbfactory import SINGERS_SQL, make_db

GOLD = "SELECT name FROM singer WHERE country = 'France'"
RIGHT = "SELECT name FROM singer WHERE country = 'France'"
WRONG = "SELECT name FROM singer"
BROKEN = "SELECT T1.nosuch FROM singer AS T1"


@pytest.fixture
def first_drafts(monkeypatch):
    return bench_script(monkeypatch, "first_drafts")


@pytest.fixture
def data(tmp_path):
    where = tmp_path / "spider" / "database" / "music"
    where.mkdir(parents=True)
    make_db(where / "music.sqlite", SINGERS_SQL)
    return tmp_path / "spider"


def record(pipeline: str, qid: int, correct: bool, first: str | None, final: str | None) -> dict:
    events = [{"step": "select", "sql": None}, {"step": "draft", "sql": first},
              {"step": "repair", "sql": final}] if pipeline != "baseline" else \
        [{"step": "write", "sql": final}]
    return {"question_id": qid, "db_id": "music", "pipeline": pipeline, "gold_sql": GOLD,
            "pred_sql": final, "correct": correct, "run": {"events": events}}


def folder(path: Path, records: list[dict]) -> str:
    path.mkdir(parents=True)
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def test_first_sql_and_final_answer_are_each_compared_with_baseline(first_drafts, data, tmp_path,
                                                                    capsys):
    base = folder(tmp_path / "base", [record("baseline", 1, True, None, RIGHT),
                                      record("baseline", 2, False, None, WRONG),
                                      record("baseline", 3, True, None, RIGHT)])
    # q1: right draft broken later; q2: broken draft repaired; q3: wrong throughout;
    # q4: baseline never answered it, so it is not compared
    runs = folder(tmp_path / "runs", [record("macsql", 1, False, RIGHT, WRONG),
                                      record("macsql", 2, True, BROKEN, RIGHT),
                                      record("macsql", 3, False, WRONG, WRONG),
                                      record("macsql", 4, True, RIGHT, RIGHT)])
    out = tmp_path / "drafts.json"
    assert first_drafts.main(["--data", str(data), "--baseline", base, runs,
                              "--out", str(out)]) == 0
    row = json.loads(out.read_text())["rows"][0]
    assert row["questions"] == 3 and row["first_sql_steps"] == {"draft": 3}
    assert (row["baseline_correct"], row["first_sql_correct"], row["final_correct"]) == (2, 1, 1)
    assert row["first_sql_does_not_run"] == 1
    assert (row["fixed_by_later_steps"], row["broken_by_later_steps"]) == (1, 1)
    assert row["first_sql_vs_baseline"] == {"right_where_baseline_wrong": 0,
                                            "wrong_where_baseline_right": 1}
    assert row["final_vs_baseline"] == {"right_where_baseline_wrong": 1,
                                        "wrong_where_baseline_right": 2}
    assert "| runs | macsql | 3 | 2 | 1 (1) | +0 / -1 | 1 / 1 | 1 | +1 / -2 |" in \
        capsys.readouterr().out


def test_a_question_whose_gold_fails_or_whose_run_wrote_no_sql(first_drafts, data, tmp_path):
    broken_gold = {**record("baseline", 2, False, None, RIGHT), "gold_sql": "SELECT nosuch FROM x"}
    base = folder(tmp_path / "base", [record("baseline", 1, True, None, RIGHT), broken_gold])
    runs = folder(tmp_path / "runs", [record("csma", 1, False, None, None),
                                      {**record("csma", 2, True, RIGHT, RIGHT),
                                       "gold_sql": "SELECT nosuch FROM x"}])
    runs_rows = first_drafts.measure(first_drafts.read_answers(runs, None)[1],
                                     first_drafts.read_answers(base, "baseline")[1], data,
                                     first_drafts.DatabasePool(), first_drafts.EvalOptions())
    assert runs_rows["questions"] == 1 and runs_rows["gold_failed"] == 1
    assert runs_rows["first_sql_steps"] == {"(none)": 1}
    assert runs_rows["first_sql_does_not_run"] == 1 and runs_rows["final_correct"] == 0


def test_a_folder_of_several_pipelines_must_name_one(first_drafts, data, tmp_path):
    base = folder(tmp_path / "base", [record("baseline", 1, True, None, RIGHT),
                                      record("r3", 1, True, RIGHT, RIGHT)])
    with pytest.raises(SystemExit, match="name one"):
        first_drafts.main(["--data", str(data), "--baseline", base, base])
    assert first_drafts.main(["--data", str(data), "--baseline", base, base + ":r3"]) == 0
