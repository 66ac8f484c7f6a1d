"""The words of a question and of a schema, in the one form they are compared in.

Question words and schema names meet in several checks (is the question about this database,
which table does "per genre" mean): each compares stems, so ``genres`` meets ``Genre`` and
``countries`` meets ``country``, and splits names the way schemas write them (``TrackId``,
``invoice_line``, ``StuID``)."""

from __future__ import annotations

import re

_WORD = re.compile(r"[A-Za-z][A-Za-z']*")
_NAME_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")

# Words any question may hold whatever it is about: they name no subject of a database.
STOP = frozenset("""
a about above after again against all also am an and any are as at be been before being
below between both but by can could did do does doing done down during each either else
ever every few for from further give given had has have having he her here hers him his how
i if in into is it its itself just let list me more most much must my no nor not now of off
on once one only or other our ours out over own per please same shall she should show so
some such tell than that the their theirs them then there these they this those through to
too under until up upon us very was we were what when where which while who whom whose why
will with would you your yours return returns find display get gets got want know see
many number numbers count total average sum mean maximum minimum max min greatest least
highest lowest largest smallest biggest top first last different distinct unique respective
respectively order ordered sorted sort ascending descending alphabetical alphabetically name
names value values record records row rows entry entries data database table tables
information info detail details result results like kind kinds type types thing things
""".split())

_IRREGULAR = {"people": "person", "children": "child", "men": "man", "women": "woman",
              "mice": "mouse", "feet": "foot", "teeth": "tooth", "geese": "goose"}


def stem(word: str) -> str:
    """A crude English stem: enough to meet a singular table name with a plural question
    word (``countries``/``country``, ``classes``/``class``, ``buses``/``bus``)."""
    w = word.casefold().strip("'")
    if w.endswith("'s"):
        w = w[:-2]
    if w in _IRREGULAR:
        return _IRREGULAR[w]
    for suffix, keep in (("ies", "y"), ("sses", "ss"), ("xes", "x"), ("ches", "ch"),
                         ("shes", "sh"), ("ses", "s")):
        if w.endswith(suffix) and len(w) > len(suffix) + 2:
            return w[: -len(suffix)] + keep
    if w.endswith("s") and not w.endswith(("ss", "us", "is")) and len(w) > 3:
        return w[:-1]
    return w


def question_words(question: str) -> list[str]:
    """The question's words, as written, in order."""
    return _WORD.findall(question or "")


def content_stems(question: str) -> list[str]:
    """Stems of the question's words that could name a subject (no stop words), in order."""
    found = []
    for word in question_words(question):
        low = word.casefold().strip("'")
        if len(low) < 3 or low in STOP:
            continue
        s = stem(low)
        if s not in STOP and s not in found:
            found.append(s)
    return found


def name_stems(name: str) -> set[str]:
    """Stems of a schema name's parts (``invoice_line`` -> invoice, line; ``TrackId`` -> track,
    id), and of the whole name."""
    parts = [p for chunk in re.split(r"[^A-Za-z0-9]+", name or "") if chunk
             for p in _NAME_PART.findall(chunk)]
    stems = {stem(p) for p in parts if p}
    whole = re.sub(r"[^a-z0-9]", "", (name or "").casefold())
    if whole:
        stems.add(stem(whole))
    return stems


def names_word(name: str, word_stem: str) -> bool:
    """Whether the schema name ``name`` names the question word (given by its stem): one of
    its parts has that stem, or, for words of four letters or more, the whole name starts
    with it (``countrylanguage`` and ``country``)."""
    stems = name_stems(name)
    if word_stem in stems:
        return True
    whole = re.sub(r"[^a-z0-9]", "", (name or "").casefold())
    return len(word_stem) >= 4 and whole.startswith(word_stem)
