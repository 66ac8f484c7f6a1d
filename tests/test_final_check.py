"""The Final check, shared by MAC-SQL, DEA-SQL, R³, CSMA and candidate selection: a final SQL
joining a table it reads nothing of, which the question does not name, ends without that join;
a string compared with a column that stores it in another case is written as stored."""

from __future__ import annotations

import pytest

from agents.core.engine import END, resume_run, run_to_end
from agents.pipelines import get_pipeline
from agents.rules.final_check import FinalCheck, ending_for, stored_case
from agents.rules.question_joins import question_names, unnamed_unread_joins
from agents.db.safe_sql import ExecResult
from dbfactory import TWO_APPLICATIONS_SQL
from final_check_cases import ACROSS, BY_KEY, JOINED, PLAIN, SURFACE
from macsql_script import DECOMPOSER, PIPELINE, SMALL_SQL, decomposition, make_db, run


@pytest.fixture
def small_db(tmp_path):
    return make_db(tmp_path, "concerts", SMALL_SQL)


@pytest.mark.parametrize("question, table, named", [
    ("Which students have pets?", "Has_Pet", True),               # a word of the name
    ("Which continent speaks the most languages?", "countrylanguage", True),  # held in it
    ("Find visitors who visited a museum twice.", "visit", True),  # holds it
    ("What is the name of the breed with the most dogs?", "Dogs", True),
    ("Which battles were fought by commander Kaloyan?", "ship", False),
    ("List the cartoons directed by Ben Jones.", "TV_series", False),
    ("Which singers are from France?", "concert", False),
    ("Who is in a relationship?", "ship", True),   # kept rather than dropped
    ("Which party won the election?", "art", False),   # a short word must match whole
])
def test_a_question_names_a_table_by_a_word_of_its_name(question, table, named):
    assert question_names(question, table) is named


@pytest.mark.parametrize("question, table, others, named", [
    # "course" names Courses as much as the link table: not the link table, then
    ("How is the math course described?", "Student_Enrolment_Courses", ("Courses",), False),
    ("Find visitors who visited a museum twice.", "visit", ("visitor",), True),
    ("Which singers performed in a concert?", "singer_in_concert", ("singer",), True),
    ("Show all shows.", "show", ("performance",), True),   # a stop word, yet a table's name
])
def test_a_word_the_other_tables_share_names_none_of_them(question, table, others, named):
    assert question_names(question, table, others) is named


def test_only_unread_joins_of_tables_the_question_does_not_name_are_left_out(small_db):
    schema = small_db.schema
    found = unnamed_unread_joins(JOINED, schema, "Which singers are from France?")
    assert found.tables == ["concert"] and found.sql == PLAIN
    assert unnamed_unread_joins(JOINED, schema, "Which French singers gave a concert?") is None
    read = JOINED.replace("WHERE", "WHERE T2.year = 2015 AND")
    assert unnamed_unread_joins(read, schema, "Which singers are from France?") is None


def test_a_word_of_a_joined_column_keeps_the_join_only_where_the_query_counts(small_db):
    schema = small_db.schema
    # "year" is a column only concert has: the count counts its rows
    counted = ("SELECT COUNT(*) FROM singer AS T1 JOIN concert AS T2 "
               "ON T1.singer_id = T2.singer_id WHERE T1.country = 'France'")
    assert unnamed_unread_joins(counted, schema, "Count the French singers by year.") is None
    # a query that counts nothing answers the word from elsewhere, or not at all
    found = unnamed_unread_joins(JOINED, schema, "Which French singers have a year?")
    assert found is not None and found.tables == ["concert"] and found.sql == PLAIN


FROM_FIRST = ("SELECT T2.year FROM singer AS T1 JOIN concert AS T2 "
              "ON T1.singer_id = T2.singer_id")


@pytest.mark.parametrize("sql, question, option, mended", [
    (FROM_FIRST, "In which years were concerts held?", "drop_unread_from_table",
     "SELECT T2.year FROM concert AS T2"),
    (BY_KEY, "Give the ids of the performers of 2015's concerts.", "read_through_join_keys",
     "SELECT T2.singer_id AS singer_id FROM concert AS T2 WHERE T2.year = 2015"),
])
def test_the_from_table_and_a_table_read_by_its_key_are_left_out(small_db, llm, scripted_llm,
                                                                 sql, question, option, mended):
    scripted_llm.when(DECOMPOSER, decomposition((question, sql)))
    result = run(small_db, llm, question)
    assert result.status == "done", result.error
    check = result.events[-1]
    assert check.step == "final_check" and check.parsed["tables"] == ["singer"]
    assert result.final_sql == mended and check.inputs[option] is True
    by_key = ["singer"] if option == "read_through_join_keys" else None
    assert check.parsed.get("by_key") == by_key
    said = FinalCheck.from_dict(check.parsed).text_lines()[0]
    assert ("read only through its join key" in said) is (by_key is not None)
    as_written = small_db.execute(sql, timeout=2, max_rows=10).rows   # the same rows
    assert sorted(map(list, result.result["rows"])) == sorted(map(list, as_written))
    off = run(small_db, llm, question, **{option: False})
    assert [e.step for e in off.events][-1] == "refiner" and off.final_sql == sql


def test_the_final_sql_ends_without_the_join_as_a_step_of_its_own(small_db, llm, scripted_llm):
    scripted_llm.when(DECOMPOSER, decomposition(("French singers?", JOINED)))
    result = run(small_db, llm, "Which singers are from France?")
    assert result.status == "done", result.error
    assert [e.step for e in result.events][-3:] == ["decomposer", "refiner", "final_check"]
    check = result.events[-1]
    assert check.agent == "Final check" and check.kind == "final_check"
    assert check.parsed["tables"] == ["concert"] and check.parsed["sql_before"] == JOINED
    assert check.parsed["rows"] == 2 and check.sql == PLAIN
    assert result.final_sql == PLAIN
    assert sorted(r[0] for r in result.result["rows"]) == ["Ana", "Cy"]  # not Ana twice
    assert FinalCheck.from_dict(check.parsed).text_lines()[0] == (
        "  left out the join of concert: nothing reads it and the question does not name it")
    assert check.parsed.get("values") is None
    assert check.notes == ["rule 'Unread joins dropped' (changes result, switch "
                           "drop_unread_joins): the final SQL loses a join nothing reads and "
                           "the question does not name"]
    assert ("refiner", "final_check") in PIPELINE.edges() and ("final_check", END) in \
        PIPELINE.edges()

    # resumed from the check (or from before it) it does the same
    steps = [e.step for e in result.events]
    for index in (len(steps) - 2, len(steps) - 1):
        again = run_to_end(resume_run(PIPELINE, result, index, small_db, llm))
        assert [e.step for e in again.events] == steps
        assert again.final_sql == PLAIN


def test_no_check_where_the_question_names_the_table_or_the_option_is_off(small_db, llm,
                                                                          scripted_llm):
    scripted_llm.when(DECOMPOSER, decomposition(("French singers?", JOINED)))
    named = run(small_db, llm, "Which French singers gave a concert?")
    assert [e.step for e in named.events][-2:] == ["decomposer", "refiner"]
    assert named.final_sql == JOINED
    off = run(small_db, llm, "Which singers are from France?", drop_unread_joins=False)
    assert [e.step for e in off.events][-2:] == ["decomposer", "refiner"]
    assert off.final_sql == JOINED


LOWER = "SELECT name FROM singer WHERE country = 'france'"


def test_a_value_in_another_case_is_written_as_stored(small_db, llm, scripted_llm):
    scripted_llm.when(DECOMPOSER, decomposition(("French singers?", LOWER)))
    result = run(small_db, llm, "Which singers are from france?", refine_empty_result=False)
    check = result.events[-1]
    assert check.step == "final_check" and check.inputs["match_stored_case"] is True
    assert check.parsed["values"] == [["france", "France"]] and check.parsed.get("tables") is None
    assert result.final_sql == "SELECT name FROM singer WHERE country = 'France'"
    assert sorted(r[0] for r in result.result["rows"]) == ["Ana", "Cy"]
    assert FinalCheck.from_dict(check.parsed).text_lines()[0] == (
        "  'france' written as the column stores it: 'France'")
    assert [n.split(" (")[0] for n in check.notes] == ["rule 'Stored case'"]
    off = run(small_db, llm, "Which singers are from france?", refine_empty_result=False,
              match_stored_case=False)
    assert off.events[-1].step == "refiner" and off.final_sql == LOWER


@pytest.mark.parametrize("sql, mended", [
    # qualified, in IN lists, on either side, in a subquery, correlated to an outer alias
    ("SELECT T1.name FROM singer AS T1 WHERE T1.country IN ('france', 'chile')",
     "SELECT T1.name FROM singer AS T1 WHERE T1.country IN ('France', 'Chile')"),
    ("SELECT name FROM singer WHERE 'FRANCE' = country",
     "SELECT name FROM singer WHERE 'France' = country"),
    ("SELECT year FROM concert WHERE singer_id IN (SELECT singer_id FROM singer WHERE "
     "country = 'chile')", "SELECT year FROM concert WHERE singer_id IN (SELECT singer_id FROM "
     "singer WHERE country = 'Chile')"),
    ("SELECT T1.name FROM singer AS T1 WHERE EXISTS (SELECT 1 FROM concert AS T2 WHERE "
     "T2.singer_id = T1.singer_id AND T1.country = 'france')",
     "SELECT T1.name FROM singer AS T1 WHERE EXISTS(SELECT 1 FROM concert AS T2 WHERE "
     "T2.singer_id = T1.singer_id AND T1.country = 'France')"),
])
def test_stored_case_rewrites_compared_strings(small_db, sql, mended):
    found = stored_case(sql, small_db, small_db.schema, timeout=2)
    assert found is not None and found.sql == mended


@pytest.mark.parametrize("sql", [
    "SELECT name FROM singer WHERE country = 'France'",        # stored as written
    "SELECT name FROM singer WHERE country = 'Peru'",          # stored in no case
    "SELECT name FROM singer WHERE country LIKE 'france'",     # not an equality
    "SELECT name FROM singer WHERE country = ' France'",       # spaces are left as written
    "SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.singer_id = T2.singer_id "
    "WHERE singer_id = 'x'",                                   # a column of two tables
    "SELECT name FROM nowhere WHERE country = 'france'",       # an unknown table
    "SELECT name FROM singer WHERE",                           # not SQL it can read
    "",
])
def test_stored_case_leaves_the_rest_alone(small_db, sql):
    assert stored_case(sql, small_db, small_db.schema, timeout=2) is None


def test_two_stored_spellings_are_not_chosen_between(tmp_path):
    db = make_db(tmp_path, "two", "CREATE TABLE t (name TEXT); "
                 "INSERT INTO t VALUES ('Paris'), ('PARIS');")
    assert stored_case("SELECT * FROM t WHERE name = 'paris'", db, db.schema, timeout=2) is None


def test_runs_recorded_before_the_check_keep_their_sql():
    for name in ("macsql", "deasql", "r3", "csma", "selection"):
        pipeline = get_pipeline(name)
        for rule in ("drop_unread_joins", "drop_unread_from_table", "read_through_join_keys",
                     "drop_unrelated_part_joins", "match_stored_case"):
            assert pipeline.resolve_params({})[rule] is True
            assert pipeline.resolve_recorded({})[rule] is False
        assert pipeline.closing == "final_check"
    assert get_pipeline("baseline").closing is None  # the one prompt stays as written


@pytest.fixture
def world_db(tmp_path):
    return make_db(tmp_path, "world", TWO_APPLICATIONS_SQL)


ALL_RULES = {"drop_unread_joins": True, "drop_unread_from_table": True,
             "read_through_join_keys": True, "drop_unrelated_part_joins": True,
             "match_stored_case": True}


def test_a_named_table_of_an_unrelated_part_read_only_through_its_key_is_left_out(world_db):
    """"The continents Asia and Europe" names ``continents``, a cars schema's table that no key
    links to ``country``: the join on a continent name reads nothing of it but its key, and the
    values are then written as ``country`` stores them."""
    found = ending_for(ACROSS, world_db.schema, SURFACE, world_db, ALL_RULES, timeout=1,
                       max_rows=10)
    assert found is not None
    mended, result = found
    assert mended.sql == ("SELECT SUM(T2.SurfaceArea) FROM country AS T2 "
                          "WHERE T2.Continent IN ('Asia', 'Europe')")
    assert mended.tables == ["continents"] and mended.by_key == ["continents"]
    assert mended.values == [("asia", "Asia"), ("europe", "Europe")]
    assert result.rows == [(652090 + 41526,)]
    assert mended.apart == ["continents"]
    said = FinalCheck(sql_before=ACROSS, sql_after=mended.sql, tables=mended.tables,
                      by_key=mended.by_key, apart=mended.apart).changes()
    assert said == ["left out the join of continents: the question names it, but no foreign key "
                    "links it to the query's other tables (another application's table), and "
                    "nothing reads it but through its join (what was read of continents "
                    "through its join key is now read from the table it was joined to)"]
    # off, the question's word keeps the join (and the case rule finds nothing to mend in it)
    assert ending_for(ACROSS, world_db.schema, SURFACE, world_db,
                      {**ALL_RULES, "drop_unrelated_part_joins": False}, timeout=1,
                      max_rows=10) is None


def test_a_named_table_of_the_same_part_stays(world_db):
    same_part = ("SELECT T1.Name FROM country AS T1 JOIN city AS T2 ON T1.Code = T2.CountryCode "
                 "WHERE T1.Continent = 'Asia'")
    assert ending_for(same_part, world_db.schema, "Which countries of Asia have a city?",
                      world_db, ALL_RULES, timeout=1, max_rows=10) is None


def test_a_table_of_another_part_that_is_read_stays(world_db):
    read = ("SELECT T1.Continent, SUM(T2.SurfaceArea) FROM continents AS T1 JOIN country AS T2 "
            "ON T1.Continent = T2.Continent GROUP BY T1.ContId")
    assert ending_for(read, world_db.schema, "The surface area of each of the continents?",
                      world_db, ALL_RULES, timeout=1, max_rows=10) is None


class _Database:
    """Answers the final SQL and fails the version without the join."""

    def execute(self, sql, timeout, max_rows):
        if "JOIN" in sql:
            return ExecResult(ok=True, sql=sql, columns=["name"], rows=[("Ana",)], row_count=1)
        return ExecResult(ok=False, sql=sql, error="no such column: T2.x",
                          error_class="OperationalError")


BOTH = {"drop_unread_joins": True, "match_stored_case": True}


def test_a_version_that_does_not_run_is_not_ended_on(small_db):
    question = "Which singers are from France?"
    assert ending_for(JOINED, small_db.schema, question, _Database(), BOTH,
                      timeout=1, max_rows=10) is None
    found = ending_for(JOINED, small_db.schema, question, small_db, BOTH, timeout=1,
                       max_rows=10)
    assert found[0].sql == PLAIN and found[0].tables == ["concert"] and found[1].row_count == 2
    # a final SQL that fails is left to the pipeline: what it reads is not known
    failing = JOINED.replace("T1.name", "T1.nam")
    assert ending_for(failing, small_db.schema, question, small_db, BOTH, timeout=1,
                      max_rows=10) is None
    # both rules, one after the other; neither when both are off
    lower = JOINED.replace("'France'", "'france'")
    found = ending_for(lower, small_db.schema, question, small_db, BOTH, timeout=1, max_rows=10)
    assert found[0].sql == PLAIN and found[0].values == [("france", "France")]
    assert ending_for(lower, small_db.schema, question, small_db, {}, timeout=1,
                      max_rows=10) is None


def test_a_mended_sql_that_fails_is_not_ended_on(small_db, llm, scripted_llm, monkeypatch):
    """Should the mended version fail (here forced), the run keeps its SQL and says why."""
    from agents.rules import final_check

    broken = final_check.Mended(sql="SELECT nope FROM singer", tables=["concert"], by_key=[],
                                 values=[])
    monkeypatch.setattr(final_check, "mend", lambda *args, **kwargs: broken)
    scripted_llm.when(DECOMPOSER, decomposition(("French singers?", JOINED)))
    result = run(small_db, llm, "Which singers are from France?")
    check = result.events[-1]
    assert check.step == "final_check" and check.sql == JOINED
    assert check.parsed["kept"].startswith("the mended SQL fails (")
    assert result.final_sql == JOINED and result.result["ok"]
    assert FinalCheck.from_dict(check.parsed).text_lines()[0].startswith(
        "  kept as it was: the mended SQL fails")


def test_the_lookups_stop_when_their_budget_is_spent(small_db):
    sql = "SELECT name FROM singer WHERE country = 'france'"
    assert stored_case(sql, small_db, small_db.schema, timeout=2, budget=0) is None
    assert stored_case(sql, small_db, small_db.schema, timeout=2).values == [("france", "France")]


def test_the_bench_replay_and_the_recorded_reading_agree_with_the_run(tmp_path, llm,
                                                                     scripted_llm,
                                                                     monkeypatch):
    """``bench/final_checks.py``: a run recorded without the check, replayed, and one recorded
    with it, read back, give the same before and after."""
    import json
    import shutil

    from bench_scripts import bench_script

    final_checks = bench_script(monkeypatch, "final_checks")
    data = tmp_path / "spider"
    (data / "database" / "concerts").mkdir(parents=True)
    db = make_db(tmp_path, "concerts", SMALL_SQL)
    shutil.copy(db.path, data / "database" / "concerts" / "concerts.sqlite")
    scripted_llm.when(DECOMPOSER, decomposition(("French singers?", JOINED)))
    question, gold = "Which singers are from France?", PLAIN
    for name, params in (("without", {"drop_unread_joins": False}), ("with", {})):
        done = run(db, llm, question, **params)
        folder = tmp_path / name
        folder.mkdir()
        record = {"question_id": 1, "db_id": "concerts", "pipeline": "macsql",
                  "question": question, "gold_sql": gold, "pred_sql": done.final_sql,
                  "correct": done.final_sql == PLAIN, "run": done.to_dict()}
        (folder / "results.jsonl").write_text(json.dumps(record) + "\n")
    replayed = final_checks.measure("macsql", str(tmp_path / "without"), [], data, None,
                                    ["joins", "case"])
    read = final_checks.recorded("macsql", str(tmp_path / "with"), data, None)
    for report in (replayed, read):
        assert (report["ex_before"], report["ex_after"], report["fixed"]) == (0, 1, [1])
    assert replayed["rows"][0]["sql_after"] == read["rows"][0]["sql_after"] == PLAIN
    # both say which left-out tables the question named in another part: none here
    assert replayed["rows"][0]["apart"] == [] and not read["rows"][0]["apart"]


def test_the_bench_replay_names_the_left_out_table_of_another_part(tmp_path, world_db,
                                                                  monkeypatch):
    """``bench/final_checks.py``'s replay row says which left-out table the question named
    though it lies in another part, as the trace does."""
    import json
    import shutil

    from bench_scripts import bench_script

    final_checks = bench_script(monkeypatch, "final_checks")
    data = tmp_path / "spider"
    (data / "database" / "world").mkdir(parents=True)
    shutil.copy(world_db.path, data / "database" / "world" / "world.sqlite")
    gold = "SELECT SUM(SurfaceArea) FROM country WHERE Continent IN ('Asia', 'Europe')"
    folder = tmp_path / "runs"
    folder.mkdir()
    record = {"question_id": 1, "db_id": "world", "pipeline": "macsql", "question": SURFACE,
              "gold_sql": gold, "pred_sql": ACROSS, "correct": False,
              "run": {"status": "done", "events": []}}
    (folder / "results.jsonl").write_text(json.dumps(record) + "\n")
    report = final_checks.measure("macsql", str(folder), [], data, None, list(final_checks.RULES))
    [row] = report["rows"]
    assert (row["before"], row["after"]) == (False, True)
    assert row["tables"] == ["continents"] and row["apart"] == ["continents"]


def test_the_final_answer_rules_act_in_the_registry_s_order_and_only_where_listed(small_db):
    """The Final check calls the rules declared at the final-answer hook that the pipeline
    lists and its parameters turn on (``registry.acting_at``), joins before values."""
    from agents.rules import final_check
    from agents.rules.registry import FINAL_ANSWER, acting_at

    assert [r.name for r in acting_at(FINAL_ANSWER, ("match_stored_case", "drop_unread_joins",
                                                     "error_hints"), BOTH)] == [
        "drop_unread_joins", "match_stored_case"]
    assert acting_at(FINAL_ANSWER, ("drop_unread_joins",), {"drop_unread_joins": False}) == []
    question = "Which singers are from France?"
    lower = JOINED.replace("'France'", "'france'")
    both = final_check.mend(lower, small_db.schema, question, small_db, BOTH, timeout=1)
    assert both.sql == PLAIN and both.tables == ["concert"]
    joins_only = final_check.mend(lower, small_db.schema, question, small_db, BOTH, timeout=1,
                                  rules=("drop_unread_joins",))
    assert joins_only.values == [] and "'france'" in joins_only.sql
    assert final_check.mend(lower, small_db.schema, question, small_db, BOTH, timeout=1,
                            rules=("whole_part",)) is None


def test_a_rule_that_only_reports_is_called_at_the_hook_and_shown(small_db, monkeypatch):
    """A lint declared at the final-answer hook needs no change to the Final check: the
    registry calls it, its sentence is recorded and shown, and the SQL stays as it was."""
    import dataclasses

    from agents.rules import final_check, registry

    def says_so(sql, seen):
        return final_check.Mended(sql=sql, tables=[], by_key=[], values=[],
                                  notes=[("null_groups", "the leading group is NULL")])

    lint = registry.Rule("null_groups", "NULL group", registry.LINT, registry.FINAL_ANSWER,
                         "says when the leading group is NULL", "agents.rules.final_check",
                         switch="report_null_groups", acts="tests:says_so")
    monkeypatch.setattr(registry, "RULES", (*registry.RULES, lint))
    monkeypatch.setattr(final_check, "action", lambda r: says_so if r is lint else
                        registry.action(r))
    found = final_check.mend(PLAIN, small_db.schema, "Which singers are from France?", small_db,
                             {"report_null_groups": True}, timeout=1,
                             rules=("null_groups",))
    assert found.sql == PLAIN and found.notes == [("null_groups", "the leading group is NULL")]
    record = FinalCheck(sql_before=PLAIN, sql_after=found.sql,
                        notes=[list(n) for n in found.notes], rows=2)
    assert record.rules_acted() == ["null_groups"]
    assert record.changes() == ["the leading group is NULL"]
    assert FinalCheck.from_dict(dataclasses.asdict(record)).notes == record.notes
