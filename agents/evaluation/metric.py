"""Execution accuracy (EX) with the test-suite semantics of Zhong et al. (2020).

A prediction is correct when some permutation of its columns makes its rows equal to the gold
rows as multisets; row order matters only when the gold query ends in ORDER BY; two empty results
are equal; different row or column counts are not. Published Spider numbers use exactly this
rule (taoyds/test-suite-sql-eval, ``exec_eval.result_eq``), so ours follow it verdict for verdict,
including two details that look odd but change scores:

- values are compared with Python equality, so ``1 == 1.0``; but the quick rejection step puts
  each row's values in a canonical order keyed by ``str(value) + str(type(value))``, so in a
  row of several values an int and the equal float can sort differently and the rows then
  count as different (single-column results are unaffected);
- before execution both queries are normalised as the official script does by default:
  ``> =`` style operators are joined and every DISTINCT keyword is removed
  (:func:`scoring_sql`), so ``SELECT DISTINCT`` vs ``SELECT`` is not held against a prediction.

Deviation, on purpose: row order matters only for a *top-level* ORDER BY of the gold query. The
official script tests for the substring "order by" anywhere, which also fires for an ORDER BY
inside a subquery (``WHERE x = (SELECT ... ORDER BY ... LIMIT 1)``) where it says nothing about
the order of the output rows. On Spider dev this concerns 6 questions, of which 2 return several
rows.

The search over column permutations is pruned before any permutation is tried: the row counts
and widths must agree, the rows must agree as canonical (column-order-free) rows, and a gold
column may only be matched with a predicted column holding the same multiset of values (the same
sequence, when order matters). Predicted columns that are identical are interchangeable, so only
one of their orderings is tried.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Iterable, Iterator, Sequence

import sqlglot
import sqlparse
from sqlglot import exp

Row = tuple


def result_eq(gold_rows: Iterable[Sequence[Any]], pred_rows: Iterable[Sequence[Any]],
              order_matters: bool) -> bool:
    """True when the predicted rows denote the same result as the gold rows (see module doc)."""
    gold = [tuple(r) for r in gold_rows]
    pred = [tuple(r) for r in pred_rows]
    if not gold and not pred:
        return True
    if len(gold) != len(pred):
        return False
    width = len(gold[0])
    if len(pred[0]) != width:
        return False
    if not _canonical_rows_agree(gold, pred, order_matters):
        return False

    gold_columns = list(zip(*gold))
    pred_columns = list(zip(*pred))
    # Interchangeable predicted columns (identical value sequences) form one class.
    classes: dict[tuple, list[int]] = {}
    for j, column in enumerate(pred_columns):
        classes.setdefault(column, []).append(j)
    class_keys = list(classes)
    if order_matters:
        candidates = [[k for k, key in enumerate(class_keys) if key == gold_columns[i]]
                      for i in range(width)]
    else:
        class_bags = [Counter(key) for key in class_keys]
        candidates = []
        for column in gold_columns:
            bag = Counter(column)
            candidates.append([k for k, other in enumerate(class_bags) if other == bag])
    if any(not c for c in candidates):
        return False

    if order_matters:
        # Every candidate column equals its gold column as a sequence, so any complete
        # assignment reproduces the gold rows exactly.
        return next(_assignments(candidates, [len(classes[k]) for k in class_keys]), None) \
            is not None
    gold_bag = Counter(gold)
    for assignment in _assignments(candidates, [len(classes[k]) for k in class_keys]):
        perm = _to_permutation(assignment, [classes[k] for k in class_keys])
        permuted = Counter(tuple(row[j] for j in perm) for row in pred)
        if permuted == gold_bag:
            return True
    return False


def order_matters(gold_sql: str) -> bool:
    """True when the gold query sorts its output (a top-level ORDER BY)."""
    try:
        tree = sqlglot.parse_one(gold_sql, read="sqlite")
    except sqlglot.errors.SqlglotError:
        return re.search(r"\border\s+by\b", gold_sql, re.IGNORECASE) is not None
    while isinstance(tree, (exp.Subquery, exp.Paren)) and tree.args.get("order") is None:
        tree = tree.this
    return tree is not None and tree.args.get("order") is not None


def scoring_sql(sql: str, keep_distinct: bool = False) -> str:
    """The query text that is executed for scoring, normalised as the official script does.

    Spaced comparison operators (``> =``) are joined, a MySQL ``YEAR(CURDATE())`` becomes 2020,
    and unless ``keep_distinct`` every DISTINCT keyword is dropped (string literals are kept).
    """
    text = sql.replace("> =", ">=").replace("< =", "<=").replace("! =", "!=")
    text = re.sub(r"YEAR\s*\(\s*CURDATE\s*\(\s*\)\s*\)\s*", "2020", text, flags=re.IGNORECASE)
    if keep_distinct or "distinct" not in text.lower():
        return text
    statements = sqlparse.parse(text)
    if not statements:
        return text
    tokens = statements[0].flatten()
    return "".join(t.value for t in tokens
                   if not (t.ttype in sqlparse.tokens.Keyword and t.value.lower() == "distinct"))


def _canonical_row(row: Row) -> Row:
    return tuple(sorted(row, key=lambda v: str(v) + str(type(v))))


def _canonical_rows_agree(gold: list[Row], pred: list[Row], order_matters: bool) -> bool:
    """The official quick rejection: rows compared with their values in a canonical order."""
    g = [_canonical_row(r) for r in gold]
    p = [_canonical_row(r) for r in pred]
    return g == p if order_matters else set(g) == set(p)


def _assignments(candidates: list[list[int]], capacity: list[int]) -> Iterator[list[int]]:
    """Each way to give every gold column a class, using a class at most ``capacity`` times."""
    used = [0] * len(capacity)
    chosen: list[int] = []
    # Most constrained gold columns first, so dead ends show up early.
    order = sorted(range(len(candidates)), key=lambda i: len(candidates[i]))

    def walk(depth: int) -> Iterator[list[int]]:
        if depth == len(order):
            assignment = [0] * len(candidates)
            for pos, k in zip(order, chosen):
                assignment[pos] = k
            yield assignment
            return
        for k in candidates[order[depth]]:
            if used[k] < capacity[k]:
                used[k] += 1
                chosen.append(k)
                yield from walk(depth + 1)
                chosen.pop()
                used[k] -= 1

    return walk(0)


def _to_permutation(assignment: list[int], members: list[list[int]]) -> list[int]:
    """Turn 'gold column i takes class k' into 'gold column i takes predicted column j'."""
    taken = [0] * len(members)
    perm = []
    for k in assignment:
        perm.append(members[k][taken[k]])
        taken[k] += 1
    return perm
