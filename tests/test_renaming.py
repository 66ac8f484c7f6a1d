"""Renamed schemas: names changed by general means, SQL rewritten to them, and a renamed copy
of a database that answers the rewritten SQL with the original's rows."""

from __future__ import annotations

import importlib.util
import sqlite3
from pathlib import Path

import pytest

from agents.evaluation.metric import result_eq
from agents.evaluation.renaming import (RenameError, Renaming, abbreviate, new_name, plan,
                                        rename_sql, split_words)

ROOT = Path(__file__).resolve().parent.parent


def test_names_are_split_and_renamed_word_by_word():
    assert split_words("Song_release_year") == ["Song", "release", "year"]
    assert split_words("HeadOfState") == ["Head", "Of", "State"]
    assert abbreviate("nationality") == "nati" and abbreviate("title") == "ttl"
    assert new_name("singer") == "vocalist"
    assert new_name("Song_release_year") == "Track_rele_yr"  # synonym, abbreviation, synonym
    assert new_name("HeadOfState") == "HeadOfRegion"
    assert new_name("id") == "id"  # short words stay
    assert new_name("countrylanguage") == "countrylanguage"  # so do words written together


def test_a_new_name_that_would_clash_keeps_the_old_one():
    renaming = plan({"people": ["name", "label"], "persons": ["id"]})
    assert renaming.tables == {"persons": "pers"}  # "people" -> "persons" is taken
    assert renaming.columns == {"label": "lbl"}    # "name" -> "label" is taken


def test_sql_keeps_aliases_literals_and_quoted_strings():
    renaming = Renaming(tables={"singer": "vocalist"},
                        columns={"name": "Label", "country": "Nation"})
    sql = ('SELECT T1.name, singer.country FROM singer AS T1 WHERE T1.country = "France" '
           "AND name LIKE '%name%'")
    assert rename_sql(sql, renaming) == (
        'SELECT T1.Label, vocalist.Nation FROM vocalist AS T1 WHERE T1.Nation = "France" '
        "AND Label LIKE '%name%'")
    alias = Renaming(tables={"t": "renamed"}, columns={})  # an alias named like a table stays
    assert rename_sql("SELECT t.x FROM other AS t", alias) == "SELECT t.x FROM other AS t"
    with pytest.raises(RenameError):
        rename_sql("SELECT FROM WHERE (", renaming)
    with pytest.raises(RenameError):
        rename_sql("SELECT 'unterminated", renaming)


def test_sql_keeps_output_aliases_ctes_and_renames_using():
    renaming = plan({"singer": ["Singer_ID", "Name", "Country", "Age"],
                     "concert": ["Singer_ID", "Year"]})
    assert rename_sql("SELECT count(*) AS Age FROM singer GROUP BY Country ORDER BY Age",
                      renaming) == ("SELECT COUNT(*) AS Age FROM vocalist GROUP BY Nation "
                                    "ORDER BY Age")
    assert rename_sql("SELECT Name FROM singer JOIN concert USING (Singer_ID)", renaming) == \
        "SELECT Label FROM vocalist JOIN gig USING (Vocalist_ID)"
    assert rename_sql("WITH singer AS (SELECT 1 AS x) SELECT x FROM singer", renaming) == \
        "WITH singer AS (SELECT 1 AS x) SELECT x FROM singer"
    # a quoted name the query's tables have is that column to SQLite, else a string
    assert rename_sql('SELECT Name FROM singer WHERE Country = "Year"', renaming) == \
        'SELECT Label FROM vocalist WHERE Nation = "Year"'
    assert rename_sql('SELECT Name FROM singer WHERE Country = "Age"', renaming) == \
        'SELECT Label FROM vocalist WHERE Nation = "Years"'


def _bench_module():
    spec = importlib.util.spec_from_file_location("renamed_spider",
                                                  ROOT / "bench" / "renamed_spider.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_renamed_copy_answers_the_rewritten_sql_with_the_same_rows(tmp_path):
    source = tmp_path / "shop.sqlite"
    conn = sqlite3.connect(source)
    conn.executescript("""
        CREATE TABLE country (id INTEGER PRIMARY KEY, name TEXT);
        CREATE TABLE singer (id INTEGER PRIMARY KEY, name TEXT, age INTEGER,
                             country_id INTEGER REFERENCES country (id));
        INSERT INTO country VALUES (1, 'France'), (2, 'Peru');
        INSERT INTO singer VALUES (1, 'Ana', 30, 1), (2, 'Bo', 41, 2), (3, 'Cy', 25, 1);
    """)
    conn.commit()
    conn.close()
    bench = _bench_module()
    target = tmp_path / "renamed" / "shop.sqlite"
    names, renaming = bench.build_database(source, target)
    assert names["tables"] == {"country": "nation", "singer": "vocalist"}
    sql = ("SELECT T2.name, count(*) FROM singer AS T1 JOIN country AS T2 "
           "ON T1.country_id = T2.id WHERE T1.age > 20 GROUP BY T2.name")
    renamed = rename_sql(sql, renaming)
    assert "vocalist" in renamed and "singer" not in renamed
    assert result_eq(bench.run(source, sql), bench.run(target, renamed), False)
    with sqlite3.connect(target) as copy:
        [fk] = copy.execute("PRAGMA foreign_key_list(vocalist)").fetchall()
    assert fk[2:5] == ("nation", "nation_id", "id")
    assert bench.run(target, sql) is None  # the old names are gone


def test_a_question_s_half_is_fixed_and_a_build_never_clears_other_files(tmp_path):
    bench = _bench_module()
    items = [{"question_id": n, "db_id": "d"} for n in range(200)]
    study, unread = bench.split(items)
    assert 60 < len(study) < 140 and len(study) + len(unread) == 200
    fewer_study, fewer_unread = bench.split(items[50:])  # leaving some out moves none
    assert {i["question_id"] for i in fewer_study} <= {i["question_id"] for i in study}
    assert {i["question_id"] for i in fewer_unread} <= {i["question_id"] for i in unread}
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(SystemExit, match="holds other files"):
        bench._clear(tmp_path)
    assert (tmp_path / "keep.txt").read_text() == "mine"
