"""Reading examples from a dataset in Spider format, wherever it lies; nothing is copied.

An examples file is a JSON list of ``{db_id, question, query}`` (BIRD-style ``sql`` works too);
its sibling ``tables.json`` names each database's tables and columns, so schema mentions in the
questions can be masked like the queries' names. Every way a file can be unusable becomes an
:class:`ExampleBankError` whose message names the file.
"""

from __future__ import annotations

import json
from pathlib import Path

from .example import ExampleBankError
from .skeleton import spider_schema_terms


def read_json_list(path: str | Path, what: str) -> list:
    """The JSON list in ``path``; ``what`` names the file in error messages."""
    p = Path(path)
    if not p.is_file():
        raise ExampleBankError(f"{what} not found: {p}")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ExampleBankError(f"{what} {p} is not valid JSON: {exc}") from None
    except OSError as exc:
        raise ExampleBankError(f"{what} {p} cannot be read: {exc}") from None
    if not isinstance(data, list):
        raise ExampleBankError(f"{what} {p} must hold a JSON list")
    return data


def read_spider_examples(path: str | Path, tables_json: str | Path | None = None,
                         limit: int | None = None
                         ) -> tuple[dict[str, set[tuple[str, ...]]], list[tuple[str, str, str]]]:
    """``(schema terms by db_id, [(question, sql, db_id)])`` of a Spider-format file.

    The first ``limit`` items are read; items without a question or a query are skipped.
    """
    items = read_json_list(path, "examples file")
    terms: dict[str, set[tuple[str, ...]]] = {}
    if tables_json is not None:
        for entry in read_json_list(tables_json, "tables file"):
            if isinstance(entry, dict) and entry.get("db_id"):
                terms[entry["db_id"]] = spider_schema_terms(entry)
    pairs = []
    for item in items[:limit] if limit else items:
        if not isinstance(item, dict):
            continue
        question, sql = item.get("question"), item.get("query") or item.get("sql")
        if isinstance(question, str) and isinstance(sql, str) and question and sql:
            pairs.append((question, sql, item.get("db_id")))
    return terms, pairs
