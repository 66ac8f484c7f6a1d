"""A query that reads tables of parts of the schema that no foreign key connects.

A database holding several applications side by side -- a concerts schema, a school's, a cars
schema -- has parts: tables linked by their keys to each other and to nothing else
(:func:`agents.retrieval.parts.schema_parts`). The tables one question needs are joined through
their keys, so they lie in one part. In Spider's training questions (``python
bench/gold_parts.py``), 412 are asked of the 7 schemas that have several parts, and 12 gold
queries read two parts, all of one database (``hr_1``) that joins two tables on a key its schema
does not declare; no dev database has several parts. A query reading two parts has
usually taken a look-alike of another application for the table it meant: in the
merged-database benchmark a 1.5B writer joined the cars schema's ``continents`` to the world's
``country`` ("the total surface area of the continents Asia and Europe", on a continent name
the two spell differently, so nothing matches) and the dog kennels' ``Professionals`` to the
world's ``city``. SQLite runs such a query, so no error tells the writer; :func:`unrelated_parts`
does.

Tables no foreign key links to any other table say nothing either way (a database that
declares no keys is all such tables), and neither does a name the schema does not hold (a
``WITH`` query's).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from agents.retrieval.parts import schema_parts
from agents.db.sqltext import parse_statement


@dataclass(frozen=True)
class UnrelatedParts:
    """The tables a query reads, grouped by the part of the schema each lies in, when there are
    two or more parts: tables and parts in the order sqlglot's breadth-first walk of the query
    meets them (the outer query's own tables before those of a subquery in its FROM)."""

    parts: tuple[tuple[str, ...], ...]

    def sentence(self) -> str:
        """What a writer is told: the tables of each part, and why that is wrong."""
        groups = " and ".join(", ".join(part) for part in self.parts)
        return (f"it reads tables of {len(self.parts)} parts of the database that no foreign "
                f"key connects ({groups}). The tables one question needs are linked by keys, "
                f"so one of them is a look-alike from an unrelated part: answer with the "
                f"tables of one part.")


def unrelated_parts(sql: str | None, schema) -> UnrelatedParts | None:
    """The parts of ``schema`` whose tables ``sql`` reads (its subqueries' too), when they are
    two or more; None when they are not, or the SQL cannot be read."""
    tree = parse_statement(sql)
    if tree is None:
        return None
    parts = schema_parts(schema)
    found: dict[str, list[str]] = {}
    for node in tree.find_all(exp.Table):
        placed = _placed(node, schema, parts)
        if placed is None:
            continue
        name, part = placed
        names = found.setdefault(part, [])
        if name not in names:
            names.append(name)
    if len(found) < 2:
        return None
    return UnrelatedParts(parts=tuple(tuple(names) for names in found.values()))


def joins_unrelated_part(join: exp.Join, select: exp.Select, schema) -> bool:
    """Whether ``join`` brings in a table of a part of ``schema`` that none of the other tables
    of ``select`` (its own and its subqueries') lies in, where at least one of them lies in a
    part: the joined table belongs to another application than the query's."""
    parts = schema_parts(schema)
    joined = _placed(join.this, schema, parts) if isinstance(join.this, exp.Table) else None
    others = {placed[1] for t in select.find_all(exp.Table)
              if t is not join.this and (placed := _placed(t, schema, parts)) is not None}
    return joined is not None and bool(others) and joined[1] not in others


def _placed(node: exp.Table, schema, parts) -> tuple[str, str] | None:
    """``(table, part)``: the schema's name of the table ``node`` names and the part it lies
    in; None for a table no foreign key links to another (it says nothing) or a name the
    schema does not hold (a ``WITH`` query's)."""
    table = schema.table(node.name)
    if table is None or table.name in parts.alone:
        return None
    return table.name, parts.of.get(table.name, table.name)
