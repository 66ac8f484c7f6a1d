"""Build the merged Spider databases that test schema retrieval, and time their introspection.

1. ``spider_dev_merged.sqlite``: every table and row of Spider's dev databases in one file.
   A table keeps its name unless another database has a table of the same name (compared as
   SQLite does, ignoring case); then every such table is named ``<db_id>_<table>`` (only
   ``singer`` collides). Foreign keys are rewritten to the new names.
2. ``spider_dev_distractors.sqlite``: the same plus, as empty tables, the schemas of the
   training databases in ``tables.json`` (a distractor name that is taken gets its db_id too).

Tables are created from what ``PRAGMA table_info`` / ``foreign_key_list`` report (columns,
declared types, primary and foreign keys), so a rename cannot miss a reference hidden in the
original CREATE text. The source databases are opened read-only.

Usage (outputs are not committed; see bench/README.md)::

    python bench/merge_spider.py --data ../shared/data/spider --out bench/merged

``--time-only --repeat 5`` builds nothing: it times the introspection of the files already in
``--out`` and of a generated 1,000-table schema (``tests/dbfactory.py``'s ``build_wide_db``,
1,003 tables with the singers among them), each opened ``--repeat`` times, and prints every
time, the median and the slowest.

then ask the seed-7 questions against one of them::

    python -m agents eval --data ../shared/data/spider --pipelines baseline --limit 100 \\
        --sample stratified --seed 7 --ask-db bench/merged/spider_dev_merged.sqlite ...
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agents.db.identifiers import quote_identifier as q

MERGED = "spider_dev_merged.sqlite"
DISTRACTORS = "spider_dev_distractors.sqlite"


def dev_databases(data: Path) -> list[str]:
    """db_ids of the dev questions whose database file is present, in sorted order."""
    ids = {item["db_id"] for item in json.loads((data / "dev.json").read_text())}
    return sorted(i for i in ids if (data / "database" / i / f"{i}.sqlite").is_file())


def _tables(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "ORDER BY rowid")]


def new_names(groups: dict[str, list[str]]) -> dict[tuple[str, str], str]:
    """(db_id, table) -> name in the merged database: prefixed only where names collide."""
    seen: dict[str, set[str]] = {}
    for db_id, tables in groups.items():
        for table in tables:
            seen.setdefault(table.casefold(), set()).add(db_id)
    return {(db_id, t): (f"{db_id}_{t}" if len(seen[t.casefold()]) > 1 else t)
            for db_id, tables in groups.items() for t in tables}


def table_ddl(name: str, columns: list[tuple], keys: list[str],
              references: list[tuple[str, str, str]]) -> str:
    """CREATE TABLE text from (column, type) pairs, primary key columns and
    (column, referenced table, referenced column) triples."""
    parts = [f"{q(c)} {t}".rstrip() for c, t in columns]
    if keys:
        parts.append("PRIMARY KEY (" + ", ".join(q(k) for k in keys) + ")")
    parts += [f"FOREIGN KEY ({q(c)}) REFERENCES {q(rt)} ({q(rc)})" for c, rt, rc in references]
    return f"CREATE TABLE {q(name)} (\n  " + ",\n  ".join(parts) + "\n)"


def copy_dev(out: sqlite3.Connection, data: Path, db_ids: list[str]
             ) -> tuple[dict[str, int], list[str]]:
    """Create and fill every dev table in ``out``; returns rows copied per new table name and
    the names given a db_id prefix."""
    sources = {i: data / "database" / i / f"{i}.sqlite" for i in db_ids}
    groups = {}
    for db_id, path in sources.items():
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            groups[db_id] = _tables(conn)
    names = new_names(groups)
    rows = {}
    for db_id, path in sources.items():
        out.execute("ATTACH DATABASE ? AS src", (f"file:{path}?mode=ro",))
        try:
            for table in groups[db_id]:
                info = out.execute(f"PRAGMA src.table_info({q(table)})").fetchall()
                fks = out.execute(f"PRAGMA src.foreign_key_list({q(table)})").fetchall()
                keys = [r[1] for r in sorted((r for r in info if r[5]), key=lambda r: r[5])]
                by_fold = {t.casefold(): t for t in groups[db_id]}
                references = []
                for fk in fks:
                    parent = by_fold.get(str(fk[2]).casefold())
                    if parent is None or fk[4] is None:
                        continue  # Spider has a few keys to missing tables or implicit columns
                    references.append((fk[3], names[(db_id, parent)], fk[4]))
                name = names[(db_id, table)]
                out.execute(table_ddl(name, [(r[1], r[2]) for r in info], keys, references))
                out.execute(f"INSERT INTO main.{q(name)} SELECT * FROM src.{q(table)}")
                rows[name] = out.execute(f"SELECT count(*) FROM main.{q(name)}").fetchone()[0]
            out.commit()
        finally:
            out.execute("DETACH DATABASE src")
    return rows, sorted(n for (_, t), n in names.items() if n != t)


def add_distractors(out: sqlite3.Connection, data: Path, skip: set[str]) -> int:
    """Empty tables for the schemas in tables.json whose db_id is not in ``skip``."""
    taken = {t.casefold() for t in _tables(out)}
    added = 0
    for schema in json.loads((data / "tables.json").read_text()):
        db_id = schema["db_id"]
        if db_id in skip:
            continue
        tables = schema["table_names_original"]
        names = {}
        for t in tables:
            name = t if t.casefold() not in taken else f"{db_id}_{t}"
            while name.casefold() in taken:
                name += "_"
            names[t] = name
            taken.add(name.casefold())
        columns: dict[int, list] = {i: [] for i in range(len(tables))}
        index = {}
        for i, ((table, column), kind) in enumerate(zip(schema["column_names_original"],
                                                        schema["column_types"])):
            if table >= 0:
                columns[table].append((column, kind.upper() if kind != "others" else ""))
                index[i] = (table, column)
        keys: dict[int, list] = {i: [] for i in range(len(tables))}
        for key in schema["primary_keys"]:
            for c in (key if isinstance(key, list) else [key]):
                if c in index:
                    keys[index[c][0]].append(index[c][1])
        references: dict[int, list] = {i: [] for i in range(len(tables))}
        for child, parent in schema["foreign_keys"]:
            if child in index and parent in index:
                ct, cc = index[child]
                pt, pc = index[parent]
                references[ct].append((cc, names[tables[pt]], pc))
        for i, table in enumerate(tables):
            if table.casefold().startswith("sqlite_"):
                continue  # SQLite's own bookkeeping (sqlite_sequence), not a user table
            unique = list(dict.fromkeys(columns[i]))  # a repeated column name would fail
            seen: set[str] = set()
            cols = [c for c in unique if not (c[0].casefold() in seen or seen.add(c[0].casefold()))]
            out.execute(table_ddl(names[table], cols, list(dict.fromkeys(keys[i])),
                                  references[i]))
            added += 1
    out.commit()
    return added


def timed_introspection(path: Path) -> dict:
    """Seconds to open the file and read its schema as the app does (worker processes)."""
    from agents.db.database import open_database

    started = time.perf_counter()
    db = open_database(path)
    try:
        schema = db.schema
        seconds = time.perf_counter() - started
        return {"seconds": round(seconds, 2), "tables": len(schema.tables),
                "columns": sum(len(t.columns) for t in schema.tables),
                "foreign_keys": len(schema.foreign_keys)}
    finally:
        db.close()


def time_only(out_dir: Path, repeat: int) -> dict:
    """Introspection times of the merged files in ``out_dir`` and of a generated 1,000-table
    schema, each file opened ``repeat`` times in a row."""
    import statistics
    import tempfile

    sys.path.append(str(ROOT / "tests"))
    from dbfactory import build_wide_db

    report = {}
    with tempfile.TemporaryDirectory() as tmp:
        wide = build_wide_db(Path(tmp) / "wide_1000.sqlite", tables=1000)
        for path in [out_dir / MERGED, out_dir / DISTRACTORS, wide]:
            if not path.is_file():
                report[path.name] = "missing: build it first"
                continue
            runs = [timed_introspection(path) for _ in range(repeat)]
            seconds = [r["seconds"] for r in runs]
            report[path.name] = {**{k: v for k, v in runs[0].items() if k != "seconds"},
                                 "seconds": seconds, "median": statistics.median(seconds),
                                 "slowest": max(seconds)}
    return report


def build(data: Path, out_dir: Path) -> dict:
    out_dir.mkdir(parents=True, exist_ok=True)
    db_ids = dev_databases(data)
    report = {"dev_databases": db_ids}
    for name in (MERGED, DISTRACTORS):
        (out_dir / name).unlink(missing_ok=True)
    with sqlite3.connect(out_dir / MERGED) as out:
        rows, renamed = copy_dev(out, data, db_ids)
    report["merged"] = {"tables": len(rows), "rows": sum(rows.values()), "renamed": renamed}
    (out_dir / DISTRACTORS).write_bytes((out_dir / MERGED).read_bytes())
    with sqlite3.connect(out_dir / DISTRACTORS) as out:
        train_ids = {s["db_id"] for s in json.loads((data / "tables.json").read_text())}
        dev_ids = {item["db_id"] for item in json.loads((data / "dev.json").read_text())}
        added = add_distractors(out, data, skip=dev_ids)
    report["distractors"] = {"added_tables": added, "train_schemas": len(train_ids - dev_ids)}
    for name in (MERGED, DISTRACTORS):
        report[f"introspection_{name}"] = timed_introspection(out_dir / name)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "spider"))
    parser.add_argument("--out", default=str(ROOT / "bench" / "merged"))
    parser.add_argument("--time-only", action="store_true",
                        help="build nothing; time the introspection of the built files and "
                             "of a generated 1,000-table schema")
    parser.add_argument("--repeat", type=int, default=5,
                        help="openings of each file with --time-only (default 5)")
    args = parser.parse_args(argv)
    if args.time_only:
        print(json.dumps(time_only(Path(args.out), max(1, args.repeat)), indent=2))
        return 0
    data = Path(args.data)
    if not (data / "dev.json").is_file() or not (data / "tables.json").is_file():
        print(f"error: {data} is not a Spider folder (dev.json, tables.json, database/)",
              file=sys.stderr)
        return 2
    print(json.dumps(build(data, Path(args.out)), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
