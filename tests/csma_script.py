"""What the CSMA tests share: the fleet database's SQL (opened by the ``fleet`` fixture of
``conftest.py``), the question and its SQL, the scripted agents' answers, and runs to their end
on the paper's settings (``run_csma``) or the defaults on a two-owner partition
(``run_agreement``)."""

from __future__ import annotations

import json

from agents.core.engine import run_to_end, start_run
from agents.pipelines.csma import PIPELINE

# Table/column names are distinct words, so a name found in a prompt can only come from the
# schema; value examples are chosen not to collide with any name.
FLEET_SQL = """
CREATE TABLE harbors (harbor_id INTEGER PRIMARY KEY, harbor_title TEXT, coastline TEXT);
CREATE TABLE vessels (vessel_id INTEGER PRIMARY KEY, hull_name TEXT, tonnage INTEGER,
                      home_harbor_id INTEGER REFERENCES harbors(harbor_id));
CREATE TABLE voyages (voyage_id INTEGER PRIMARY KEY,
                      vessel_id INTEGER REFERENCES vessels(vessel_id),
                      departed_on TEXT, cargo_kind TEXT);
CREATE TABLE crew_members (crew_id INTEGER PRIMARY KEY,
                           vessel_id INTEGER REFERENCES vessels(vessel_id),
                           sailor_name TEXT, rank_level INTEGER);
INSERT INTO harbors VALUES (1, 'Northport', 'cold'), (2, 'Southbay', 'warm');
INSERT INTO vessels VALUES (1, 'Aurora', 900, 1), (2, 'Borealis', 1200, 2);
INSERT INTO voyages VALUES (1, 1, '2024-01-05', 'grain'), (2, 1, '2024-02-11', 'coal'),
                           (3, 2, '2024-03-02', 'timber');
INSERT INTO crew_members VALUES (1, 1, 'Ines', 2), (2, 2, 'Oskar', 1);
"""
TABLES = ["harbors", "vessels", "voyages", "crew_members"]
QUESTION = "Which cargo kinds did the ship Aurora carry?"
GOOD_SQL = ("SELECT v.cargo_kind FROM voyages AS v JOIN vessels AS s ON s.vessel_id = v.vessel_id "
            "WHERE s.hull_name = 'Aurora'")
HULL_ONLY = "SELECT hull_name FROM vessels WHERE hull_name = 'Aurora'"
FAILING_SQL = "SELECT cargo FROM vessels WHERE hull_name = 'Aurora'"   # no such column: cargo
# Agent 1's SQL in the unread-join tests (test_csma_agreement.py) and the global-check ones
# (test_csma_global.py). test_csma.py, which held both, defined the name twice, the first time
# with "ORDER BY hull_name"; its second definition, this one, was the one both ran with.
ALL_HULLS = "SELECT hull_name FROM vessels"
AGREEMENT_PARTITION = '{"1": ["harbors", "vessels"], "2": ["voyages", "crew_members"]}'


def extraction(answer: dict) -> str:
    return json.dumps(answer)


def tables_answer(*tables: str) -> str:
    return json.dumps({"tables": list(tables)})


def verdict(word: str, reason: str = "") -> str:
    return json.dumps({"verdict": word, "reason": reason or f"the query is {word}"})


def sql_block(sql: str) -> str:
    return f"```sql\n{sql}\n```"


def run_csma(db, llm, question=QUESTION, variant="paper", check_method="verdict",
             name_rewrite=False, rounds_while_failing=0, global_writer=False,
             global_check=False, **params):
    """A CSMA run to its end; the paper's prompts and check, failing SQL left as written, no
    round past ``max_rounds`` and no global writer, unless ``variant``, ``check_method``,
    ``name_rewrite``, ``rounds_while_failing``, ``global_writer`` and ``global_check`` say
    otherwise (None: the pipeline's default)."""
    for name, value in (("variant", variant), ("check_method", check_method),
                        ("name_rewrite", name_rewrite),
                        ("rounds_while_failing", rounds_while_failing),
                        ("global_writer", global_writer), ("global_check", global_check)):
        if value is not None:
            params[name] = value
    return run_to_end(start_run(PIPELINE, question, db, llm, params=params))


def run_agreement(db, llm, name_rewrite=None, **params):
    """A run with the pipeline's defaults on the two-owner partition."""
    return run_csma(db, llm, variant=None, check_method=None, name_rewrite=name_rewrite,
                    partition=AGREEMENT_PARTITION, **params)


def steps_of(run) -> list[str]:
    return [e.step for e in run.events]


def script_two_rounds(scripted_llm, second_verdict: str):
    """Agent 1 only knows the ship; agent 2 adds the voyages and checks agent 1's SQL."""
    scripted_llm.push(
        extraction({"vessels": ["hull_name"]}),                              # agent 1 extracts
        sql_block("SELECT hull_name FROM vessels WHERE hull_name = 'Aurora'"),  # agent 1 writes
        extraction({"vessels": ["hull_name"], "voyages": ["cargo_kind"]}),   # agent 2 extracts
        verdict(second_verdict, "the cargo is in voyages"),                  # agent 2 checks
    )
