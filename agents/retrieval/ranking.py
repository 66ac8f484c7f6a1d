"""Which tables and columns a question is about: BM25 over what the schema says of each table.

Each table is one document made of the words of its name, its columns' names and descriptions,
the tables its foreign keys link it to, and its columns' example values. A question's words are
ranked against those documents with Okapi BM25 (Robertson and Zaragoza, 2009): a word that
names few tables (``transcript``) weighs more than one that names many (``id``, ``name``), and a
long table does not win by its length alone. Stored values that the question names (found by
:mod:`agents.retrieval.value_grounding`) add a fixed bonus to their table and mark their column, so
"orders that were cancelled" finds the table whose ``status`` holds 'Cancelled' even when no
name says so.

A table then gains a share (:data:`NEIGHBOUR_SHARE`) of its best-scoring foreign-key
neighbour's score. In a database of many unrelated parts, two tables of the same name (a
``singer`` of a concerts schema and one of a music-charts schema) match a question alike; the
one whose neighbours match it too (``concert``, ``stadium``) is the one it is about, and a table
the question only reaches through a matching one (a link table) ranks above unrelated noise.

Words are compared after a light normalisation (identifiers split at ``_`` and case changes,
lower case, a plural ``s`` dropped), which is what lets "singers" meet ``singer_id``; a
question's possessive ``'s`` is not one of its words.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field

from .fit import foreign_key_links

K1 = 1.2
B = 0.75
TABLE_NAME_WEIGHT = 3   # a word of the table's own name counts this many times
VALUE_BONUS = 2.0       # added to a table's score per stored value the question names
# The share of its best-scoring foreign-key neighbour's score a table gains (see the module's
# docstring; measurements: bench/parameter-notes.md).
NEIGHBOUR_SHARE = 0.2
STOP_WORDS = frozenset("""
a an and are as at be by did do does each for from had has have how i in is it its list me of on
or show than that the their them there these they this those to was were what when where which
who whom whose why will with all any give find tell number many much""".split())

_WORD = re.compile(r"[A-Za-z]+|\d+")
# "Kyle's id": the possessive ending is not a word of the question; kept, its "s" would match
# every identifier it begins (``s_ID``) as if the question named it.
_POSSESSIVE = re.compile(r"(?<=\w)['\u2019\u02bc`]s\b", re.IGNORECASE)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def normalise(word: str) -> str:
    """A word as ranking compares it: lower case, a plural ending dropped."""
    word = word.lower()
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def words(text: str) -> list[str]:
    """The words of ``text`` (identifiers split at underscores and case changes), normalised."""
    return [normalise(w) for w in _WORD.findall(_CAMEL.sub(" ", str(text)))]


def query_words(question: str, evidence: str = "") -> list[str]:
    """The words of the question and its evidence that can say which table is meant."""
    text = _POSSESSIVE.sub("", f"{question} {evidence}")
    return [w for w in words(text) if w not in STOP_WORDS]


@dataclass
class Ranking:
    """Tables best first with their scores, and each table's columns the question names."""

    scores: dict[str, float] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)           # table names, best first
    columns: dict[str, list[str]] = field(default_factory=dict)  # table -> named columns
    matched: dict[str, list[str]] = field(default_factory=dict)  # table -> question words hit
    valued: set[str] = field(default_factory=set)     # tables holding a value the question names
    own: dict[str, float] = field(default_factory=dict)   # scores before the neighbours' share
    linked: dict[str, str] = field(default_factory=dict)  # table -> neighbour that lent score


def _documents(schema) -> dict[str, Counter]:
    linked: dict[str, list[str]] = {t.name: [] for t in schema.tables}
    for fk in schema.foreign_keys:
        linked.setdefault(fk.table, []).append(fk.ref_table)
        linked.setdefault(fk.ref_table, []).append(fk.table)
    docs = {}
    for table in schema.tables:
        terms = Counter()
        for w in words(table.name):
            terms[w] += TABLE_NAME_WEIGHT
        for column in table.columns:
            terms.update(words(column.name))
            terms.update(words(column.description))
            for value in column.examples:
                if isinstance(value, str):
                    terms.update(words(value))
        for other in linked.get(table.name, []):
            terms.update(words(other))
        docs[table.name] = terms
    return docs


def _column_words(column) -> set[str]:
    found = set(words(column.name)) | set(words(column.description))
    for value in column.examples:
        if isinstance(value, str):
            found |= set(words(value))
    return found


def rank(schema, question: str, evidence: str = "", value_matches=(),
         neighbour_share: float = NEIGHBOUR_SHARE) -> Ranking:
    """Rank ``schema``'s tables for the question; ``value_matches`` are
    :class:`~agents.retrieval.value_grounding.ValueMatch` es (or dicts) of values the question names."""
    query = query_words(question, evidence)
    docs = _documents(schema)
    count = max(1, len(docs))
    average = sum(sum(d.values()) for d in docs.values()) / count or 1.0
    frequency = Counter(w for d in docs.values() for w in d)
    wanted = Counter(query)
    result = Ranking()
    for name, doc in docs.items():
        length = sum(doc.values())
        score = 0.0
        hits = []
        for word, times in wanted.items():
            tf = doc.get(word, 0)
            if not tf:
                continue
            idf = math.log(1 + (count - frequency[word] + 0.5) / (frequency[word] + 0.5))
            score += times * idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))
            hits.append(word)
        result.scores[name] = score
        if hits:
            result.matched[name] = sorted(hits)
    query_set = set(query)
    for table in schema.tables:
        named = [c.name for c in table.columns if _column_words(c) & query_set]
        if named:
            result.columns[table.name] = named
    for match in value_matches:
        table, column = _match_fields(match)
        found = schema.table(table)
        if found is None:
            continue
        result.scores[found.name] = result.scores.get(found.name, 0.0) + VALUE_BONUS
        result.valued.add(found.name)
        named = result.columns.setdefault(found.name, [])
        real = found.column(column)
        if real is not None and real.name not in named:
            named.append(real.name)
    position = {t.name: i for i, t in enumerate(schema.tables)}
    _share_with_neighbours(schema, result, position, neighbour_share)
    result.order = sorted(result.scores, key=lambda n: (-result.scores[n], position[n]))
    return result


def _share_with_neighbours(schema, result: Ranking, position: dict[str, int],
                           share: float) -> None:
    """Add to each table ``share`` of its best neighbour's own score (ties go to the neighbour
    first in the schema, as in the ranking itself)."""
    own = result.own = dict(result.scores)
    for name, others in foreign_key_links(schema).items():
        best = max(others, key=lambda o: (own.get(o, 0.0), -position[o]), default=None)
        if best is not None and own.get(best, 0.0) > 0:
            result.scores[name] = own.get(name, 0.0) + share * own[best]
            result.linked[name] = best


def _match_fields(match) -> tuple[str, str]:
    if isinstance(match, dict):
        return str(match.get("table", "")), str(match.get("column", ""))
    return str(match.table), str(match.column)
