"""Why is the result empty, and what does the data hold instead?

"The query returned no rows" after a filter on a year the data does not cover reads as a bug.
When the final SQL returns nothing, each condition of its WHERE clause is left out in turn
(one bounded ``COUNT(*)`` each): a condition without which rows come back is the one that
emptied the result, and the column it filters is described -- the range a date or number
column holds, the stored values nearest a text it compared. Every query is read-only and the
whole explanation stops after a small time budget.
"""

from __future__ import annotations

import difflib
import re
import time

from sqlglot import exp

from agents.answer.sqlshape import (column_table, outer_select, sql_of,
    where_conditions)
from agents.db.identifiers import quote_identifier
from agents.db.sqltext import select_tables

BUDGET_SECONDS = 4.0
_MAX_CONDITIONS = 6
_DATE = re.compile(r"^\d{4}-\d{2}")


def _scalar(db, sql: str, timeout: float, max_rows: int = 50):
    """The rows of ``sql``, or None when it failed or ran out of time (nothing is known)."""
    result = db.execute(sql, timeout=timeout, max_rows=max_rows)
    return result.rows if result.ok else None


def explain_empty(sql: str, db, *, timeout: float, budget: float = BUDGET_SECONDS) -> dict | None:
    """``{"text", "conditions": [...]}`` saying which condition emptied ``sql``'s result and
    what its column holds, or None when no single condition can be named."""
    select = outer_select(sql)
    if select is None:
        return None
    deadline = time.monotonic() + budget
    if select.args.get("offset") is not None:
        whole = select.copy()
        whole.set("limit", None)
        whole.set("offset", None)
        rows = _scalar(db, f"SELECT COUNT(*) FROM ({sql_of(whole)})", min(timeout, budget))
        if rows and rows[0][0]:
            n = rows[0][0]
            return {"text": f"No rows: the OFFSET skips all {n:,} row{'s' if n != 1 else ''} "
                            "the query finds.", "conditions": []}
    conditions = where_conditions(select)[:_MAX_CONDITIONS]
    if not conditions:
        return None
    aliases = select_tables(select)
    found, unknown = [], 0
    for i, cond in enumerate(conditions):
        left = time.monotonic() - deadline
        if left >= 0:
            unknown += len(conditions) - i
            break
        others = [c for j, c in enumerate(conditions) if j != i]
        trial = select.copy()
        trial.set("where", None)
        if others:
            trial = trial.where(exp.and_(*[c.copy() for c in others]), copy=False)
        trial.set("order", None)
        trial.set("limit", None)
        trial.set("offset", None)
        rows = _scalar(db, f"SELECT COUNT(*) FROM ({sql_of(trial)})",
                       min(timeout, max(0.2, -left)))
        if rows is None:
            unknown += 1  # failed or timed out: this condition's part is not known
            continue
        if rows and rows[0][0]:
            entry = {"condition": sql_of(cond), "rows_without": int(rows[0][0])}
            entry.update(_holds(cond, aliases, db, timeout, deadline))
            found.append(entry)
    if not found and unknown:
        return None  # a trial could not be run: claim nothing
    if not found:
        if len(conditions) == 1:
            text = (f"No rows, even without `{sql_of(conditions[0])}`: the tables or their "
                    "joins hold none.")
        else:
            text = ("No single condition empties it: the conditions together, or the joins, "
                    "leave no rows.")
        return {"text": text, "conditions": []}
    parts = []
    for entry in found:
        sentence = (f"without `{entry['condition']}` the query returns "
                    f"{entry['rows_without']:,} rows")
        if entry.get("holds"):
            sentence += f"; {entry['holds']}"
        parts.append(sentence)
    return {"text": "No rows: " + "; ".join(parts) + ".", "conditions": found}


def _holds(cond, aliases, db, timeout: float, deadline: float) -> dict:
    """What the column a condition filters holds: its range, or the stored values nearest the
    text it compared with."""
    columns = list(cond.find_all(exp.Column))
    if not columns or time.monotonic() > deadline:
        return {}
    column = columns[0]
    table = column_table(column, aliases, db.schema)
    if table is None:
        return {}
    col, tab = quote_identifier(column.name), quote_identifier(table)
    seconds = min(timeout, max(0.2, deadline - time.monotonic()))
    rows = _scalar(db, f"SELECT MIN({col}), MAX({col}), COUNT(DISTINCT {col}) FROM {tab} "
                       f"WHERE {col} IS NOT NULL", seconds)
    if not rows or rows[0][2] in (None, 0):
        return {"column": f"{table}.{column.name}", "holds": f"{table}.{column.name} holds no "
                                                             "values"}
    low, high, distinct = rows[0]
    name = f"{table}.{column.name}"
    texts = [l.this for l in cond.find_all(exp.Literal) if l.is_string]
    numeric = isinstance(low, (int, float)) and isinstance(high, (int, float))
    if numeric or (isinstance(low, str) and _DATE.match(low) and _DATE.match(str(high))):
        return {"column": name, "low": low, "high": high,
                "holds": f"{name} holds values from {low} to {high}"}
    if texts and time.monotonic() < deadline:
        values = _scalar(db, f"SELECT DISTINCT {col} FROM {tab} WHERE {col} IS NOT NULL "
                             "LIMIT 5000", seconds, max_rows=5000) or []
        stored = [str(v[0]) for v in values]
        by_fold = {s.casefold(): s for s in stored}
        near = difflib.get_close_matches(texts[0].casefold(), list(by_fold), n=3, cutoff=0.5)
        if near:
            shown = ", ".join(repr(by_fold[n]) for n in near)
            return {"column": name, "nearest": [by_fold[n] for n in near],
                    "holds": f"the nearest values {name} holds are {shown}"}
        sample = ", ".join(repr(s) for s in stored[:3])
        return {"column": name, "holds": f"{name} holds {distinct:,} values such as {sample}"}
    return {"column": name, "holds": f"{name} holds values from {low!r} to {high!r}"}
