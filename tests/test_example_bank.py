"""Example bank: question skeletons, SQL question types, template retrieval, loading, speed."""

from __future__ import annotations

import json

import pytest

from agents.example_bank import (EASY, JOIN, JOIN_NESTED, NESTED, ExampleBank, ExampleBankError,
                                 classify_sql, question_skeleton, schema_terms,
                                 spider_schema_terms)
from agents.db.schema import Column, Schema, Table
from bench_scripts import bench_script


def _schema() -> Schema:
    singer = Table(name="singer", columns=[
        Column(name="singer_id", type="INTEGER", primary_key=True, not_null=False, examples=[]),
        Column(name="name", type="TEXT", primary_key=False, not_null=False, examples=["Ann"]),
        Column(name="home_country", type="TEXT", primary_key=False, not_null=False,
               examples=["Norway", "New Zealand"])], row_count=3, primary_key=["singer_id"])
    return Schema(db_name="music", tables=[singer], foreign_keys=[])


# -- skeletons -------------------------------------------------------------------------------

def test_skeleton_masks_values_numbers_and_names():
    assert question_skeleton("How many heads of the departments are older than 56?") == \
        "how many head of the department are older than <m>"
    assert question_skeleton("Which singers sang 'Hey Jude' in 2014 or 2015?") == \
        "which singer sang <m> in <m> or <m>"
    assert question_skeleton('Find the films directed by "Nolan".') == \
        "find the film directed by <m>"
    # capitalised words after the first are names; consecutive masks collapse into one
    assert question_skeleton("List the students taught by OTHA MOYER.") == \
        "list the student taught by <m>"
    assert question_skeleton("What is the population of New York City?") == \
        "what is the population of <m>"


def test_skeleton_masks_schema_mentions_and_entities():
    terms = schema_terms(_schema())
    assert question_skeleton("How many singers live in each home country?", terms) == \
        "how many <m> live in each <m>"
    # a column value from the schema's examples is masked even in lower case
    assert question_skeleton("how many singers are from norway", terms) == \
        "how many <m> are from <m>"
    # words that carry the question's logic stay, even when a column has that name
    assert "name" in question_skeleton("What is the name of the singer?", terms)
    # entities from elements identification are masked; long descriptive ones are not
    assert question_skeleton("Show the budget of the opera house", (), ["opera house"]) == \
        "show the budget of the <m>"
    long_entity = "the budget of the opera house in the city"
    assert "budget" in question_skeleton("Show the budget of the opera house in the city", (),
                                         [long_entity])


def test_spider_tables_entry_gives_original_and_natural_names():
    entry = {"db_id": "x", "table_names_original": ["Perpetrator"], "table_names": ["perpetrator"],
             "column_names_original": [[-1, "*"], [0, "People_ID"]],
             "column_names": [[-1, "*"], [0, "people id"]]}
    terms = spider_schema_terms(entry)
    assert ("perpetrator",) in terms and ("people", "id") in terms


# -- question type from SQL ------------------------------------------------------------------

@pytest.mark.parametrize("sql, expected", [
    ("SELECT count(*) FROM singer", EASY),
    ("SELECT name FROM singer WHERE age > 3 ORDER BY age DESC LIMIT 1", EASY),
    ("SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.id = T2.singer_id", JOIN),
    ("SELECT a.x FROM a, b WHERE a.id = b.id", JOIN),
    ("SELECT name FROM singer WHERE age > (SELECT avg(age) FROM singer)", NESTED),
    ("SELECT name FROM a UNION SELECT name FROM b", NESTED),
    ("SELECT name FROM a EXCEPT SELECT name FROM a WHERE x = 1", NESTED),
    ("SELECT x FROM (SELECT x, count(*) FROM t GROUP BY x)", NESTED),
    ("SELECT name FROM a WHERE id NOT IN (SELECT T1.a_id FROM b AS T1 JOIN c AS T2 "
     "ON T1.c_id = T2.id)", JOIN_NESTED),
    ("SELECT count(*), max(x) FROM t WHERE f(a, b) > 1", EASY),  # commas outside FROM
    ("SELECT a.x FROM a JOIN b ON a.id = b.id INTERSECT SELECT x FROM c", JOIN_NESTED),
])
def test_classify_sql(sql, expected):
    assert classify_sql(sql) == expected


def test_classify_sql_never_raises_on_garbage():
    assert classify_sql("SELEC * FORM 'unterminated") in (EASY, JOIN, NESTED, JOIN_NESTED)
    assert classify_sql("") == EASY


# -- retrieval -------------------------------------------------------------------------------

@pytest.fixture
def bank() -> ExampleBank:
    b = ExampleBank()
    b.add("How many customers are from California?",
          "SELECT count(*) FROM customer WHERE state = 'California'", db_id="shop")
    b.add("How many artists are from Bangladesh?",
          "SELECT count(*) FROM artist WHERE country = 'Bangladesh'", db_id="music")
    b.add("What is the name of the teacher who teaches the most courses?",
          "SELECT T1.name FROM teacher AS T1 JOIN course AS T2 ON T1.id = T2.teacher_id "
          "GROUP BY T1.id ORDER BY count(*) DESC LIMIT 1", db_id="school")
    b.add("List the names of employees that never won any award.",
          "SELECT name FROM employee WHERE id NOT IN (SELECT employee_id FROM award)",
          db_id="hr")
    b.add("Show the names of physicians who never took an appointment.",
          "SELECT name FROM physician EXCEPT SELECT T2.name FROM appointment AS T1 JOIN "
          "physician AS T2 ON T1.physician = T2.id", db_id="hospital")
    return b


def test_search_ranks_the_same_template_first(bank):
    results = bank.search("How many ships are from Norway?", k=2)
    assert [r.question for r in results] == ["How many customers are from California?",
                                             "How many artists are from Bangladesh?"]
    assert results[0].score > 0.5 and results[0].qtype == EASY
    assert results[0].skeleton == "how many customer are from <m>"


def test_search_within_one_question_type(bank):
    nested = bank.search("List the names of pilots that never flew any plane.", k=3,
                         qtype=NESTED)
    assert [r.qtype for r in nested] == [NESTED]
    assert nested[0].question.startswith("List the names of employees")
    join_nested = bank.search("List the names of pilots that never flew any plane.", k=3,
                              qtype=JOIN_NESTED)
    assert [r.db_id for r in join_nested] == ["hospital"]
    assert bank.counts_by_type() == {EASY: 2, JOIN: 1, NESTED: 1, JOIN_NESTED: 1}


def test_search_can_exclude_a_database_and_skips_unrelated(bank):
    results = bank.search("How many ships are from Norway?", k=5, exclude_db="shop")
    assert "shop" not in {r.db_id for r in results}
    assert bank.search("zebra quantum", k=5) == []
    assert bank.search("How many ships are from Norway?", k=0) == []
    with pytest.raises(ExampleBankError, match="question type"):
        bank.search("x", qtype="HARD")


def test_search_returns_one_example_per_sql():
    b = ExampleBank()
    b.add("How many singers are there?", "SELECT count(*) FROM singer", db_id="a")
    b.add("Count the number of singers.", "SELECT  count(*)  FROM singer", db_id="a")
    b.add("How many songs are there?", "SELECT count(*) FROM song", db_id="a")
    results = b.search("How many singers are there?", k=3)
    assert len(results) == 2 and len({" ".join(r.sql.split()) for r in results}) == 2


def test_search_uses_the_schema_to_mask_the_query():
    b = ExampleBank()
    b.add("How many players live in each region?", "SELECT region, count(*) FROM player "
          "GROUP BY region", db_id="x")
    b.add("How many singers are older than the average?", "SELECT count(*) FROM singer "
          "WHERE age > (SELECT avg(age) FROM singer)", db_id="y")
    plain = b.search("How many singers live in each home country?", k=2)
    masked = b.search("How many singers live in each home country?", k=2, schema=_schema())
    assert masked[0].question == "How many players live in each region?"
    assert masked[0].score > plain[0].score


def test_add_validates_and_ignores_duplicates():
    b = ExampleBank()
    assert b.add("Q?", "SELECT 1", db_id="a") is not None
    assert b.add("Q?", "SELECT 1", db_id="a") is None
    assert len(b) == 1
    with pytest.raises(ExampleBankError, match="question and its SQL"):
        b.add("", "SELECT 1")
    with pytest.raises(ExampleBankError, match="question type"):
        b.add("Q2?", "SELECT 2", qtype="HARD")
    assert b.add("Q3?", "SELECT a FROM b", qtype=JOIN).qtype == JOIN


def test_new_examples_are_searchable_after_a_search(bank):
    bank.search("anything at all", k=1)  # builds the index
    bank.add("How many rivers are from Peru?", "SELECT count(*) FROM river WHERE land = 'Peru'")
    assert bank.search("How many rivers are from Chile?", k=1)[0].question == \
        "How many rivers are from Peru?"


# -- loading ---------------------------------------------------------------------------------

def test_from_spider_json(tmp_path):
    examples = [
        {"db_id": "concert", "question": "How many singers do we have?",
         "query": "SELECT count(*) FROM singer"},
        {"db_id": "concert", "question": "Show the stadium names with a concert in 2014.",
         "query": "SELECT T2.name FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = "
                  "T2.stadium_id WHERE T1.year = 2014"},
        {"db_id": "concert", "question": "no sql here"},
        "not an object",
    ]
    tables = [{"db_id": "concert", "table_names_original": ["singer", "stadium", "concert"],
               "table_names": ["singer", "stadium", "concert"],
               "column_names_original": [[-1, "*"], [1, "Name"]],
               "column_names": [[-1, "*"], [1, "name"]]}]
    path, tables_path = tmp_path / "train.json", tmp_path / "tables.json"
    path.write_text(json.dumps(examples))
    tables_path.write_text(json.dumps(tables))
    bank = ExampleBank.from_spider_json(path, tables_path)
    assert len(bank) == 2
    first, second = bank.examples
    assert first.source == "dataset" and first.db_id == "concert" and first.qtype == EASY
    assert first.skeleton == "how many <m> do we have"
    assert second.qtype == JOIN and second.skeleton.startswith("show the <m> name with a <m>")
    assert len(ExampleBank.from_spider_json(path, limit=1)) == 1


def test_from_spider_json_reports_bad_files(tmp_path):
    with pytest.raises(ExampleBankError, match="not found"):
        ExampleBank.from_spider_json(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(ExampleBankError, match="not valid JSON"):
        ExampleBank.from_spider_json(broken)
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"question": "q"}))
    with pytest.raises(ExampleBankError, match="JSON list"):
        ExampleBank.from_spider_json(wrong)
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps([{"db_id": "x"}]))
    with pytest.raises(ExampleBankError, match="no usable examples"):
        ExampleBank.from_spider_json(empty)


def test_load_accepted_from_the_store(tmp_path):
    from agents.store import Store

    store = Store(tmp_path / "studio.db")
    store.accept(None, "How many singers are from Norway?",
                 "SELECT count(*) FROM singer WHERE home_country = 'Norway'", "music")
    store.accept(None, "How many books are there?", "SELECT count(*) FROM books", "library")
    bank = ExampleBank()
    assert bank.load_accepted(store, "music", schema=_schema()) == 1
    assert bank.load_accepted(store, "music") == 0  # already there
    (example,) = bank.examples
    assert example.source == "accepted" and example.db_id == "music"
    assert example.skeleton == "how many <m> are from <m>"
    assert bank.load_accepted(store) == 1  # every database
    assert {e.db_id for e in bank.examples} == {"music", "library"}


def test_load_accepted_accepts_any_record_shape():
    class Record:
        def __init__(self, question, sql):
            self.question, self.sql = question, sql

    class FakeStore:
        def list_accepted(self, db_name=None):
            return [Record("How many rows?", "SELECT count(*) FROM t"),
                    {"question": "", "sql": "SELECT 1"}]

    bank = ExampleBank()
    assert bank.load_accepted(FakeStore(), "db") == 1
    assert bank.examples[0].db_id == "db"


# -- speed -----------------------------------------------------------------------------------

@pytest.fixture
def bank_speed(monkeypatch):
    """``bench/example_bank_speed.py``, whose generated bank these tests search (its timing is
    that benchmark's, not a test's)."""
    return bench_script(monkeypatch, "example_bank_speed")


def test_ten_thousand_examples_are_searched_with_type_and_database_filters(bank_speed):
    bank = bank_speed.synthetic_bank(10_000)
    assert len(bank) == 10_000
    for question in bank_speed.QUESTIONS:
        for qtype in (None, JOIN, NESTED):
            results = bank.search(question, k=5, qtype=qtype, exclude_db="db3")
            assert len(results) == 5
            assert all(r.db_id != "db3" for r in results)
            assert qtype is None or all(r.qtype == qtype for r in results)
            assert [r.score for r in results] == sorted((r.score for r in results),
                                                        reverse=True)


def test_bank_for_a_database_combines_imported_and_accepted_examples(tmp_path, sample_dbs):
    from agents.db.database import open_database
    from agents.example_bank import bank_for, load_imported
    from agents.store import Store

    spider = tmp_path / "train.json"
    spider.write_text(json.dumps([{"db_id": "zoo", "question": "How many animals are there?",
                                   "query": "SELECT count(*) FROM animals"}]))
    db = open_database(sample_dbs / "shop.sqlite")
    store = Store(tmp_path / "studio.db")
    store.accept(None, "How many customers live in Lyon?",
                 "SELECT COUNT(*) FROM customers WHERE city = 'Lyon'", "shop")
    store.accept(None, "How many loans are open?", "SELECT COUNT(*) FROM loans", "library")

    bank = bank_for(db, store, load_imported(spider))
    sqls = {e.sql for e in bank.examples}
    assert "SELECT count(*) FROM animals" in sqls
    assert "SELECT COUNT(*) FROM customers WHERE city = 'Lyon'" in sqls
    assert "SELECT COUNT(*) FROM loans" not in sqls  # another database's answer
    top = bank.search("How many customers live in Paris?", k=1)
    assert top and "customers" in top[0].sql


def test_bank_for_survives_an_unreadable_store(sample_dbs):
    from agents.db.database import open_database
    from agents.example_bank import bank_for

    class BrokenStore:
        def list_accepted(self, db_name=None):
            raise OSError("disk gone")

    bank = bank_for(open_database(sample_dbs / "shop.sqlite"), BrokenStore())
    assert len(bank) == 0


def test_bank_for_logs_why_the_accepted_answers_are_missing(sample_dbs, caplog):
    import logging
    import sqlite3

    from agents.db.database import open_database
    from agents.example_bank import Example, bank_for

    class LockedStore:
        def list_accepted(self, db_name=None):
            raise sqlite3.OperationalError("database is locked")

    imported = [Example("How many animals are there?", "SELECT count(*) FROM animals")]
    with caplog.at_level(logging.WARNING, logger="agents.example_bank"):
        bank = bank_for(open_database(sample_dbs / "shop.sqlite"), LockedStore(), imported)
    assert [e.sql for e in bank.examples] == ["SELECT count(*) FROM animals"]
    assert "accepted for shop" in caplog.text and "database is locked" in caplog.text


def test_bank_for_lets_a_bug_through(sample_dbs):
    from agents.db.database import open_database
    from agents.example_bank import bank_for

    class BuggyStore:
        def list_accepted(self, db_name=None):
            raise KeyError("result_json")

    with pytest.raises(KeyError):
        bank_for(open_database(sample_dbs / "shop.sqlite"), BuggyStore())


def test_load_imported_names_a_missing_or_unreadable_file(tmp_path, monkeypatch):
    from pathlib import Path

    from agents.example_bank import load_imported

    with pytest.raises(ExampleBankError, match="examples file not found"):
        load_imported(tmp_path / "train.json")
    path = tmp_path / "train.json"
    path.write_text("[]")

    def refuse(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "read_text", refuse)
    with pytest.raises(ExampleBankError, match="cannot be read: .*Permission denied"):
        load_imported(path)
