"""The DEA-SQL, R³ and CSMA traces as a person reads them, drawn from real pipeline events.

Each pipeline runs on the sample shop database with scripted model replies; the events it
produces are drawn by ``render_trace`` in an AppTest script, and the tests read the page as a
user would: personas, verdicts, the SQL diff, agents' schemas, the question type, why a step was
skipped -- never a JSON dump.
"""

from __future__ import annotations

import json

import pytest

from agents.db.database import open_database
from agents.core.engine import run_to_end, start_run
from agents.example_bank import ExampleBank
from agents.db.sqltext import format_sql
from prompt_markers import (DEA_ACTIVE as ACTIVE, DEA_CLASSIFY as CLASSIFY,
                            DEA_CORRECT as CORRECT, DEA_ELEMENTS as ELEMENTS,
                            DEA_FILTER as FILTER, DEA_GENERATE as GENERATE, DEA_REPAIR,
                            MAC_DECOMPOSE)
from trace_drawing import codes, draw, texts

# -- scripted runs on the shop database ---------------------------------------------------------

CSMA_QUESTION = "What is the average rating of each product?"
CSMA_FIRST_SQL = "SELECT name FROM products"
CSMA_SQL = ("SELECT p.name, AVG(r.rating) FROM products AS p JOIN reviews AS r "
            "ON r.product_id = p.product_id GROUP BY p.name")
CSMA_REJECTION = "the ratings are in the reviews table, the SQL ignores them"


def script_csma(server) -> None:
    """Agent 1 (products) writes a first SQL; agent 2 (reviews) rejects it and joins the
    reviews in; agent 1 accepts that in round 3."""
    server.push(
        json.dumps({"products": ["name"]}),                                      # 1 extracts
        f"```sql\n{CSMA_FIRST_SQL}\n```",                                         # 1 writes
        json.dumps({"products": ["name"], "reviews": ["rating", "product_id"]}),  # 2 extracts
        json.dumps({"verdict": "wrong", "reason": CSMA_REJECTION}),               # 2 checks
        f"```sql\n{CSMA_SQL}\n```",                                               # 2 writes
        json.dumps({"products": ["name"], "reviews": ["rating"]}),                # 1 extracts
        json.dumps({"verdict": "correct", "reason": "joins reviews to products"}),  # 1 checks
    )


def script_csma_compact(server) -> None:
    """The same exchange in the compact variant: agents name whole tables."""
    server.push(
        json.dumps({"tables": ["products"]}),                                     # 1 extracts
        f"```sql\n{CSMA_FIRST_SQL}\n```",                                        # 1 writes
        json.dumps({"tables": ["products", "reviews"]}),                          # 2 extracts
        json.dumps({"verdict": "wrong", "reason": CSMA_REJECTION}),               # 2 checks
        f"```sql\n{CSMA_SQL}\n```",                                              # 2 writes
        json.dumps({"tables": ["products", "reviews"]}),                          # 1 extracts
        json.dumps({"verdict": "correct", "reason": "joins reviews to products"}),  # 1 checks
    )


def script_csma_agreement(server) -> None:
    """The compact exchange checked by agreement: agent 2's own SQL returns another result and
    becomes the new SQL (no second call); agent 1's own SQL in round 3 returns the same."""
    server.push(
        json.dumps({"tables": ["products"]}),                                     # 1 extracts
        f"```sql\n{CSMA_FIRST_SQL}\n```",                                        # 1 writes
        json.dumps({"tables": ["products", "reviews"]}),                          # 2 extracts
        f"```sql\n{CSMA_SQL}\n```",                                              # 2's own SQL
        json.dumps({"tables": ["products", "reviews"]}),                          # 1 extracts
        f"```sql\n{CSMA_SQL}\n```",                                              # 1's own SQL
    )


def script_csma_agreement_fallback(server) -> None:
    """Agent 2's own SQL fails, so the model judges agent 1's SQL after all."""
    server.push(
        json.dumps({"tables": ["products"]}),                                     # 1 extracts
        f"```sql\n{CSMA_FIRST_SQL}\n```",                                        # 1 writes
        json.dumps({"tables": ["products", "reviews"]}),                          # 2 extracts
        "```sql\nSELECT stars FROM reviews\n```",                                # 2's own SQL
        json.dumps({"verdict": "correct", "reason": "it lists the products"}),    # 2 judges
    )


CSMA_MISSPELT = "SELECT name FROM products WHERE isactive = 1"
CSMA_OWN_MISPLACED = CSMA_SQL.replace("AVG(r.rating)", "AVG(p.rating)")


def script_csma_rewrite(server) -> None:
    """With the defaults (``name_rewrite``): agent 1 misspells a column and agent 2's own SQL takes one from
    the wrong alias; each is rewritten into the version that runs."""
    server.push(
        json.dumps({"tables": ["products"]}),                                     # 1 extracts
        f"```sql\n{CSMA_MISSPELT}\n```",                                        # 1 writes
        json.dumps({"tables": ["products", "reviews"]}),                          # 2 extracts
        f"```sql\n{CSMA_OWN_MISPLACED}\n```",                                  # 2's own SQL
        json.dumps({"tables": ["products", "reviews"]}),                          # 1 extracts
        f"```sql\n{CSMA_SQL}\n```",                                              # 1's own SQL
    )


CSMA_FAILING = "SELECT p.name, AVG(p.stars) FROM products AS p GROUP BY p.name"


def script_csma_global_writer(server, *, repaired: str = CSMA_SQL) -> None:
    """One round (``max_rounds=1``) ending on SQL that fails; the global writer's first SQL
    fails too and its repair writes ``repaired``."""
    server.push(
        json.dumps({"tables": ["products"]}),                                     # 1 extracts
        f"```sql\n{CSMA_FAILING}\n```",                                         # 1 writes
        "```sql\nSELECT stars FROM reviews\n```",                               # the writer
        f"```sql\n{repaired}\n```",                                            # its repair
    )


def script_csma_global_check(server) -> None:
    """Two rounds ending unchecked on agent 2's own SQL; the global writer's result is that of
    agent 1's first SQL, which becomes the answer."""
    server.push(
        json.dumps({"tables": ["products"]}),                                     # 1 extracts
        f"```sql\n{CSMA_FIRST_SQL}\n```",                                        # 1 writes
        json.dumps({"tables": ["products", "reviews"]}),                          # 2 extracts
        f"```sql\n{CSMA_SQL}\n```",                                              # 2's own SQL
        "```sql\nSELECT p.name FROM products AS p\n```",                         # the writer
    )


CSMA_NOTHING_FOUND = ("SELECT p.name, AVG(r.rating) FROM products AS p JOIN reviews AS r "
                      "ON r.review_id = p.name GROUP BY p.name")


def script_csma_global_data_first(server) -> None:
    """Two rounds ending unchecked on agent 2's own SQL, which finds no rows (it joins on
    columns that never pair); the global writer's SQL agrees with no SQL of the agents but
    finds data, so it is the answer."""
    server.push(
        json.dumps({"tables": ["products"]}),                                     # 1 extracts
        f"```sql\n{CSMA_FIRST_SQL}\n```",                                        # 1 writes
        json.dumps({"tables": ["products", "reviews"]}),                          # 2 extracts
        f"```sql\n{CSMA_NOTHING_FOUND}\n```",                                   # 2's own SQL
        f"```sql\n{CSMA_SQL}\n```",                                             # the writer
    )


R3_QUESTION = "How many orders did each customer place?"
R3_FIRST_SQL = "SELECT customer_id, COUNT(*) FROM orders GROUP BY customer_id"
R3_SQL = ("SELECT c.first_name, c.last_name, COUNT(o.order_id) FROM customers AS c "
          "JOIN orders AS o ON o.customer_id = c.customer_id GROUP BY c.customer_id")
R3_PERSONAS = {"Reviewer Ada": "Data Analyst in online retail",
               "Reviewer Bo": "Senior Database Engineer specialized in GROUP BY"}
R3_COMMENT = "Name the customers instead of showing their ids."
R3_REBUTTAL = "Agreed: the customers are named now."
R3_KEEP = "The ids are not needed; the names answer the question."


def script_r3(server) -> None:
    """Round 1: one reviewer asks for names, the writer revises; round 2: the writer keeps its
    SQL (consensus)."""
    server.push(
        f"Count the orders per customer.\n```sql\n{R3_FIRST_SQL};\n```",
        "```json\n" + json.dumps(R3_PERSONAS) + "\n```",
        f"COMMENT: {R3_COMMENT}\nVERDICT: revise",
        "COMMENT: The grouping is right.\nVERDICT: approve",
        f"{R3_REBUTTAL}\n```sql\n{R3_SQL};\n```",
        "COMMENT: Also show the customer id.\nVERDICT: revise",
        "COMMENT: Fine.\nVERDICT: approve",
        f"{R3_KEEP}\n```sql\n{R3_SQL}\n```",
    )


DEA_QUESTION = "What is the total amount paid by customers from Germany?"
DEA_SQL = ("SELECT SUM(p.amount) FROM payments AS p JOIN orders AS o ON o.order_id = p.order_id "
           "JOIN customers AS c ON c.customer_id = o.customer_id WHERE c.country = 'Germany'")
DEA_DRAFT = DEA_SQL.replace("SUM(p.amount)", "SUM(amount)")
DEA_EXAMPLE_Q = "What is the total price paid by players from Spain?"

DEA_EXTREMUM_QUESTION = "Which product has the highest price?"
DEA_EXTREMUM_SQL = "SELECT name FROM products WHERE price = (SELECT MAX(price) FROM products)"
DEA_REWRITE = "SELECT name FROM products ORDER BY price DESC LIMIT 1"


def script_deasql(server) -> None:
    """A JOIN question: the filter keeps three tables, self-correction qualifies a column and
    active learning is skipped (no superlative)."""
    server.when(ELEMENTS, json.dumps({"entities": ["amount", "customers", "Germany"],
                                      "query": "total amount paid by German customers"}))
    server.when(FILTER, json.dumps({
        "main_metric calculation method": "sum of payments.amount",
        "Required table information": [
            {"Table name": "payments", "where statement condition": "",
             "All field names required by SQL under this table": ["amount", "order_id"]},
            {"Table name": "orders", "where statement condition": "",
             "All field names required by SQL under this table": ["order_id", "customer_id"]},
            {"Table name": "customers", "where statement condition": "country = 'Germany'",
             "All field names required by SQL under this table": ["customer_id", "country"]}],
        "Multiple table joint fields and conditions":
            "payments.order_id = orders.order_id, orders.customer_id = customers.customer_id",
        "All fields": ["payments.amount", "customers.country"]}))
    server.when(CLASSIFY, "Three tables are needed, no subquery.\nLabel: JOIN, NON-NESTED")
    server.when(GENERATE, json.dumps({"sql": DEA_DRAFT}))
    server.when(CORRECT, json.dumps({"sql": DEA_SQL}))


def script_deasql_extremum(server) -> None:
    """An extremum question: active learning rewrites the MAX subquery to ORDER BY ... LIMIT 1."""
    server.when(ELEMENTS, json.dumps({"entities": ["product", "price"],
                                      "query": "product with the highest price"}))
    server.when(FILTER, json.dumps({"Required table information": [
        {"Table name": "products",
         "All field names required by SQL under this table": ["name", "price"]}]}))
    server.when(CLASSIFY, "One table with a subquery.\nLabel: NON-JOIN, NESTED")
    server.when(GENERATE, json.dumps({"sql": DEA_EXTREMUM_SQL}))
    server.when(CORRECT, json.dumps({"sql": DEA_EXTREMUM_SQL}))
    server.when(ACTIVE, f"The question is an extremum problem. The modified SQL: {DEA_REWRITE}")


MISPLACED = CSMA_OWN_MISPLACED  # p.rating: rating is a column of reviews (r)


def script_deasql_ending(server) -> None:
    """Generation, self-correction and the execution repair all give SQL taking ``rating`` from
    the wrong alias: the run ends on the version that runs."""
    for marker in (GENERATE, CORRECT, DEA_REPAIR):  # the first reply set for a prompt wins
        server.when(marker, json.dumps({"sql": MISPLACED}))
    script_deasql(server)


def script_macsql_ending(server) -> None:
    """The Decomposer's SQL takes ``rating`` from the wrong alias; the Refiner repeats it."""
    server.when(MAC_DECOMPOSE, f"Sub question 1: average rating per product\nSQL\n```sql\n"
                               f"{MISPLACED}\n```\nQuestion Solved.")
    server.when("Now please fixup old SQL", f"```sql\n{MISPLACED}\n```")


def script_r3_ending(server) -> None:
    """The writer repeats the failing SQL until its one correction is spent; the version that
    runs goes to the reviewer, who approves."""
    server.push(f"```sql\n{MISPLACED}\n```", f"```sql\n{MISPLACED}\n```",
                "```json\n" + json.dumps({"Reviewer Ada": "Data Analyst"}) + "\n```",
                "COMMENT: Fine.\nVERDICT: approve")


def script_r3_from_hint(server) -> None:
    """The writer's SQL fails on the wrong alias; the correction is the hint's version (no
    model call), which goes to the reviewer, who approves."""
    server.push(f"```sql\n{MISPLACED}\n```",
                "```json\n" + json.dumps({"Reviewer Ada": "Data Analyst"}) + "\n```",
                "COMMENT: Fine.\nVERDICT: approve")


PER_COUNTRY = "SELECT country, COUNT(*) FROM customers GROUP BY country"


def script_r3_aggregate(server) -> None:
    """The reviewer asks to simplify; the revision drops the GROUP BY and still runs."""
    server.push(f"```sql\n{PER_COUNTRY}\n```",
                "```json\n" + json.dumps({"Reviewer Ada": "Data Analyst"}) + "\n```",
                "COMMENT: Simplify it, no GROUP BY is needed.\nVERDICT: revise",
                "Simplified.\n```sql\nSELECT country, COUNT(*) FROM customers\n```")


def script_r3_failing_revision(server) -> None:
    """The revision misspells the column: the execution gate keeps the SQL before it."""
    server.push(f"```sql\n{PER_COUNTRY}\n```",
                "```json\n" + json.dumps({"Reviewer Ada": "Data Analyst"}) + "\n```",
                "COMMENT: Name the column cntry.\nVERDICT: revise",
                "Renamed.\n```sql\nSELECT cntry, COUNT(*) FROM customers GROUP BY cntry\n```")


def example_bank() -> ExampleBank:
    bank = ExampleBank()
    bank.add(DEA_EXAMPLE_Q, "SELECT SUM(T1.price) FROM payment AS T1 JOIN player AS T2 "
             "ON T1.player_id = T2.id WHERE T2.nation = 'Spain'", db_id="sport")
    bank.add("How many singers are from France?",
             "SELECT count(*) FROM singer WHERE country = 'France'", db_id="music")
    return bank


def run_events(pipeline_name: str, question: str, script, shop, llm, server, *,
               params: dict | None = None, services: dict | None = None) -> list[dict]:
    """The events of one scripted run, as the dicts a stored run holds."""
    from agents.pipelines import csma, deasql, macsql, r3

    pipeline = {"csma": csma.PIPELINE, "r3": r3.PIPELINE, "deasql": deasql.PIPELINE,
                "macsql": macsql.PIPELINE}[pipeline_name]
    server.clear()
    script(server)
    run = run_to_end(start_run(pipeline, question, shop, llm, params=params or {},
                               services=services or {}))
    assert run.status == "done", run.error
    return [e.to_dict() for e in run.events]


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> dict[str, list[dict]]:
    """Real events of each pipeline (module scope: the runs take well under a second)."""
    from agents.core.config import Settings
    from agents.llm.client import make_client
    from sample_dbs.build import build_all
    from scripted_llm import ScriptedLLM

    out = tmp_path_factory.mktemp("trace_dbs")
    build_all(out)
    shop = open_database(out / "shop.sqlite")
    with ScriptedLLM() as server:
        llm = make_client(Settings(provider="openai", base_url=server.base_url,
                                   api_key="test-key", model="scripted-model", cache=False,
                                   max_retries=0, request_timeout=10.0))
        traces = {
            "csma": run_events("csma", CSMA_QUESTION, script_csma, shop, llm, server,
                               params={"n_agents": 2, "delta": 3, "max_rounds": 3,
                                       "variant": "paper", "check_method": "verdict"}),
            "csma_compact": run_events("csma", CSMA_QUESTION, script_csma_compact, shop, llm,
                                       server, params={"check_method": "verdict"}),
            "csma_agreement": run_events("csma", CSMA_QUESTION, script_csma_agreement, shop,
                                         llm, server, params={"check_method": "agreement"}),
            "csma_agreement_fallback": run_events(
                "csma", CSMA_QUESTION, script_csma_agreement_fallback, shop, llm, server,
                params={"check_method": "agreement"}),
            "csma_rewrite": run_events("csma", CSMA_QUESTION, script_csma_rewrite, shop, llm,
                                       server),  # the defaults rewrite
            "csma_global_writer": run_events("csma", CSMA_QUESTION, script_csma_global_writer,
                                             shop, llm, server, params={"max_rounds": 1}),
            "csma_global_check": run_events("csma", CSMA_QUESTION, script_csma_global_check,
                                            shop, llm, server,
                                            params={"max_rounds": 2, "global_check": True}),
            "csma_global_data_first": run_events(
                "csma", CSMA_QUESTION, script_csma_global_data_first, shop, llm, server,
                params={"max_rounds": 2}),
            "csma_global_writer_kept": run_events(
                "csma", CSMA_QUESTION,
                lambda server: script_csma_global_writer(server, repaired="SELECT stars FROM p"),
                shop, llm, server, params={"max_rounds": 1}),
            "r3": run_events("r3", R3_QUESTION, script_r3, shop, llm, server,
                             params={"k": 0, "n_reviewers": 2}),
            "deasql": run_events("deasql", DEA_QUESTION, script_deasql, shop, llm, server,
                                 params={"variant": "paper"},
                                 services={"examples": example_bank()}),
            "deasql_compact": run_events("deasql", DEA_QUESTION, script_deasql, shop, llm,
                                         server, services={"examples": example_bank()}),
            "deasql_extremum": run_events("deasql", DEA_EXTREMUM_QUESTION,
                                          script_deasql_extremum, shop, llm, server),
            # the defaults end a repair loop that fails on a column name on the runnable version
            # (the model asked for the repairs: with the hint's version taken, no loop ends so)
            "deasql_ending": run_events("deasql", CSMA_QUESTION, script_deasql_ending, shop,
                                        llm, server, params={"repair_from_hint": False},
                                        services={"examples": example_bank()}),
            "macsql_ending": run_events("macsql", CSMA_QUESTION, script_macsql_ending, shop,
                                        llm, server, params={"use_selector": "never",
                                                             "repair_from_hint": False}),
            "r3_ending": run_events("r3", CSMA_QUESTION, script_r3_ending, shop, llm, server,
                                    params={"k": 0, "n_reviewers": 1, "max_fix_attempts": 1,
                                            "repair_from_hint": False}),
            # the defaults: the failing SQL's hint holds the version that runs, the repair
            "deasql_from_hint": run_events("deasql", CSMA_QUESTION, script_deasql_ending, shop,
                                           llm, server, services={"examples": example_bank()}),
            "macsql_from_hint": run_events("macsql", CSMA_QUESTION, script_macsql_ending, shop,
                                           llm, server, params={"use_selector": "never"}),
            "r3_from_hint": run_events("r3", CSMA_QUESTION, script_r3_from_hint, shop, llm,
                                       server, params={"k": 0, "n_reviewers": 1}),
            "r3_aggregate": run_events("r3", R3_QUESTION, script_r3_aggregate, shop, llm,
                                       server, params={"k": 0, "n_reviewers": 1}),
            "r3_failing_revision": run_events("r3", R3_QUESTION, script_r3_failing_revision,
                                              shop, llm, server,
                                              params={"k": 0, "n_reviewers": 1}),
        }
    shop.close()
    return traces


def test_csma_trace_shows_owners_schemas_and_checks(traces):
    at = draw(traces["csma"])
    partition, extract_1, generate_1, extract_2, check_2, generate_2, _, check_1 = at.status
    owners = texts(partition)
    assert "**Agent 1**" in owners and "**Agent 2**" in owners
    assert "`order_items`, `payments`, `reviews`" in owners
    assert [s.label.split(" — ")[0] for s in at.status[1:3]] == [
        "2. Agent 1: Extract question-related schema", "3. Agent 1: Generate SQL"]

    second = texts(extract_2)
    assert "**Round 2** · Agent 2 merges its private schema" in second
    tables = [m.value for m in extract_2.markdown if m.value.startswith("| table")]
    known, extracted, global_after = tables
    assert "`products` (global)" in known and "`reviews` |" in known
    # retention (δ) and join columns are marked in what agent 2 extracted
    assert "`sku` (δ)" in extracted and "`review_id` (δ)" in extracted
    assert "`product_id` (join)" in extracted
    assert "| `products` | `product_id`, `sku`, `name` |" in global_after
    assert "| `reviews` | `review_id`, `product_id`, `rating` |" in global_after
    assert "(δ): added by the retention threshold" in second

    rejected = texts(check_2)
    assert ":red-badge[negative: SQL rejected]" in rejected
    assert f"**Reason:** {CSMA_REJECTION}" in rejected
    assert "written by Agent 1" in rejected and "returned 94 row(s)" in rejected
    assert ":green-badge[positive: SQL accepted]" in texts(check_1)
    assert CSMA_REJECTION in texts(generate_2)
    assert any("AVG(r.rating)" in sql for _, sql in codes(generate_2))
    assert codes(generate_1) == [("sql", "SELECT name\nFROM products")]  # shown once


def test_csma_compact_trace_shows_whole_tables_and_the_variant_that_ran(traces):
    """The default run: agents name tables, each reaches the global schema whole, and every
    round step says which variant ran."""
    at = draw(traces["csma_compact"])
    extract_2, check_2, generate_2 = at.status[3], at.status[4], at.status[5]
    second = texts(extract_2)
    extracted = [m.value for m in extract_2.markdown if m.value.startswith("| table")][1]
    assert ("| `reviews` (whole) | `review_id`, `product_id`, `customer_id`, `rating`, "
            "`review_date`, `comment` |") in extracted
    assert "(δ)" not in second and "(join)" not in second  # named tables are kept whole
    assert "(whole): the agent named the table, and every column it knows is kept" in second
    assert ":red-badge[negative: SQL rejected]" in texts(check_2)
    assert CSMA_REJECTION in texts(generate_2)
    assert any("AVG(r.rating)" in sql for _, sql in codes(generate_2))
    for step in at.status[1:]:
        assert "**variant**: compact" in texts(step)


def test_csma_agreement_trace_shows_the_checkers_own_sql_and_the_outcome(traces):
    at = draw(traces["csma_agreement"])
    check_2, generate_2, check_1 = at.status[4], at.status[5], at.status[7]
    rejected = texts(check_2)
    assert ":red-badge[negative: SQL rejected]" in rejected
    assert ("**Its own SQL**, written from its extracted schema: :red-badge[different result: "
            "its own SQL is the new SQL]") in rejected
    assert "Its own SQL ran without error and returned" in rejected
    assert "The checked SQL executed: 94 row(s)" in rejected  # its result, not the own SQL's
    assert "**check method**: agreement" in rejected
    # the checked SQL, then the checker's own
    assert [sql for _, sql in codes(check_2)][:2] == ["SELECT name\nFROM products",
                                                      format_sql(CSMA_SQL)]
    assert "The SQL it wrote in its check, whose result differed (no new model call)." \
        in texts(generate_2)
    accepted = texts(check_1)
    assert ":green-badge[positive: SQL accepted]" in accepted
    assert ":green-badge[same result]" in accepted


def test_csma_agreement_trace_says_when_the_model_judged_instead(traces):
    at = draw(traces["csma_agreement_fallback"])
    check = texts(at.status[-1])
    assert ":green-badge[positive: SQL accepted]" in check
    assert ":orange-badge[its own SQL does not run: the model judged instead]" in check
    assert "Its own SQL failed: no such column: stars" in check
    # when both queries return no rows there is nothing to compare either
    empty = json.loads(json.dumps(traces["csma_agreement_fallback"]))
    empty[-1]["parsed"].update(own_execution="ran without error and returned no rows",
                               own_runs=True)
    check = texts(draw(empty).status[-1])
    assert ":orange-badge[both return no rows: the model judged instead]" in check
    # a run recorded before checks said whether their own SQL ran is read from its outcome
    older = json.loads(json.dumps(traces["csma_agreement_fallback"]))
    assert older[-1]["parsed"].pop("own_runs") is False
    check = texts(draw(older).status[-1])
    assert ":orange-badge[its own SQL does not run: the model judged instead]" in check


def test_csma_trace_shows_the_sql_as_written_and_the_change_that_made_it_run(traces):
    at = draw(traces["csma_rewrite"])
    generate_1, check_2 = at.status[2], at.status[4]
    written = texts(generate_1)
    assert (":blue-badge[rewritten to run] The SQL as the model wrote it failed (no such "
            "column: isactive); one clear change makes it run: isactive written is\\_active") \
        in written
    assert "rewritten where" not in written  # said once, not again in a note
    assert "The SQL fails to execute" not in written
    # the SQL as written, folded under the change, then the SQL that went on
    assert [sql for _, sql in codes(generate_1)] == [
        format_sql(CSMA_MISSPELT), format_sql(CSMA_MISSPELT.replace("isactive", "is_active"))]
    assert generate_1.expander[0].label == "The SQL as written"
    checked = texts(check_2)
    assert (":blue-badge[rewritten to run] Its own SQL as the model wrote it failed (no such "
            "column: p.rating)") in checked
    assert "p.rating written r.rating" in checked
    assert ":red-badge[different result: its own SQL is the new SQL]" in checked


def test_csma_trace_shows_the_global_writer_its_repair_and_the_sql_the_run_keeps(traces):
    at = draw(traces["csma_global_writer"])
    writer = at.status[-1]
    assert writer.label.startswith("4. Global writer: Write the SQL afresh from the global schema")
    said = texts(writer)
    assert "The rounds ended on SQL that fails (no such column: p.stars)" in said
    assert "global schema (`products`), what the agents shared" in said
    assert "Its first SQL failed (no such column: stars) and was repaired once" in said
    assert ":green-badge[its SQL runs: it is the answer]" in said
    assert codes(writer)[-1] == ("sql", format_sql(CSMA_SQL))
    assert [e.label for e in writer.expander][:2] == ["The agents' SQL", "Its first SQL"]

    kept = draw(traces["csma_global_writer_kept"]).status[-1]
    said = texts(kept)
    assert ":orange-badge[its SQL fails too]" in said
    assert "**The run keeps the agents' SQL:**" in said
    assert [sql for _, sql in codes(kept)][-2:] == [format_sql("SELECT stars FROM p"),
                                                    format_sql(CSMA_FAILING)]
    assert "Execution error" not in said  # its error is said once, in the first line


def test_csma_trace_shows_the_global_writers_check_of_an_unchecked_ending(traces):
    writer = draw(traces["csma_global_check"]).status[-1]
    said = texts(writer)
    assert "The rounds ended on SQL that runs, but no check agreed with it" in said
    assert (":blue-badge[the same result as an earlier SQL of the agents: it is the answer]"
            in said)
    assert [sql for _, sql in codes(writer)] == [
        format_sql("SELECT p.name FROM products AS p"), format_sql(CSMA_FIRST_SQL),
        format_sql(CSMA_SQL)]
    assert writer.expander[0].label == "The SQL the rounds ended on"


def test_csma_trace_shows_the_global_writers_sql_taken_where_the_last_sql_finds_nothing(
        traces):
    writer = draw(traces["csma_global_data_first"]).status[-1]
    said = texts(writer)
    assert "The rounds ended on SQL that runs, but no check agreed with it" in said
    assert (":blue-badge[no SQL of the agents returns its result, and the last one finds no "
            "data while the writer's does: the writer's SQL is the answer]" in said)
    assert [sql for _, sql in codes(writer)] == [format_sql(CSMA_SQL),
                                                  format_sql(CSMA_NOTHING_FOUND)]
    assert writer.expander[0].label == "The SQL the rounds ended on"
    assert traces["csma_global_data_first"][-1]["sql"] == CSMA_SQL


def test_r3_trace_shows_personas_verdicts_rebuttal_and_diff(traces):
    at = draw(traces["r3"])
    invite, revision_1, revision_2 = at.status[2], at.status[5], at.status[9]
    personas = texts(invite)
    assert "**2 reviewer(s) invited**" in personas
    assert "| reviewer (named by expertise) |" in personas  # not by the model's ids
    assert "| Data Analyst in online retail |" in personas and "Reviewer Ada" not in personas
    assert "| Senior Database Engineer specialized in GROUP BY |" in personas

    first_review = texts(at.status[3])
    assert ":orange-badge[revise] **Data Analyst in online retail**" in first_review
    assert "Reviewer Ada" not in first_review
    assert f"> {R3_COMMENT}" in first_review
    assert ":green-badge[approve]" in texts(at.status[4])

    round_1 = texts(revision_1)
    assert "**Round 1** · 2 review(s)" in round_1
    assert f"**Data Analyst in online retail**: {R3_COMMENT}" in round_1
    assert f"**Writer's rebuttal:** {R3_REBUTTAL}" in round_1
    diffs = [sql for language, sql in codes(revision_1) if language == "diff"]
    assert len(diffs) == 1
    assert "-FROM orders" in diffs[0] and "+FROM customers AS c" in diffs[0]

    round_2 = texts(revision_2)
    assert ":green-badge[consensus]" in round_2 and R3_KEEP in round_2
    assert not [1 for language, _ in codes(revision_2) if language == "diff"]


def test_r3_trace_says_why_a_revision_answering_from_an_arbitrary_row_is_refused(traces):
    at = draw(traces["r3_aggregate"])
    execution = at.status[-1]
    shown = texts(execution)
    assert ("**Round 1** · :orange-badge[revision not adopted] the SQL before it, below, is "
            "final" in shown)
    assert "The revision, not adopted, executed: 1 row(s)" in shown
    assert ("The aggregate check: the revised SQL takes its other columns from an arbitrary row "
            "(COUNT(\\*) beside country without GROUP BY), which the SQL before it did not, so "
            "the revision is not adopted and the SQL before it is final.") in shown
    assert "the SQL runs" not in shown
    assert "**aggregate gate**: yes" in shown
    assert [sql for _, sql in codes(execution)][-1] == format_sql(PER_COUNTRY)


def test_r3_trace_shows_the_error_of_a_revision_the_execution_gate_refused(traces):
    execution = draw(traces["r3_failing_revision"]).status[-1]
    shown = texts(execution)
    assert ("**Round 1** · :orange-badge[revision not adopted] the SQL before it, below, is "
            "final" in shown)
    assert ":red-badge[the revision fails] (OperationalError): no such column: cntry" in shown
    assert "Execution decides: the revised SQL fails (no such column: cntry)" in shown
    assert "row(s)" not in shown  # no rows: the revision ran none
    assert [sql for _, sql in codes(execution)][-1] == format_sql(PER_COUNTRY)


def test_deasql_trace_shows_each_modules_outcome(traces):
    """The paper's prompts (``variant=paper``): the filter keeps the columns it names."""
    at = draw(traces["deasql"])
    elements, info, classification, generation, correction, active, check = at.status
    assert "**Entities:** `amount`, `customers`, `Germany`" in texts(elements)
    assert "total amount paid by German customers" in texts(elements)

    kept = texts(info)
    assert "| `payments` | `payment_id`, `order_id`, `amount` |" in kept
    assert "payments.order_id = orders.order_id" in kept
    assert "condition on customers: country = 'Germany'" in kept

    chosen = texts(classification)
    assert ":blue-badge[JOIN] (JOIN, NON-NESTED)" in chosen
    assert "`generation_join`" in chosen and "connection operation like JOIN" in chosen

    shots = generation.expander[0]
    assert shots.label == "Few-shot examples used (2)"
    assert DEA_EXAMPLE_Q in texts(shots)
    assert any("payment AS T1" in sql for _, sql in codes(shots))

    assert ":orange-badge[issue found: SQL corrected]" in texts(correction)
    assert [sql.split("\n")[0] for _, sql in codes(correction)[:2]] == [
        "SELECT SUM(amount)", "SELECT SUM(p.amount)"]
    assert "select columns that are explicitly requested" in texts(correction.expander[0])

    assert active.label.endswith("— skipped")
    assert "**Skipped:** not an extremum question" in texts(active)
    assert "the SQL runs: 1 row(s)" in texts(check)


def test_deasql_compact_trace_shows_whole_tables_and_the_variant_that_ran(traces):
    """The default run: the filter keeps whole tables, the generation prompt is the compact one,
    and each step the variant changes says so."""
    at = draw(traces["deasql_compact"])
    info, classification, generation, check = (at.status[i] for i in (1, 2, 3, 6))
    kept = texts(info)
    assert ("| `payments` | `payment_id`, `order_id`, `method`, `amount`, `paid_date`, "
            "`status` | — |") in kept
    assert "condition on customers: country = 'Germany'" in kept
    assert "`generation_join_compact`" in texts(classification)
    assert "**Prompt:** `generation_join_compact`" in texts(generation)
    for step in (info, classification, generation, check):
        assert "**variant**: compact" in texts(step)
    assert "the SQL runs: 1 row(s)" in texts(check)


def test_deasql_active_learning_rewrite_is_shown_as_applied(traces):
    at = draw(traces["deasql_extremum"])
    classification, correction, active = at.status[2], at.status[4], at.status[5]
    assert ":blue-badge[NESTED]" in texts(classification)
    assert "nested queries" in texts(classification)
    assert ":green-badge[no issue found]" in texts(correction)
    applied = texts(active)
    assert ":green-badge[applied] extremum problem: the modified SQL is applied" in applied
    assert applied.count("the modified SQL is applied") == 1  # the note is not repeated
    assert any("LIMIT 1" in sql for _, sql in codes(active))


def test_unexpected_shapes_fall_back_to_the_generic_view():
    events = [
        {"index": 0, "step": "invite", "agent": "Invitation", "parsed": {"reviewers": "Ada"}},
        {"index": 1, "step": "check:3", "agent": "Agent 3", "parsed": {"mood": "GENERIC-OK"}},
        {"index": 2, "step": "writer", "agent": "SQL Writer",
         "parsed": {"sql": "SELECT 42"}, "sql": "SELECT 42"},
        {"index": 3, "step": "classification", "agent": "Classification & hint",
         "status": "skipped", "parsed": {"question_type": None},
         "notes": ["classification is off"]},
    ]
    at = draw(events)
    assert at.status[0].dataframe[0].value.to_dict("records") == [
        {"field": "reviewers", "value": "Ada"}]
    assert at.status[1].dataframe[0].value.to_dict("records") == [
        {"field": "mood", "value": "GENERIC-OK"}]
    assert codes(at.status[2]) == [("sql", "SELECT 42")]
    assert "fixed JOIN hint" in texts(at.status[3])
    assert "**Skipped:** classification is off" in texts(at.status[3])


@pytest.mark.parametrize("name, step, lead", [
    ("macsql_ending", "refiner", "The repair loop ended on SQL that"),
    ("deasql_ending", "execution_check", "The repair loop ended on SQL that"),
    ("r3_ending", "execute", "The repair loop ended on SQL that"),
])
def test_a_repair_loop_ending_on_the_version_that_runs_says_so(traces, name, step, lead):
    """MAC-SQL's Refiner, DEA-SQL's execution check and R³'s execution: the SQL as written is
    folded under the change, and the SQL that went on is shown once."""
    events = traces[name]
    index = max(i for i, e in enumerate(events) if e["step"] == step
                and (e["parsed"] or {}).get("rewrite"))
    at = draw(events)
    shown = texts(at.status[index])
    assert (f":blue-badge[rewritten to run] {lead} failed (no such column: p.rating); one "
            f"clear change makes it run: p.rating written r.rating") in shown.replace(
                "**Round 1** · ", "")
    assert ("**Round 1** · " in shown) == (name == "r3_ending")  # R³'s execution keeps its round
    assert at.status[index].expander[0].label == "The SQL as written"
    sqls = [sql for _, sql in codes(at.status[index])]
    assert sqls[0] == format_sql(MISPLACED)
    assert sqls.count(format_sql(MISPLACED.replace("p.rating", "r.rating"))) == 1


@pytest.mark.parametrize("name, step", [("macsql_from_hint", "refiner"),
                                        ("deasql_from_hint", "execution_check"),
                                        ("r3_from_hint", "fix")])
def test_a_repair_taken_from_the_hint_says_no_model_was_asked(traces, name, step):
    """MAC-SQL's Refiner, DEA-SQL's execution check and R³'s correction: the error's hint held
    the version that runs, and the step says it took it with no model call, showing the SQL
    that failed and the version taken."""
    events = traces[name]
    index = next(i for i, e in enumerate(events) if e["step"] == step
                 and ((e["parsed"] or {}).get("from_hint")
                      or any(r.get("from_hint") for r in (e["parsed"] or {}).get("repairs", []))))
    assert events[index]["calls"] == []
    at = draw(events)
    shown = texts(at.status[index])
    assert (":green-badge[taken from the hint] no model call: the hint held the version of the "
            "query that runs (p.rating written r.rating") in shown
    assert "No model call" in shown and "Asked the model" not in shown
    sqls = [sql for _, sql in codes(at.status[index])]
    assert format_sql(MISPLACED) in sqls
    assert format_sql(MISPLACED.replace("p.rating", "r.rating")) in sqls
