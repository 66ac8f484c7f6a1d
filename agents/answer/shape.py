"""Does the result have the shape the question asks for?

"How many ..." and "what is the total ..." ask for one value; "per genre" or "for each genre"
asks for one row per genre, so never more rows than the database holds genres; "the top 5"
asks for five rows. A small model's SQL that runs can still answer another question -- grouped
per track where the question said per genre, a list where it asked for a count -- and the run
would look like a success. The expectation is read from the question's words alone
(:func:`expected_shape`), the result is compared with it (:func:`shape_doubt`), and what is
found is said in the question's own words ("the question asks per genre; the result has a row
per track"). Only a clear mismatch is reported: a question the patterns do not read has no
expectation, and a result that may be right is left alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlglot import exp

from agents.answer.words import names_word, stem
from agents.db.sqltext import parse_statement

_NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
            "nine": 9, "ten": 10, "twenty": 20}
_N = r"(\d{1,3}|two|three|four|five|six|seven|eight|nine|ten|twenty)"
_RANKED = (r"(?:most|least|highest|lowest|largest|smallest|biggest|oldest|youngest|newest|"
           r"latest|earliest|best|worst|longest|shortest|cheapest|richest|busiest|top|"
           r"greatest|fewest|heaviest|lightest|tallest|popular|expensive|recent)")
_TOP_K = (re.compile(rf"\btop[- ]{_N}\b(?!\s*%|\s*percent)", re.I),
          re.compile(rf"\b{_N}\s+{_RANKED}\b", re.I),
          re.compile(rf"\bfirst\s+{_N}\b(?!\s*(%|percent|characters?|letters?|digits?|"
                     r"words?|chars?))", re.I))
# "the 2 most popular genres" ranks something the answer is filtered by, not the answer's rows
_RANKS_A_FILTER = re.compile(r"\b(in|of|from|by|among|within)\s+(the\s+)?(top\s+)?"
                             rf"{_N}\s+(most|least|top|best|highest|lowest|largest|biggest)",
                             re.I)
# a "per X" question that aggregates per group (not "for each genre, list its tracks")
_AGGREGATES = re.compile(r"\b(how many|how much|number|count|total|sum|average|avg|mean|"
                         r"maximum|minimum|max|min|most|least|revenue|amount|highest|lowest)\b",
                         re.I)
# A phrase that asks for several values or groups: no single-value expectation.
_GROUPED = re.compile(r"\b(each|every|per|by|for (all )?(the )?different|respective(ly)?|group(ed)?|list|"
                      r"and (the |their |its )?(names?|ids?|what|which|who|list|show|give|"
                      r"find))\b", re.I)
_ONE_VALUE = re.compile(
    r"^\s*(how many|how much|count the|what is the (total|average|sum|number|count|mean|"
    r"maximum|minimum|max|min)\b|what's the (total|average|sum|number|count)\b|find the "
    r"(total|average|sum|number|count)\b|(give|tell) me the (total|average|number|count)\b|"
    r"what is the number)", re.I)
_PER = re.compile(r"\b(?:for each|for every|per|in each|of each|by each|from each|at each|"
                  r"in every)\s+(?:of the\s+|"
                  r"single\s+|individual\s+)?([A-Za-z]+)", re.I)
_NOT_A_GROUP = {"year", "month", "day", "week", "hour", "minute", "second", "cent", "percent",
                "capita", "person", "unit", "time", "one", "other", "of", "the", "them",
                "these", "those", "thi", "that", "it", "which"}


@dataclass(frozen=True)
class Expected:
    """What shape the question asks for: ``one`` value, a row ``per`` group word, or ``top``
    k rows."""

    kind: str          # one | per | top
    word: str = ""     # the group word, as written ("genre")
    k: int = 0

    def to_dict(self) -> dict:
        return {"kind": self.kind, "word": self.word, "k": self.k}


def expected_shape(question: str) -> Expected | None:
    """The shape ``question`` asks for, or None where its words do not say clearly."""
    text = " ".join((question or "").split())
    per = _PER.search(text)
    if per and stem(per.group(1)) not in _NOT_A_GROUP and _AGGREGATES.search(text) and \
            len(_PER.findall(text)) == 1:
        return Expected("per", word=per.group(1))
    if per:
        return None  # grouped, but not one clear row per group
    for pattern in _TOP_K:
        if _RANKS_A_FILTER.search(text):
            break
        m = pattern.search(text)
        if m:
            k = m.group(1).casefold()
            k = _NUMBERS.get(k) or (int(k) if k.isdigit() else 0)
            if 1 < k <= 100:
                return Expected("top", k=k)
    if _ONE_VALUE.search(text) and not _GROUPED.search(text.split(" ", 2)[-1]):
        return Expected("one")
    return None


def shape_doubt(expected: Expected | None, result: dict, group_count=None,
                row_table: str | None = None) -> str | None:
    """What does not fit between ``expected`` and ``result`` (a run's result preview), in
    words, or None. ``group_count`` is how many different groups the database holds for a
    "per X" question (None: unknown), ``row_table`` the table the result has a row of."""
    if expected is None or not result or not result.get("ok"):
        return None
    rows = int(result.get("row_count") or 0)
    cut = bool(result.get("truncated"))
    shown = f"{rows:,}{'+' if cut else ''} rows"
    if expected.kind == "one" and (rows > 1 or cut):
        return f"the question asks for one value; the result has {shown}" + \
               (" (cut at the row limit)" if cut else "")
    if expected.kind == "top" and (rows > expected.k or cut):
        return f"the question asks for the top {expected.k}; the result has {shown}"
    if expected.kind == "per" and group_count is not None and (rows > group_count or cut):
        per = f"a row per {stem(row_table)}" if row_table and not names_word(
            row_table, stem(expected.word)) else shown
        return (f"the question asks per {expected.word}; the result has {per} ({shown}, and "
                f"the database holds {group_count:,} different {expected.word} values)")
    return None


def fits_question(question: str):
    """A test of a result (an execution preview) against the shape ``question`` asks for, as
    a vote uses it: one value ("how many", "what is the total"); None when the question sets
    no such shape. Only the clearest shape may change a vote: "the top k" is read into
    questions that rank something else ("tracks in the 2 most popular genres"), and "per X"
    needs the database's groups counted; both are left to the answer's review, which only
    reports."""
    expected = expected_shape(question)
    if expected is None or expected.kind != "one":
        return None
    return lambda result: not result or not result.get("ok") or \
        shape_doubt(expected, result) is None


def limited_to(sql: str, k: int) -> str | None:
    """``sql`` keeping its first ``k`` rows (its LIMIT replaced): the repair offered when a
    question asks for the top k and the result has more; None for SQL sqlglot cannot read."""
    tree = parse_statement(sql)
    if not isinstance(tree, (exp.Select, exp.SetOperation)):
        return None  # no repair for SQL that cannot be read
    return tree.limit(k, copy=True).sql(dialect="sqlite")
