"""With no follow-up and no knowledge notes, every prompt is byte for byte what it was before
conversations and database knowledge existed: a long benchmark's cached answers depend on it.

The hashes below were taken from the pipelines' prompts before those features were added; a
run given only the question (and the hint box) must still send exactly those messages, whether
its evidence comes straight from the caller or through :meth:`agents.runs.run_context.RunContext.evidence`.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from agents.db.database import open_database
from agents.core.engine import run_to_end, start_run
from agents.pipelines import get_pipeline
from dbfactory import make_db

SQL = """
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER);
CREATE TABLE concert (concert_id INTEGER PRIMARY KEY,
                      singer_id INTEGER REFERENCES singer(singer_id), year INTEGER);
INSERT INTO singer VALUES (1, 'Ana', 'France', 30), (2, 'Bo', 'Chile', 41), (3, 'Cy', 'France', 25);
INSERT INTO concert VALUES (1, 1, 2014), (2, 1, 2015), (3, 2, 2015);
"""
QUESTION = "How many singers are from France?"
ANSWER = "SELECT COUNT(*) FROM singer WHERE country = 'France'"
SELECTOR_REPLY = json.dumps({"singer": "keep_all", "concert": "drop_all"})
DECOMPOSER_REPLY = f"Sub question 1: {QUESTION}\nSQL\n```sql\n{ANSWER}\n```\nQuestion Solved."

# sha256 of the JSON of every request's messages, in order, per (pipeline, hint)
HINT = "France means country = 'France'"
GOLDEN = {
    ("baseline", ""): "45da08ae27335e468b3c50e605327e9fc5ad009bd31cfec504fbbf3879ca9844",
    ("baseline", HINT): "320b5da992a48fd95228910a532a23c09e79a8128e26607584d253132503be6b",
    ("macsql", ""): "c9fb61ca3d9e13d91e54b8718a2521ed74fe8bf18b08dacd13ef715f9681fae1",
    ("macsql", HINT): "1360e15029fbccfeeb77ec7f37e52c44ece3f84d04a02b3efadc8822095545ad",
}
# MAC-SQL with the paper's Decomposer prompt, the default when the hashes were taken
PARAMS = {"baseline": {}, "macsql": {"use_selector": "always", "decomposer_prompt": "paper"}}


@pytest.fixture
def db(tmp_path):
    with open_database(make_db(tmp_path / "concerts.sqlite", SQL)) as handle:
        yield handle


def script(scripted_llm, pipeline: str) -> None:
    if pipeline == "baseline":
        scripted_llm.when(lambda req: True, f"```sql\n{ANSWER}\n```")
    else:
        scripted_llm.when("Here is a new example, please start answering", SELECTOR_REPLY)
        scripted_llm.when("generate the SQL after thinking step by step", DECOMPOSER_REPLY)


def prompt_hash(scripted_llm) -> str:
    messages = [req["messages"] for req in scripted_llm.requests]
    return hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()


def run_hash(pipeline: str, db, llm, scripted_llm, evidence: str, **params) -> str:
    script(scripted_llm, pipeline)
    run = run_to_end(start_run(get_pipeline(pipeline), QUESTION, db, llm, evidence=evidence,
                               params=params))
    assert run.status == "done", run.error
    digest = prompt_hash(scripted_llm)
    scripted_llm.clear()
    return digest


@pytest.mark.parametrize("pipeline, hint", list(GOLDEN))
def test_prompts_without_follow_up_or_knowledge_are_unchanged(pipeline, hint, db, llm,
                                                              scripted_llm):
    from agents.runs.run_context import RunContext

    direct = run_hash(pipeline, db, llm, scripted_llm, hint, **PARAMS[pipeline])
    composed = RunContext(hint=hint, notes=[], follow_up=None).evidence()
    assert composed == hint
    through_context = run_hash(pipeline, db, llm, scripted_llm, composed, **PARAMS[pipeline])
    assert direct == through_context == GOLDEN[(pipeline, hint)]
