"""Whether a question asks for a join the final SQL reads nothing of: the Final check's test
before it leaves such a join out (:mod:`agents.rules.final_check`, whose docstring says why
each case keeps a join).

A question names a table when one of its words is one of the table name's words (``pets`` and
``Has_Pet``) or, for words of four letters or more, one holds the other (``languages`` and
``countrylanguage``); a word that names another table of the query as well does not single the
joined one out. In a query that counts, a word of a column only the joined table has also keeps
the join, and so does a count that, without the join, would count one row per group.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from agents.retrieval.ranking import query_words, words
from agents.rules.unread_joins import unread_joins
from agents.rules.unrelated_parts import joins_unrelated_part

LONG_WORD = 4   # shorter words must match a table name's word whole


def question_names(question: str, table: str, others: tuple[str, ...] = ()) -> bool:
    """Whether a word of ``question`` names ``table`` and none of ``others`` (the query's other
    tables; see the module's docstring). Any word of the question counts for a whole word of
    the name (a table may be called ``show``)."""
    def named(word: str, name: str, whole: bool) -> bool:
        own = words(name)
        return word in own or (not whole and len(word) >= LONG_WORD and any(
            word in w or w in word for w in own if len(w) >= LONG_WORD))

    asked = query_words(question)
    candidates = [(w, w not in asked) for w in dict.fromkeys(words(question))]
    return any(named(word, table, whole) and not any(named(word, o, whole) for o in others)
               for word, whole in candidates)


def question_reads(question: str, join: exp.Join, select: exp.Select, schema) -> bool:
    """Whether the question names the joined table, or, in a query that counts, a word of one
    of its columns outside the join's condition that no other table of the query has ("the
    number of *employees* hired by each shop" joins ``hiring`` for its ``Employee_ID``, to
    count them): such a join is what the question asks for, even when the SQL reads nothing of
    it but a count. In a query that counts nothing, a word of such a column is no sign of the
    join: the SQL answers it from another table ("the *last* name of the student who has a
    cat", read from ``Student.LName``, is no reason to keep a join of a ``Students`` table with
    a ``last_name``)."""
    table = join.this
    others = tuple(t.name for t in select.find_all(exp.Table) if t is not table)
    if question_names(question, table.name, others):
        return True
    known = schema.table(table.name)
    if known is None:
        return True
    if not _counts(select):
        return False
    alias = table.alias_or_name.casefold()
    on = join.args.get("on")
    in_condition = {c.name.casefold() for c in (on.find_all(exp.Column) if on else [])
                    if c.table.casefold() == alias}
    own = {w for c in known.column_names() if c.casefold() not in in_condition
           for w in words(c)}
    theirs = set()   # the words of the other tables' columns
    for other in select.find_all(exp.Table):
        found = schema.table(other.name) if other is not table else None
        if found is not None and found.name != known.name:
            theirs |= {w for c in found.column_names() for w in words(c)}
    return bool((own - theirs) & set(query_words(question)))


def _counts(select: exp.Select) -> bool:
    """Whether ``select`` itself counts (a ``COUNT`` of its own, not of a query inside it)."""
    return any(count.parent_select is select for count in select.find_all(exp.Count))


def unnamed_unread_joins(sql: str | None, schema, question: str, *, from_table: bool = False,
                         through_keys: bool = False, whole=None,
                         named_apart: list[str] | None = None):
    """``sql`` without its joins of tables nothing reads and the question does not ask for (a
    :class:`~agents.rules.unread_joins.WithoutUnreadJoins`), or None; with ``from_table`` the
    ``FROM`` table counts as joined. Given ``whole``, the database's whole schema, a table of
    a part of it that no foreign key links to the query's other tables is left out even where
    the question names it (:func:`~agents.rules.unrelated_parts.joins_unrelated_part`); such a table
    the question does name is added to ``named_apart``, if given, so the trace can say why."""
    def keep(join, select) -> bool:
        named = question_reads(question, join, select, schema)
        if whole is not None and joins_unrelated_part(join, select, whole):
            if named and named_apart is not None and join.this.name not in named_apart:
                named_apart.append(join.this.name)
            return False
        return named

    return unread_joins(sql, schema, keep=keep, from_table=from_table, through_keys=through_keys)


def counts_one_per_group(sql: str, db, *, timeout: float) -> bool:
    """Whether ``sql`` (a version without its joins) groups and counts, and every group holds
    one row: then the count counted the joined rows ("the teacher with the most lessons",
    grouped by teacher), and the join is what the question asks for, named or not."""
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except Exception:  # SQL sqlglot cannot read: nothing to check
        return False
    if not isinstance(tree, exp.Select) or not tree.args.get("group") \
            or tree.find(exp.Count) is None:
        return False
    probe = tree.copy()
    for part in ("order", "limit", "offset", "having", "distinct"):
        probe.set(part, None)
    probe.set("expressions", [exp.alias_(exp.Count(this=exp.Star()), "n")])
    largest = db.execute(f"SELECT MAX(n) FROM ({probe.sql(dialect='sqlite')})",
                         timeout=timeout, max_rows=1)
    return bool(largest.ok and largest.rows and largest.rows[0][0] is not None
                and largest.rows[0][0] <= 1)
