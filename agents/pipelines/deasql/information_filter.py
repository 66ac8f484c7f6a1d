"""Information filter, stage two of DEA-SQL's information determination (Appendix B.1).

Given the entities, the model matches them to fields, names the calculation of the main
metric and lists the required tables with their fields, WHERE conditions and join conditions.
Its answer becomes a schema selection: names that are not in the database are dropped (and
noted), never passed on; each kept table keeps its primary- and foreign-key columns
(:meth:`Schema.subset`), so the joins stay writable; a table named without any real column is
kept whole. The WHERE conditions and the calculation method become the "key
information" the SQL generation prompt shows.

The paper's JSON also asks for a draft "sql", which nothing downstream reads; it is left out so
the small local model spends its tokens on the selection.

The ``compact`` variant, for small models, asks the same prompt but cuts less (:func:`widen`): a
small model names too few columns and too few tables, and a name the later prompts cannot see
gets invented (a column "nationality" where the table has "Country"). Each kept table is kept
whole, and a table is kept too when the answer put one of its columns under another table, when
the question names it, or when it joins two kept tables. The "calculation method" is left out
of the key information: a small model's method (``COUNT(DISTINCT x)``, ``ORDER BY`` another
column) was copied into the SQL where the question meant something else.
"""

from __future__ import annotations

import re

from agents.core.engine import ParseError, StepContext
from .outputs import FilteredSchema
from agents.llm.parsing import extract_json
from ...retrieval.fit import foreign_key_links, join_path
from ...retrieval.ranking import STOP_WORDS, query_words, words
from agents.rules.demonstration import ignored_names, template
from .shared import COMPACT, HERE, hint_text, main_metric, prompt, table_info, variant

MAX_TOKENS = 700
TABLES_KEY = "Required table information"
ANSWER_SCHEMA = {
    "type": "object",
    "properties": {
        "Element matching": {"type": "object"},
        "main_metric calculation method": {"type": "string"},
        TABLES_KEY: {"type": "array", "items": {
            "type": "object",
            "properties": {
                "Table name": {"type": "string"},
                "where statement condition": {"type": "string"},
                "All field names required by SQL under this table": {
                    "type": "array", "items": {"type": "string"}},
            },
            "required": ["Table name", "All field names required by SQL under this table"],
        }},
        "Multiple table joint fields and conditions": {"type": "string"},
        "All fields": {"type": "array", "items": {"type": "string"}},
    },
    "required": [TABLES_KEY],
}
_EMPTY = {"", "none", "null", "n/a", "no", "ccc", "bbb", "-", "[]"}


def _norm(key: object) -> str:
    return re.sub(r"[^a-z]", "", str(key).lower())


def _get(d: dict, *needles: str):
    """The value of the first key containing one of ``needles`` (keys compared loosely)."""
    for needle in needles:
        for key, value in d.items():
            if needle in _norm(key):
                return value
    return None


def _text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return "; ".join(_text(v) for v in value if _text(v))
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_text(v)}" for k, v in value.items() if _text(v))
    text = str(value).strip()
    return "" if text.lower() in _EMPTY else text


def _names(value) -> list[str]:
    if isinstance(value, str):
        return [v for v in (p.strip() for p in value.split(",")) if v]
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if isinstance(v, (str, int)) and str(v).strip()]
    return []


def parse_answer(text: str) -> dict:
    """The filter's JSON, normalised to ``{tables: [{table, columns, where}], join, ...}``."""
    value = extract_json(text)
    if not isinstance(value, dict):
        raise ParseError(f'expected a JSON object with a "{TABLES_KEY}" list')
    raw_tables = _get(value, "requiredtable", "tableinformation", "tables")
    if isinstance(raw_tables, dict):  # {"table": [fields]} is a readable variant
        raw_tables = [{"Table name": k, "fields": v} for k, v in raw_tables.items()]
    if not isinstance(raw_tables, list) or not raw_tables:
        raise ParseError(f'"{TABLES_KEY}" must be a non-empty list of '
                         '{"Table name": ..., "All field names required by SQL under this '
                         'table": [...]} objects')
    tables = []
    for item in raw_tables:
        if isinstance(item, str):
            tables.append({"table": item, "columns": [], "where": ""})
            continue
        if not isinstance(item, dict):
            continue
        name = _get(item, "tablename", "table")
        if not isinstance(name, str) or not name.strip():
            continue
        tables.append({"table": name.strip(),
                       "columns": _names(_get(item, "field", "column")),
                       "where": _text(_get(item, "where", "condition"))})
    if not tables:
        raise ParseError(f'no table name found in "{TABLES_KEY}"; give each table as '
                         '{"Table name": "...", ...}')
    matching = _get(value, "elementmatching")
    matched: list[str] = []
    if isinstance(matching, dict):
        for v in matching.values():
            matched += _names(v)
    return {
        "tables": tables,
        "join": _text(_get(value, "joint", "join")),
        "calculation": _text(_get(value, "calculation", "mainmetric")),
        "all_fields": _names(_get(value, "allfields")) + matched,
    }


def _clean(name: str) -> str:
    return str(name).strip().strip("`\"'[]").strip()


def resolve(schema, answer: dict, demonstration: str = ""
            ) -> tuple[dict | None, list[dict], list[str], list[str]]:
    """``(selection, rows, notes, key_info)`` from a parsed answer; see the module docstring.
    Ignored names found in ``demonstration`` (the prompt's answer format) are said to be
    copied from it.

    ``selection`` is None when no named table exists (the whole schema is used then).
    """
    notes: list[str] = []
    wanted: dict[str, set[str]] = {}
    named_columns: dict[str, bool] = {}
    where: dict[str, str] = {}
    unknown_tables: list[str] = []
    for item in answer["tables"]:
        table = schema.table(_clean(item["table"]))
        if table is None:
            unknown_tables.append(item["table"])
            continue
        wanted.setdefault(table.name, set())
        named_columns[table.name] = named_columns.get(table.name, False) or bool(item["columns"])
        if item["where"]:
            where[table.name] = item["where"]
        unknown = _add_columns(schema, table, item["columns"], wanted)
        if unknown:
            notes.append(f"{table.name}: ignored unknown column(s) {', '.join(map(repr, unknown))}")
    if unknown_tables:
        notes += ignored_names(unknown_tables, "table", demonstration)
    if not wanted:
        notes.append("the answer names no table of this database; the whole schema is used")
        return None, [], notes, _key_info(answer, where)
    for name in answer["all_fields"]:  # "All fields" / element matching: only adds to kept tables
        _add_qualified(schema, name, wanted)

    selection: dict[str, object] = {}
    for table in schema.tables:
        if table.name not in wanted:
            continue
        if wanted[table.name]:
            selection[table.name] = [c.name for c in table.columns if c.name in wanted[table.name]]
        else:
            reason = ("none of the named columns exists" if named_columns[table.name]
                      else "no column was named")
            notes.append(f"{table.name}: {reason}; kept all columns")
            selection[table.name] = "keep_all"
    rows, key_notes = _rows(schema, selection)
    return selection, rows, notes + key_notes, _key_info(answer, where)


def _rows(schema, selection: dict) -> tuple[list[dict], list[str]]:
    """The trace's row per kept table, and a note for each key column kept for joins."""
    sub = schema.subset(selection)
    rows: list[dict] = []
    notes: list[str] = []
    for table in sub.tables:
        all_columns = schema.column_names(table.name)
        kept = table.column_names()
        chosen = selection[table.name]
        added = [c for c in kept if isinstance(chosen, list) and c not in chosen]
        if added:
            notes.append(f"{table.name}: kept key column(s) {', '.join(added)} for joins")
        rows.append({"table": table.name,
                     "decision": "keep_all" if len(kept) == len(all_columns) else "columns",
                     "kept": kept, "dropped": [c for c in all_columns if c not in kept]})
    return rows, notes


def widen(schema, answer: dict, selection: dict | None, question: str
          ) -> tuple[dict | None, list[dict], list[str]]:
    """The compact variant's selection: ``(selection, rows, notes)``.

    Every table of ``selection`` is kept whole; a table is added when a field the answer named
    is its column and not one of the kept tables' (``table.column``, or a bare column listed
    under a table it is linked to by a foreign key), when all the words of its name are words
    of the question (``singer_in_concert``: singer, concert), or when it lies on a foreign-key
    path between two kept tables.
    """
    if selection is None:
        return None, [], []
    kept = {schema.table(name).name for name in selection}
    added: dict[str, str] = {}
    links = foreign_key_links(schema)

    def add(table: str, reason: str) -> None:
        if table not in kept:
            kept.add(table)
            added[table] = reason

    for item in answer["tables"]:
        home = schema.table(_clean(item["table"]))
        if home is None:
            continue
        for raw in item["columns"]:
            owner = _owner(schema, links, _clean(raw), home.name)
            if owner:
                add(owner, f"the answer listed its column {_clean(raw)!r} under {home.name}")
    for raw in answer["all_fields"]:
        owner = _owner(schema, links, _clean(raw), None)
        if owner:
            add(owner, f"the answer named its column {_clean(raw)!r}")
    asked = set(query_words(question))
    for table in schema.tables:
        name_words = set(words(table.name)) - STOP_WORDS
        if name_words and name_words <= asked:
            add(table.name, "the question names it")
    for table in sorted(kept):
        for between in join_path(links, table, kept - {table}) or []:
            add(between, f"it joins {table} to the other kept tables")
    widened = {t.name: "keep_all" for t in schema.tables if t.name in kept}
    notes = [f"{table}: kept too ({reason})" for table, reason in added.items()]
    rows, _ = _rows(schema, widened)
    return widened, rows, notes


def _owner(schema, links: dict[str, set[str]], name: str, home: str | None) -> str | None:
    """The table a field belongs to when it is not ``home``'s: ``table.column`` names it; a bare
    column listed under ``home`` belongs to the one table linked to ``home`` that has it. None
    when the name is a column of ``home``, or no real table has it."""
    if not name or name == "*":
        return None
    if "." in name:
        prefix, _, column = name.rpartition(".")
        table = schema.table(_clean(prefix))
        if table is None or table.column(_clean(column)) is None:
            return None
        return table.name
    if home is None or schema.table(home).column(name) is not None:
        return None
    linked = links.get(home, set())
    owners = [t.name for t in schema.tables if t.name in linked and t.column(name) is not None]
    return owners[0] if len(owners) == 1 else None


def _add_columns(schema, table, names: list[str], wanted: dict[str, set[str]]) -> list[str]:
    by_lower = {c.name.lower(): c.name for c in table.columns}
    unknown = []
    for raw in names:
        name = _clean(raw)
        if name == "*":
            continue
        if name.lower() in by_lower:
            wanted[table.name].add(by_lower[name.lower()])
        elif not _add_qualified(schema, name, wanted):
            unknown.append(raw)
    return unknown


def _add_qualified(schema, name: str, wanted: dict[str, set[str]]) -> bool:
    """Add ``table.column``, or a bare column to every kept table that has it; True if found."""
    name = _clean(name)
    if "." in name:
        prefix, _, column = name.rpartition(".")
        table = schema.table(_clean(prefix))
        if table is None or table.name not in wanted:
            return False
        by_lower = {c.name.lower(): c.name for c in table.columns}
        if _clean(column).lower() in by_lower:
            wanted[table.name].add(by_lower[_clean(column).lower()])
            return True
        return False
    owners = [t for t in schema.tables if t.name in wanted
              and any(c.name.lower() == name.lower() for c in t.columns)]
    for table in owners:
        wanted[table.name].add(next(c.name for c in table.columns
                                    if c.name.lower() == name.lower()))
    return bool(owners)


def _key_info(answer: dict, where: dict[str, str]) -> list[str]:
    info = []
    if answer["calculation"]:
        info.append(f"calculation method: {answer['calculation']}")
    for table, condition in where.items():
        info.append(f"condition on {table}: {condition}")
    return info


def run(ctx: StepContext) -> str:
    schema = ctx.schema
    ctx.data["selection"] = None
    ctx.data["key_info"] = []
    if not ctx.params["information_filter"]:
        ctx.set_output(FilteredSchema(used=False))
        ctx.skip("the information filter is off: the whole schema is used")
        return "classification"
    entities = ctx.data.get("entities") or []
    style = variant(ctx)
    ctx.set_inputs(tables=len(schema.tables),
                   columns=sum(len(t.columns) for t in schema.tables), entities=entities,
                   variant=style)
    answer = ctx.ask(prompt("information_filter", table_info=table_info(schema),
                            question=ctx.question.strip(), hint=hint_text(ctx.evidence),
                            entities=", ".join(entities) or "None",
                            main_metric=main_metric(ctx)),
                     parse=parse_answer, json_schema=ANSWER_SCHEMA, max_tokens=MAX_TOKENS)
    selection, rows, notes, key_info = resolve(
        schema, answer, template(str(HERE), "information_filter"))
    if style == COMPACT and selection is not None:
        selection, rows, more = widen(schema, answer, selection,
                                      f"{ctx.question} {ctx.run.evidence or ''}")
        notes = [n for n in notes if "for joins" not in n] + more
        key_info = [line for line in key_info if not line.startswith("calculation method:")]
    for note in notes:
        ctx.note(note)
    ctx.data["selection"] = selection
    ctx.data["key_info"] = key_info
    ctx.data["join_conditions"] = answer["join"]
    ctx.set_output(FilteredSchema(tables=rows, used=selection is not None,
                                 join_conditions=answer["join"], key_info=key_info))
    return "classification"
