"""Candidate grouping: equal results under the metric's rule, ties, failures and the vote."""

from __future__ import annotations

import json

from agents.runs.candidates import (Candidate, CandidateGroup, Vote, group_candidates, has_data,
    results_equal, run_candidate, vote)
from agents.db.database import open_database
from agents.db.safe_sql import ExecResult
from dbfactory import SINGERS_SQL, make_db


def ran(generator: str, rows, sql: str = "SELECT a, b FROM t", truncated: bool = False):
    rows = [tuple(r) for r in rows]
    result = ExecResult(ok=True, sql=sql, columns=[f"c{i}" for i in range(len(rows[0]))]
                        if rows else [], rows=rows, row_count=len(rows), truncated=truncated)
    return Candidate.from_result(generator, sql, result)


def failed(generator: str, error_class: str = "OperationalError", sql: str = "SELECT x"):
    result = ExecResult(ok=False, sql=sql, error=f"{error_class} happened",
                        error_class=error_class)
    return Candidate.from_result(generator, sql, result)


def test_agreeing_candidates_form_one_decisive_group():
    candidates = [ran("baseline", [(1, "a"), (2, "b")]), ran("macsql", [(3, "c")]),
                  ran("r3", [(2, "b"), (1, "a")])]
    result = vote(candidates)
    assert [g.members for g in result.groups] == [[0, 2], [1]]
    assert result.groups[0].generators == ["baseline", "r3"]
    assert result.decisive and not result.needs_selection and result.contenders == []
    assert result.reason == "2 of 3 candidates agree"
    assert result.chosen() is candidates[0]


def test_column_order_does_not_split_a_group_but_re_paired_values_do():
    a = ran("a", [(1, "x"), (2, "y")])
    assert results_equal(a, ran("b", [("x", 1), ("y", 2)]))
    assert not results_equal(a, ran("c", [("y", 1), ("x", 2)]))
    assert not results_equal(a, ran("d", [(1, "x"), (2, "y"), (2, "y")]))  # a multiset


def test_row_order_counts_only_when_both_queries_sort_their_output():
    up = "SELECT name FROM t ORDER BY age"
    down = "SELECT name FROM t ORDER BY age DESC"
    plain = "SELECT name FROM t"
    rows, reversed_rows = [("a",), ("b",)], [("b",), ("a",)]
    assert not results_equal(ran("x", rows, up), ran("y", reversed_rows, down))
    assert results_equal(ran("x", rows, up), ran("y", rows, down))
    assert results_equal(ran("x", rows, up), ran("y", reversed_rows, plain))
    # an ORDER BY inside a subquery says nothing about the output order (the metric's rule)
    inner = "SELECT name FROM t WHERE age = (SELECT age FROM t ORDER BY age LIMIT 1)"
    assert results_equal(ran("x", rows, inner), ran("y", reversed_rows, up))


def test_values_compare_as_the_metric_compares_them():
    assert results_equal(ran("a", [(1,)]), ran("b", [(1.0,)]))
    assert not results_equal(ran("a", [(1,)]), ran("b", [("1",)]))
    assert results_equal(ran("a", []), ran("b", []))


def test_a_tie_is_ordered_by_generator_priority_and_needs_selection():
    candidates = [ran("r3", [(1,)]), ran("baseline", [(2,)]), ran("macsql", [(2,)]),
                  ran("deasql", [(1,)])]
    result = vote(candidates, priority=["baseline", "macsql", "deasql", "r3"])
    assert [g.generators for g in result.groups] == [["baseline", "macsql"], ["deasql", "r3"]]
    assert [g.representative for g in result.groups] == [1, 3]
    assert not result.decisive and result.needs_selection
    assert result.contenders == [0, 1]
    assert result.reason == "tie: 2 groups of 2 (of 4 candidates)"
    # without a priority list, candidate order decides
    assert [g.members for g in vote(candidates).groups] == [[0, 3], [1, 2]]


def test_a_weak_winner_leaves_every_group_in_contention():
    candidates = [ran("a", [(1,)]), ran("b", [(1,)]), ran("c", [(2,)]), ran("d", [(3,)]),
                  ran("e", [(4,)])]
    weak = vote(candidates)
    assert not weak.decisive and weak.contenders == [0, 1, 2, 3]
    assert weak.reason == "weak: 2 of 5 candidates agree, below the minimum share 0.5"
    assert vote(candidates, min_share=0.4).decisive


def test_failing_and_timed_out_candidates_join_no_group_but_count_in_the_total():
    candidates = [failed("a", "Timeout"), ran("b", [(1,)]), Candidate("c", None),
                  failed("d")]
    result = vote(candidates)
    assert result.failed == [0, 2, 3]
    assert [c.error_class for c in candidates] == ["Timeout", None, "NoSQL", "OperationalError"]
    assert [g.members for g in result.groups] == [[1]]
    assert not result.decisive and not result.needs_selection  # nothing to choose between
    assert result.winner.members == [1]
    assert result.reason == ("weak: 1 of 4 candidates agree, below the minimum share 0.5 "
                             "(1 of 4 ran)")


def test_all_failing_gives_no_group_and_no_winner():
    result = vote([failed("a", "Timeout"), failed("b"), Candidate("c", "  ")])
    assert result.groups == [] and result.failed == [0, 1, 2]
    assert result.winner is None and result.chosen() is None
    assert not result.decisive and not result.needs_selection
    assert result.reason == "none of the 3 candidates ran"
    assert vote([]).reason == "none of the 0 candidates ran"


def test_a_result_cut_at_the_row_cap_only_matches_another_cut_result():
    full = ran("a", [(1,), (2,)])
    assert not results_equal(full, ran("b", [(1,), (2,)], truncated=True))
    assert results_equal(ran("c", [(1,), (2,)], truncated=True),
                         ran("d", [(2,), (1,)], truncated=True))


def test_vote_round_trips_through_json():
    candidates = [ran("baseline", [(1, "a")]), failed("r3", "Timeout"),
                  ran("macsql", [("a", 1)])]
    original = vote(candidates, priority=["macsql"], min_share=0.6)
    data = json.loads(json.dumps(original.to_dict()))
    again = Vote.from_dict(data)
    assert again.to_dict() == original.to_dict()
    assert data["groups"][0] == {"members": [2, 0], "generators": ["macsql", "baseline"],
                                 "size": 2, "representative": 2}
    assert data["decisive"] and not data["needs_selection"]
    assert CandidateGroup.from_dict(data["groups"][0]).members == [2, 0]
    assert again.chosen().generator == "macsql"


def test_no_rows_or_nulls_only_hold_no_data():
    assert not has_data(ran("a", []).result)
    assert not has_data(ran("a", [(None, None)]).result)   # an aggregate over no rows
    assert not has_data(ran("a", [(None,), (None,)]).result)
    assert has_data(ran("a", [(None, 0)]).result) and has_data(ran("a", [(0,)]).result)
    assert not has_data(None) and not has_data({"ok": False, "error": "x"})


def test_with_data_first_agreement_on_nothing_loses_to_a_result_with_data():
    candidates = [ran("cot", [(None,)]), ran("writer", [(50.3,)]), ran("sample", [(None,)]),
                  ran("decomposer", [(None,)])]
    assert vote(candidates).decisive   # without the rule three agree on nothing and win
    result = vote(candidates, data_first=True)
    assert [g.generators for g in result.groups] == [["writer"], ["cot", "sample", "decomposer"]]
    assert result.set_aside == [1] and result.contenders == []
    assert result.winner.generators == ["writer"] and not result.needs_selection
    assert result.reason == ("the only result with data: 1 of 4 candidates; 3 returned no "
                             "data and are set aside")


def test_with_data_first_the_groups_with_data_vote_among_themselves():
    empty = [ran("a", []), ran("b", [])]
    tie = vote([*empty, ran("c", [(1,)]), ran("d", [(2,)])], data_first=True)
    assert tie.needs_selection and tie.contenders == [0, 1] and tie.set_aside == [2]
    assert tie.reason == ("tie: 2 groups of 1 (of 4 candidates); 2 returned no data and are "
                          "set aside")
    # the empty ones count in the total as failed ones do: 2 of 5 is a weak winner
    weak = vote([*empty, ran("c", [(1,)]), ran("d", [(1,)]), ran("e", [(2,)])],
                data_first=True)
    assert not weak.decisive and weak.contenders == [0, 1] and weak.set_aside == [2]
    strong = vote([ran("a", []), ran("c", [(1,)]), ran("d", [(1,)])], data_first=True)
    assert strong.decisive and strong.reason == ("2 of 3 candidates agree; 1 returned no data "
                                                 "and is set aside")


def test_with_data_first_nothing_but_empty_results_still_vote():
    candidates = [ran("a", []), ran("b", []), ran("c", [(None,)]), failed("d")]
    result = vote(candidates, data_first=True)
    assert result.decisive and result.set_aside == [] and result.winner.generators == ["a", "b"]
    data = json.loads(json.dumps(vote([ran("a", []), ran("b", [(1,)])], data_first=True)
                                 .to_dict()))
    assert data["set_aside"] == [1] and Vote.from_dict(data).set_aside == [1]


def test_group_candidates_returns_groups_and_failures():
    groups, failures = group_candidates([failed("a"), ran("b", [(5,)])])
    assert [g.members for g in groups] == [[1]] and failures == [0]


def test_run_candidate_executes_read_only_and_keeps_every_row(tmp_path):
    with open_database(make_db(tmp_path / "singers.sqlite", SINGERS_SQL)) as singers:
        many = run_candidate(singers, "a", "SELECT name, country FROM singer", max_rows=2)
        same = run_candidate(singers, "b", "SELECT country, name FROM singer ORDER BY age")
        other = run_candidate(singers, "c", "SELECT name FROM singer WHERE country = 'France'")
        refused = run_candidate(singers, "d", "DELETE FROM singer")
        missing = run_candidate(singers, "e", "")
        result = vote([run_candidate(singers, "a", "SELECT name, country FROM singer"), same,
                       other, refused, missing])
        assert singers.execute("SELECT count(*) FROM singer").rows == [(3,)]
    assert many.ok and many.result["truncated"] and len(many.rows) == 2
    assert refused.error_class == "UnsafeSQL" and missing.result is None
    assert [g.members for g in result.groups] == [[0, 1], [2]]
