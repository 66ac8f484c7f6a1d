"""What the MAC-SQL tests share: the pipeline, the markers that tell its three agents' prompts
apart, the small singers and concerts database (the ``small_db`` fixture of ``conftest.py``)
and a wide one (``wide_db``), a scripted Decomposer answer, the requests an agent sent, and a
run to its end with value grounding off."""

from __future__ import annotations

import sqlite3

from agents.core.engine import run_to_end, start_run
from agents.db.database import open_database
from agents.pipelines import get_pipeline
from scripted_llm import prompt_text

PIPELINE = get_pipeline("macsql")

SELECTOR = "Here is a new example, please start answering"
DECOMPOSER = "generate the SQL after thinking step by step"
REFINER = "Now please fixup old SQL"

SMALL_SQL = """
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER);
CREATE TABLE concert (concert_id INTEGER PRIMARY KEY,
                      singer_id INTEGER REFERENCES singer(singer_id), year INTEGER);
INSERT INTO singer VALUES (1, 'Ana', 'France', 30), (2, 'Bo', 'Chile', 41), (3, 'Cy', 'France', 25);
INSERT INTO concert VALUES (1, 1, 2014), (2, 1, 2015), (3, 2, 2015);
"""


def wide_sql(tables: int = 8) -> str:
    """``tables`` tables of 5 columns each, chained by foreign keys: 40 columns in all."""
    parts = []
    for i in range(tables):
        ref = f" REFERENCES t{i - 1}(id)" if i else ""
        parts.append(f"CREATE TABLE t{i} (id INTEGER PRIMARY KEY, ref_id INTEGER{ref}, "
                     f"name TEXT, value REAL, note TEXT);")
        parts.append(f"INSERT INTO t{i} VALUES (1, 1, 'n{i}', {i}.5, 'x');")
    return "\n".join(parts)


def make_db(tmp_path, name: str, sql: str):
    path = tmp_path / f"{name}.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(sql)
    conn.commit()
    conn.close()
    return open_database(path)


def decomposition(*pairs: tuple[str, str]) -> str:
    text = ""
    for i, (question, sql) in enumerate(pairs, start=1):
        text += f"Sub question {i}: {question}\nSQL\n```sql\n{sql}\n```\n"
    return text + "Question Solved."


def requests_for(scripted, marker: str) -> list[dict]:
    return [r for r in scripted.requests if marker in prompt_text(r)]


def run(db, llm, question="How many singers are from France?", **params):
    """A run; value grounding off unless asked for, so the steps are Selector, Decomposer,
    Refiner (its own tests, and the default's, ask for it)."""
    params = {"value_grounding": "off", **params}
    return run_to_end(start_run(PIPELINE, question, db, llm, params=params))
