"""Keep the best-ranked part of a schema that fits a token budget, with its join paths.

Tables are taken best first. Each comes with the tables on the shortest foreign-key path
(:data:`MAX_PATH` links at most) to what is already kept, so every kept pair the database
links stays joinable: a question about singers and concerts also gets the table between them.
A table (with its path) that does not fit whole is tried again with only its key columns and
the columns the question names; one that does not fit even so is left out and the next is
tried. The sum of per-table sizes only approximates the size of the rendered whole, so the
result is rendered and measured, and the last additions are taken back while it is too long.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Callable

from agents.db.schema import Schema
from agents.llm.token_budget import estimate_tokens

MAX_PATH = 3          # links between a table and what is kept, at most
Cost = Callable[[Schema], int]


class NothingFits(ValueError):
    """Not even the best-ranked table fits the budget; the message says by how much."""


@dataclass
class Fit:
    """What was kept (``selection`` for :meth:`Schema.subset`) and why, and what it costs."""

    selection: dict = field(default_factory=dict)   # table -> "keep_all" | [column, ...]
    reasons: dict = field(default_factory=dict)     # table -> "ranked" | "join path"
    #                                                 (| "whole part": .whole_part)
    tokens: int = 0


def form_cost(forms: list[Callable[[Schema], str]]) -> Cost:
    """The cost of a schema: tokens of its longest rendering among ``forms``."""
    return lambda schema: max((estimate_tokens(render(schema)) for render in forms), default=0)


class _Alone:
    """Each table of a schema as a schema of its own (with its own foreign-key lines): the
    cheapest thing to measure, built without a scan of the whole schema per table."""

    def __init__(self, schema: Schema):
        self.schema = schema
        self.tables = {t.name: t for t in schema.tables}
        self.fks: dict[str, list] = {}
        for fk in schema.foreign_keys:
            self.fks.setdefault(fk.table, []).append(fk)

    def __call__(self, name: str, columns: list[str] | None = None) -> Schema:
        alone = Schema(db_name=self.schema.db_name, tables=[self.tables[name]],
                       foreign_keys=self.fks.get(name, []))
        return alone if columns is None else alone.subset({name: columns})


def foreign_key_links(schema: Schema) -> dict[str, set[str]]:
    """Each table's neighbours through a foreign key, in either direction (self-links left out)."""
    links: dict[str, set[str]] = {t.name: set() for t in schema.tables}
    for fk in schema.foreign_keys:
        if fk.table in links and fk.ref_table in links and fk.table != fk.ref_table:
            links[fk.table].add(fk.ref_table)
            links[fk.ref_table].add(fk.table)
    return links


def join_path(links: dict[str, set[str]], start: str, kept: set[str]) -> list[str] | None:
    """Tables strictly between ``start`` and the nearest kept table on a shortest foreign-key
    path ([] when a neighbour is kept), or None when none is within :data:`MAX_PATH` links."""
    if not kept:
        return None
    before: dict[str, str | None] = {start: None}
    queue = deque([(start, 0)])
    while queue:
        name, depth = queue.popleft()
        if depth >= MAX_PATH:
            continue
        for other in sorted(links.get(name, ())):
            if other in before:
                continue
            before[other] = name
            if other in kept:
                path, step = [], name
                while step is not None and step != start:
                    path.append(step)
                    step = before[step]
                return path[::-1]
            queue.append((other, depth + 1))
    return None


def fit(schema: Schema, order: list[str], named: dict[str, list[str]], cost: Cost,
        budget: int) -> Fit:
    """Keep tables of ``schema`` in ``order`` (best first) while ``cost`` stays within
    ``budget``; ``named`` gives the columns the question names per table (kept when a table
    is cut down to fit). Raises :class:`NothingFits` when no table fits at all."""
    links = foreign_key_links(schema)
    alone = _Alone(schema)
    sizes = {t.name: cost(alone(t.name)) for t in schema.tables}
    result = Fit()
    units: list[list[str]] = []
    used = 0
    smallest = None
    for name in order:
        if name in result.selection:
            continue
        path = [t for t in (join_path(links, name, set(result.selection)) or [])
                if t not in result.selection]
        whole = sizes[name] + sum(sizes[t] for t in path)
        if used + whole <= budget:
            decision: str | list = "keep_all"
            added = whole
        else:
            cut = list(named.get(name) or [])
            cut_size = cost(alone(name, cut)) if cut else None
            if cut_size is None or used + cut_size + whole - sizes[name] > budget:
                smallest = min(smallest or whole, cut_size or whole)
                continue
            decision, added = cut, cut_size + whole - sizes[name]
        result.selection[name] = decision
        result.reasons[name] = "ranked"
        for table in path:
            result.selection[table] = "keep_all"
            result.reasons[table] = "join path"
        units.append([name, *path])
        used += added
    while units:
        result.tokens = cost(schema.subset(result.selection))
        if result.tokens <= budget:
            return result
        for table in units.pop():
            result.selection.pop(table, None)
            result.reasons.pop(table, None)
    need = f"; the smallest candidate needs about {smallest:,}" if smallest else ""
    raise NothingFits(f"no table of the schema fits the prompt budget of {budget:,} "
                      f"tokens{need}")
