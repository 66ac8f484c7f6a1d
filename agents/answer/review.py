"""The review of a run's final answer, made by the engine when every run ends.

It gathers what :mod:`agents.answer` can say about the answer into one plain dict stored on
the run (``Run.review``), which the pages, the CLI, the exports and the evaluation read:

- ``answerable``: False where the database cannot answer the question, with ``statement``
  (from the answerability check before the run, or the final SQL -- a constant, a table like
  none of the database's -- for a question whose words name nothing of the database);
- ``notes``: each ``{"rule", "text"}`` a check found, the rule named as in the registry, so
  the trace says which rule spoke and why;
- ``expected``: the shape the question asks for; ``doubt``: why the result may not answer
  the question (its shape, a sum over a join that repeats rows, a NULL group on top, a unit
  not converted);
- ``empty``: why an empty result is empty; ``behind``: the values behind the rows.

A review that cannot be made is left out: it never fails a run or changes its SQL.
"""

from __future__ import annotations

import time

from agents.answer.answerability import unanswerable_sql, unrelated_question
from agents.answer.behind import numbers_behind
from agents.answer.empty_result import explain_empty
from agents.answer.fanout import fanout_doubt
from agents.answer.null_group import null_group_doubt
from agents.answer.units import unit_doubt
from agents.answer.shape import expected_shape, shape_doubt
from agents.answer.sqlshape import column_table, group_columns, outer_select
from agents.answer.words import names_word, stem
from agents.db.identifiers import quote_identifier
from agents.db.sqltext import select_tables

QUERY_SECONDS = 2.0  # any one query of the review, at most
BUDGET_SECONDS = 6.0  # the whole review: a check not begun by then is left out
DOUBTS = ("result_shape", "fanout_sum", "null_group", "unit_mismatch")  # rules that doubt


def review_answer(question: str, sql: str | None, result: dict | None, db, limits, *,
                  checked: dict | None = None, evidence: str = "") -> dict:
    """What the studio says about ``sql``'s ``result`` as an answer to ``question``;
    ``checked`` is what the answerability check found before the run, if it ran."""
    try:
        return _review(question, sql, result, db, limits, checked, evidence)
    except Exception:  # noqa: BLE001 -- a review is a courtesy: never fail the run over it
        return {}


def _review(question, sql, result, db, limits, checked, evidence) -> dict:
    if checked and checked.get("answerable") is False:
        return _refusal(checked.get("statement") or "This database cannot answer it.")
    if not sql:
        return {}
    schema = db.schema
    deadline = time.monotonic() + BUDGET_SECONDS
    refused = None
    if not (checked and checked.get("answerable")) and not (evidence or "").strip():
        # the model was not asked (or said nothing) and no evidence speaks for the question
        refused = unanswerable_sql(question, sql, result, schema)
    if refused is not None and unrelated_question(question, schema, db) is not None:
        # the SQL found nothing, and the question's words name nothing of the database: a
        # table a writer made up for a question that does name the data is a failing query
        return _refusal(refused.statement(), reason=refused.reason)
    review: dict = {"answerable": True, "notes": []}
    if not result or not result.get("ok"):
        return review
    timeout = min(float(getattr(limits, "timeout", QUERY_SECONDS)), QUERY_SECONDS)
    expected = expected_shape(question)
    if expected is not None:
        review["expected"] = expected.to_dict()
        count, row_table = (None, None)
        if expected.kind == "per":
            count, row_table = _groups(expected.word, sql, db, timeout)
        doubt = shape_doubt(expected, result, group_count=count, row_table=row_table)
        if doubt:
            review["notes"].append({"rule": "result_shape", "text": doubt})
    for name, found in lint_doubts(question, sql, result, db, timeout=timeout,
                                   deadline=deadline):
        review["notes"].append({"rule": name, "text": found})
    doubts = [n["text"] for n in review["notes"] if n["rule"] in DOUBTS]
    if doubts:
        review["doubt"] = "; ".join(doubts)
    if time.monotonic() > deadline:
        return review  # the review's budget is spent: what it found so far stands
    if not result.get("row_count"):
        empty = explain_empty(sql, db, timeout=timeout,
                              budget=max(0.5, deadline - time.monotonic()))
        if empty:
            review["empty"] = empty
            review["notes"].append({"rule": "empty_result", "text": empty["text"]})
    else:
        behind = numbers_behind(sql, result, db, timeout=timeout)
        if behind:
            review["behind"] = behind
            review["notes"].append({"rule": "numbers_behind",
                                    "text": "shown beside the rows: " + ", ".join(
                                        behind["added"])})
    return review


def lint_doubts(question: str, sql: str, result: dict, db, *, timeout: float,
                deadline: float | None = None):
    """Each ``(rule, why)`` of the lints that doubt a result which ran -- a NULL group on top, a
    unit not converted, a sum over repeated rows -- in that order, the cheap ones first; a
    lint not begun by ``deadline`` (a ``time.monotonic()``) ends the list. The review reports
    them; the ``selection`` vote's ``doubt_last`` sets doubted candidates aside."""
    for name, doubt in (("null_group", lambda: null_group_doubt(sql, result)),
                        ("unit_mismatch", lambda: unit_doubt(question, sql)),
                        ("fanout_sum", lambda: fanout_doubt(sql, db, timeout=timeout))):
        if deadline is not None and time.monotonic() >= deadline:
            return
        found = doubt()
        if found:
            yield name, found


def _refusal(statement: str, reason: str = "question") -> dict:
    return {"answerable": False, "statement": statement,
            "notes": [{"rule": "answerability", "text": statement}], "reason": reason}


def _groups(word: str, sql: str, db, timeout: float) -> tuple[int | None, str | None]:
    """How many different ``word`` groups the database holds (a table named by the word: its
    rows; a column: its distinct values, a NULL group counted), the largest reading, and the
    table the result has a row of (its first GROUP BY column's)."""
    select = outer_select(sql)
    if select is None:
        return None, None
    schema, word_stem = db.schema, stem(word)
    aliases = select_tables(select)
    row_table = None
    grouped = group_columns(select)
    if grouped:
        row_table = column_table(grouped[0], aliases, schema)
    counts = []
    deadline = time.monotonic() + 2 * timeout
    for table in schema.tables:
        if time.monotonic() > deadline:
            break
        if names_word(table.name, word_stem):
            counts.append(_count(db, f"SELECT COUNT(*) FROM {quote_identifier(table.name)}",
                                 timeout))
        for column in table.columns:
            if names_word(column.name, word_stem) and not column.name.casefold().endswith("id"):
                c, t = quote_identifier(column.name), quote_identifier(table.name)
                counts.append(_count(db, f"SELECT COUNT(DISTINCT {c}) + MAX({c} IS NULL) "
                                         f"FROM {t}", timeout))
    counts = [c for c in counts if c is not None]
    return (max(counts) if counts else None), row_table


def _count(db, sql: str, timeout: float) -> int | None:
    result = db.execute(sql, timeout=timeout, max_rows=1)
    if not result.ok or not result.rows or result.rows[0][0] is None:
        return None
    return int(result.rows[0][0])
