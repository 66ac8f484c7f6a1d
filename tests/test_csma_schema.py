"""CSMA's schema rules: the partition of the tables among the agents, the merge of a private
schema with the global one, the extraction answers read against the known schema, retention
and join columns, the restricted schema an agent sees, and the check answers read into a verdict.

The fleet database, its question and the scripted answers are in ``csma_script.py``."""

from __future__ import annotations

import re

import pytest

from agents.core.engine import ParseError
from agents.pipelines.csma import schema_ops as ops
from agents.pipelines.csma.answers import parse_check, parse_extraction, parse_table_extraction
from csma_script import TABLES, extraction, run_csma, steps_of


# -- partitions ---------------------------------------------------------------------------------

def test_equal_partition_is_contiguous_in_table_order_and_balanced():
    tables = ["a", "b", "c", "d", "e"]
    assert ops.equal_partition(tables, 2) == [["a", "b", "c"], ["d", "e"]]
    assert ops.equal_partition(tables, 3) == [["a", "b"], ["c", "d"], ["e"]]
    assert ops.equal_partition(tables, 1) == [tables]
    assert ops.equal_partition(["a", "b"], 5) == [["a"], ["b"]]  # every agent owns a table


@pytest.mark.parametrize("value", [
    '{"1": ["voyages", "Harbors"], "2": ["crew_members", "vessels"]}',
    {"2": ["crew_members", "vessels"], 1: ["voyages", "harbors"]},
    str({"1": ["voyages", "harbors"], "2": ["crew_members", "vessels"]}),  # a dict's repr
    '[["harbors", "voyages"], ["vessels", "crew_members"]]',
])
def test_user_partition_forms_are_accepted_in_table_order(value):
    assert ops.parse_partition(value, TABLES) == [["harbors", "voyages"],
                                                  ["vessels", "crew_members"]]


def test_no_partition_given_means_the_equal_split():
    assert ops.parse_partition("", TABLES) is None
    assert ops.parse_partition("   ", TABLES) is None
    assert ops.parse_partition(None, TABLES) is None


@pytest.mark.parametrize("value, message", [
    ('{"1": ["harbors", "ships"], "2": ["voyages", "crew_members", "vessels"]}',
     "unknown table(s) 'ships'"),
    ('{"1": ["harbors", "vessels"], "2": ["vessels", "voyages", "crew_members"]}',
     "'vessels' is assigned twice"),
    ('{"1": ["harbors", "vessels"], "2": ["voyages"]}', "not assigned to any agent: crew_members"),
    ('{"1": ["harbors", "vessels", "voyages", "crew_members"], "2": []}', "agent 2 owns no table"),
    ('{"1": ["harbors", "vessels"], "3": ["voyages", "crew_members"]}', "must be 1..2"),
    ('{"first": ["harbors"]}', "not an agent number"),
    ('{"1": ["harbors", "vessels"', "not valid JSON"),
    ('"harbors"', "must map agent numbers"),
    ('{"1": [1, 2]}', "expected a list of table names"),
])
def test_invalid_partitions_are_rejected_with_a_clear_message(value, message):
    with pytest.raises(ops.PartitionError, match=re.escape(message)):
        ops.parse_partition(value, TABLES)


def test_an_invalid_partition_fails_the_first_step_without_a_model_call(fleet, llm,
                                                                          scripted_llm):
    run = run_csma(fleet, llm, partition='{"1": ["harbors"], "2": ["ships"]}')
    assert run.status == "failed"
    assert steps_of(run) == ["partition"]
    assert "invalid partition" in run.events[0].error and "'ships'" in run.events[0].error
    assert scripted_llm.requests == []


def test_the_partition_step_shows_each_agents_private_schema(fleet, llm, scripted_llm):
    scripted_llm.push(extraction({}))  # agent 1 finds nothing; the run stops after round 1
    run = run_csma(fleet, llm, partition='{"1": ["crew_members"], "2": ["harbors", "vessels", '
                                         '"voyages"]}', max_rounds=1)
    parsed = run.events[0].parsed
    assert parsed["partition"] == "user-defined"
    assert [a["tables"] for a in parsed["agents"]] == [["crew_members"],
                                                      ["harbors", "vessels", "voyages"]]
    assert {"agent": "Agent 1", "table": "crew_members",
            "columns": ["crew_id", "vessel_id", "sailor_name", "rank_level"]} \
        in parsed["private_schemas"]
    assert run.events[0].data["private"]["2"]["vessels"] == ["vessel_id", "hull_name", "tonnage",
                                                            "home_harbor_id"]


# -- merge, extraction, retention ---------------------------------------------------------------

def test_merge_keeps_tables_of_either_side_and_unions_shared_columns():
    private = {"t1": ["a", "b"], "t2": ["x"]}
    global_ = {"t2": ["y", "x"], "t3": ["z"]}
    assert ops.merge(private, global_) == {"t1": ["a", "b"], "t2": ["x", "y"], "t3": ["z"]}
    assert ops.merge({}, global_) == global_
    assert ops.merge(private, {}) == private


def test_merged_schema_is_put_in_database_order(fleet):
    merged = ops.merge({"voyages": ["cargo_kind", "voyage_id"]}, {"vessels": ["hull_name"]})
    assert list(ops.in_schema_order(merged, fleet.schema).items()) == [
        ("vessels", ["hull_name"]), ("voyages", ["voyage_id", "cargo_kind"])]


def test_retention_tops_up_to_delta_primary_key_first_then_table_order():
    known = {"t": ["name", "price", "id", "kind"], "u": ["k", "v"]}
    keys = {"t": ["id"], "u": ["k"]}
    kept, added = ops.apply_retention({"t": ["price"], "u": ["v"]}, known, 3, keys)
    assert kept == {"t": ["price", "id", "name"], "u": ["v", "k"]}  # u has only 2 columns
    assert added == {"t": ["id", "name"], "u": ["k"]}
    kept, added = ops.apply_retention({"t": ["price", "kind", "name"]}, known, 3, keys)
    assert kept == {"t": ["price", "kind", "name"]} and added == {}
    assert ops.apply_retention({"t": ["price"]}, known, 0, keys)[0] == {"t": ["price"]}
    # a table named with no usable column is filled from its keys, or dropped when delta is 0
    assert ops.apply_retention({"t": []}, known, 2, keys)[0] == {"t": ["id", "name"]}
    assert ops.apply_retention({"t": []}, known, 0, keys)[0] == {}


def test_extraction_answer_is_resolved_against_the_known_schema_only():
    known = {"vessels": ["vessel_id", "hull_name"], "voyages": ["voyage_id", "cargo_kind"]}
    extracted, notes = parse_extraction(
        '```json\n{"Vessels": ["HULL_NAME", "vessels.vessel_id", "flag"], "harbors": ["x"], '
        '"voyages": "keep_all"}\n```', known)
    assert extracted == {"vessels": ["hull_name", "vessel_id"],
                         "voyages": ["voyage_id", "cargo_kind"]}
    assert any("'harbors'" in n for n in notes) and any("'flag'" in n for n in notes)
    assert parse_extraction("{}", known) == ({}, [])
    with pytest.raises(ParseError, match="use only these: vessels, voyages"):
        parse_extraction('{"ships": ["name"]}', known)


def test_join_columns_between_extracted_tables_are_kept(fleet):
    known = {"vessels": ["vessel_id", "hull_name", "tonnage"],
             "voyages": ["voyage_id", "vessel_id", "cargo_kind"]}
    kept, added = ops.keep_join_columns({"vessels": ["hull_name"], "voyages": ["cargo_kind"]},
                                        known, fleet.schema.foreign_keys)
    assert kept == {"vessels": ["hull_name", "vessel_id"], "voyages": ["cargo_kind", "vessel_id"]}
    assert added == {"vessels": ["vessel_id"], "voyages": ["vessel_id"]}


def test_restricted_schema_shows_no_foreign_key_to_an_unseen_table(fleet):
    visible = ops.restrict(fleet.schema, {"vessels": ["vessel_id", "hull_name",
                                                      "home_harbor_id"]})
    text = visible.render_macsql() + visible.render_foreign_keys()
    assert "harbors" not in text and "harbor_id`" not in text
    assert "tonnage" not in text and "home_harbor_id" in text


@pytest.mark.parametrize("text, expected", [
    ('{"verdict": "correct", "reason": "fine"}', {"verdict": "positive", "reason": "fine"}),
    ('{"verdict": "Wrong", "reason": "no join"}', {"verdict": "negative", "reason": "no join"}),
    ('{"correct": false}', {"verdict": "negative", "reason": ""}),
    ("Correct. It counts the rows.", {"verdict": "positive", "reason": "It counts the rows"}),
])
def test_check_answers_are_read_into_a_verdict(text, expected):
    assert parse_check(text) == expected


def test_unreadable_check_answer_is_a_parse_error():
    with pytest.raises(ParseError):
        parse_check("Let me think about this query step by step")
    with pytest.raises(ParseError):
        parse_check('{"verdict": "maybe"}')


# -- the compact variant's table lists ----------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ('{"tables": ["Voyages", "vessels", "vessels"]}', ["vessels", "voyages"]),  # database order
    ('```json\n["vessels"]\n```', ["vessels"]),
    ('{"vessels": ["hull_name"], "voyages": []}', ["vessels"]),  # the paper's answer shape
    ('{"tables": []}', []),
    ("{}", []),
])
def test_a_table_list_answer_is_read_in_database_order(text, expected):
    known = {"vessels": ["vessel_id", "hull_name"], "voyages": ["voyage_id", "cargo_kind"]}
    assert parse_table_extraction(text, known) == (expected, [])


def test_a_table_list_cut_off_while_repeating_still_names_its_tables():
    known = {"vessels": ["vessel_id"], "voyages": ["voyage_id"]}
    tables, notes = parse_table_extraction('{"tables": ["voyages", ' + '"voyages", ' * 80, known)
    assert tables == ["voyages"] and "not valid JSON" in notes[0]
    tables, notes = parse_table_extraction('{"tables": ["voyages", "ships"]}', known)
    assert tables == ["voyages"] and any("'ships'" in n for n in notes)
    with pytest.raises(ParseError, match="use only these: vessels, voyages"):
        parse_table_extraction('{"tables": ["ships"]}', known)
    with pytest.raises(ParseError):
        parse_table_extraction('{"tables": ["ships", ', known)
