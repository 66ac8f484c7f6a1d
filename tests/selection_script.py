"""The candidate-selection tests' question, SQL and scripted replies by agent (a repair, a
sample, each writer and the selection agent told apart by their prompts), a run to its end,
and the requests and steps read back."""

from __future__ import annotations

import json

from agents.core.engine import run_to_end, start_run
from agents.pipelines.selection import PIPELINE
from prompt_markers import (MAC_DECOMPOSE, R3_EXEC_ERROR, R3_WRITER, SELECT_CHOICE, WRITER)
from scripted_llm import last_user_message

QUESTION = "What are the names of singers from France?"
FRANCE = "SELECT name FROM singer WHERE country = 'France'"
FRANCE_ALIASED = "SELECT T1.name FROM singer AS T1 WHERE T1.country = 'France'"
OLDER = "SELECT name FROM singer WHERE age > 28"
ALL = "SELECT name FROM singer"
WRONG_TABLE = "SELECT name FROM singers WHERE country = 'France'"
WRONG_COLUMN = "SELECT singer_name FROM singer WHERE country = 'France'"
SLOW = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000) "
        "SELECT count(*) FROM c")


def sql_block(sql: str) -> str:
    return f"```sql\n{sql}\n```"


def decomposition(sql: str) -> str:
    return (f"Sub question 1: Which singers are from France?\nSQL\n{sql_block(sql)}\n"
            "Question Solved.")


def reasoned(sql: str) -> str:
    return f"The question asks for the singers' names.\n{sql_block(sql)}"


def choice(letter: str, reasoning: str = "Only B filters on the country.") -> str:
    return json.dumps({"reasoning": reasoning, "choice": letter})


def first_message(req: dict) -> str:
    return str(req["messages"][0].get("content") or "")


def asks(marker: str):
    """A rule matching requests whose first message (the agent's prompt) holds ``marker``."""
    return lambda req: marker in first_message(req)


def repairs(req: dict) -> bool:
    return R3_EXEC_ERROR in last_user_message(req)


def sampled(req: dict) -> bool:
    return WRITER in first_message(req) and (req.get("temperature") or 0) > 0


def script(server, *, writer=None, sample=None, decomposer=None, cot=None, repair=None,
           select=None) -> None:
    """Replies by agent; a repair continues its writer's conversation, so repairs (and samples,
    which repeat the writer's prompt) are matched first."""
    for match, reply in [(repairs, repair), (asks(SELECT_CHOICE), select),
                         (sampled, sample), (asks(WRITER), writer),
                         (asks(MAC_DECOMPOSE), decomposer), (asks(R3_WRITER), cot)]:
        if reply is not None:
            server.when(match, reply)


def run(db, llm, limits=None, **params):
    return run_to_end(start_run(PIPELINE, QUESTION, db, llm, params=params, limits=limits))


def requests_for(server, marker: str) -> list[dict]:
    return [r for r in server.requests if marker in json.dumps(r["messages"])]


def _stable(event) -> tuple:
    """What a step did, without its timings."""
    parsed = {k: v for k, v in (event.parsed or {}).items() if k != "seconds"}
    return event.step, event.status, event.kind, parsed, event.sql, event.next_step
