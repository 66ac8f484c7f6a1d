"""The candidate-selection trace as a person reads it, drawn from real pipeline events.

The pipeline runs on the sample shop database with scripted model replies; ``render_trace``
draws its events in an AppTest script, and the tests read the page: the values found, each
candidate with its generator, SQL and rows, the repair, the groups and the vote, the selection
agent's choice and reasoning -- never a JSON dump.
"""

from __future__ import annotations

import json

import pytest

from agents.db.database import open_database
from agents.core.engine import run_to_end, start_run
from prompt_markers import MAC_DECOMPOSE, R3_EXEC_ERROR, R3_WRITER, SELECT_CHOICE, WRITER
from trace_drawing import codes, draw, texts

QUESTION = "How many customers from Germany are in the small business segment?"
RIGHT = ("SELECT COUNT(*) FROM customers WHERE country = 'Germany' "
         "AND segment = 'Small Business'")
BROKEN = "SELECT COUNT(*) FROM customers WHERE country = 'Germany' AND segments = 'Small Business'"
RIGHT_TOO = ("SELECT COUNT(customer_id) FROM customers AS c WHERE c.segment = 'Small Business' "
             "AND c.country = 'Germany'")
GERMANS = "SELECT COUNT(*) FROM customers WHERE country = 'Germany'"
GERMANS_TOO = "SELECT COUNT(*) FROM customers AS T1 WHERE T1.country = 'Germany'"
WRONG_TABLE = ("SELECT COUNT(*) FROM customer WHERE country = 'Germany' "
               "AND segment = 'Small Business'")
NOTHING = ("SELECT customer_id FROM customers WHERE country = 'Germany' "
           "AND segment = 'small business'")
REASONING = "Candidate A also filters on the segment the question names."


def script(server, *, decisive: bool) -> None:
    """Decisive: the writer and its sample agree. Otherwise the writer fails and is repaired,
    and two groups of two tie, so the selection agent picks."""
    first = lambda req: str(req["messages"][0]["content"])  # noqa: E731 -- the agent's prompt
    if decisive:
        server.when(lambda req: WRITER in first(req), f"```sql\n{RIGHT}\n```")
        return
    server.when(lambda req: R3_EXEC_ERROR in str(req["messages"][-1]["content"]),
                f"```sql\n{RIGHT}\n```")
    server.when(lambda req: SELECT_CHOICE in first(req),
                json.dumps({"reasoning": REASONING, "choice": "A"}))
    server.when(lambda req: WRITER in first(req) and req.get("temperature"),
                f"```sql\n{GERMANS}\n```")
    server.when(lambda req: WRITER in first(req), f"```sql\n{BROKEN}\n```")
    server.when(lambda req: MAC_DECOMPOSE in first(req),
                f"Sub question 1: German customers in the small business segment?\nSQL\n"
                f"```sql\n{RIGHT_TOO}\n```\nQuestion Solved.")
    server.when(lambda req: R3_WRITER in first(req),
                f"Count the German customers.\n```sql\n{GERMANS_TOO}\n```")


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> dict[str, list[dict]]:
    from agents.core.config import Settings
    from agents.llm.client import make_client
    from agents.pipelines.selection import PIPELINE
    from sample_dbs.build import build_all
    from scripted_llm import ScriptedLLM

    out = tmp_path_factory.mktemp("trace_dbs")
    build_all(out)
    shop = open_database(out / "shop.sqlite")
    runs = {}
    with ScriptedLLM() as server:
        llm = make_client(Settings(provider="openai", base_url=server.base_url,
                                   api_key="test-key", model="scripted-model", cache=False,
                                   max_retries=0, request_timeout=10.0))
        # the writer first, so that its failure and repair open the trace
        first = "writer,decomposer,cot"
        for name, params in [("selection", {"generators": first}),
                             ("decisive", {"generators": "writer"}),
                             ("orders", {"generators": first, "select_orders": 2})]:
            server.clear()
            script(server, decisive=name == "decisive")
            run = run_to_end(start_run(PIPELINE, QUESTION, shop, llm, params=params))
            assert run.status == "done", run.error
            runs[name] = [e.to_dict() for e in run.events]
        # the writer's first repair fails on another name, and a second repair is allowed
        server.clear()
        server.when(lambda req: R3_EXEC_ERROR in str(req["messages"][-1]["content"]),
                    lambda req: f"```sql\n{RIGHT if len(req['messages']) > 3 else WRONG_TABLE}"
                                f"\n```")
        server.when(lambda req: WRITER in str(req["messages"][0]["content"]),
                    f"```sql\n{BROKEN}\n```")
        run = run_to_end(start_run(PIPELINE, QUESTION, shop, llm, params={
            "generators": "writer", "samples": 0, "repair_attempts": 2}))
        assert run.status == "done", run.error
        runs["two_repairs"] = [e.to_dict() for e in run.events]
        # the chain-of-thought writer and the sample agree on nothing (a value's case missed)
        server.clear()
        server.when(lambda req: WRITER in str(req["messages"][0]["content"])
                    and req.get("temperature"), f"```sql\n{NOTHING}\n```")
        server.when(lambda req: WRITER in str(req["messages"][0]["content"]),
                    f"```sql\n{RIGHT}\n```")
        server.when(lambda req: R3_WRITER in str(req["messages"][0]["content"]),
                    f"No such rows.\n```sql\n{NOTHING}\n```")
        run = run_to_end(start_run(PIPELINE, QUESTION, shop, llm,
                                   params={"generators": "cot,writer"}))
        assert run.status == "done", run.error
        runs["no_data"] = [e.to_dict() for e in run.events]
    shop.close()
    return runs


def sql_codes(block) -> list[str]:
    return [sql for language, sql in codes(block) if language == "sql"]


def test_trace_shows_values_candidates_repair_vote_and_choice(traces):
    at = draw(traces["selection"])
    labels = [s.label.split(" — ")[0] for s in at.status]
    assert labels == [
        "1. Value grounding: Find the question's values in the database",
        "2. Candidate: writer: Write a candidate and run it",
        "3. Repair: writer: Repair the candidate from its error, or from the unrelated "
        "parts it reads",
        "4. Candidate: sample1: Write a candidate and run it",
        "5. Candidate: decomposer: Write a candidate and run it",
        "6. Candidate: cot: Write a candidate and run it",
        "7. Vote: Group the candidates by result and vote",
        "8. Selection agent: Compare the leading candidates and pick one"]
    grounding, writer, repair, sample, decomposer, cot, vote, selection = at.status

    found = texts(grounding)
    assert "stored value(s) match the question" in found
    assert "| Germany | `Germany` | `customers.country` | exact |" in found
    assert "| small business | `Small Business` | `customers.segment` | case-insensitive |" \
        in found

    first = texts(writer)
    assert "**writer**: the baseline's one prompt" in first
    assert ":red-badge[fails] (OperationalError): no such column: segments" in first
    assert sql_codes(writer) == [BROKEN.replace(" FROM", "\nFROM").replace(" WHERE", "\nWHERE")
                             .replace(" AND", "\n  AND")]
    fixed = texts(repair)
    assert "no such column: segments" in fixed and "the repaired SQL runs" in fixed
    assert len(sql_codes(repair)) == 2  # before and after, side by side

    assert "temperature 0.7" in texts(sample)
    assert sample.dataframe[0].value.iloc[0, 0] == 84  # the candidate's rows
    assert "German customers in the small business segment?" in texts(decomposer)
    assert ":green-badge[runs: 1 row(s)]" in texts(decomposer)
    assert "**Reasoning:** Count the German customers." in texts(cot)
    assert "0 related example(s)" in texts(cot)

    voted = texts(vote)
    assert "| 1 | `writer`, `decomposer` | 2 of 4 | 1 row(s): 16 | :orange-badge[in contention] |" \
        in voted
    assert "| 2 | `cot`, `sample1` | 2 of 4 | 1 row(s): 84 | :orange-badge[in contention] |" \
        in voted
    assert ":orange-badge[not decisive] tie: 2 groups of 2 (of 4 candidates)" in voted
    assert "the selection agent compares groups 1, 2." in voted
    assert vote.expander[0].label == "Each group's SQL and first rows"

    chosen = texts(selection)
    assert "**Candidate A** :green-badge[chosen] · `writer`, `decomposer` · 1 row(s)" in chosen
    assert "**Candidate B** · `cot`, `sample1` · 1 row(s)" in chosen
    assert "**Choice: A**, the SQL of `writer`" in chosen
    assert f"**Reasoning:** {REASONING}" in chosen
    assert len(sql_codes(selection)) == 2  # each option's SQL once, not the step's SQL again


def test_a_decisive_vote_names_the_winner(traces):
    at = draw(traces["decisive"])
    voted = texts(at.status[-1])
    assert "| 1 | `writer`, `sample1` | 2 of 2 | 1 row(s): 16 | :green-badge[winner] |" in voted
    assert ":green-badge[decisive] 2 of 2 candidates agree" in voted
    assert "the SQL of `writer` is the answer." in voted
    assert any("Small Business" in sql for sql in sql_codes(at.status[-1]))


def test_a_vote_sets_aside_the_results_holding_no_data(traces):
    at = draw(traces["no_data"])
    voted = texts(at.status[-1])
    assert "| 1 | `writer` | 1 of 3 | 1 row(s): 16 | :green-badge[winner] |" in voted
    assert "| 2 | `cot`, `sample1` | 2 of 3 | 0 row(s) | :gray-badge[no data: set aside] |" \
        in voted
    assert (":blue-badge[the only result with data] 1 of 3 candidates; 2 returned no data and "
            "are set aside: the SQL of `writer` is the answer.") in voted
    assert "the SQL of `writer` is the answer." in voted


def test_a_selection_in_two_orders_shows_each_ballot(traces):
    at = draw(traces["orders"])
    selection = at.status[-1]
    assert "**Compared in several orders** (each candidate shown first once; the pick made " \
        "most often wins, a tie keeps the vote's order)." in texts(selection)
    ballots = next(d.value for d in selection.dataframe if "picked" in d.value.columns)
    assert list(ballots["shown in the order"]) == ["A B", "B A"]
    assert list(ballots["picked"]) == ["A", "B"]  # always the first shown: a tie
    assert "**Choice: A**, the SQL of `writer`" in texts(selection)


def test_a_second_repair_is_drawn_as_its_own_attempt(traces):
    at = draw(traces["two_repairs"])
    labels = [s.label.split(" — ")[0] for s in at.status]
    assert labels[1:4] == [
        "2. Candidate: writer: Write a candidate and run it",
        "3. Repair: writer: Repair the candidate from its error, or from the unrelated "
        "parts it reads",
        "4. Repair: writer: Repair the candidate from its error, or from the unrelated "
        "parts it reads"]
    first, second = texts(at.status[2]), texts(at.status[3])
    assert "no such column: segments" in first and "attempt 1" in first
    assert "fails on another error (no such table: customer); it gets another repair" in first
    assert "no such table: customer" in second and "attempt 2" in second
    assert "the repaired SQL runs" in second
