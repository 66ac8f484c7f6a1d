"""Schemas the agents have never seen: a database's tables and columns renamed to synonyms and
abbreviations, and SQL rewritten to the new names.

Every rule and default of the pipelines was chosen on Spider's dev databases, whose names the
questions echo ("singers" and ``singer``). A copy of those databases with the names changed the
way real schemas differ from the question's words (``singer`` -> ``vocalist``,
``Song_release_year`` -> ``Track_rele_yr``, ``Nationality`` -> ``Citizenship``), as in Dr.Spider's
schema perturbations, asks the same questions of a schema nobody tuned for, and the rewritten
gold SQL still says what the right answer is (:func:`rename_sql`;
``bench/renamed_spider.py`` checks that it returns the original's rows on every question).

The names are made by general means only, the same for every database: a word of a name with an
entry in :data:`SYNONYMS` (ordinary schema vocabulary) becomes it, another word of five to nine
letters is abbreviated (:func:`abbreviate`), shorter words and longer ones (mostly words written
together, ``countrylanguage``) stay. A synonym is applied wherever its word appears, so some
names read oddly (``HeadOfState`` -> ``HeadOfRegion``), as real schemas' names sometimes do.
One column name gets one new name in every table of its database, so a column a query does not
qualify needs no resolving; a new name that would clash with another name of the database keeps
the old one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

# Ordinary schema words and a word of the same meaning (never an SQL keyword).
SYNONYMS = {
    "name": "label", "names": "labels", "title": "heading", "age": "years", "country": "nation",
    "countries": "nations", "city": "town", "cities": "towns", "student": "pupil",
    "students": "pupils", "teacher": "instructor", "teachers": "instructors",
    "people": "persons", "person": "individual", "singer": "vocalist", "singers": "vocalists",
    "song": "track", "songs": "tracks", "concert": "gig", "stadium": "arena",
    "capacity": "seats", "year": "yr", "date": "day", "address": "addr", "phone": "telephone",
    "email": "mail", "price": "cost", "amount": "sum_value", "number": "num", "count": "total",
    "type": "kind", "types": "kinds", "description": "details", "code": "identifier",
    "owner": "holder", "owners": "holders", "dog": "canine", "dogs": "canines",
    "breed": "lineage", "pet": "animal", "pets": "animals", "car": "vehicle", "cars": "vehicles",
    "maker": "manufacturer", "model": "variant", "continent": "landmass", "language": "tongue",
    "population": "inhabitants", "area": "extent", "museum": "gallery", "visitor": "guest",
    "visit": "trip", "employee": "staff_member", "employees": "staff", "shop": "store",
    "hiring": "recruitment", "evaluation": "appraisal", "bonus": "premium", "flight": "trip_leg",
    "airline": "carrier", "airport": "airfield", "airports": "airfields", "source": "origin",
    "destination": "target", "friend": "companion", "high": "upper", "grade": "level",
    "orchestra": "ensemble", "conductor": "maestro", "performance": "show", "player": "competitor",
    "earnings": "income", "money": "funds", "rank": "position", "property": "estate",
    "properties": "estates", "feature": "attribute", "features": "attributes",
    "course": "module", "courses": "modules", "degree": "qualification", "program": "scheme",
    "semester": "term", "transcript": "record", "transcripts": "records",
    "department": "division", "section": "part", "contestant": "candidate", "vote": "ballot",
    "votes": "ballots", "state": "region", "channel": "station", "series": "serial",
    "episode": "installment", "cartoon": "animation", "battle": "combat", "ship": "vessel",
    "death": "fatality", "injured": "wounded", "killed": "dead", "document": "file",
    "documents": "files", "template": "blueprint", "paragraph": "passage", "version": "edition",
    "first": "given", "last": "family", "middle": "second", "gender": "sex", "weight": "mass",
    "height": "stature", "salary": "pay", "start": "starting", "end": "finish",
    "official": "formal", "cost": "charge", "treatment": "therapy", "professional": "expert",
    "size": "dimension", "hometown": "home_town", "nationality": "citizenship",
    "winner": "victor", "loser": "defeated",
}
LONG_WORD = 5        # a word at least this long without a synonym is abbreviated,
TOGETHER = 10        # ... unless it is this long: words written together are left whole
ABBREVIATION = 4     # ... to its first letters, or its consonants
RESERVED = {"select", "from", "where", "group", "order", "by", "limit", "join", "on", "as",
            "and", "or", "not", "in", "is", "null", "like", "between", "case", "when", "then",
            "else", "end", "union", "except", "intersect", "having", "distinct", "all", "key",
            "index", "table", "values", "default", "check", "primary", "foreign", "references"}


def split_words(name: str) -> list[str]:
    """The words of a name written in snake_case, camelCase or with spaces."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced) if w]


def abbreviate(word: str) -> str:
    """``nationality`` -> ``nati``: a long word keeps its first letters, a word of five or six
    letters its first letter and consonants (``title`` -> ``ttl``)."""
    if len(word) >= 2 * ABBREVIATION - 1:
        return word[:ABBREVIATION]
    consonants = word[0] + re.sub(r"[aeiouAEIOU]", "", word[1:])
    return consonants if len(consonants) < len(word) else word[:ABBREVIATION]


def _case_like(new: str, old: str) -> str:
    if old.isupper():
        return new.upper()
    if old[:1].isupper():
        return new[:1].upper() + new[1:]
    return new


def new_name(name: str) -> str:
    """The renamed form of one table or column name (see the module's docstring)."""
    words = split_words(name)
    if not words:
        return name
    renamed = []
    for word in words:
        lower = word.lower()
        if lower in SYNONYMS:
            renamed.append(_case_like(SYNONYMS[lower], word))
        elif LONG_WORD <= len(word) < TOGETHER and word.isalpha():
            renamed.append(abbreviate(word))
        else:
            renamed.append(word)
    separator = "_" if "_" in name or " " in name or len(words) == 1 else ""
    if not separator and len(renamed) > 1:
        renamed = [renamed[0]] + [_case_like(w, w.title()) for w in renamed[1:]]
    return separator.join(renamed)


@dataclass
class Renaming:
    """Old name (case-folded) -> new name, for the tables and the column names of one
    database."""

    tables: dict[str, str] = field(default_factory=dict)
    columns: dict[str, str] = field(default_factory=dict)
    columns_of: dict[str, set[str]] = field(default_factory=dict)  # table -> its columns

    def table(self, name: str) -> str:
        return self.tables.get(name.casefold(), name)

    def column(self, name: str) -> str:
        return self.columns.get(name.casefold(), name)


def plan(schema: dict[str, list[str]]) -> Renaming:
    """The renaming of a database whose tables are ``schema`` (table -> column names): a new
    name that is reserved, or that another name of the database has or is given, is not used
    (the old one stays), so no two tables and no two columns of a table end up alike."""
    renaming = Renaming()

    def assign(names: list[str], into: dict[str, str]) -> None:
        taken = {n.casefold() for n in names}
        for name in dict.fromkeys(names):
            candidate = new_name(name)
            fold = candidate.casefold()
            if fold != name.casefold() and fold not in taken and fold not in RESERVED \
                    and candidate.isidentifier():
                into[name.casefold()] = candidate
                taken.add(fold)

    renaming.columns_of = {t.casefold(): {c.casefold() for c in cs} for t, cs in schema.items()}
    assign(list(schema), renaming.tables)
    assign([c for columns in schema.values() for c in columns], renaming.columns)
    return renaming


class RenameError(ValueError):
    """SQL that cannot be rewritten (sqlglot cannot read it)."""


def rename_sql(sql: str, renaming: Renaming) -> str:
    """``sql`` with the tables and columns of ``renaming`` written under their new names;
    aliases, literals and everything else as they were. Left as written: a table named like
    one of the query's CTEs, a name in ``ORDER BY``/``GROUP BY``/``HAVING`` that is an output
    alias of its SELECT, and a double-quoted name no table of the query has (SQLite reads it
    as a string, ``WHERE country = "France"``)."""
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except sqlglot.errors.SqlglotError as exc:
        raise RenameError(f"cannot read the SQL: {exc}") from None
    aliases = {a.name.casefold() for a in tree.find_all(exp.TableAlias) if a.name}
    ctes = {c.alias_or_name.casefold() for c in tree.find_all(exp.CTE)}
    read = {t.name.casefold() for t in tree.find_all(exp.Table) if t.name}
    columns_read = set().union(*(renaming.columns_of.get(t, set()) for t in read)) if read \
        else set()

    def rename(identifier, new: str) -> None:  # quoting kept: "Ohio" stays a quoted name
        if isinstance(identifier, exp.Identifier) and identifier.this != new:
            identifier.set("this", new)

    for table in tree.find_all(exp.Table):
        if table.name and table.name.casefold() not in ctes:
            rename(table.this, renaming.table(table.name))
    for column in tree.find_all(exp.Column):
        if isinstance(column.this, exp.Identifier) and not _kept(column, columns_read):
            rename(column.this, renaming.column(column.name))
        qualifier = column.args.get("table")
        if qualifier is not None and column.table.casefold() not in aliases | ctes:
            rename(qualifier, renaming.table(column.table))
    for join in tree.find_all(exp.Join):
        for name in join.args.get("using") or []:
            rename(name, renaming.column(name.name))
    return tree.sql(dialect="sqlite")


def _kept(column: exp.Column, columns_read: set[str]) -> bool:
    """Whether an unqualified name stays as written: an output alias where SQLite reads
    aliases, or a quoted name no table of the query has (a string to SQLite)."""
    if column.table:
        return False
    name = column.name.casefold()
    if column.this.quoted and name not in columns_read:
        return True
    clause = column.find_ancestor(exp.Order, exp.Group, exp.Having, exp.Select)
    if clause is None or isinstance(clause, exp.Select):
        return False
    select = clause.find_ancestor(exp.Select)
    return select is not None and name in {e.alias.casefold() for e in select.expressions
                                           if isinstance(e, exp.Alias)}
