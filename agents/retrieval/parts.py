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
    return [n for n in candidates
            if n in parts.alone or parts.of.get(n, n) in strong] or list(candidates)
