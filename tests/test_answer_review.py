"""The review of an answer: whether the database can answer the question, a result that does
not fit the question's shape, an empty result explained, the numbers behind the rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.answer.answerability import unanswerable_sql, unrelated_question
from agents.answer.shape import expected_shape, limited_to
from agents.core.engine import ExecLimits, run_to_end, start_run
from agents.core.outcome import (DONE_DOUBTFUL, DONE_EMPTY, DONE_RUNS, NOT_ANSWERABLE,
    run_outcome)
from agents.db.database import open_database
from agents.pipelines import get_pipeline
from agents.runs.textview import render_outcome

BASELINE = get_pipeline("baseline")
QUESTIONS = json.loads((Path(__file__).parent / "answerability_questions.json").read_text())


@pytest.fixture(scope="module")
def shop(sample_dbs):
    database = open_database(sample_dbs / "shop.sqlite")
    yield database
    database.close()


def sql_reply(sql: str) -> str:
    return f"```sql\n{sql}\n```"


# -- answerability --------------------------------------------------------------------------

def test_an_unrelated_question_ends_with_a_statement_and_no_sql(shop, llm, scripted_llm,
                                                                answerability_on):
    scripted_llm.push("no")
    run = run_to_end(start_run(BASELINE, "how many dinosaurs are there", shop, llm))
    assert [e.step for e in run.events] == ["answerability"]
    assert run.final_sql is None and run.status == "done"
    assert run_outcome(run) == NOT_ANSWERABLE
    assert run.review["statement"].startswith("This database has no data about dinosaurs: "
                                              "its tables are about categories, products")
    assert run.events[0].parsed["answerable"] is False
    text = "\n".join(render_outcome(run, 10))
    assert "no data about dinosaurs" in text and "Final SQL" not in text
    assert len(scripted_llm.requests) == 1


def test_the_models_yes_lets_a_question_in_other_words_through(shop, llm, scripted_llm,
                                                               answerability_on):
    scripted_llm.push("yes", sql_reply("SELECT COUNT(*) FROM customers"))
    run = run_to_end(start_run(BASELINE, "how many shoppers signed up", shop, llm))
    assert [e.step for e in run.events][:1] == ["answerability"]
    assert run.events[0].parsed["answerable"] is True
    assert run.final_sql and run_outcome(run) == DONE_RUNS


def test_a_question_naming_the_schema_makes_no_extra_call(shop, llm, scripted_llm,
                                                          answerability_on):
    scripted_llm.push(sql_reply("SELECT COUNT(*) FROM products"))
    run = run_to_end(start_run(BASELINE, "How many products are there?", shop, llm))
    assert "answerability" not in [e.step for e in run.events]
    assert len(scripted_llm.requests) == 1


@pytest.mark.parametrize("item", QUESTIONS["unanswerable"][:4], ids=lambda q: q["question"])
def test_the_word_look_flags_the_written_unanswerable_questions(sample_dbs, item):
    with open_database(sample_dbs / f"{item['db']}.sqlite") as database:
        assert unrelated_question(item["question"], database.schema, database) is not None


def test_names_numbers_and_evidence_keep_a_question_answerable(shop):
    assert unrelated_question("How many Zorblax are there?", shop.schema, shop) is None
    assert unrelated_question("how many over 1950", shop.schema, shop) is None
    # a word found inside a stored value (a segment, a status) relates the question
    value = shop.execute("SELECT segment FROM customers LIMIT 1", timeout=5,
                         max_rows=1).rows[0][0]
    assert unrelated_question(f"how many {value.lower()} shoppers", shop.schema, shop) is None


def test_a_failing_check_lets_the_pipeline_answer(shop, llm, scripted_llm,
                                                  answerability_on):
    scripted_llm.push({"status": 400, "error": "bad request"},
                      sql_reply("SELECT COUNT(*) FROM customers"))
    run = run_to_end(start_run(BASELINE, "how many shoppers signed up", shop, llm))
    assert run.status == "done" and run.final_sql
    assert run.events[0].step == "answerability" and run.events[0].parsed["answerable"]
    assert "could not be asked" in run.events[0].parsed["reply"]


def test_the_check_is_off_when_turned_off(shop, llm, scripted_llm):
    scripted_llm.push(sql_reply("SELECT COUNT(*) FROM customers"))
    run = run_to_end(start_run(BASELINE, "how many dinosaurs are there", shop, llm))
    assert "answerability" not in [e.step for e in run.events]


def test_constant_sql_and_a_missing_table_are_not_answers(shop):
    constant = {"ok": True, "row_count": 1, "rows": [["life"]], "columns": ["answer"]}
    found = unanswerable_sql("what is the meaning of life", "SELECT 'life' AS answer",
                             constant, shop.schema)
    assert found is not None and found.reason == "constant"
    failed = {"ok": False, "error": "no such table: dinosaur"}
    assert unanswerable_sql("how many dinosaurs", "SELECT COUNT(*) FROM dinosaur", failed,
                            shop.schema).reason == "missing table"
    # a misspelt table of the database is a name error, not an unanswerable question
    assert unanswerable_sql("how many products", "SELECT COUNT(*) FROM prodcts",
                            {"ok": False, "error": "no such table: prodcts"},
                            shop.schema) is None


def test_constant_sql_run_is_labelled_not_answerable(shop, llm, scripted_llm):
    scripted_llm.push(sql_reply("SELECT 'The meaning of life' AS answer"))
    run = run_to_end(start_run(BASELINE, "what is the meaning of life", shop, llm,
                               answer_checks=False))
    assert run_outcome(run) == NOT_ANSWERABLE
    assert "no data about meaning, life" in run.review["statement"]


# -- the result's shape ------------------------------------------------------------------------

@pytest.mark.parametrize("question, kind", [
    ("How many singers are there?", "one"),
    ("What is the total revenue?", "one"),
    ("How many singers are from each country?", "per"),
    ("What is the revenue per category?", "per"),
    ("Show the top 5 customers by spend", "top"),
    ("Which three most expensive products?", "top"),
    ("List the 3 most expensive products", "top"),
    ("What is the maximum price for all the different categories?", None),
    ("Which products are on sale?", None),
    # a number that does not count the answer's rows, a listing per group
    ("List the first 3 characters of all track names", None),
    ("Show the top 10% of invoices", None),
    ("Which tracks are in the 2 most popular genres?", None),
    ("For each genre, list its tracks.", None),
    ("How many tracks per genre per year?", None),
])
def test_expected_shape_reads_the_question(question, kind):
    found = expected_shape(question)
    assert (found.kind if found else None) == kind


def test_a_per_group_question_answered_per_item_is_doubtful(shop, llm, scripted_llm):
    per_item = ("SELECT p.name, SUM(oi.quantity * oi.unit_price) AS revenue FROM products p "
                "JOIN categories c ON c.category_id = p.category_id JOIN order_items oi ON "
                "oi.product_id = p.product_id GROUP BY p.product_id")
    scripted_llm.push(sql_reply(per_item))
    run = run_to_end(start_run(BASELINE, "What is the revenue per category?", shop, llm))
    assert run_outcome(run) == DONE_DOUBTFUL
    assert "the question asks per category; the result has a row per product" in \
        run.review["doubt"]
    assert any(n["rule"] == "result_shape" for n in run.review["notes"])


def test_one_value_asked_many_rows_given_is_doubtful(shop, llm, scripted_llm):
    scripted_llm.push(sql_reply("SELECT COUNT(*) FROM orders GROUP BY status"))
    run = run_to_end(start_run(BASELINE, "How many orders are there?", shop, llm))
    assert run_outcome(run) == DONE_DOUBTFUL
    assert run.review["doubt"].startswith("the question asks for one value")


def test_a_top_k_answer_with_more_rows_is_offered_a_limit(shop, llm, scripted_llm):
    sql = "SELECT name FROM products ORDER BY price DESC LIMIT 5"
    scripted_llm.push(sql_reply(sql))
    run = run_to_end(start_run(BASELINE, "List the 3 most expensive products", shop, llm))
    assert run_outcome(run) == DONE_DOUBTFUL
    assert "top 3" in run.review["doubt"]
    fixed = limited_to(sql, 3)
    assert fixed.endswith("LIMIT 3")
    assert shop.execute(fixed, timeout=5, max_rows=10).row_count == 3


# -- an empty result, and the numbers behind the rows -----------------------------------------

def test_an_empty_result_on_a_date_filter_says_what_the_data_holds(shop, llm, scripted_llm):
    scripted_llm.push(sql_reply("SELECT order_id FROM orders WHERE strftime('%Y', order_date) "
                                "= '1999' AND status = 'delivered'"))
    run = run_to_end(start_run(BASELINE, "Which orders were delivered in 1999?", shop, llm))
    assert run_outcome(run) == DONE_EMPTY
    empty = run.review["empty"]
    assert "STRFTIME('%Y', order_date) = '1999'" in empty["text"]
    low, high = shop.execute("SELECT MIN(order_date), MAX(order_date) FROM orders", timeout=5,
                             max_rows=1).rows[0]
    assert f"orders.order_date holds values from {low} to {high}" in empty["text"]
    assert [c["condition"] for c in empty["conditions"]] == [
        "STRFTIME('%Y', order_date) = '1999'"]


def test_an_empty_text_filter_names_the_nearest_stored_values(shop):
    from agents.answer.empty_result import explain_empty
    status = shop.execute("SELECT status FROM orders LIMIT 1", timeout=5, max_rows=1).rows[0][0]
    found = explain_empty(f"SELECT * FROM orders WHERE status = '{status[:-1]}x'", shop,
                          timeout=5)
    assert repr(status) in found["text"] and found["conditions"][0]["nearest"][0] == status


def test_a_top_k_shows_its_ordering_value_beside_the_rows(shop, llm, scripted_llm):
    sql = ("SELECT c.name FROM categories c JOIN products p ON p.category_id = c.category_id "
           "GROUP BY c.category_id ORDER BY COUNT(*) DESC LIMIT 3")
    scripted_llm.push(sql_reply(sql))
    run = run_to_end(start_run(BASELINE, "Which 3 categories have the most products?", shop,
                               llm))
    behind = run.review["behind"]
    assert behind["added"] == ["COUNT(*)"] and behind["columns"] == ["name", "COUNT(*)"]
    counts = [row[1] for row in behind["rows"]]
    assert counts == sorted(counts, reverse=True) and len(counts) == 3
    # the answer itself, and what is scored, stay the run's own
    assert run.final_sql == sql and run.result["columns"] == ["name"]
    text = "\n".join(render_outcome(run, 10))
    assert "COUNT(*): shown beside the answer's columns" in text


def test_a_review_that_cannot_be_made_never_fails_the_run(shop):
    from agents.answer.review import review_answer
    review = review_answer("How many?", "SELEC nonsense", {"ok": True, "row_count": 0}, shop,
                           ExecLimits())
    assert review["answerable"] is True and review["notes"] == []


# -- sums over repeating joins, NULL groups on top, units not converted ------------------------

def test_a_sum_through_a_join_that_repeats_rows_is_doubtful(shop):
    from agents.answer.fanout import fanout_doubt
    repeated = ("SELECT SUM(o.shipping_fee) FROM orders o JOIN order_items i "
                "ON i.order_id = o.order_id WHERE i.quantity > 1")
    found = fanout_doubt(repeated, shop, timeout=5)
    assert found.startswith("SUM(shipping_fee) counts each orders row once for every "
                            "order_items row")
    # the many side's own column, or a grouping by its key, is not repeated
    assert fanout_doubt("SELECT SUM(i.quantity) FROM orders o JOIN order_items i "
                        "ON i.order_id = o.order_id", shop, timeout=5) is None
    assert fanout_doubt("SELECT i.order_item_id, SUM(o.shipping_fee) FROM orders o JOIN "
                        "order_items i ON i.order_id = o.order_id GROUP BY i.order_item_id",
                        shop, timeout=5) is None


def test_a_ranking_whose_top_group_is_null_is_doubtful():
    from agents.answer.null_group import null_group_doubt
    sql = ("SELECT department_id, COUNT(*) FROM employees GROUP BY department_id "
           "ORDER BY COUNT(*) DESC LIMIT 1")
    top_null = {"ok": True, "columns": ["department_id", "COUNT(*)"], "rows": [[None, 12]]}
    assert "without a department_id (NULL)" in null_group_doubt(sql, top_null)
    named = {"ok": True, "columns": ["department_id", "COUNT(*)"], "rows": [[3, 9]]}
    assert null_group_doubt(sql, named) is None


@pytest.mark.parametrize("question, sql, doubtful", [
    ("Which tracks are longer than 5 minutes?", "SELECT name FROM t WHERE duration_ms > 5",
     True),
    ("Which tracks are longer than 5 minutes?",
     "SELECT name FROM t WHERE duration_ms > 300000", False),
    ("Total hours per project?", "SELECT p, SUM(duration_ms) FROM t GROUP BY p", True),
    ("Total hours per project?", "SELECT p, SUM(duration_ms) / 3600000.0 FROM t GROUP BY p",
     False),
    ("Which project has the most hours?",
     "SELECT p FROM t GROUP BY p ORDER BY SUM(duration_ms) DESC LIMIT 1", False),
    ("Which jobs pay above 90,000 euros?", "SELECT j FROM jobs WHERE max_cents > 90000", True),
    ("Which jobs pay the most?", "SELECT j FROM jobs ORDER BY max_salary_cents DESC", False),
    ("What is the min track length?", "SELECT MIN(Milliseconds) FROM t", False),
    ("Which file is the largest in megabytes?", "SELECT name, SizeKB FROM files", True),
])
def test_a_unit_the_sql_does_not_convert_is_doubtful(question, sql, doubtful):
    from agents.answer.units import unit_doubt
    assert (unit_doubt(question, sql) is not None) == doubtful


# -- the real model ------------------------------------------------------------------------------

@pytest.mark.real_model
def test_the_embedded_model_refuses_an_unrelated_question_and_answers_a_related_one(
        shop, real_llm, answerability_on):
    refused = run_to_end(start_run(BASELINE, "how many dinosaurs are there", shop, real_llm))
    assert run_outcome(refused) == NOT_ANSWERABLE and refused.final_sql is None
    assert len(refused.events) == 1 and len(refused.events[0].calls) == 1
    kept = run_to_end(start_run(BASELINE, "how many shoppers signed up", shop, real_llm))
    assert kept.events[0].step == "answerability" and kept.events[0].parsed["answerable"]
    assert kept.final_sql and kept.status == "done"


@pytest.mark.parametrize("reply, answerable", [
    ("yes", True), ("Yes.", True), ("no", False), ("No, it holds shop data", False),
    ("Not sure", True), ("I cannot tell from this", False), ("can't", False), ("", True)])
def test_only_a_clear_no_refuses(reply, answerable):
    from agents.answer.opening import parse_verdict
    assert parse_verdict(reply) is answerable


def test_the_models_yes_and_evidence_keep_a_failing_query_a_failing_query(shop):
    from agents.answer.review import review_answer
    failed = {"ok": False, "error": "no such table: dinosaur"}
    sql = "SELECT COUNT(*) FROM dinosaur"
    assert review_answer("how many dinosaurs", sql, failed, shop,
                         ExecLimits())["answerable"] is False
    assert review_answer("how many dinosaurs", sql, failed, shop, ExecLimits(),
                         checked={"answerable": True})["answerable"] is True
    assert review_answer("how many dinosaurs", sql, failed, shop, ExecLimits(),
                         evidence="dinosaurs are products")["answerable"] is True


def test_an_offset_that_skips_every_row_is_named(shop):
    from agents.answer.empty_result import explain_empty
    found = explain_empty("SELECT name FROM categories WHERE category_id = 1 LIMIT 1 OFFSET 5",
                          shop, timeout=5)
    assert found["text"] == "No rows: the OFFSET skips all 1 row the query finds."
