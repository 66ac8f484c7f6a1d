"""DEA-SQL's question types, read off a query: does it join tables, does it nest queries?

DEA-SQL writes SQL with few-shot examples of the type it expects (EASY / JOIN / NESTED /
JOIN-NESTED), so every example in the bank carries the type of its SQL.
"""

from __future__ import annotations

import sqlglot
from sqlglot.tokens import TokenType

EASY, JOIN, NESTED, JOIN_NESTED = "EASY", "JOIN", "NESTED", "JOIN-NESTED"
QTYPES = (EASY, JOIN, NESTED, JOIN_NESTED)

_SET_OPS = {TokenType.UNION, TokenType.INTERSECT, TokenType.EXCEPT}
_FROM_ENDS = {TokenType.WHERE, TokenType.GROUP_BY, TokenType.ORDER_BY, TokenType.HAVING,
              TokenType.LIMIT, TokenType.UNION, TokenType.INTERSECT, TokenType.EXCEPT,
              TokenType.R_PAREN}
_TOKENIZER = sqlglot.Dialect.get_or_raise("sqlite").tokenizer_class()


def classify_sql(sql: str) -> str:
    """The DEA-SQL question type of ``sql``: does it join tables, does it nest queries?

    JOIN: a JOIN keyword or a comma between tables in a FROM clause. NESTED: a second SELECT
    (subquery) or a set operation (UNION / INTERSECT / EXCEPT). Uses sqlglot's tokenizer rather
    than its parser: the same answer on well-formed SQL at a fifth of the cost, and it still
    answers for SQL the parser rejects.
    """
    try:
        tokens = _TOKENIZER.tokenize(sql or "")
    except Exception:  # untokenizable text: fall back to keywords
        upper = f" {(sql or '').upper()} "
        join = " JOIN " in upper
        nested = upper.count("SELECT") > 1 or any(
            f" {op} " in upper for op in ("UNION", "INTERSECT", "EXCEPT"))
        return _qtype(join, nested)
    join = nested = False
    selects = 0
    depth = 0
    from_depth: list[int] = []  # parenthesis depths at which a FROM clause is open
    for tok in tokens:
        kind = tok.token_type
        if kind == TokenType.L_PAREN:
            depth += 1
            continue
        if kind == TokenType.R_PAREN:
            while from_depth and from_depth[-1] >= depth:
                from_depth.pop()
            depth -= 1
            continue
        if kind == TokenType.SELECT:
            selects += 1
        elif kind in _SET_OPS:
            nested = True
        elif kind == TokenType.JOIN:
            join = True
        elif kind == TokenType.FROM:
            from_depth.append(depth)
        elif kind in _FROM_ENDS and from_depth and from_depth[-1] == depth:
            from_depth.pop()
        elif kind == TokenType.COMMA and from_depth and from_depth[-1] == depth:
            join = True
    return _qtype(join, nested or selects > 1)


def _qtype(join: bool, nested: bool) -> str:
    if join and nested:
        return JOIN_NESTED
    return JOIN if join else (NESTED if nested else EASY)
