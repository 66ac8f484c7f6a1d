"""A tiny Spider-format dataset: six questions of every hardness on one five-row table, plus one
question whose database is missing (to be skipped and counted), for the harness and eval tests."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from agents.evaluation.records import RESULTS_FILE, ResultsFile

PEOPLE = [(1, "Ann", 34, "Oslo"), (2, "Bob", 28, "Rome"), (3, "Cid", 41, "Oslo"),
          (4, "Dee", 28, "Lima"), (5, "Eve", None, "Rome")]
QUESTIONS = [
    ("How many people are there?", "SELECT count(*) FROM people", "easy"),
    ("List all names.", "SELECT name FROM people", "easy"),
    ("Names by age, oldest first.", "SELECT name FROM people WHERE age IS NOT NULL "
                                    "ORDER BY age DESC, name", "medium"),
    ("Which cities have people?", "SELECT DISTINCT city FROM people", "medium"),
    ("Name and city of people over 30.", "SELECT name, city FROM people WHERE age > 30",
     "hard"),
    ("Average age per city.", "SELECT city, avg(age) FROM people GROUP BY city", "extra"),
]


def build_tiny(root: Path) -> Path:
    """The dataset folder ``root``: ``dev.json`` and ``database/town/town.sqlite``."""
    (root / "database" / "town").mkdir(parents=True)
    conn = sqlite3.connect(root / "database" / "town" / "town.sqlite")
    conn.execute("CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT, age INTEGER, "
                 "city TEXT)")
    conn.executemany("INSERT INTO people VALUES (?, ?, ?, ?)", PEOPLE)
    conn.commit()
    conn.close()
    items = [{"db_id": "town", "question": q, "query": sql, "hardness": h}
             for q, sql, h in QUESTIONS]
    items.append({"db_id": "lost", "question": "Unreachable?", "query": "SELECT 1",
                  "hardness": "easy"})
    (root / "dev.json").write_text(json.dumps(items))
    return root


def read(out: Path) -> list[dict]:
    return ResultsFile(out / RESULTS_FILE).read()


def raw_lines(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / RESULTS_FILE).read_text().splitlines()]
