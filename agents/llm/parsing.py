"""Getting JSON and SQL out of model text, which is rarely exactly in the requested format.

Small models wrap answers in prose, put them in Markdown fences (or forget to close them when
the token limit cuts them off), leave trailing commas, use Python-style quotes and end SQL with
semicolons and comments. These functions accept all of that, repair only what cannot change the
meaning, and otherwise raise :class:`~agents.core.engine.ParseError` with a message that says what was
wrong -- the engine feeds that message back to the model for one more try.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agents.core.engine import ParseError

# ```lang\n body ``` ; an unclosed fence runs to the end of the text (a cut-off answer).
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[^\n`]*?(?:\n|(?=[ \t]))(.*?)(?:```|\Z)",
                    re.DOTALL)
_SQL_TAGS = ("sql", "sqlite", "sqlite3", "postgresql", "mysql", "tsql", "plsql")
_SQL_START = re.compile(r"(?i)^\s*(select|with)\b")
_STATEMENT_START = re.compile(r"(?im)(?:^|(?<=[:>]))[ \t]*(select|with)\b(?=[\s(*])")
_INLINE_START = re.compile(r"\b(SELECT|WITH)\b(?=[\s(*])")  # upper case only, mid-sentence
# What a model puts in a ```sql block that it has nothing to write in (an answer format asked
# for a further step "only if needed"): not a statement, so never taken as the answer's SQL.
_PLACEHOLDER = re.compile(r"(?i)^(none|null|n/?a|nothing|empty|-+|\.{3}|…|<\s*sql\s*>)\.?$")
_SQL_KEYWORDS = frozenset("""
select from where group by order having limit offset join inner left right outer cross natural
on using union intersect except all distinct as and or not in is null like glob between case
when then else end exists with recursive asc desc count sum avg min max cast values collate
""".split())


# -- fences -----------------------------------------------------------------------------------
def _fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(language tag in lower case, body) of every Markdown code fence, in order."""
    blocks = []
    for match in _FENCE.finditer(text):
        tag, body = match.group(1), match.group(2)
        if tag.lower() in ("select", "with"):  # "```SELECT ...```": no tag, the SQL itself
            body, tag = match.group(0)[3:].lstrip(), ""
            body = body[:-3] if body.endswith("```") else body
        blocks.append((tag.lower(), body.strip()))
    return blocks


# -- JSON -------------------------------------------------------------------------------------
def extract_json(text: str) -> dict | list:
    """The JSON object or array in a model answer.

    Looks, in order, at fenced ``json`` blocks (the last one that parses wins, as models
    correct themselves), other fenced blocks, the whole text, and finally the first balanced
    ``{...}``/``[...]`` in the prose. Trailing commas, single-quoted strings and Python's
    True/False/None are repaired when the result then parses.
    """
    if text is None or not str(text).strip():
        raise ParseError("the answer is empty; expected a JSON object")
    text = str(text)
    blocks = _fenced_blocks(text)
    json_tags = ("json", "json5", "javascript", "js")
    candidates = [body for tag, body in reversed(blocks) if tag in json_tags]
    candidates += [body for tag, body in reversed(blocks) if tag not in json_tags]
    candidates += [text.strip(), *_balanced_spans(text)]
    errors = []
    for candidate in candidates:
        value, error = _parse_json_candidate(candidate)
        if value is not None:
            return value
        if error:
            errors.append(error)
    if errors:
        raise ParseError(f"the JSON in the answer is invalid: {errors[0]}")
    if "{" in text:
        raise ParseError("the JSON object in the answer is incomplete: its braces do not "
                         "balance (was the answer cut off?)")
    raise ParseError("no JSON object found in the answer; answer with one JSON object")


def _parse_json_candidate(candidate: str) -> tuple[Any, str | None]:
    """(value, None) when ``candidate`` is (repairable) JSON object/array, else (None, why)."""
    candidate = candidate.strip()
    if not candidate or candidate[0] not in "{[":
        return None, None
    try:
        value = json.loads(candidate)
    except json.JSONDecodeError as exc:
        error = f"{exc.msg} at line {exc.lineno} column {exc.colno}"
        repaired = _repair_json(candidate)
        if repaired == candidate:
            return None, error
        try:
            value = json.loads(repaired)
        except json.JSONDecodeError:
            return None, error
    if not isinstance(value, (dict, list)):
        return None, f"expected a JSON object, got {type(value).__name__}"
    return value, None


def _repair_json(text: str) -> str:
    """Fix only what cannot change meaning: single-quoted strings become double-quoted,
    Python's True/False/None become JSON literals and trailing commas go; strings in double
    quotes are copied untouched."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            j = _string_end(text, i, '"')
            out.append(text[i:j])
            i = j
        elif ch == "'":
            j = _string_end(text, i, "'")
            inner = text[i + 1:j - 1] if j - 1 > i else text[i + 1:j]
            inner = inner.replace("\\'", "'").replace('"', '\\"')
            out.append(f'"{inner}"')
            i = j
        elif ch == ",":
            k = i + 1
            while k < n and text[k] in " \t\r\n":
                k += 1
            if k < n and text[k] in "}]":
                i += 1  # trailing comma
            else:
                out.append(ch)
                i += 1
        elif ch.isalpha():
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            out.append({"True": "true", "False": "false", "None": "null"}.get(word, word))
            i = j
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _string_end(text: str, start: int, quote: str) -> int:
    """Index just past the string literal opened at ``start`` (backslash escapes honoured)."""
    i = start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == quote:
            return i + 1
        i += 1
    return len(text)


def _balanced_spans(text: str) -> list[str]:
    """Top-level balanced ``{...}``/``[...]`` spans of ``text``, string-aware, in order."""
    spans = []
    i, n = 0, len(text)
    while i < n:
        if text[i] in "{[":
            end = _balanced_end(text, i)
            if end is not None:
                spans.append(text[i:end])
                i = end
                continue
        i += 1
    return spans


def _balanced_end(text: str, start: int) -> int | None:
    stack = []
    pairs = {"{": "}", "[": "]"}
    i = start
    while i < len(text):
        ch = text[i]
        if ch in "\"'" and stack:
            i = _string_end(text, i, ch)
            continue
        if ch in pairs:
            stack.append(pairs[ch])
        elif ch in "}]":
            if not stack or stack.pop() != ch:
                return None
            if not stack:
                return i + 1
        i += 1
    return None


# -- SQL --------------------------------------------------------------------------------------
def extract_sql(text: str) -> str:
    """The SQL query in a model answer: the last statement of :func:`extract_sql_blocks`."""
    blocks = extract_sql_blocks(text)
    if not blocks:
        raise ParseError("no SQL query found in the answer; give the query as a SELECT "
                         "statement in a ```sql block")
    return blocks[-1]


def extract_sql_blocks(text: str) -> list[str]:
    """Every SQL statement in a model answer, cleaned, in order.

    Taken from ```sql fences when there are any; else from other fences whose body starts like
    a query; else from a JSON answer's ``"sql"`` field; else the first bare SELECT/WITH
    statement in the prose. Cleaning drops ``--`` comments, trailing semicolons and prose after
    the statement.
    """
    if text is None or not str(text).strip():
        return []
    text = str(text)
    blocks = _fenced_blocks(text)
    bodies = [body for tag, body in blocks if tag in _SQL_TAGS]
    if not bodies:
        bodies = [body for tag, body in blocks
                  if tag not in ("json", "python") and _SQL_START.match(_strip_comments(body))]
    if not bodies:
        bodies = _sql_from_json(text)
    if not bodies:
        bare = _bare_statement(text)
        bodies = [bare] if bare else []
    statements: list[str] = []
    for body in bodies:
        statements.extend(_split_statements(_strip_comments(body)))
    return [s for s in (_clean_statement(s) for s in statements)
            if s and not _PLACEHOLDER.match(s)]


def _sql_from_json(text: str) -> list[str]:
    try:
        value = extract_json(text)
    except ParseError:
        return []
    if isinstance(value, dict):
        for key in ("sql", "SQL", "query", "final_sql"):
            if isinstance(value.get(key), str) and value[key].strip():
                return [value[key]]
    return []


def _bare_statement(text: str) -> str | None:
    """The first SELECT/WITH statement in prose: from its keyword to a ';' or a blank line."""
    matches = list(_STATEMENT_START.finditer(text)) or list(_INLINE_START.finditer(text))
    for match in matches:
        rest = text[match.start(1):]
        # "with" in prose ("with the table ...") is not a CTE: a CTE has "name AS ("
        if match.group(1).lower() == "with" and not re.match(
                r"(?is)with\s+(recursive\s+)?[\w\"`\[\]]+\s*(\([^)]*\)\s*)?as\s*\(", rest):
            continue
        if match.group(1).lower() == "select" and not re.search(
                r"(?is)^select\b.*?(\bfrom\b|\d|'|\(|\*)", rest.split("\n\n")[0]):
            continue
        end = _statement_end(rest)
        statement = rest[:end]
        statement = re.split(r"\n[ \t]*\n", statement, maxsplit=1)[0]
        return _drop_trailing_prose(statement)
    return None


def _statement_end(sql: str) -> int:
    """Index of the first ';' outside string literals and quoted names (or the end)."""
    i = 0
    while i < len(sql):
        ch = sql[i]
        if ch in "'\"`":
            i = _string_end(sql, i, ch)
            continue
        if ch == ";":
            return i
        i += 1
    return len(sql)


def _split_statements(sql: str) -> list[str]:
    parts = []
    while sql.strip():
        end = _statement_end(sql)
        parts.append(sql[:end])
        sql = sql[end + 1:]
    return parts


def _strip_comments(sql: str) -> str:
    """Remove ``--`` comments (to the end of their line) outside string literals."""
    out: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in "'\"`":
            j = _string_end(sql, i, ch)
            out.append(sql[i:j])
            i = j
        elif sql.startswith("--", i):
            j = sql.find("\n", i)
            i = n if j < 0 else j
        else:
            out.append(ch)
            i += 1
    return "".join(out)


_PROSE_LINE = re.compile(r"^\s*([A-Z][a-z]+)[:,]?(\s+[a-z,'.]+){2,}")


def _drop_trailing_prose(sql: str) -> str:
    """Cut at the first line that reads like an English sentence ("This query counts ...")."""
    lines = sql.split("\n")
    for k, line in enumerate(lines[1:], start=1):
        m = _PROSE_LINE.match(line)
        if m and m.group(1).lower() not in _SQL_KEYWORDS:
            return "\n".join(lines[:k])
    return sql


def _clean_statement(sql: str) -> str:
    sql = sql.strip().rstrip(";").strip()
    lines = [line.rstrip() for line in sql.split("\n")]
    return "\n".join(line for line in lines if line.strip())
