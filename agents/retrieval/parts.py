"""The parts of a schema: tables that foreign keys connect, directly or through others.

A large database is often several applications side by side -- a concerts schema, a school's,
a shop's -- each a set of tables linked by their keys and linked to nothing else. The tables a
question needs are joined, so they lie in one part, or in parts that each match the question
well on their own. A part where the best table only half matches the question is where the
look-alikes come from: the ``countries`` of a cars schema for a question about the world's
``country``, another school's ``Student``. :func:`strong_parts` is the rule the Schema
Retriever applies with it (:data:`agents.retrieval.stage.PART_FLOOR`).

A table that no foreign key links to another table is a part of its own and says nothing either
way (a database that declares no keys is all such tables): the rule leaves it to the plain
floor. Links are those :func:`~.fit.foreign_key_links` gives, which the ranking and the join
paths use too.

A part's best table can match one word of the question well -- a films schema's ``language``
for "each language and the number of TV channels" -- while the right part holds that word and
the question's other ones (``tv_channel``'s ``Language``, "TV", "channel").
:func:`covering_parts` is the second rule: a part must cover, among its tables over the floor,
nearly as many of the question's words (and stored values) as the part covering the most
(:data:`agents.retrieval.stage.PART_COVERAGE`). Numbers are not counted: "the 3 most
populated" names a quantity, not a table, and a digit in some stored text matched it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .fit import foreign_key_links


@dataclass(frozen=True)
class Parts:
    """Each table's part (``of``: table -> the first table of its part, in schema order) and
    the tables no foreign key links to another table (``alone``)."""

    of: dict[str, str]
    alone: frozenset[str]


def schema_parts(schema) -> Parts:
    """The connected parts of ``schema``'s foreign-key graph."""
    links = foreign_key_links(schema)
    of: dict[str, str] = {}
    for table in schema.tables:
        if table.name in of:
            continue
        of[table.name] = table.name
        stack = [table.name]
        while stack:
            for other in links.get(stack.pop(), ()):
                if other not in of:
                    of[other] = table.name
                    stack.append(other)
    return Parts(of=of, alone=frozenset(name for name, near in links.items() if not near))


def strong_parts(candidates: list[str], scores: dict[str, float], parts: Parts,
                 share: float) -> list[str]:
    """``candidates`` (in their order) less the tables of a part whose best candidate scores
    under ``share`` of the best score; tables no foreign key links to another always stay. A
    share no part reaches (over 1) leaves every candidate rather than none."""
    best = max((scores.get(n, 0.0) for n in candidates), default=0.0)
    strong = {parts.of.get(n, n) for n in candidates if scores.get(n, 0.0) >= share * best}
    return _within(candidates, strong, parts)


def covered_words(tables: list[str], matched: dict[str, list[str]], valued: set[str]) -> int:
    """How many of the question's words ``tables`` match between them (a number is no such
    word), counting a stored value the question names as one more."""
    hit = {w for name in tables for w in matched.get(name, ()) if not w.isdigit()}
    return len(hit) + any(name in valued for name in tables)


def covering_parts(candidates: list[str], matched: dict[str, list[str]], valued: set[str],
                   parts: Parts, share: float) -> list[str]:
    """``candidates`` (in their order) less the tables of a part whose candidates cover fewer
    than ``share`` of the question's words that the best-covering part's candidates cover
    (:func:`covered_words`); tables no foreign key links to another always stay, and count
    for no part. A share no part reaches leaves those tables, or else every candidate rather
    than none."""
    members: dict[str, list[str]] = {}
    for name in candidates:
        if name not in parts.alone:
            members.setdefault(parts.of.get(name, name), []).append(name)
    covered = {part: covered_words(tables, matched, valued) for part, tables in members.items()}
    most = max(covered.values(), default=0)
    return _within(candidates, {part for part, count in covered.items()
                                if count >= share * most}, parts)


def _within(candidates: list[str], strong: set[str], parts: Parts) -> list[str]:
    """The ``candidates`` of the ``strong`` parts and those no foreign key links, in their
    order; every candidate rather than none."""
    return [n for n in candidates
            if n in parts.alone or parts.of.get(n, n) in strong] or list(candidates)
