"""How often a right answer reads tables of two unrelated parts of its own database.

``python bench/gold_parts.py --data ../shared/data/spider [--out report.json]``

The parts of a schema are its tables linked by foreign keys, directly or through others
(:func:`agents.retrieval.parts.schema_parts`). ``selection`` tells a writer whose candidate reads
tables of two parts that no key connects that one of them is probably a look-alike
(:mod:`agents.rules.unrelated_parts`). That rests on the tables one question needs lying in one part.
This counts, for the dev and the training questions, the gold queries that read tables of two
or more parts of their own database (tables no key links to any other are left out, as the rule
leaves them), and how many questions are asked of a database that has two or more parts at all
(only there can a query read two). Schemas are read from ``tables.json`` (its tables and
declared foreign keys), so the training databases need no database file; the dev questions are
counted again against the schema of their database file as the studio reads it (the keys the
file declares, which the rule sees at run time). Without the model, in a few seconds. Nothing
is asserted: it is a measurement.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agents.evaluation.dataset import load_dataset  # noqa: E402
from agents.evaluation.harness import DatabasePool  # noqa: E402
from agents.retrieval.parts import schema_parts  # noqa: E402
from agents.db.schema import ForeignKey, Schema, Table
from agents.rules.unrelated_parts import unrelated_parts

QUESTION_FILES = ("dev.json", "train.json")
SHOWN = 5  # queries listed per file


def spider_schema(entry: dict) -> Schema:
    """A schema of one ``tables.json`` entry: its tables and declared foreign keys."""
    names = entry["table_names_original"]
    columns = entry["column_names_original"]
    keys = [ForeignKey(names[columns[a][0]], columns[a][1], names[columns[b][0]], columns[b][1])
            for a, b in entry["foreign_keys"]]
    return Schema(db_name=entry["db_id"], tables=[Table(name=n) for n in names],
                  foreign_keys=keys)


def linked_parts(schema: Schema) -> int:
    """How many parts of two or more linked tables ``schema`` has."""
    parts = schema_parts(schema)
    return len({parts.of[t.name] for t in schema.tables if t.name not in parts.alone})


def measure(data: Path) -> dict:
    schemas = {e["db_id"]: spider_schema(e)
               for e in json.loads((data / "tables.json").read_text(encoding="utf-8"))}
    several = {db for db, schema in schemas.items() if linked_parts(schema) >= 2}
    report = {"databases": len(schemas), "with_several_parts": sorted(several), "files": {}}
    for name in QUESTION_FILES:
        if not (data / name).is_file():
            continue
        questions = [q for q in json.loads((data / name).read_text(encoding="utf-8"))
                     if q["db_id"] in schemas]
        found = []
        for q in questions:
            parts = unrelated_parts(q["query"], schemas[q["db_id"]])
            if parts is not None:
                found.append({"db_id": q["db_id"], "parts": [list(p) for p in parts.parts],
                              "query": q["query"]})
        report["files"][name] = {
            "questions": len(questions),
            "on_databases_with_several_parts": sum(q["db_id"] in several for q in questions),
            "reading_two_parts": len(found),
            "databases_reading_two_parts": sorted({f["db_id"] for f in found}),
            "first": found[:SHOWN]}
    report["dev_database_files"] = from_files(data)
    return report


def from_files(data: Path) -> dict:
    """The dev questions whose database file is present, against the file's own schema."""
    pool = DatabasePool()
    asked = [q for q in load_dataset(data).questions if q.db_path]
    several = {q.db_id for q in asked if linked_parts(pool.get(q.db_path).schema) >= 2}
    reading = [q.qid for q in asked
               if unrelated_parts(q.gold_sql, pool.get(q.db_path).schema) is not None]
    return {"questions": len(asked), "databases": len({q.db_id for q in asked}),
            "with_several_parts": sorted(several), "reading_two_parts": len(reading)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="the Spider folder (tables.json, dev.json)")
    parser.add_argument("--out", default=None, help="write the report as JSON here too")
    args = parser.parse_args(argv)
    data = Path(args.data)
    if not (data / "tables.json").is_file():
        print(f"error: no tables.json in {data}", file=sys.stderr)
        return 2
    report = measure(data)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(f"{len(report['with_several_parts'])} of {report['databases']} schemas have two or "
          f"more parts of linked tables")
    files = report["dev_database_files"]
    print(f"dev.json against the database files: {files['reading_two_parts']} of "
          f"{files['questions']} gold queries read two or more parts "
          f"({len(files['with_several_parts'])} of {files['databases']} files have several)")
    for name, row in report["files"].items():
        print(f"{name}: {row['reading_two_parts']} of {row['questions']} gold queries read tables "
              f"of two or more parts ({row['on_databases_with_several_parts']} asked of a "
              f"database with several parts; databases: "
              f"{', '.join(row['databases_reading_two_parts']) or 'none'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
