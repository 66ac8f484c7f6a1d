"""Read-only SQL execution: the gate that admits one query and nothing else, and the guarded run.

Model-written SQL meets three walls before it can touch the user's data:

1. :func:`check_sql` reads the text with sqlglot's SQLite dialect and admits exactly one
   statement whose root is a query (``SELECT``, ``WITH ... SELECT``, ``UNION``/``INTERSECT``/
   ``EXCEPT``, ``VALUES``) with no write anywhere inside. It gives a clear reason for every
   refusal, which the Refiner agents feed back to the model.
2. :func:`install_guards` puts an SQLite authorizer on the connection that allows only reads,
   queries, recursive CTEs, harmless functions and a few read-only pragmas at prepare time. The
   parser is only a courtesy: ``SELEC * FORM t`` parses without error, so safety never depends
   on it.
3. The connection itself is read-only (``mode=ro``, ``immutable=1`` or an in-memory copy of an
   upload), with ``query_only`` on and ``ATTACH`` disabled by a zero limit.

Runs get a deadline (:class:`Deadline`) so a runaway query is stopped, a row cap and a byte
budget (:mod:`agents.db.exec_result`). In the app and the CLI all of this runs inside a query worker
process (:mod:`agents.db.query_worker`), so that even one long SQLite step, or the parser on a
pathological text, can be stopped by killing it.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import threading
import time
from contextlib import nullcontext
from typing import Any, ContextManager

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from agents.db.exec_result import (MAX_CELL_BYTES, MAX_RESULT_BYTES, ExecResult, collect_rows,
    describe_error, timeout_message)

_DIALECT = Dialect.get_or_raise("sqlite")
# sqlglot logs warnings that quote the SQL it read; user SQL never goes to stderr.
logging.getLogger("sqlglot").setLevel(logging.CRITICAL)

MAX_SQL_CHARS = 100_000  # longer text is refused before it is parsed (parsing is superlinear)
# SQLite reads U+FEFF (a byte-order mark) as white space between tokens; so does the gate.
_BOM = "\ufeff"

# Statement roots that only read.
_QUERY_ROOTS = (exp.Select, exp.Union, exp.Intersect, exp.Except, exp.Values)

# First words that may start a query; anything else that SQLite knows is a statement is refused.
_QUERY_LEADS = {"SELECT", "WITH", "VALUES"}
_TRANSACTION_WORDS = {"BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE"}
_STATEMENT_LEADS = {
    "INSERT", "REPLACE", "UPDATE", "DELETE", "CREATE", "DROP", "ALTER", "ATTACH", "DETACH",
    "PRAGMA", "VACUUM", "REINDEX", "ANALYZE", "EXPLAIN", *_TRANSACTION_WORDS,
}
# Words that betray a write when the text could not be parsed. END and RELEASE are left out:
# CASE ... END and columns named "release" are common in queries.
_WRITE_WORDS = _STATEMENT_LEADS - {"END", "RELEASE", "EXPLAIN"}

# sqlglot nodes that write, change settings or control transactions.
_WRITE_NODES: dict[type, str] = {
    exp.Insert: "INSERT", exp.Update: "UPDATE", exp.Delete: "DELETE", exp.Create: "CREATE",
    exp.Drop: "DROP", exp.Alter: "ALTER", exp.Pragma: "PRAGMA", exp.Attach: "ATTACH",
    exp.Detach: "DETACH", exp.Transaction: "BEGIN", exp.Commit: "COMMIT",
    exp.Rollback: "ROLLBACK", exp.Analyze: "ANALYZE", exp.Merge: "MERGE", exp.Set: "SET",
    exp.Use: "USE", exp.Copy: "COPY", exp.LoadData: "LOAD DATA", exp.TruncateTable: "TRUNCATE",
    exp.Grant: "GRANT", exp.Revoke: "REVOKE", exp.Cache: "CACHE", exp.Uncache: "UNCACHE",
    exp.Refresh: "REFRESH", exp.Kill: "KILL", exp.Declare: "DECLARE", exp.Execute: "EXECUTE",
}

# Functions a query may not call: loading native code, or file access in builds that have it.
DENIED_FUNCTIONS = frozenset({"load_extension", "fts3_tokenizer", "readfile", "writefile", "edit"})

# Pragmas the introspection needs; all of them only read.
READ_ONLY_PRAGMAS = frozenset({
    "table_info", "table_xinfo", "table_list", "foreign_key_list", "index_list", "index_info",
    "index_xinfo", "quick_check", "data_version",
})

_ALLOWED_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE}
_CATALOGUE_TABLES = {"sqlite_master", "sqlite_temp_master", "sqlite_schema", "sqlite_temp_schema"}


class UnsafeSQLError(ValueError):
    """The SQL is not a single read-only query; ``reason`` says why in plain words."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _refusal(word: str) -> str:
    word = word.upper()
    if word == "PRAGMA":
        return ("PRAGMA statements are not allowed: they read or change database settings; "
                "only read-only queries run")
    if word in ("ATTACH", "DETACH"):
        return f"{word} is not allowed: a query may only read the open database"
    if word in _TRANSACTION_WORDS:
        return (f"transaction control ({word}) is not allowed: every query runs on its own, "
                "read-only")
    if word == "EXPLAIN":
        return "EXPLAIN is not supported: send the query itself"
    return f"{word} statements are not allowed: only read-only queries run"


def _word(token: Token) -> str | None:
    """The upper-cased keyword or bare word of a token; None for literals and quoted names."""
    if token.token_type in (TokenType.STRING, TokenType.IDENTIFIER, TokenType.NUMBER,
                            TokenType.HEX_STRING, TokenType.BIT_STRING):
        return None
    return token.text.upper()


def _split_statements(tokens: list[Token]) -> list[list[Token]]:
    """Tokens grouped by statement; empty statements (stray or trailing ';') are dropped."""
    statements: list[list[Token]] = [[]]
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            statements.append([])
        else:
            statements[-1].append(token)
    return [s for s in statements if s]


def _denied_function(tokens: list[Token]) -> str | None:
    for token, following in zip(tokens, tokens[1:]):
        if (following.token_type == TokenType.L_PAREN
                and token.token_type in (TokenType.VAR, TokenType.IDENTIFIER)
                and token.text.lower() in DENIED_FUNCTIONS):
            return token.text.lower()
    return None


def _write_word(tokens: list[Token]) -> str | None:
    """The first word that starts a write, for text the parser could not read."""
    for index, token in enumerate(tokens):
        word = _word(token)
        if word not in _WRITE_WORDS:
            continue
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        if word == "REPLACE" and following and following.token_type == TokenType.L_PAREN:
            continue  # the replace() string function
        return word
    return None


def _parse(text: str) -> exp.Expression | None:
    try:
        trees = sqlglot.parse(text, read="sqlite")
    except (ParseError, TokenError, RecursionError):  # deep nesting: SQLite has its own limit
        return None
    trees = [t for t in trees if t is not None]
    return trees[0] if len(trees) == 1 else None


def check_length(sql: str) -> None:
    """Refuse text too long to check quickly (a model never writes a query this long)."""
    if len(sql) > MAX_SQL_CHARS:
        raise UnsafeSQLError(f"the query is too long ({len(sql):,} characters; the limit is "
                             f"{MAX_SQL_CHARS:,}): send a shorter query")


def check_sql(sql: str) -> str:
    """Return the one read-only statement in ``sql`` (trimmed), or raise :class:`UnsafeSQLError`.

    Trailing semicolons, whitespace and comments are fine. Text that sqlglot cannot read but that
    shows no sign of a write is passed on, so SQLite reports its own syntax error (which helps a
    model fix a typo); the authorizer still stands behind it.

    The gate reads a copy in which every U+FEFF is a space: SQLite skips that character between
    tokens, so a leading one must not hide the statement's first word. Offsets are unchanged, so
    the statement returned is the original text.
    """
    if not isinstance(sql, str) or not sql.replace(_BOM, " ").strip():
        raise UnsafeSQLError("the query is empty")
    check_length(sql)
    scan = sql.replace(_BOM, " ")
    try:
        tokens = _DIALECT.tokenize(scan)
    except TokenError:
        return _check_unreadable(scan, sql)
    statements = _split_statements(tokens)
    if not statements:
        raise UnsafeSQLError("the query is empty (only comments)")
    first = statements[0]
    lead = _word(first[0])
    if lead in _STATEMENT_LEADS:
        raise UnsafeSQLError(_refusal(lead))
    if len(statements) > 1:
        raise UnsafeSQLError(
            f"several statements in one query ({len(statements)} found): only one read-only "
            "query runs at a time")
    denied = _denied_function(first)
    if denied:
        raise UnsafeSQLError(f"{denied}() is not allowed: a query may not load code or touch files")
    start, end = first[0].start, first[-1].end + 1
    tree = _parse(scan[start:end]) if lead in _QUERY_LEADS else None
    if tree is None or not isinstance(tree, _QUERY_ROOTS):
        if tree is not None and type(tree) in _WRITE_NODES:
            raise UnsafeSQLError(_refusal(_WRITE_NODES[type(tree)]))
        if isinstance(tree, exp.Command):
            raise UnsafeSQLError(_refusal(str(tree.this)))
        word = _write_word(first)
        if word:
            raise UnsafeSQLError(_refusal(word))
        return sql[start:end]
    for node in tree.walk():
        if type(node) in _WRITE_NODES:
            raise UnsafeSQLError(_refusal(_WRITE_NODES[type(node)]))
        if isinstance(node, exp.Command):
            raise UnsafeSQLError(_refusal(str(node.this)))
    return sql[start:end]


# White space, stray semicolons and comments before the first word; an unclosed comment runs
# to the end.
_LEADING_NOISE = re.compile(r"(?:[\s;]+|--[^\n]*(?:\n|\Z)|/\*.*?(?:\*/|\Z))*", re.S)


def _check_unreadable(scan: str, sql: str) -> str:
    """Text the tokenizer rejects (an unclosed quote or comment): refuse a statement that does
    not start as a query, and any hint of a write."""
    start = _LEADING_NOISE.match(scan).end()
    if start == len(scan):
        raise UnsafeSQLError("the query is empty (only comments)")
    lead = re.match(r"[A-Za-z_]*", scan[start:]).group(0).upper()
    if lead in _STATEMENT_LEADS:
        raise UnsafeSQLError(_refusal(lead))
    words = {w.upper() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", scan)}
    found = sorted(words & (_WRITE_WORDS | {f.upper() for f in DENIED_FUNCTIONS}))
    if found:
        raise UnsafeSQLError(
            f"the query could not be read (unbalanced quotes?) and mentions {found[0]}: "
            "only read-only queries run")
    return sql[start:].strip()


# -- connection guards ------------------------------------------------------------------------

def _authorize(action: int, arg1: str | None, arg2: str | None, _db: str | None,
               _trigger: str | None) -> int:
    if action in _ALLOWED_ACTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_FUNCTION:
        denied = (arg2 or "").lower() in DENIED_FUNCTIONS
        return sqlite3.SQLITE_DENY if denied else sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() in READ_ONLY_PRAGMAS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_UPDATE and (arg1 or "").lower() in _CATALOGUE_TABLES:
        # A virtual table (full-text index, table-valued pragma) declares its columns through
        # this check when it connects. A real UPDATE of the catalogue never runs: SQLite refuses
        # it without writable_schema, a pragma no query can reach.
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


def _decode_text(value: bytes) -> str:
    """Text cells with invalid UTF-8 are shown with replacement marks instead of failing."""
    return value.decode("utf-8", "replace")


def install_guards(conn: sqlite3.Connection) -> None:
    """Make ``conn`` read-only at every level SQLite offers; call once, right after connecting.

    ``query_only`` is set before the authorizer goes on, which then denies every pragma that
    could turn it off; the zero ATTACH limit is a last stop should an ATTACH get that far.
    """
    conn.execute("PRAGMA query_only = ON")
    conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    conn.set_authorizer(_authorize)
    conn.text_factory = _decode_text


class Deadline:
    """Stops statements running on ``conn`` once ``seconds`` have passed.

    A progress handler checks the clock every few thousand virtual-machine steps; a timer calls
    ``conn.interrupt()`` a little later for long single steps (counting a huge table) that never
    reach the handler. ``expired`` tells a timeout apart from other errors afterwards.
    """

    CHECK_EVERY = 2000  # SQLite VM instructions between clock checks
    GRACE = 0.25        # seconds before the interrupt timer backs up the progress handler

    def __init__(self, conn: sqlite3.Connection, seconds: float):
        self.conn = conn
        self.seconds = max(0.0, float(seconds))
        self.expired = False
        self._end = 0.0
        self._guard = threading.Lock()
        self._active = False
        self._timer: threading.Timer | None = None

    def _check(self) -> int:
        if time.monotonic() >= self._end:
            self.expired = True
            return 1
        return 0

    def _interrupt(self) -> None:
        with self._guard:
            if self._active:
                self.expired = True
                self.conn.interrupt()

    def __enter__(self) -> "Deadline":
        self._end = time.monotonic() + self.seconds
        self._active = True
        self.conn.set_progress_handler(self._check, self.CHECK_EVERY)
        self._timer = threading.Timer(self.seconds + self.GRACE, self._interrupt)
        self._timer.daemon = True
        self._timer.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        with self._guard:  # after this the timer can no longer interrupt a later statement
            self._active = False
        if self._timer is not None:
            self._timer.cancel()
        self.conn.set_progress_handler(None, 0)


# -- execution --------------------------------------------------------------------------------

def execute_readonly(conn: sqlite3.Connection, sql: str, *, timeout: float = 10.0,
                     max_rows: int = 1000, lock: ContextManager | None = None,
                     max_bytes: int = MAX_RESULT_BYTES,
                     max_cell_bytes: int = MAX_CELL_BYTES) -> ExecResult:
    """Check ``sql`` with :func:`check_sql`, then run it on ``conn`` under a deadline.

    At most ``max_rows`` rows and ``max_bytes`` bytes are kept (see
    :func:`agents.db.exec_result.collect_rows`); ``truncated`` says whether there were more.
    Refusals, timeouts and SQL errors come back as ``ok=False`` with ``error`` and
    ``error_class`` (the sqlite3 exception's class name), which is what a Refiner shows the
    model. The deadline here cannot stop a single long SQLite step; :class:`agents.db.database.
    Database` runs this in a worker process it can kill.
    """
    started = time.perf_counter()

    def failed(error: str, error_class: str) -> ExecResult:
        return ExecResult(ok=False, sql=sql, seconds=time.perf_counter() - started,
                          error=error, error_class=error_class)

    try:
        statement = check_sql(sql)
    except UnsafeSQLError as exc:
        return failed(exc.reason, "UnsafeSQL")
    with lock if lock is not None else nullcontext():
        deadline = Deadline(conn, timeout)
        cursor = None
        try:
            with deadline:
                cursor = conn.execute(statement)
                columns = [d[0] for d in cursor.description or []]
                collected = collect_rows(cursor, max_rows=max_rows if columns else 0,
                                         max_bytes=max_bytes, max_cell_bytes=max_cell_bytes)
        except Exception as exc:  # any failure of the user's SQL is a result, not a crash
            if deadline.expired:
                return failed(timeout_message(timeout), "Timeout")
            return failed(*describe_error(exc, conn))
        finally:
            if cursor is not None:
                cursor.close()
    return ExecResult(ok=True, sql=sql, columns=columns, rows=collected.rows,
                      row_count=len(collected.rows),
                      truncated=collected.truncated_reason is not None,
                      truncated_reason=collected.truncated_reason, cells_cut=collected.cells_cut,
                      byte_count=collected.byte_count, seconds=time.perf_counter() - started)
