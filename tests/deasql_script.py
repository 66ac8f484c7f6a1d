"""The DEA-SQL tests' question and SQL, one scripted reply per step (told apart by the steps'
prompts), their database and example bank, and the helpers that run the pipeline and read its
prompts and steps back."""

from __future__ import annotations

import json

import pytest

from agents.db.database import open_database
from agents.core.engine import run_to_end, start_run
from agents.example_bank import ExampleBank
from agents.pipelines.deasql import PIPELINE
from dbfactory import SINGERS_SQL, make_db
from prompt_markers import (DEA_ACTIVE as ACTIVE, DEA_CLASSIFY as CLASSIFY, DEA_CORRECT as CORRECT,
                            DEA_ELEMENTS as ELEMENTS, DEA_FILTER as FILTER,
                            DEA_GENERATE as GENERATE, DEA_REPAIR as REPAIR)
from scripted_llm import prompt_text

GOOD_SQL = "SELECT name FROM singer WHERE country = 'France'"
DEFAULT_REPLIES = {
    ELEMENTS: json.dumps({"entities": ["singers", "France"],
                          "query": "names of singers from France"}),
    FILTER: json.dumps({
        "main_metric calculation method": "list names",
        "Required table information": [{
            "Table name": "singer", "where statement condition": "country = 'France'",
            "All field names required by SQL under this table": ["name", "country"]}],
        "Multiple table joint fields and conditions": "none",
        "All fields": ["singer.name", "singer.country"]}),
    CLASSIFY: "Let's think step by step. One table.\nLabel: NON-JOIN, NON-NESTED",
    GENERATE: json.dumps({"sql": GOOD_SQL}),
    CORRECT: json.dumps({"sql": GOOD_SQL}),
    ACTIVE: f"The question is not an extremum problem. The modified SQL: {GOOD_SQL}",
    REPAIR: json.dumps({"sql": GOOD_SQL}),
}
QUESTION = "What are the names of singers from France?"
EXTREMUM_Q = "What is the name of the oldest singer?"
SUBQUERY_SQL = "SELECT name FROM singer WHERE age = (SELECT max(age) FROM singer)"
ORDERED_SQL = "SELECT name FROM singer ORDER BY age DESC LIMIT 1"


@pytest.fixture
def db(tmp_path):
    """The singers and concerts of :data:`dbfactory.SINGERS_SQL`, opened, in a file of its own
    name (``concerts``: the bank's ``music`` examples are of another database). Each DEA-SQL test
    module binds it, in place of conftest's ``db``."""
    database = open_database(make_db(tmp_path / "concerts.sqlite", SINGERS_SQL))
    yield database
    database.close()


@pytest.fixture
def bank():
    """Four examples from other databases: two one-table questions, a join and a nested one."""
    b = ExampleBank()
    b.add("How many singers are from Germany?", "SELECT count(*) FROM singer WHERE country = "
          "'Germany'", db_id="music")
    b.add("What are the names of players from Spain?", "SELECT name FROM player WHERE nation = "
          "'Spain'", db_id="sport")
    b.add("What are the names of teachers who teach courses in Math?",
          "SELECT T1.name FROM teacher AS T1 JOIN course AS T2 ON T1.id = T2.teacher_id WHERE "
          "T2.subject = 'Math'", db_id="school")
    b.add("What are the names of students who never took an exam?",
          "SELECT name FROM student WHERE id NOT IN (SELECT T1.student_id FROM exam AS T1 JOIN "
          "room AS T2 ON T1.room = T2.id)", db_id="school")
    return b


def script(server, **overrides):
    """Install one reply per step (``overrides`` keyed by marker replace the defaults)."""
    replies = dict(DEFAULT_REPLIES)
    replies.update(overrides)
    for marker, reply in replies.items():
        server.when(marker, reply)


def run(db, llm, question=QUESTION, bank=None, variant="paper", **params):
    """A run to its end; with the paper's prompts unless another ``variant`` is asked for
    (None: the pipeline's default), as most DEA-SQL tests check the paper's behaviour."""
    services = {"examples": bank} if bank is not None else {}
    if variant is not None:
        params["variant"] = variant
    return run_to_end(start_run(PIPELINE, question, db, llm, params=params, services=services))


def prompts_with(server, marker):
    return [prompt_text(r) for r in server.requests if marker in prompt_text(r)]


def event(run_, step):
    return next(e for e in run_.events if e.step == step)
