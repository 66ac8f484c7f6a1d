"""Value grounding: question phrases looked up among the values stored in the database."""

from __future__ import annotations

import json
import sqlite3

import pytest

from agents.db.database import open_database
from agents.db.safe_sql import ExecResult
from agents.retrieval.question_phrases import question_phrases
from agents.retrieval.value_grounding import (Grounding, GroundingLimits, ValueMatch,
                                              ground_question, render_matches)
from agents.retrieval.value_index import text_columns, value_index
from dbfactory import build_big_table, make_db, sha256

MUSIC_SQL = """
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER,
                     code TEXT, song_year TEXT);
CREATE TABLE concert (concert_id INTEGER PRIMARY KEY, concert_name TEXT, theme TEXT,
                      stadium_id INTEGER, singer_name TEXT REFERENCES singer(name));
CREATE TABLE stadium (stadium_id INTEGER PRIMARY KEY, name VARCHAR(40), location TEXT);
INSERT INTO singer VALUES
  (1, 'Joe Sharp', 'Netherlands', 52, 'A7', '2016'),
  (2, 'Timbaland', 'United States', 32, '0042', '2008'),
  (3, 'Justin Brown', 'France', 29, 'B1', '2013'),
  (4, 'Rose White', 'France', 41, 'C3', '2003'),
  (5, 'John Nizinik', 'france', 43, 'D9', '2014');
INSERT INTO concert VALUES (1, 'Auditions', 'Free choice', 1, 'Joe Sharp'),
                           (2, 'Super bootcamp', 'Happy Tonight', 2, 'Rose White'),
                           (3, 'Home Visits', 'Bleeding Love', 2, 'Timbaland');
INSERT INTO stadium VALUES (1, 'Stark''s Park', 'Raith Rovers'), (2, 'Glebe Park', 'Brechin');
"""


@pytest.fixture
def music(tmp_path):
    db = open_database(make_db(tmp_path / "music.sqlite", MUSIC_SQL))
    yield db
    db.close()


def found(grounding: Grounding) -> list[tuple]:
    return [(m.table, m.column, m.value, m.phrase, m.how) for m in grounding.matches]


def test_a_capitalised_name_matches_exactly_and_a_lower_case_one_ignoring_case(music):
    g = ground_question(music, "Which singers are from France?")
    assert ("singer", "country", "France", "France", "exact") in found(g)
    assert ("singer", "country", "france", "France", "exact") not in found(g)  # one per phrase
    g = ground_question(music, "how many singers are from the netherlands?")
    assert found(g) == [("singer", "country", "Netherlands", "netherlands", "case-insensitive")]


def test_a_quoted_literal_and_a_multi_word_name(music):
    g = ground_question(music, 'Which concerts have the theme "happy tonight"?')
    assert found(g) == [("concert", "theme", "Happy Tonight", "happy tonight",
                         "case-insensitive")]
    g = ground_question(music, "What is the age of the singer from United States?")
    assert found(g) == [("singer", "country", "United States", "United States", "exact")]
    g = ground_question(music, "Where is Stark's Park?")
    assert found(g) == [("stadium", "name", "Stark's Park", "Stark's Park", "exact")]


def test_numbers_match_stored_text_codes_but_single_digits_and_number_columns_do_not(music):
    g = ground_question(music, "Which singer has code 0042 and songs from 2014?")
    assert ("singer", "code", "0042", "0042", "exact") in found(g)
    assert ("singer", "song_year", "2014", "2014", "exact") in found(g)
    assert ground_question(music, "Show the top 3 singers older than 52").matches == []


def test_prefix_and_fuzzy_matches(music):
    g = ground_question(music, "What songs did Justin sing?")
    assert found(g) == [("singer", "name", "Justin Brown", "Justin", "prefix")]
    g = ground_question(music, "Which singers come from Frnace or Netherland?")
    assert ("singer", "country", "Netherlands", "Netherland", "fuzzy") in found(g)


def test_no_match_gives_an_empty_list_and_an_empty_prompt_section(music):
    g = ground_question(music, "What is the average age of all singers?")
    assert g.matches == [] and g.dropped == 0 and g.prompt_section() == ""
    assert ground_question(music, "").matches == []


def test_many_matches_are_capped_and_the_rest_counted(music):
    limits = GroundingLimits(max_matches=2)
    g = ground_question(music, "Compare Joe Sharp, Timbaland, Justin Brown, Rose White and "
                               "John Nizinik", limits)
    assert len(g.matches) == 2 and g.dropped == 3
    assert all(m.how == "exact" for m in g.matches)


def test_a_phrase_inside_a_longer_matched_phrase_is_not_matched_again(music):
    g = ground_question(music, "Which concerts did Rose White give?")
    assert found(g) == [("singer", "name", "Rose White", "Rose White", "exact")]


def test_id_and_foreign_key_columns_and_numbers_are_not_indexed(music):
    columns = [(t, c) for t, c, _ in text_columns(music.schema)]
    assert ("concert", "singer_name") not in columns  # its values are singer.name's
    assert ("singer", "age") not in columns and ("singer", "singer_id") not in columns
    assert ("stadium", "name") in columns and ("concert", "theme") in columns


def test_render_matches_as_a_prompt_section(music):
    g = ground_question(music, "Which singers from Netherlands sang at Glebe Park?")
    assert g.prompt_section() == ("Values in the database that match the question:\n"
                                  "- stadium.name = 'Glebe Park'\n"
                                  "- singer.country = 'Netherlands'")
    text = render_matches([ValueMatch("stadium", "name", "Stark's Park", "starks park", "fuzzy"),
                           ValueMatch("order items", "status", "Done", "Done", "exact")])
    assert text == ("Values in the database that match the question:\n"
                    "- stadium.name = 'Stark''s Park'  (the question says \"starks park\"; "
                    "fuzzy)\n"
                    "- \"order items\".status = 'Done'")


def test_grounding_round_trips_through_json(music):
    g = ground_question(music, "Which singers are from France?")
    data = json.loads(json.dumps(g.to_dict()))
    assert Grounding.from_dict(data).to_dict() == g.to_dict()
    assert data["matches"][0] == {"table": "singer", "column": "country", "value": "France",
                                  "phrase": "France", "how": "exact"}


def test_question_phrases_skip_function_words_and_schema_words(music):
    phrases = question_phrases("What is the name of the singer from the United States of "
                               "America?", music.schema)
    texts = [p.text for p in phrases]
    assert texts[0] == "United States of America"
    assert "name" not in texts and "singer" not in texts and "What" not in texts
    assert all(not t.casefold().startswith(("the ", "of ")) for t in texts)


class CountingDatabase:
    """A database handle that counts the queries run through it."""

    def __init__(self, db):
        self.db, self.queries = db, []

    @property
    def schema(self):
        return self.db.schema

    def execute(self, sql, **limits):
        self.queries.append(sql)
        return self.db.execute(sql, **limits)


def test_the_index_is_built_once_per_database(music):
    counting = CountingDatabase(music)
    ground_question(counting, "Which singers are from France?")
    first = len(counting.queries)
    assert first == len(text_columns(music.schema))
    ground_question(counting, "Which singers are from Netherlands?",
                    GroundingLimits(budget_seconds=5))  # another budget, the same index
    assert len(counting.queries) == first  # small tables: every value is in the index
    assert value_index(counting) is value_index(counting)


# -- a large table ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def big_file(tmp_path_factory):
    """Two million rows of ``big`` (97 labels), then one rare label after all of them."""
    path = build_big_table(tmp_path_factory.mktemp("big") / "big.sqlite", 2_000_000)
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO big (label) VALUES ('Zebra crossing')")
    conn.commit()
    conn.close()
    return path


def test_a_large_table_is_searched_within_the_budget_and_never_changed(big_file):
    before = sha256(big_file)
    limits = GroundingLimits(budget_seconds=1.0)
    with open_database(big_file) as db:
        g = ground_question(db, "Which rows have the label 'label 7' or Zebra crossing?", limits)
        assert ("big", "label", "label 7", "label 7", "exact") in found(g)
        rare = ("big", "label", "Zebra crossing", "Zebra crossing", "exact")
        # the rare value lies beyond the indexed rows: found by the direct scan, or reported
        assert rare in found(g) or any(s.get("column") == "label" for s in g.skipped)
        assert g.seconds < limits.budget_seconds + 1.0  # the budget, plus one query's overrun
    assert sha256(big_file) == before


def test_a_value_beyond_the_indexed_rows_is_found_when_time_allows(big_file):
    with open_database(big_file) as db:
        g = ground_question(db, "Where is the zebra crossing?",
                            GroundingLimits(budget_seconds=60))
    assert found(g) == [("big", "label", "Zebra crossing", "zebra crossing",
                         "case-insensitive")]
    assert g.skipped == []


class TimingOutScans(CountingDatabase):
    """Index queries run; every direct scan of a table is stopped as a timeout."""

    def execute(self, sql, **limits):
        if "COLLATE NOCASE IN" in sql:
            self.queries.append(sql)
            return ExecResult(ok=False, sql=sql, error="stopped", error_class="Timeout")
        return super().execute(sql, **limits)


def test_a_table_whose_scan_times_out_is_reported_and_not_scanned_again(music):
    db = TimingOutScans(music)
    limits = GroundingLimits(scan_rows=2)  # the index reads two rows of each table
    first = ground_question(db, "Which singers are from France?", limits)
    assert first.matches == []  # France is stored in rows 3 to 5 only
    assert {"table": "singer", "column": "country",
            "reason": "timeout (rows beyond the index not searched)"} in first.skipped
    scans = [q for q in db.queries if "COLLATE NOCASE IN" in q]
    again = ground_question(db, "Which singers are from France?", limits)
    assert {"table": "singer", "column": "country",
            "reason": "too large to search in time (rows beyond the index not searched)"} \
        in again.skipped
    assert [q for q in db.queries if "COLLATE NOCASE IN" in q] == scans
    # without the timeout the same scan finds it
    g = ground_question(CountingDatabase(music), "Which singers are from France?", limits)
    assert ("singer", "country", "France", "France", "exact") in found(g)


# -- many tables: empty ones, the column cap, a lookup limited to some tables -------------------
CITIES = ["Lyon", "Porto", "Oslo", "Bergen", "Quito", "Lima", "Dakar", "Accra", "Hanoi", "Perth",
          "Cusco", "Tromso"]


def _many_tables(path, empty: int, filled: int):
    """``empty`` tables with no row, then ``filled`` tables: ``place_i`` stores ``CITIES[i]``."""
    statements = [f"CREATE TABLE empty_{i} (id INTEGER PRIMARY KEY, label TEXT, note TEXT);"
                  for i in range(empty)]
    for i in range(filled):
        statements.append(f"CREATE TABLE place_{i} (id INTEGER PRIMARY KEY, town TEXT);")
        statements.append(f"INSERT INTO place_{i} (town) VALUES ('{CITIES[i]}');")
    return open_database(make_db(path, "\n".join(statements)))


def test_empty_tables_take_no_place_in_the_column_cap(tmp_path):
    db = _many_tables(tmp_path / "wide.sqlite", empty=40, filled=3)
    try:
        assert {t for t, _, _ in text_columns(db.schema)} == {"place_0", "place_1", "place_2"}
        # 80 text columns of empty tables would have filled a cap of 10 on their own
        g = ground_question(db, "Which place is in Oslo?", GroundingLimits(max_columns=10))
        assert found(g) == [("place_2", "town", "Oslo", "Oslo", "exact")]
        assert g.skipped == []
    finally:
        db.close()


def test_a_lookup_limited_to_some_tables_searches_them_past_the_cap_and_nothing_else(tmp_path):
    db = _many_tables(tmp_path / "wide.sqlite", empty=0, filled=12)
    try:
        # place_0 .. place_3 make the database's index; 4 more are kept for limited lookups
        limits = GroundingLimits(max_columns=4, cache_columns=4)
        counting = CountingDatabase(db)
        whole = ground_question(counting, "Which places are in Perth or Porto?", limits)
        assert found(whole) == [("place_1", "town", "Porto", "Porto", "exact")]
        assert {"table": "place_9", "column": "town", "reason": "column cap"} in whole.skipped
        # the tables a pipeline's writers see: place_9 is searched although past the cap,
        # place_1 is not searched although it holds a match
        g = ground_question(counting, "Which places are in Perth or Porto?", limits,
                            tables=["PLACE_9", "place_10"])
        assert found(g) == [("place_9", "town", "Perth", "Perth", "exact")]
        assert g.columns_searched == 2 and g.skipped == []
        drawn = len(counting.queries)
        again = ground_question(counting, "Is there a place in Cusco?", limits,
                                tables=["place_10"])
        assert found(again) == [("place_10", "town", "Cusco", "Cusco", "exact")]
        assert len(counting.queries) == drawn  # kept from the lookup before
        index = value_index(counting, limits)
        assert len(index.columns) == 4  # the database-wide index is not widened
        for i in range(4, 12):  # more tables past the cap than it holds: the oldest leave
            ground_question(counting, f"Is there a place in {CITIES[i]}?", limits,
                            tables=[f"place_{i}"])
        assert list(index.extra) == [(f"place_{i}", "town") for i in range(8, 12)]
    finally:
        db.close()


def test_the_index_stops_at_its_value_cap_and_limited_lookups_still_search_past_it(tmp_path):
    db = _many_tables(tmp_path / "wide.sqlite", empty=0, filled=12)
    try:
        limits = GroundingLimits(max_values=3)  # one value a table: three tables fill it
        whole = ground_question(db, "Which places are in Perth or Porto?", limits)
        assert found(whole) == [("place_1", "town", "Porto", "Porto", "exact")]
        index = value_index(db, limits)
        assert len(index.columns) == 3 and index.values == 3 and index.pending == []
        assert {"table": "place_9", "column": "town", "reason": "value cap"} in whole.skipped
        g = ground_question(db, "Which places are in Perth or Porto?", limits,
                            tables=["place_9"])
        assert found(g) == [("place_9", "town", "Perth", "Perth", "exact")]
        assert len(index.columns) == 3 and list(index.extra) == [("place_9", "town")]
    finally:
        db.close()


def test_what_the_index_holds_within_its_caps_does_not_depend_on_earlier_lookups(tmp_path):
    db = _many_tables(tmp_path / "wide.sqlite", empty=0, filled=12)
    try:
        limits = GroundingLimits(max_values=3)
        # a lookup limited to the last tables draws them first; they are kept aside
        limited = ground_question(db, "Is there a place in Perth?", limits,
                                  tables=["place_9", "place_10", "place_11"])
        assert found(limited) == [("place_9", "town", "Perth", "Perth", "exact")]
        whole = ground_question(db, "Which places are in Perth or Porto?", limits)
        index = value_index(db, limits)
        assert [(v.table, v.column) for v in index.columns] == [
            ("place_0", "town"), ("place_1", "town"), ("place_2", "town")]
        assert found(whole) == [("place_1", "town", "Porto", "Porto", "exact")]
    finally:
        db.close()


def test_a_limited_lookup_reports_the_columns_its_budget_left_out(tmp_path):
    db = _many_tables(tmp_path / "wide.sqlite", empty=0, filled=3)
    try:
        g = ground_question(db, "Which place is in Porto?", GroundingLimits(budget_seconds=0),
                            tables=["place_1", "place_2"])
        assert g.matches == []
        assert g.skipped == [{"table": "place_1", "column": "town", "reason": "budget"},
                             {"table": "place_2", "column": "town", "reason": "budget"}]
        g = ground_question(db, "Which place is in Porto?", tables=["place_1", "no_such"])
        assert found(g) == [("place_1", "town", "Porto", "Porto", "exact")]
    finally:
        db.close()


class FailingColumn(CountingDatabase):
    """Every query drawing ``place_1``'s values fails."""

    def execute(self, sql, **limits):
        self.queries.append(sql)
        if '"place_1"' in sql:
            return ExecResult(ok=False, sql=sql, error="disk I/O error",
                              error_class="OperationalError")
        return self.db.execute(sql, **limits)


def test_a_column_that_fails_is_reported_once_and_not_drawn_again(tmp_path):
    db = _many_tables(tmp_path / "wide.sqlite", empty=0, filled=6)
    try:
        failing, limits = FailingColumn(db), GroundingLimits(max_columns=4)
        g = ground_question(failing, "Is there a place in Porto?", limits, tables=["place_1"])
        assert g.matches == [] and g.skipped == [
            {"table": "place_1", "column": "town", "reason": "error"}]
        g = ground_question(failing, "Is there a place in Oslo?", limits)
        assert found(g) == [("place_2", "town", "Oslo", "Oslo", "exact")]
        assert [s for s in g.skipped if s["table"] == "place_1"] == [
            {"table": "place_1", "column": "town", "reason": "error"}]
        assert sum('"place_1"' in q for q in failing.queries) == 1
    finally:
        db.close()


class SlowUnderShortTimeouts(CountingDatabase):
    """A draw given less than its full timeout runs out of time, as a slow table would."""

    def execute(self, sql, timeout=None, **limits):
        self.queries.append(sql)
        if timeout is not None and timeout < GroundingLimits.query_timeout:
            return ExecResult(ok=False, sql=sql, error="interrupted", error_class="Timeout")
        return self.db.execute(sql, timeout=timeout, **limits)


def test_a_draw_cut_short_by_the_lookups_budget_is_tried_again_later(tmp_path):
    db = _many_tables(tmp_path / "wide.sqlite", empty=0, filled=3)
    try:
        slow = SlowUnderShortTimeouts(db)
        g = ground_question(slow, "Is there a place in Porto?", GroundingLimits(budget_seconds=0.2),
                            tables=["place_1"])
        assert g.skipped == [{"table": "place_1", "column": "town", "reason": "budget"}]
        g = ground_question(slow, "Is there a place in Porto?", tables=["place_1"])
        assert found(g) == [("place_1", "town", "Porto", "Porto", "exact")] and not g.skipped
    finally:
        db.close()


def test_a_limited_lookup_searches_only_the_columns_shown_of_a_table(tmp_path):
    db = _many_tables(tmp_path / "wide.sqlite", empty=0, filled=3)
    try:
        shown = ground_question(db, "Is there a place in Porto?", tables={"place_1": ["town"]})
        assert found(shown) == [("place_1", "town", "Porto", "Porto", "exact")]
        hidden = ground_question(db, "Is there a place in Porto?", tables={"place_1": ["id"]})
        assert hidden.matches == [] and hidden.columns_searched == 0
    finally:
        db.close()
