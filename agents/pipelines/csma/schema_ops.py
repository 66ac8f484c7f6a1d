"""CSMA's schema bookkeeping, free of model calls: partitions, merging, extraction, retention.

A schema here is a *schema map*: ``{table: [column, ...]}`` with the database's own spelling.
Private schemas, the global schema, an agent's known schema and its extraction are all schema
maps, so they store as plain JSON in the run state and can be checked without the model.

:func:`restrict` is the only way a schema map becomes prompt text: it builds a
:class:`~agents.db.schema.Schema` holding exactly the mapped columns -- no key columns added, no
foreign key whose other end is missing -- so an agent's prompt cannot show a name outside the
map it was rendered from.
"""

from __future__ import annotations

import ast
import dataclasses
import json
from typing import Any, Iterable, Sequence

from agents.db.schema import Schema
from agents.rules.demonstration import ignored_names

SchemaMap = dict[str, list[str]]


class PartitionError(ValueError):
    """A user-defined partition is not usable; the message says what to fix."""


# -- partitions ---------------------------------------------------------------------------------

def equal_partition(tables: Sequence[str], n_agents: int) -> list[list[str]]:
    """Split ``tables`` into ``n_agents`` contiguous runs in table order, sizes differing by at
    most one (the earlier agents take the extra tables). ``n_agents`` is capped at the number of
    tables, so every agent owns at least one table."""
    if n_agents < 1:
        raise PartitionError("n_agents must be at least 1")
    n = min(n_agents, len(tables)) or 1
    size, extra = divmod(len(tables), n)
    parts, start = [], 0
    for k in range(n):
        end = start + size + (1 if k < extra else 0)
        parts.append(list(tables[start:end]))
        start = end
    return parts


def parse_partition(value: Any, tables: Sequence[str]) -> list[list[str]] | None:
    """A user's partition as one table list per agent (agent 1 first); None when not given.

    Accepted forms: ``{"1": ["t1", "t2"], "2": ["t3"]}`` (agent numbers 1..k as keys) or
    ``[["t1", "t2"], ["t3"]]``, as a dict/list or as JSON text. Table names match the database
    case-insensitively. Every table must be owned by exactly one agent and every agent must own
    at least one table; anything else raises :class:`PartitionError` saying what is wrong.
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    raw = _load_partition(value) if isinstance(value, str) else value
    groups = _agent_groups(raw)
    by_lower = {t.casefold(): t for t in tables}
    owner: dict[str, int] = {}
    parts: list[list[str]] = []
    unknown: list[str] = []
    for agent, names in enumerate(groups, start=1):
        if isinstance(names, str):
            names = [names]
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise PartitionError(f"agent {agent}: expected a list of table names")
        if not names:
            raise PartitionError(f"agent {agent} owns no table; give every agent at least one")
        part: list[str] = []
        for name in names:
            table = by_lower.get(name.strip().casefold())
            if table is None:
                unknown.append(name)
                continue
            if table in owner:
                raise PartitionError(f"table {table!r} is assigned twice (agents {owner[table]} "
                                     f"and {agent}); each table belongs to exactly one agent")
            owner[table] = agent
            part.append(table)
        parts.append(part)
    if unknown:
        raise PartitionError(f"unknown table(s) {', '.join(map(repr, unknown))}; the database "
                             f"has: {', '.join(tables)}")
    missing = [t for t in tables if t not in owner]
    if missing:
        raise PartitionError(f"table(s) not assigned to any agent: {', '.join(missing)}")
    return [[t for t in tables if t in part] for part in parts]


def _load_partition(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:  # a dict passed as a parameter arrives as its Python repr
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise PartitionError('the partition is not valid JSON; write it like '
                             '{"1": ["table_a", "table_b"], "2": ["table_c"]}') from None


def _agent_groups(raw: Any) -> list:
    if isinstance(raw, list):
        if not raw:
            raise PartitionError("the partition lists no agent")
        return raw
    if not isinstance(raw, dict) or not raw:
        raise PartitionError('the partition must map agent numbers to table lists, like '
                             '{"1": ["table_a"], "2": ["table_b"]}')
    numbered: dict[int, Any] = {}
    for key, names in raw.items():
        try:
            number = int(str(key).strip())
        except ValueError:
            raise PartitionError(f"partition key {key!r} is not an agent number "
                                 f"(use 1, 2, ...)") from None
        if number in numbered:
            raise PartitionError(f"agent {number} appears twice in the partition")
        numbered[number] = names
    expected = list(range(1, len(numbered) + 1))
    if sorted(numbered) != expected:
        raise PartitionError(f"agent numbers must be 1..{len(numbered)}, "
                             f"got {', '.join(map(str, sorted(numbered)))}")
    return [numbered[k] for k in expected]


def private_schemas(schema: Schema, partition: list[list[str]]) -> list[SchemaMap]:
    """Each agent's private schema: its tables with all their columns."""
    return [{t: schema.column_names(t) for t in part} for part in partition]


def agent_for_round(round_no: int, n_agents: int) -> int:
    """The paper's t(i) = i mod n, with rounds and agents numbered from 1."""
    return (round_no - 1) % n_agents + 1


# -- merging and ordering -----------------------------------------------------------------------

def merge(first: SchemaMap, second: SchemaMap) -> SchemaMap:
    """The paper's merge rule (4.2): a table in only one schema is kept with its columns; a table
    in both is kept with the union of its columns. Order: ``first``'s, then what ``second`` adds."""
    merged = {t: list(cols) for t, cols in first.items()}
    for table, columns in second.items():
        kept = merged.setdefault(table, [])
        kept.extend(c for c in columns if c not in kept)
    return merged


def in_schema_order(schema_map: SchemaMap, schema: Schema) -> SchemaMap:
    """``schema_map`` with tables and columns in database order (names it lacks are dropped),
    so the same knowledge always renders as the same prompt text."""
    ordered: SchemaMap = {}
    for table in schema.tables:
        if table.name in schema_map:
            wanted = set(schema_map[table.name])
            ordered[table.name] = [c for c in table.column_names() if c in wanted]
    return ordered


def intersect(schema_map: SchemaMap, allowed: SchemaMap) -> SchemaMap:
    """The part of ``schema_map`` inside ``allowed`` (tables with no column left are dropped)."""
    out: SchemaMap = {}
    for table, columns in schema_map.items():
        kept = [c for c in columns if c in allowed.get(table, [])]
        if kept:
            out[table] = kept
    return out


def names_in(schema_map: SchemaMap) -> set[str]:
    """Every table and column name in ``schema_map``."""
    found = set(schema_map)
    for columns in schema_map.values():
        found.update(columns)
    return found


def as_rows(schema_map: SchemaMap) -> list[dict]:
    """``[{"table", "columns"}]``: the shape a view draws as a table."""
    return [{"table": t, "columns": list(cols)} for t, cols in schema_map.items()]


# -- extraction ---------------------------------------------------------------------------------

def resolve_extraction(answer: dict, known: SchemaMap, demonstration: str = ""
                       ) -> tuple[SchemaMap, list[str]]:
    """The model's ``{table: [columns]}`` answer as names from ``known``; notes say what was
    ignored, and which ignored names came from ``demonstration`` (the prompt's example). A table named with only unknown columns is kept (with no column yet: retention
    fills it), since the model did judge the table relevant."""
    tables = {t.casefold(): t for t in known}
    extracted: SchemaMap = {}
    notes: list[str] = []
    for raw_table, raw_columns in answer.items():
        table = tables.get(clean_name(raw_table).casefold())
        if table is None:
            notes += ignored_names([raw_table], "table", demonstration)
            continue
        columns = {c.casefold(): c for c in known[table]}
        if isinstance(raw_columns, str):
            word = clean_name(raw_columns).casefold()
            if word in ("drop_all", "none", ""):
                continue
            raw_columns = known[table] if word in ("keep_all", "all", "*") else [raw_columns]
        if not isinstance(raw_columns, list) or not raw_columns:
            continue  # an empty list or "drop_all": the table is not needed
        chosen = extracted.setdefault(table, [])
        for raw in raw_columns:
            name = clean_name(str(raw))
            if "." in name and name.casefold() not in columns:
                prefix, _, rest = name.partition(".")
                if clean_name(prefix).casefold() == table.casefold():
                    name = clean_name(rest)
            column = columns.get(name.casefold())
            if column is None:
                notes += ignored_names([raw], "column", demonstration, prefix=f"{table}: ")
            elif column not in chosen:
                chosen.append(column)
    return extracted, notes


def keep_join_columns(extracted: SchemaMap, known: SchemaMap,
                      foreign_keys: Iterable) -> tuple[SchemaMap, dict[str, list[str]]]:
    """Add both columns of every known foreign key between two extracted tables: extraction
    keeps the key relationships among the relevant tables (paper, 4.1), so they can be joined."""
    out = {t: list(cols) for t, cols in extracted.items()}
    added: dict[str, list[str]] = {}
    for fk in foreign_keys:
        if fk.table not in out or fk.ref_table not in out:
            continue
        for table, column in ((fk.table, fk.column), (fk.ref_table, fk.ref_column)):
            if column in known.get(table, []) and column not in out[table]:
                out[table].append(column)
                added.setdefault(table, []).append(column)
    return out, added


def apply_retention(extracted: SchemaMap, known: SchemaMap, delta: int,
                    primary_keys: dict[str, list[str]]) -> tuple[SchemaMap, dict[str, list[str]]]:
    """The retention mechanism (4.2): every extracted table keeps at least ``delta`` columns.

    A table with fewer gets columns back from the known schema, primary-key columns first, then
    in table order, until it has ``delta`` (or all its known columns). Returns the new map and
    the columns added per table.
    """
    out = {t: list(cols) for t, cols in extracted.items()}
    added: dict[str, list[str]] = {}
    for table, columns in out.items():
        available = known.get(table, [])
        keys = [c for c in primary_keys.get(table, []) if c in available]
        for column in keys + [c for c in available if c not in keys]:
            if len(columns) >= delta:
                break
            if column not in columns:
                columns.append(column)
                added.setdefault(table, []).append(column)
    return {t: cols for t, cols in out.items() if cols}, added


def whole_tables(tables: Iterable[str], known: SchemaMap) -> SchemaMap:
    """The compact variant's extraction: each named table with every column the agent knows of
    it -- retention at its widest, so the global schema carries whole tables and, through
    :func:`restrict`, every foreign key between them."""
    return {t: list(known[t]) for t in tables if known.get(t)}


def clean_name(name: str) -> str:
    """A name as a model may quote it (backticks, quotes, brackets) without the quotes."""
    return str(name).strip().strip("`\"'[]").strip()


# -- rendering ----------------------------------------------------------------------------------

def restrict(schema: Schema, schema_map: SchemaMap) -> Schema:
    """A :class:`Schema` with exactly the tables and columns of ``schema_map`` (database order)
    and only the foreign keys whose both columns are in it."""
    tables = []
    for table in schema.tables:
        wanted = set(schema_map.get(table.name, []))
        if not wanted:
            continue
        columns = [dataclasses.replace(c, examples=list(c.examples))
                   for c in table.columns if c.name in wanted]
        tables.append(dataclasses.replace(
            table, columns=columns, primary_key=[c for c in table.primary_key if c in wanted]))
    present = {(t.name, c.name) for t in tables for c in t.columns}
    fks = [dataclasses.replace(fk) for fk in schema.foreign_keys
           if (fk.table, fk.column) in present and (fk.ref_table, fk.ref_column) in present]
    return Schema(db_name=schema.db_name, tables=tables, foreign_keys=fks)


def table_extraction_json_schema(known: SchemaMap) -> dict:
    """The compact variant's answer: known table names only, no more of them than there are
    known tables (a grammar-constrained server cannot repeat names until the answer is cut off,
    as long column lists did)."""
    return {
        "type": "object",
        "properties": {"tables": {"type": "array", "items": {"type": "string",
                                                             "enum": list(known)},
                                  "maxItems": len(known)}},
        "required": ["tables"],
        "additionalProperties": False,
    }


def extraction_json_schema(known: SchemaMap) -> dict:
    """A JSON Schema that lets a server with structured output name only known tables/columns."""
    return {
        "type": "object",
        "properties": {t: {"type": "array", "items": {"type": "string", "enum": list(cols)}}
                       for t, cols in known.items()},
        "additionalProperties": False,
    }
