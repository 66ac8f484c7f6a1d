"""Turn SQLite's terse name errors into a hint that names what does exist.

"no such column: T1.Horsepower" tells a person, or a model, that something is wrong but not
what is right. A repair agent that only sees the error tends to guess the same wrong name again;
one that is told "T1 is car_names, whose columns are MakeId, Model, Make; Horsepower is a column
of cars_data" can fix the query. The hint is built from the database's own schema and the
failing query's table aliases; it never guesses what the question meant.

Aliases are resolved per query scope with sqlglot's :mod:`sqlglot.optimizer.scope`: small models
reuse ``T1`` in both halves of a UNION or EXCEPT, in subqueries and in CTEs, and a hint that read
``T1`` as the first table it met would send the repair to the wrong table. The failing name is
looked up in the scope where it is written (a correlated subquery also sees the scopes around
it); when it is written in several scopes where the alias means different things, the hint says
each. A query sqlglot cannot parse still gets the table-level hints, without alias statements.

Name errors get a hint (no such table, no such column, ambiguous column), and so does a function
SQLite does not have ("no such function: YEAR" is told how SQLite writes it, from
:mod:`agents.rules.sqlite_functions`); every other error is left as SQLite wrote it.
:func:`explain_error` returns None when it has nothing to add. Where one clear change makes a
failing query run, :mod:`agents.rules.name_rewrite` adds that query to the hint.
"""

from __future__ import annotations

import difflib
import re

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.scope import Scope, ScopeType, traverse_scope

from agents.rules.sqlite_functions import function_hint

MAX_COLUMNS_LISTED = 40
MAX_TABLES_LISTED = 60
CLOSE_MATCH_CUTOFF = 0.6
ORDINALS = ("first", "second", "third", "fourth", "fifth")

# A name runs to the end of SQLite's one-line message (it may hold spaces: ``unit price``), or to
# the advice newer SQLite versions append to it; a repair prompt's "\nHint: ..." follows it.
_NAME = r"(?P<{}>[^\r\n]+?)(?=\s+-\s+should this be\b|[ \t\r]*(?:\n|$))"
_QUALIFIER = r"(?:(?P<qualifier>[^\s.]+)\.)?"
NO_SUCH_COLUMN = re.compile(r"no such column:[ \t]*" + _QUALIFIER + _NAME.format("column"), re.I)
NO_SUCH_TABLE = re.compile(r"no such table:[ \t]*(?:main\.)?" + _NAME.format("table"), re.I)
AMBIGUOUS_COLUMN = re.compile(
    r"ambiguous column name:[ \t]*" + _QUALIFIER + _NAME.format("column"), re.I)
NAME_ERRORS = (NO_SUCH_COLUMN, NO_SUCH_TABLE, AMBIGUOUS_COLUMN)

# Scopes whose columns may name the sources around them: a subquery inside an expression
# (correlated) and each branch of a set operation (it sees what its enclosing query sees).
_SEES_OUTER = (ScopeType.SUBQUERY, ScopeType.SET_OPERATION)


def is_name_error(error: str | None) -> bool:
    """Whether SQLite's ``error`` names a table or column that is not there (or is ambiguous)."""
    return name_error_match(error) is not None


def name_error_match(error: str | None, patterns=NAME_ERRORS) -> re.Match | None:
    """The match of the first of ``patterns`` that reads a name from ``error``, or None."""
    return next((m for m in (p.search(error or "") for p in patterns) if m), None)


def missing_name(match: re.Match) -> str:
    """The column or table name a :func:`name_error_match` read, as SQLite wrote it."""
    return match.groupdict().get("column") or match.group("table")


def explain_error(error: str | None, sql: str, schema) -> str | None:
    """The hint for a function SQLite does not have, else :func:`name_hint`'s, or None."""
    return (function_hint(error) if error else None) or name_hint(error, sql, schema)


def name_hint(error: str | None, sql: str, schema) -> str | None:
    """A short hint for a name error in ``sql`` against ``schema``
    (a :class:`agents.db.schema.Schema`), or None. It lists the real names the failing name
    could have meant: the columns of the table an alias stands for where the failing name is
    written, the tables that do have the column, and the closest spellings."""
    if not error or schema is None or not getattr(schema, "tables", None):
        return None
    match = NO_SUCH_COLUMN.search(error)
    if match:
        return _no_such_column(strip_quotes(match.group("qualifier")),
                               strip_quotes(match.group("column")), sql, schema)
    match = NO_SUCH_TABLE.search(error)
    if match:
        return _no_such_table(strip_quotes(match.group("table")), schema)
    match = AMBIGUOUS_COLUMN.search(error)
    if match:
        return _ambiguous(strip_quotes(match.group("column")), sql, schema)
    return None


def query_tables(sql: str, schema) -> dict[str, str]:
    """Alias (or bare table name), as the query writes it, -> the schema's table name.

    All scopes together (the first binding of a reused alias wins): the list of what the query
    reads, not what a name means in one place. Names that are not tables of the schema (CTEs,
    subquery aliases) are left out; a query sqlglot cannot parse gives an empty map.
    """
    tree = _parse(sql)
    return _table_aliases(tree.find_all(exp.Table), schema) if tree is not None else {}


class ParsedQuery:
    """The parsed query and its scopes, innermost first; both empty when it does not parse."""

    def __init__(self, sql: str):
        self.tree = _parse(sql)
        self.scopes: list[Scope] = []
        if self.tree is not None:
            try:
                self.scopes = list(traverse_scope(self.tree))
            except Exception:  # sqlglot refuses some odd but valid queries: no scopes then
                self.scopes = []

    def places(self, qualifier: str | None, column: str, schema=None) -> list[Scope]:
        """The scope of each place where ``qualifier.column`` (or bare ``column``) is written;
        given ``schema``, only the places where the name does not resolve, if there are any.

        sqlglot lists a correlated column in its own scope and again in the outer ones; scopes
        come innermost first, so the first sighting of a column node is where it is written.
        """
        seen: set[int] = set()
        found = []
        for scope in self.scopes:
            for node in scope.columns:
                if id(node) in seen or not same_name(node.name, column) or \
                        not same_name(node.table or None, qualifier):
                    continue
                seen.add(id(node))
                found.append(scope)
        if schema is None:
            return found
        failing = [s for s in found if not resolves(s, qualifier, column, schema)]
        return failing or found

    def bindings(self, name: str) -> list:
        """Every source ``name`` is bound to in some scope (tables and subquery scopes)."""
        found: list = []
        for scope in self.scopes:
            for key, source in scope.sources.items():
                if same_name(key, name) and not any(source is f for f in found):
                    found.append(source)
        return found


def _parse(sql: str) -> exp.Expression | None:
    try:
        return sqlglot.parse_one(sql, read="sqlite")
    except Exception:  # a query that does not parse still gets the table-level hints
        return None


def same_name(a: str | None, b: str | None) -> bool:
    """Whether two SQL names are the same name (SQLite compares them without case); None is
    only the same as None (a bare column has no qualifier)."""
    return (a or "").casefold() == (b or "").casefold() and (a is None) == (b is None)


def _visible(scope: Scope) -> list[tuple[str, object]]:
    """(name, source) pairs a column written in ``scope`` can refer to, nearest first."""
    seen: list[tuple[str, object]] = []
    while scope is not None:
        seen.extend(scope.sources.items())
        if scope.scope_type not in _SEES_OUTER:
            break
        scope = scope.parent
    return seen


def resolve_name(scope: Scope, name: str):
    """The source (a table, or a subquery's scope) ``name`` stands for where a column is
    written in ``scope``, or None."""
    return next((source for key, source in _visible(scope) if same_name(key, name)), None)


def resolves(scope: Scope, qualifier: str | None, column: str, schema) -> bool:
    """True when ``qualifier.column`` (or bare ``column``) names something in ``scope``."""
    sources = [resolve_name(scope, qualifier)] if qualifier else [s for _, s in _visible(scope)]
    for source in sources:
        if isinstance(source, Scope):
            columns = source.expression.named_selects
        elif source is not None and schema.table(source.name) is not None:
            columns = schema.table(source.name).column_names()
        else:
            continue
        if any(same_name(c, column) for c in columns):
            return True
    return False


def _table_aliases(tables, schema) -> dict[str, str]:
    found: dict[str, str] = {}
    for table in tables:
        real = schema.table(table.name) if table.name else None
        if real is None:
            continue
        for name in (table.name, table.alias):
            if name and not any(k.casefold() == name.casefold() for k in found):
                found[name] = real.name
    return found


def _no_such_column(qualifier: str | None, column: str, sql: str, schema) -> str | None:
    query = ParsedQuery(sql)
    if qualifier:
        lines, search_everywhere = _qualified(query, qualifier, column, schema)
    else:
        lines, search_everywhere = _unqualified(query, sql, column, schema), True
    owners = _tables_with_column(schema, column)
    if owners:
        lines.append(f"Column {column} is in table{'s' if len(owners) > 1 else ''} "
                     f"{', '.join(owners)}.")
    elif search_everywhere:
        everywhere = [f"{t.name}.{c}" for t in schema.tables for c in t.column_names()]
        close = _close(column, everywhere, key=lambda n: n.split(".", 1)[1])
        if close:
            lines.append(f"No table has a column {column}; closest: {', '.join(close)}.")
        else:
            lines.append(f"No table has a column {column}.")
    return " ".join(lines) or None


def _qualified(query: ParsedQuery, qualifier: str, column: str, schema) -> tuple[list[str], bool]:
    """Sentences on what ``qualifier`` stands for where ``qualifier.column`` is written, and
    whether every table should be searched for the column (nothing close was found)."""
    if query.tree is None:  # no aliases known: speak only of a real table of that name
        table = schema.table(qualifier)
        return _table_sentences(qualifier, table, column) if table else ([], True)
    places = query.places(qualifier, column, schema)
    bindings: list = []
    for scope in places:
        source = resolve_name(scope, qualifier)
        if not any(source is b for b in bindings):
            bindings.append(source)
    everywhere = query.bindings(qualifier)
    if not bindings:  # not found as written (a parsing quirk): any binding the query has
        bindings = everywhere[:1] or [None]
    if len(bindings) == 1:
        source = bindings[0]
        lines, search = _binding_sentences(query, places[:1], qualifier, column, source, schema)
        if source is not None and len(everywhere) > 1:
            first = lines[0]
            first = "table" + first[5:] if first.startswith("Table ") else first
            lines[0] = f"Where {qualifier}.{column} is written, {first}"
        return lines, search
    lines = [f"{qualifier}.{column} is written in {len(bindings)} parts of the query, and "
             f"{qualifier} means something else in each."]
    search = True
    for n, source in enumerate(bindings):
        where = [s for s in places if resolve_name(s, qualifier) is source][:1]
        part, found = _binding_sentences(query, where, qualifier, column, source, schema)
        ordinal = ORDINALS[n] if n < len(ORDINALS) else f"number {n + 1}"
        lines.append(f"In the {ordinal}: " + " ".join(part))
        search = search and found
    return lines, search


def _binding_sentences(query: ParsedQuery, places: list[Scope], qualifier: str, column: str,
                       source, schema) -> tuple[list[str], bool]:
    """What one binding of ``qualifier`` is (a table, a subquery, nothing)."""
    if isinstance(source, Scope):
        kind = f"the WITH query {qualifier}" if source.is_cte else "a subquery"
        return _columns_sentences(f"{qualifier} is {kind}", qualifier,
                                  list(source.expression.named_selects), column)
    if source is not None:
        return _table_sentences(qualifier, schema.table(source.name), column)
    here = _visible(places[0]) if places else \
        [item for scope in query.scopes for item in scope.sources.items()]
    aliases: dict[str, str] = {}
    for key, source in here:  # the nearest binding of a name hides the outer ones
        table = schema.table(source.name) if isinstance(source, exp.Table) else None
        if table is not None and not any(same_name(key, k) for k in aliases):
            aliases[key] = table.name
    listed = f"; the tables there are {_alias_list(aliases)}." if aliases else "."
    elsewhere = [schema.table(s.name) for s in query.bindings(qualifier)
                 if isinstance(s, exp.Table) and schema.table(s.name) is not None]
    if elsewhere and places:
        return [f"{qualifier} is not a table or alias where {qualifier}.{column} is written"
                f"{listed} ({qualifier} is table {elsewhere[0].name} in another part of the "
                f"query.)"], True
    text = f"{qualifier} is not a table or alias of this query"
    return [text + (f"; its tables are {_alias_list(aliases)}." if aliases else ".")], True


def _table_sentences(qualifier: str, table, column: str) -> tuple[list[str], bool]:
    if table is None:
        return [f"{qualifier} is not a table of this database."], True
    stands = f"{qualifier} is table {table.name}" if qualifier.casefold() != \
        table.name.casefold() else f"Table {table.name}"
    return _columns_sentences(stands, table.name, table.column_names(), column)


def _columns_sentences(subject: str, owner: str, columns: list[str],
                       column: str) -> tuple[list[str], bool]:
    """'<subject>, whose columns are: ...' and the closest spellings of ``column`` among them;
    the flag is True when none is close (so every table is worth searching)."""
    lines = [f"{subject}, whose columns are: {_names(columns)}."]
    close = _close(column, columns)
    if close:
        lines.append(f"Closest columns of {owner}: {', '.join(close)}.")
    return lines, not close


def _unqualified(query: ParsedQuery, sql: str, column: str, schema) -> list[str]:
    """The columns of the sources in scope where the bare column is written (each scope's
    own sources; every table of the query when the place is not found)."""
    sources: list[tuple[str, object]] = []
    for scope in query.places(None, column, schema):
        for item in scope.sources.items():
            if not any(item[1] is s for _, s in sources):
                sources.append(item)
    tables = {schema.table(s.name).name for _, s in sources
              if isinstance(s, exp.Table) and schema.table(s.name) is not None}
    if not sources:
        tables = set(query_tables(sql, schema).values())
    lines = [f"Table {name} has columns: {_names(schema.table(name).column_names())}."
             for name in sorted(tables, key=str.casefold)]
    for name, source in sources:
        if isinstance(source, Scope):
            kind = "WITH query" if source.is_cte else "Subquery"
            lines.append(f"{kind} {name} has columns: "
                         f"{_names(list(source.expression.named_selects))}.")
    return lines


def _no_such_table(name: str, schema) -> str:
    tables = schema.table_names()
    lines = [f"There is no table {name}."]
    close = _close(name, tables)
    if close:
        lines.append(f"Closest tables: {', '.join(close)}.")
    owners = _tables_with_column(schema, name)
    if owners:
        lines.append(f"{name} is a column of {', '.join(owners)}.")
    lines.append(f"The tables are: {_names(tables, MAX_TABLES_LISTED)}.")
    return " ".join(lines)


def _ambiguous(column: str, sql: str, schema) -> str | None:
    """The tables sharing ``column`` in the scope where it is written bare (the whole query
    when that place is not found)."""
    owners = set(_tables_with_column(schema, column))
    candidates = []
    for scope in ParsedQuery(sql).places(None, column):
        tables = [schema.table(s.name) for s in scope.sources.values()
                  if isinstance(s, exp.Table) and schema.table(s.name) is not None]
        candidates.append({t.name for t in tables})
    candidates.append(set(query_tables(sql, schema).values()))
    for in_scope in candidates:
        shared = [t.name for t in schema.tables if t.name in owners and t.name in in_scope]
        if len(shared) >= 2:
            return (f"Column {column} is in several tables of the query ({', '.join(shared)});"
                    f" prefix it with the table name or its alias.")
    return None


def _tables_with_column(schema, column: str) -> list[str]:
    return [t.name for t in schema.tables if t.column(column) is not None]


def _close(name: str, candidates: list[str], key=lambda n: n) -> list[str]:
    """Up to three candidates spelled most like ``name`` (case- and underscore-insensitive)."""
    def norm(text: str) -> str:
        return text.casefold().replace("_", "").replace(" ", "")

    wanted = norm(name)
    scored = []
    for candidate in candidates:
        ratio = difflib.SequenceMatcher(None, wanted, norm(key(candidate))).ratio()
        if ratio >= CLOSE_MATCH_CUTOFF:
            scored.append((-ratio, candidate))
    return [c for _, c in sorted(scored)[:3]]


def _names(names: list[str], limit: int = MAX_COLUMNS_LISTED) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names) - limit} more)" if len(names) > limit else "")


def _alias_list(aliases: dict[str, str]) -> str:
    """'car_names AS T1, cars_data': each table once, with the aliases the query gives it."""
    parts = []
    for table in sorted(set(aliases.values()), key=str.casefold):
        named = [a for a, t in aliases.items() if t == table and a.casefold() != table.casefold()]
        parts.append(table + "".join(f" AS {a}" for a in named))
    return ", ".join(parts)


def strip_quotes(name: str | None) -> str | None:
    if name is None:
        return None
    return name.strip().strip("`\"'[]")
