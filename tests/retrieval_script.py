"""The singers question scripted for schema retrieval's tests: the question and its SQL, a reply
in the form each agent of each pipeline asks for, a client of a scripted endpoint with a given
context, and ``baseline`` asked the question on the charts database (``charts_run``)."""

from __future__ import annotations

import json

from agents.core.config import Settings
from agents.core.engine import run_to_end, start_run
from agents.llm.client import make_client
from agents.pipelines.baseline import PIPELINE as BASELINE
from prompt_markers import (DEA_ACTIVE, DEA_CLASSIFY, DEA_CORRECT, DEA_ELEMENTS, DEA_FILTER,
                            DEA_GENERATE, MAC_DECOMPOSE, R3_EXEC_ERROR, SELECT_CHOICE)
from scripted_llm import ScriptedLLM, last_user_message, prompt_text

QUESTION = "What are the names of singers from France who sang in the Spring concert?"
SQL = ("SELECT s.name FROM singer AS s JOIN singer_in_concert AS sc ON sc.singer_id = "
       "s.singer_id JOIN concert AS c ON c.concert_id = sc.concert_id "
       "WHERE s.country = 'France' AND c.concert_name = 'Spring'")
CONTEXT = 8192


def sql_block(sql: str = SQL) -> str:
    return f"```sql\n{sql}\n```"


def answer(req: dict) -> str:
    """A reply in the form each agent of each pipeline asks for, about the singer tables."""
    first = str(req["messages"][0].get("content") or "")
    text = prompt_text(req)
    if R3_EXEC_ERROR in last_user_message(req) and len(req["messages"]) > 1:
        return sql_block()
    if SELECT_CHOICE in first:
        return json.dumps({"reasoning": "A joins the concerts", "choice": "A"})
    if DEA_ELEMENTS in text:
        return json.dumps({"entities": ["singer", "France", "Spring"], "query": QUESTION})
    if DEA_FILTER in text:
        return json.dumps({"Required table information": [
            {"Table name": t, "All field names required by SQL under this table": []}
            for t in ("singer", "concert", "singer_in_concert")]})
    if DEA_CLASSIFY in text:
        return "Three tables.\nLabel: JOIN, NON-NESTED"
    if DEA_GENERATE in text or DEA_CORRECT in text:
        return json.dumps({"sql": SQL})
    if DEA_ACTIVE in text:
        return f"Not an extremum problem. The modified SQL: {SQL}"
    if MAC_DECOMPOSE in text or "generate the SQL after thinking step by step" in text:
        return f"Sub question 1: {QUESTION}\nSQL\n{sql_block()}\nQuestion Solved."
    if first.startswith("As an experienced and professional database administrator"):
        return json.dumps({"singer": "keep_all", "concert": "keep_all",
                           "singer_in_concert": "keep_all"})
    if first.startswith("You are one of several database agents") and '{"tables"' in first:
        return json.dumps({"tables": ["singer", "concert", "singer_in_concert"]})
    if first.startswith("You are one of several database agents"):
        return json.dumps({"singer": ["name", "country"], "concert": ["concert_name"],
                           "singer_in_concert": ["singer_id", "concert_id"]})
    if first.startswith("You are a SQLite expert checking"):
        return json.dumps({"verdict": "correct", "reason": "joins all three tables"})
    if first.startswith("You are the manager of a Database project"):
        return "```json\n" + json.dumps({"Reviewer Ada": "Data Analyst"}) + "\n```"
    if "Review the SQL from your expertise" in text and "Reviewers commented" not in text:
        return "COMMENT: Right.\nVERDICT: approve"
    return f"The singers from France in the Spring concert.\n{sql_block()}"


def client(server: ScriptedLLM, **settings):
    """A client of the scripted endpoint; ``n_ctx`` here is the context that endpoint has (a
    remote endpoint's is the ``remote_context`` setting)."""
    if "n_ctx" in settings:
        settings["remote_context"] = settings.pop("n_ctx")
    return make_client(Settings(provider="openai", base_url=server.base_url, api_key="k",
                                model="scripted-model", cache=False, max_retries=0,
                                request_timeout=30.0, **settings))


def charts_run(db):
    """``baseline`` asked the singers question on ``db`` against a scripted server with an
    8,192-token context: the run, and the requests it sent."""
    with ScriptedLLM(context_size=CONTEXT) as server:
        server.when(lambda req: True, answer)
        run = run_to_end(start_run(BASELINE, QUESTION, db, client(server, n_ctx=CONTEXT)))
    return run, server.requests
