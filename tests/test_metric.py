"""Execution accuracy: result_eq on hand-built results, against a brute-force definition, and the
query normalisation and ORDER BY rule that decide what is compared."""

from __future__ import annotations

import itertools
import random
import time
from collections import Counter

import pytest

from agents.evaluation.metric import order_matters, result_eq, scoring_sql


# -- hand-built cases -----------------------------------------------------------------------------
def test_identical_results_are_equal():
    rows = [(1, "a"), (2, "b")]
    assert result_eq(rows, list(rows), order_matters=False)
    assert result_eq(rows, list(rows), order_matters=True)


def test_duplicates_count_as_a_multiset():
    assert result_eq([(1,), (1,), (2,)], [(2,), (1,), (1,)], order_matters=False)
    assert not result_eq([(1,), (1,), (2,)], [(1,), (2,), (2,)], order_matters=False)
    # the same set of rows but a different number of copies is a different answer
    assert not result_eq([(1,), (2,)], [(1,), (1,), (2,)], order_matters=False)


def test_row_order_ignored_without_order_by_and_enforced_with_it():
    gold, pred = [(1, "a"), (2, "b"), (3, "c")], [(3, "c"), (1, "a"), (2, "b")]
    assert result_eq(gold, pred, order_matters=False)
    assert not result_eq(gold, pred, order_matters=True)
    assert result_eq(gold, [(1, "a"), (2, "b"), (3, "c")], order_matters=True)


def test_column_permutation_is_allowed():
    gold = [(1, "a", 2.5), (2, "b", 3.5)]
    pred = [("a", 2.5, 1), ("b", 3.5, 2)]
    assert result_eq(gold, pred, order_matters=False)
    assert result_eq(gold, pred, order_matters=True)


def test_column_permutation_must_be_the_same_for_every_row():
    # each row alone is a permutation of the gold row, but no single column order fits both
    gold = [(1, 2), (3, 4)]
    pred = [(1, 2), (4, 3)]
    assert not result_eq(gold, pred, order_matters=False)


def test_nulls_compare_equal_to_nulls_only():
    assert result_eq([(None, 1), (2, None)], [(2, None), (None, 1)], order_matters=False)
    assert not result_eq([(None,)], [(0,)], order_matters=False)
    assert not result_eq([(None,)], [("",)], order_matters=False)


def test_int_and_float_follow_the_official_semantics():
    # single column: Python equality, so 1 == 1.0
    assert result_eq([(1,)], [(1.0,)], order_matters=False)
    assert result_eq([(1, "x")], [(1.0, "x")], order_matters=False)
    assert not result_eq([(1,)], [(1.5,)], order_matters=False)
    # the official quick rejection sorts each row's values by str(value) + type name; "10" and
    # "1.0" then sort in opposite orders, so this pair counts as different there -- and here
    assert not result_eq([(1, 10)], [(1.0, 10)], order_matters=False)


def test_text_is_not_a_number():
    assert not result_eq([(1,)], [("1",)], order_matters=False)


def test_two_empty_results_are_equal_even_with_different_columns():
    assert result_eq([], [], order_matters=False)
    assert result_eq([], [], order_matters=True)


def test_empty_gold_against_rows_and_rows_against_empty():
    assert not result_eq([], [(1,)], order_matters=False)
    assert not result_eq([(1,)], [], order_matters=False)


def test_different_column_counts_are_different():
    assert not result_eq([(1, 2)], [(1,)], order_matters=False)
    assert not result_eq([(1,)], [(1, 1)], order_matters=False)


def test_different_row_counts_are_different():
    assert not result_eq([(1,), (2,)], [(1,)], order_matters=False)


def test_rows_may_arrive_as_lists():
    assert result_eq([[1, "a"]], [("a", 1)], order_matters=False)


def test_identical_columns_do_not_blow_up_the_search():
    width = 9  # 9! = 362,880 orders, but all the predicted columns are interchangeable
    gold = [tuple([None] * (width - 1) + [i]) for i in range(50)]
    pred = [tuple([i] + [None] * (width - 1)) for i in range(50)]
    started = time.perf_counter()
    assert result_eq(gold, pred, order_matters=False)
    assert not result_eq(gold, pred[:-1] + [tuple([99] + [None] * (width - 1))],
                         order_matters=False)
    assert time.perf_counter() - started < 1.0


# -- against the definition -----------------------------------------------------------------------
def brute_force(gold, pred, ordered):
    """The definition, literally: some column permutation makes the rows equal."""
    if not gold and not pred:
        return True
    if len(gold) != len(pred) or len(gold[0]) != len(pred[0]):
        return False
    for perm in itertools.permutations(range(len(pred[0]))):
        permuted = [tuple(row[j] for j in perm) for row in pred]
        if (permuted == gold) if ordered else (Counter(permuted) == Counter(gold)):
            return True
    return False


def test_agrees_with_the_definition_on_random_tables():
    rng = random.Random(7)
    values = [None, 0, 1, 2, "a", "b", 2.5]  # no int/float pairs of equal value
    positives = 0
    for _ in range(3000):
        width = rng.randint(1, 4)
        height = rng.randint(0, 4)
        gold = [tuple(rng.choice(values) for _ in range(width)) for _ in range(height)]
        if rng.random() < 0.5 and gold:  # a shuffled, column-permuted copy, maybe perturbed
            perm = rng.sample(range(width), width)
            pred = [tuple(row[j] for j in perm) for row in gold]
            if rng.random() < 0.5:
                rng.shuffle(pred)
            if rng.random() < 0.3:
                i, j = rng.randrange(height), rng.randrange(width)
                row = list(pred[i])
                row[j] = rng.choice(values)
                pred[i] = tuple(row)
        else:
            w = width if rng.random() < 0.8 else rng.randint(1, 4)
            pred = [tuple(rng.choice(values) for _ in range(w)) for _ in range(height)]
        for ordered in (False, True):
            expected = brute_force(gold, pred, ordered)
            assert result_eq(gold, pred, ordered) == expected, (gold, pred, ordered)
            positives += expected
    assert positives > 500  # the sample exercised both verdicts


# -- what is compared -----------------------------------------------------------------------------
@pytest.mark.parametrize("sql, expected", [
    ("SELECT name FROM t ORDER BY age", True),
    ("select name from t order  by age desc limit 3", True),
    ("SELECT name FROM t", False),
    ("SELECT a FROM t UNION SELECT b FROM s ORDER BY 1", True),
    ("WITH x AS (SELECT a FROM t ORDER BY a) SELECT a FROM x", False),
    ("SELECT count(*) FROM t WHERE id = (SELECT id FROM s ORDER BY v DESC LIMIT 1)", False),
    ("SELECT name FROM t WHERE note = 'order by'", False),
    ("(SELECT a FROM t ORDER BY a)", True),
])
def test_order_matters_means_a_top_level_order_by(sql, expected):
    assert order_matters(sql) is expected


def test_order_matters_falls_back_to_the_text_when_sql_does_not_parse():
    assert order_matters("SELECT a FROM t WHERE ORDER BY b (") is True


def test_scoring_sql_removes_distinct_like_the_official_default():
    sql = "SELECT DISTINCT name, count(DISTINCT x) FROM t WHERE c = 'distinct' AND d > = 3"
    out = scoring_sql(sql)
    assert "distinct" not in out.lower().replace("'distinct'", "")
    assert "'distinct'" in out
    assert "d >= 3" in out
    assert scoring_sql(sql, keep_distinct=True).count("DISTINCT") == 2


def test_scoring_sql_replaces_the_mysql_current_year():
    assert scoring_sql("SELECT * FROM t WHERE y = YEAR(CURDATE())").strip().endswith("y = 2020")
