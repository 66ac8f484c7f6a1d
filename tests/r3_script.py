"""The R³ tests' question and SQL, the markers that tell its agents' prompts apart, their
scripted replies, and a run to its end with the paper's behaviour."""

from __future__ import annotations

import json

from agents.core.engine import run_to_end, start_run
from agents.pipelines.r3 import PIPELINE
from scripted_llm import last_user_message

QUESTION = "What are the names of singers from France?"
SQL_A = "SELECT name FROM singer WHERE country = 'France'"
SQL_B = "SELECT name, age FROM singer WHERE country = 'France'"
SQL_C = "SELECT name FROM singer WHERE country = 'France' ORDER BY name"

# Markers that tell the agents' prompts apart (the writer's own last message decides).
WRITER = "help me write an SQL to answer the question"
INVITATION = "You are the manager of a Database project"
REVIEWER = "You review an SQL query"
REVISION = "Reviewers commented on your SQL"
EXEC_ERROR = "failed with the error"


def writer(sql: str, why: str = "The question asks for names.") -> str:
    return f"{why}\n```sql\n{sql};\n```"


def invitation(n: int) -> str:
    experts = {f"Reviewer {i}": f"Expert number {i} in music data" for i in range(1, n + 1)}
    return "```json\n" + json.dumps(experts) + "\n```"


def approve(comment: str = "The SQL is right.") -> str:
    return f"COMMENT: {comment}\nVERDICT: approve"


def revise(comment: str = "Add the age column.") -> str:
    return f"COMMENT: {comment}\nVERDICT: revise"


# The paper's behaviour, which most R³ tests exercise; the small-model options (today's
# defaults) are each tested by name.
PAPER = {"writer_style": "cot", "review_prompt": "paper", "revision_gate": "paper",
         "fix_prompt": "paper", "aggregate_gate": False}


def run(db, llm, **params):
    params = {"k": 0, **PAPER, **params}
    return run_to_end(start_run(PIPELINE, QUESTION, db, llm, params=params))


def requests_with(scripted_llm, marker: str) -> list[dict]:
    return [r for r in scripted_llm.requests if marker in last_user_message(r)
            or any(marker in (m.get("content") or "") for m in r["messages"]
                   if m["role"] == "system")]
