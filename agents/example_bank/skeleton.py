"""Question skeletons: a question with its values, names and schema mentions masked.

DEA-SQL picks its few-shot examples by *question template*: the entities of a question (values,
names, schema mentions) are masked so that "How many singers are from France?" and "How many
ships were built in 1990?" share one skeleton, ``how many <m> are from <m>``. Two questions with
the same skeleton usually want SQL of the same shape, whatever database they are about.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

MASK = "<m>"

# Words that carry the question's logic, never masked even when a column has that name.
_KEEP = frozenset("""
a an the of in on at for to from by with without and or not no is are was were be been do does
did has have had what which who whom whose where when how many much each every all any some that
this these those than then there their its it as per both either neither only also more most less
least fewer fewest number count total sum average avg mean max min maximum minimum highest lowest
largest smallest greatest top first last different distinct unique order ordered sorted ascending
descending list show find give return tell me name names
""".split())
_QUOTED = re.compile(r'"[^"]*"|“[^”]*”|‘[^’]*’|(?<!\w)\'[^\']+\'(?!\w)')
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+(?:[.,]\d+)*(?:st|nd|rd|th)?|\S")
_MAX_PHRASE = 4


def _stem(word: str) -> str:
    """A light plural folding so 'students' matches a table named 'student'."""
    w = word.lower()
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        return w[:-1]
    return w


def _phrase(text: str) -> tuple[str, ...]:
    """Normalised word tuple of a schema name or entity: snake_case and camelCase split."""
    text = re.sub(r"([a-z])([A-Z])", r"\1 \2", str(text)).replace("_", " ")
    return tuple(_stem(w) for w in re.findall(r"[A-Za-z0-9]+", text))


def schema_terms(schema: Any) -> set[tuple[str, ...]]:
    """Table names, column names and short text values of ``schema`` as maskable phrases.

    ``schema`` is an :class:`agents.db.schema.Schema` or anything with ``tables``, each with
    ``name`` and ``columns`` (``name``, optional ``examples``).
    """
    terms: set[tuple[str, ...]] = set()
    for table in getattr(schema, "tables", []) or []:
        terms.add(_phrase(table.name))
        for column in getattr(table, "columns", []) or []:
            terms.add(_phrase(column.name))
            for value in getattr(column, "examples", None) or []:
                if isinstance(value, str) and 2 < len(value) <= 40:
                    terms.add(_phrase(value))
    return _maskable(terms)


def spider_schema_terms(entry: dict) -> set[tuple[str, ...]]:
    """Maskable phrases from one ``tables.json`` entry (original and natural names)."""
    names = list(entry.get("table_names_original") or []) + list(entry.get("table_names") or [])
    for key in ("column_names_original", "column_names"):
        names += [c[1] for c in entry.get(key) or [] if c and c[1] != "*"]
    return _maskable({_phrase(n) for n in names})


def _maskable(terms: Iterable[tuple[str, ...]]) -> set[tuple[str, ...]]:
    return {t for t in terms if t and len(t) <= _MAX_PHRASE and not all(w in _KEEP for w in t)}


def question_skeleton(question: str, terms: Iterable[tuple[str, ...]] = (),
                      entities: Iterable[str] = ()) -> str:
    """The question's template: values, names and schema mentions replaced by ``<m>``.

    Masked: quoted strings, numbers, capitalised words after the first word, phrases in
    ``terms`` (see :func:`schema_terms`) and short ``entities`` (up to four words after leading
    articles; a long descriptive entity would erase the template itself).
    """
    phrases = set(terms)
    for entity in entities or ():
        words = list(_phrase(entity))
        while words and words[0] in ("the", "a", "an"):
            words.pop(0)
        if words and len(words) <= _MAX_PHRASE and not all(w in _KEEP for w in words):
            phrases.add(tuple(words))
    text = _QUOTED.sub(f" {MASK} ", question or "")
    raw = _WORD.findall(text.replace(MASK, " \x00 "))
    out: list[str] = []
    stems = [_stem(w) for w in raw]
    i = 0
    sentence_start = True
    while i < len(raw):
        word = raw[i]
        if word == "\x00" or word[0].isdigit():
            out.append(MASK)
            i += 1
            sentence_start = False
            continue
        if not word[0].isalnum() and word[0] != "_":
            sentence_start = word in ".?!"
            i += 1
            continue
        matched = 0
        for n in range(min(_MAX_PHRASE, len(raw) - i), 0, -1):
            if tuple(stems[i:i + n]) in phrases:
                matched = n
                break
        if matched:
            out.append(MASK)
            i += matched
        elif word[0].isupper() and not sentence_start and word.lower() not in _KEEP:
            out.append(MASK)
            i += 1
        else:
            out.append(stems[i])
            i += 1
        sentence_start = False
    collapsed = [w for j, w in enumerate(out) if not (w == MASK and j and out[j - 1] == MASK)]
    return " ".join(collapsed)
