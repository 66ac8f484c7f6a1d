"""Loading Spider/BIRD-format evaluation folders and drawing the seeded sample."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
import os
from pathlib import Path

import pytest

from agents.evaluation.dataset import DatasetError, load_dataset, sample_questions

# The Spider dev set lives in the shared folder beside the checkout (never in the repository).
SPIDER = Path(os.environ.get("SPIDER_DIR")
              or Path(__file__).resolve().parents[2] / "shared" / "data" / "spider")
needs_spider = pytest.mark.skipif(not (SPIDER / "dev.json").is_file(),
                                  reason="the Spider dev set is not on this machine")


def make_folder(root: Path, items: list[dict], dbs: list[str], db_dir: str = "database",
                name: str = "dev.json") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(json.dumps(items))
    for db in dbs:
        (root / db_dir / db).mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(root / db_dir / db / f"{db}.sqlite")
        conn.execute("CREATE TABLE t (x INTEGER)")
        conn.commit()
        conn.close()
    return root


@needs_spider
def test_spider_dev_counts_the_questions_without_a_database():
    ds = load_dataset(SPIDER)
    assert ds.total == 1034
    assert len(ds.questions) == 972
    assert ds.missing_by_db() == {"wta_1": 62}
    assert ds.hardness_counts() == {"easy": 232, "medium": 416, "hard": 160, "extra": 164}
    assert all(Path(q.db_path).is_file() for q in ds.questions)
    assert [q.qid for q in ds.questions] == sorted(q.qid for q in ds.questions)


@needs_spider
def test_stratified_sample_keeps_the_hardness_mix_and_is_deterministic():
    ds = load_dataset(SPIDER)
    first = sample_questions(ds.questions, 100, "stratified", seed=3)
    again = sample_questions(ds.questions, 100, "stratified", seed=3)
    other = sample_questions(ds.questions, 100, "stratified", seed=4)
    assert [q.qid for q in first] == [q.qid for q in again]
    assert [q.qid for q in first] != [q.qid for q in other]
    assert len(first) == 100 and len({q.qid for q in first}) == 100
    counts = Counter(q.hardness for q in first)
    full = ds.hardness_counts()
    for level, n in full.items():
        assert abs(counts[level] - 100 * n / 972) < 1  # largest-remainder quota
    assert [q.qid for q in first] == sorted(q.qid for q in first)  # dataset order


def test_a_larger_limit_extends_the_sample(tmp_path):
    items = [{"db_id": "d", "question": f"q{i}", "query": "SELECT 1",
              "hardness": ["easy", "medium", "hard"][i % 3]} for i in range(60)]
    ds = load_dataset(make_folder(tmp_path, items, ["d"]))
    for mode in ("stratified", "random", "first"):
        small = {q.qid for q in sample_questions(ds.questions, 9, mode, seed=1)}
        large = {q.qid for q in sample_questions(ds.questions, 30, mode, seed=1)}
        assert len(small) == 9 and len(large) == 30
        assert small <= large, mode


def test_sample_modes_and_limits(tmp_path):
    items = [{"db_id": "d", "question": f"q{i}", "query": "SELECT 1"} for i in range(10)]
    ds = load_dataset(make_folder(tmp_path, items, ["d"]))
    assert [q.qid for q in sample_questions(ds.questions, 3, "first")] == [0, 1, 2]
    assert len(sample_questions(ds.questions, None)) == 10
    assert len(sample_questions(ds.questions, 50)) == 10
    assert sample_questions(ds.questions, 0) == []
    with pytest.raises(DatasetError, match="sample mode"):
        sample_questions(ds.questions, 3, "best")


def test_bird_layout_with_evidence_and_difficulty(tmp_path):
    items = [{"question_id": 7, "db_id": "shop", "question": "How many?",
              "evidence": "sold means status = 1", "SQL": "SELECT count(*) FROM t",
              "difficulty": "simple"},
             {"question_id": 9, "db_id": "gone", "question": "Who?", "SQL": "SELECT 1",
              "difficulty": "challenging"}]
    ds = load_dataset(make_folder(tmp_path, items, ["shop"], db_dir="dev_databases"))
    (q,) = ds.questions
    assert (q.qid, q.evidence, q.hardness, q.gold_sql) == (
        7, "sold means status = 1", "simple", "SELECT count(*) FROM t")
    assert ds.missing_by_db() == {"gone": 1}


def test_a_questions_file_can_be_given_directly(tmp_path):
    folder = make_folder(tmp_path, [{"db_id": "d", "question": "q", "query": "SELECT 1"}],
                         ["d"], name="mini.json")
    assert len(load_dataset(folder / "mini.json").questions) == 1


@pytest.mark.parametrize("content, message", [
    (None, "dataset folder not found"),
    ("", "no dev.json"),
    ("{not json", "not valid JSON"),
    ('{"a": 1}', "JSON list"),
    ('[{"db_id": "d", "question": "q"}]', "entry 0: missing or empty 'query'"),
    ('[{"db_id": "d", "question": "", "query": "SELECT 1"}]', "missing or empty 'question'"),
])
def test_bad_folders_get_clear_errors(tmp_path, content, message):
    folder = tmp_path / "data"
    if content is not None:
        folder.mkdir()
        if content:
            (folder / "dev.json").write_text(content)
    with pytest.raises(DatasetError, match=message):
        load_dataset(folder)
