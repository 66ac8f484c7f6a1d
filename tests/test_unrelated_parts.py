"""A query reading tables of parts of the schema that no foreign key connects."""

from __future__ import annotations

from agents.db.database import open_database
from agents.rules.unrelated_parts import unrelated_parts
from dbfactory import TWO_APPLICATIONS_SQL, make_db

ACROSS = ("SELECT SUM(T2.SurfaceArea) FROM continents AS T1 JOIN country AS T2 "
          "ON T1.Continent = T2.Continent WHERE T1.Continent IN ('asia', 'europe')")
WITHIN = "SELECT SUM(SurfaceArea) FROM country WHERE Continent IN ('Asia', 'Europe')"


def schema(tmp_path):
    path = tmp_path / "two_parts.sqlite"
    db = open_database(path if path.exists() else make_db(path, TWO_APPLICATIONS_SQL))
    try:
        return db.schema
    finally:
        db.close()


def test_a_query_joining_two_unrelated_parts_is_found_with_its_tables_by_part(tmp_path):
    found = unrelated_parts(ACROSS, schema(tmp_path))
    assert found is not None and found.parts == (("continents",), ("country",))
    assert found.sentence().startswith(
        "it reads tables of 2 parts of the database that no foreign key connects "
        "(continents and country).")


def test_tables_of_one_part_joined_through_their_key_are_not(tmp_path):
    assert unrelated_parts(WITHIN, schema(tmp_path)) is None
    assert unrelated_parts("SELECT T2.Name FROM country AS T1 JOIN city AS T2 "
                           "ON T1.Code = T2.CountryCode", schema(tmp_path)) is None


def test_a_subquery_of_another_part_counts(tmp_path):
    found = unrelated_parts("SELECT Name FROM country WHERE Continent IN "
                            "(SELECT Continent FROM continents)", schema(tmp_path))
    assert found is not None and found.parts == (("country",), ("continents",))


def test_a_table_no_key_links_and_names_the_schema_lacks_say_nothing(tmp_path):
    known = schema(tmp_path)
    assert unrelated_parts("SELECT T1.Name FROM country AS T1 JOIN notes AS T2 "
                           "ON T2.text = T1.Continent", known) is None
    assert unrelated_parts("WITH c AS (SELECT 1 AS x) SELECT Name FROM country, c", known) is None


def test_the_tables_a_with_query_reads_count(tmp_path):
    found = unrelated_parts("WITH c AS (SELECT Continent FROM continents) "
                            "SELECT Name FROM country JOIN c USING (Continent)", schema(tmp_path))
    assert found is not None and sorted(found.parts) == [("continents",), ("country",)]


def test_sql_that_cannot_be_read_or_holds_two_statements_says_nothing(tmp_path):
    known = schema(tmp_path)
    assert unrelated_parts("SELEC nothing FROM", known) is None
    assert unrelated_parts(f"{WITHIN}; {ACROSS}", known) is None
    assert unrelated_parts(None, known) is None
