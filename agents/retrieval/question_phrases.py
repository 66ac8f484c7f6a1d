"""The phrases of a question that could be values stored in a database.

Value grounding (:mod:`agents.retrieval.value_grounding`) looks these up in the data, so they are chosen
to be few and likely: quoted strings, capitalised words and runs of them ("New York", "Bank of
America"), numbers of two or more digits (single digits are mostly counts: "top 3"), and runs
of one to three words that neither start nor end with a common function word. A single word
that names a table or column is left out: it speaks of the schema, not of a stored value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KINDS = ("quoted", "name", "number", "words")  # most specific first

STOPWORDS = frozenset("""
a about above after all also am an and any are as at be been before being below between both
but by can could did do does doing down during each either few for from further had has have
having he her here hers him his how i if in into is it its itself just me more most my no nor
not of off on once only or other our out over own same she should so some such than that the
their them then there these they this those through to too under until up very was we were
what when where which while who whom whose why will with would you your
show list find give return display tell get count number total average avg sum maximum minimum
max min many much greater less larger smaller higher lower least per every named called please
""".split())
# Lower-case words that may join a run of capitalised words ("Bank of America").
_JOINERS = frozenset({"of", "the", "de", "la", "van", "von", "and", "&", "du", "del"})
_TOKEN = re.compile(r"\w+(?:[-'’.&]\w+)*", re.UNICODE)
_POSSESSIVE = re.compile(r"['’]s\Z", re.IGNORECASE)
_QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”|‘([^’]+)’|(?<!\w)'([^']+)'(?!\w)")
_NUMBER = re.compile(r"\d+(?:\.\d+)?\Z")


@dataclass
class Phrase:
    text: str
    kind: str                 # one of KINDS
    span: tuple[int, int]     # word positions [start, end) in the question

    @property
    def fold(self) -> str:
        return fold(self.text)


def question_phrases(question: str, schema=None, limit: int = 60) -> list[Phrase]:
    """Candidate value phrases, most specific first, each text once.

    Single words that name a table or column of ``schema`` are left out: they speak of the
    schema, not of a stored value (a capitalised or quoted one is kept).
    """
    tokens = [(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(question)]
    words = [t for t, _, _ in tokens]
    schema_words = _schema_words(schema)
    found: dict[str, Phrase] = {}

    def add(text: str, kind: str, span: tuple[int, int]) -> None:
        """Add ``text``, and without a final "'s" ("France's" is also "France")."""
        for variant in dict.fromkeys([text.strip(), _POSSESSIVE.sub("", text.strip())]):
            if not variant or fold(variant) in found or (
                    kind == "words" and " " not in variant and fold(variant) in schema_words):
                continue
            found[fold(variant)] = Phrase(variant, kind, span)

    for match in _QUOTED.finditer(question):
        text = next(g for g in match.groups() if g is not None)
        inside = [i for i, (_, s, e) in enumerate(tokens) if s >= match.start() and
                  e <= match.end()]
        add(text, "quoted", (inside[0], inside[-1] + 1) if inside else (0, 0))
    for start, end in _capitalised_runs(words):
        add(" ".join(words[start:end]), "name", (start, end))
    for i, word in enumerate(words):
        if _NUMBER.match(word) and len(word.replace(".", "")) >= 2:
            add(word, "number", (i, i + 1))
    for size in (3, 2, 1):
        for start in range(len(words) - size + 1):
            part = words[start:start + size]
            if fold(part[0]) in STOPWORDS or fold(part[-1]) in STOPWORDS or \
                    any(_NUMBER.match(w) for w in part):
                continue
            if size == 1 and len(part[0]) < 2:
                continue
            add(" ".join(part), "words", (start, start + size))
    ranked = sorted(found.values(), key=lambda p: (KINDS.index(p.kind), p.span[0] - p.span[1]))
    return ranked[:limit]


def _capitalised_runs(words: list[str]) -> list[tuple[int, int]]:
    runs, i = [], 0
    while i < len(words):
        if not _capitalised(words[i]):
            i += 1
            continue
        end = i + 1
        while end < len(words) and (_capitalised(words[end]) or (
                words[end].casefold() in _JOINERS and end + 1 < len(words)
                and _capitalised(words[end + 1]))):
            end += 1
        runs.append((i, end))
        i = end
    return runs


def _capitalised(word: str) -> bool:
    return word[:1].isupper() and fold(word) not in STOPWORDS or \
        (len(word) > 1 and word.isupper())


def _schema_words(schema) -> set[str]:
    if schema is None:
        return set()
    words: set[str] = set()
    for table in schema.tables:
        for name in [table.name, *table.column_names()]:
            for part in re.split(r"[_\s]+|(?<=[a-z])(?=[A-Z])", name):
                if part:
                    words.update({fold(part), fold(part) + "s", fold(part) + "es"})
    return words


def fold(text: str) -> str:
    """Case-folded with single spaces: the form phrases and stored values are compared in."""
    return " ".join(text.casefold().split())
